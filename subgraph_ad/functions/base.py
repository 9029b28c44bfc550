"""UnaryFn, the one extension point for functions, and the registry the parser and bridges read.

A function states its value ``f``, its numeric derivative ``grad`` and its *local* derivative
``fdiff``: f′ as a Term built from the node's input and output. The engines apply the chain rule
(forward subgraphs, Taylor mode, numeric modes) and the backends read the function's own
lowering (``ufuncs`` for NumPy, ``scalar`` for Numba, ``to_sympy``), never its class, so a user's
function gets every path a built-in gets. The built-ins are written through this same door.

>>> import subgraph_ad as sad
>>> round(sad.sin(0.5), 6)
0.479426
>>> tape = sad.Tape(); x = tape.var("x", 0.0)
>>> sad.sin(x).diff(x, 2).to_sympy()
-sin(x)
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..core.term import Term


class UnaryFn:
    """Base class of pluggable one-argument functions.

    Subclasses set ``name`` and implement ``f`` (value), ``grad`` (f′ as a value) and, to be
    differentiable symbolically, ``fdiff(input, output)``: f′(input) as a Term (or None for a
    structural zero), which may reuse ``output`` itself (``exp′ = output``). Code written for the
    rustograd-style rule ``gen_graph(input, output, derived)`` (the chain rule applied by the
    function) keeps working: override ``gen_graph`` instead of ``fdiff``.

    Optional lowering: ``ufuncs`` (NumPy), ``scalar`` (Numba), ``to_sympy(arg)`` (SymPy).
    """

    name: str = "fn"
    #: NumPy lowering: ufunc-like callables applied in turn as ``u(value, out=buffer)`` that compute
    #: f in place with no temporaries (sigmoid: negative, logaddexp(0, ·), negative, exp); empty:
    #: the backend calls ``f``.
    ufuncs: tuple[Callable[..., Any], ...] = ()
    #: Numba lowering: a function of one float that Numba compiles (``math.exp``, or a plain
    #: Python function as a ``staticmethod``); None: ``f`` itself is compiled.
    scalar: Callable[[float], float] | None = None
    #: Facts that give Taylor mode a shorter recurrence: f(u) = u ** power (sqrt: 0.5), and
    #: f(u) = −g(u) for the function ``negative_of`` (−sin of sin), whose coefficients it reuses.
    power: float | None = None
    negative_of: UnaryFn | None = None

    def f(self, v: Any) -> Any:
        """The value; must work elementwise on floats and NumPy arrays."""
        raise NotImplementedError(f"UnaryFn {self.name!r} does not define f(v)")

    def grad(self, v: Any) -> Any:
        """f′(v) as a value; used by the numeric forward and reverse modes."""
        raise NotImplementedError(f"UnaryFn {self.name!r} does not define grad(v)")

    def fdiff(self, input: Term, output: Term) -> Term | None:
        """The local derivative f′(input) as a Term of the same tape, or None for zero."""
        raise NotImplementedError(
            f"UnaryFn {self.name!r} has no symbolic derivative, so it cannot be differentiated "
            "symbolically (eval, derive and grad still work); define fdiff(input, output), or a "
            "rustograd-style gen_graph(input, output, derived)"
        )

    def gen_graph(self, input: Term, output: Term, derived: Term) -> Term | None:
        """d(output) given ``derived`` = d(input): the chain rule over ``fdiff``."""
        return chain(self.fdiff(input, output), derived)

    def __call__(self, arg: Any) -> Any:
        """On a Term: append a node. On a number or array: the plain value."""
        if isinstance(arg, Term):
            return arg.tape.apply(self, arg)
        if isinstance(arg, (bool, str)) or arg is None:
            raise TypeError(f"{self.name}() takes a Term, a number or an array, got {type(arg).__name__} {arg!r}")
        with np.errstate(all="ignore"):
            value = self.f(np.asarray(arg, dtype=float) if not np.isscalar(arg) else np.float64(arg))
        return float(value) if np.ndim(value) == 0 else value

    def __repr__(self) -> str:
        return f"<UnaryFn {self.name}>"


def chain(local: Term | None, derived: Term | None) -> Term | None:
    """f′ · d(input), the chain rule. A reciprocal f′ = c / v is written as the quotient
    (c · d(input)) / v: the quotient rule reuses that node as its own output at the next order,
    where a product with 1/v would differentiate the reciprocal again."""
    if local is None or derived is None:
        return None
    node = local.node
    if node.op == "div" and local.tape.nodes[node.args[0]].op == "const":
        numerator, denominator = (Term(local.tape, a) for a in node.args)
        return (numerator * derived) / denominator
    return local * derived


def _checked(fn: UnaryFn, result: Any, output: Term, rule: str) -> Term | None:
    if result is not None and not (isinstance(result, Term) and result.tape is output.tape):
        raise TypeError(
            f"{rule} rule of UnaryFn {fn.name!r} returned {type(result).__name__} {result!r}; "
            "expected a Term of the same tape or None"
        )
    return result


def _overrides(fn: UnaryFn, method: str) -> bool:
    return getattr(type(fn), method) is not getattr(UnaryFn, method)


def differentiate(fn: UnaryFn, input: Term, output: Term, derived: Term | None) -> Term | None:
    """d(output) as the forward engines call it: a structural zero short-circuits, a user's own
    ``gen_graph`` rule is honoured, and a rule returning anything but a Term of this tape or None
    is a TypeError naming the function."""
    if derived is None:
        return None
    if _overrides(fn, "gen_graph") or not _overrides(fn, "fdiff"):
        return _checked(fn, fn.gen_graph(input, output, derived), output, "gen_graph")
    return chain(local_derivative(fn, input, output), derived)


def local_derivative(fn: UnaryFn, input: Term, output: Term) -> Term | None:
    """f′(input) as a Term, for the engines that need f′ itself (Taylor mode). A function with
    only a rustograd-style ``gen_graph`` is asked for d(output) with d(input) = 1; the caller
    drops what that leaves unused."""
    if _overrides(fn, "fdiff"):
        return _checked(fn, fn.fdiff(input, output), output, "fdiff")
    if _overrides(fn, "gen_graph"):
        return _checked(fn, fn.gen_graph(input, output, output.tape.const(1.0)), output, "gen_graph")
    return fn.fdiff(input, output)  # raises NotImplementedError naming the function


#: Functions known to the parser and the SymPy bridge, by name. Add yours with ``register``.
FUNCTIONS: dict[str, UnaryFn] = {}


def register(fn: UnaryFn) -> UnaryFn:
    """Make ``fn`` known by its name to ``parse`` and ``from_sympy``; returns it (decorator-friendly)."""
    if not isinstance(fn, UnaryFn):
        raise TypeError(f"register() takes a UnaryFn instance, got {type(fn).__name__} {fn!r}")
    if not fn.name.isidentifier():
        raise ValueError(f"a registered function needs an identifier name, got {fn.name!r}")
    FUNCTIONS[fn.name] = fn
    return fn
