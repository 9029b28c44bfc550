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


class Function:
    """What every pluggable function shares: a name, an arity, a NumPy value and the call that
    appends a node on Terms or computes the value on numbers."""

    name: str = "fn"
    arity: int = 1
    #: NumPy lowering: ufunc-like callables applied in turn, the first as
    #: ``u(*operands, out=buffer)`` and the rest as ``u(buffer, out=buffer)``, that compute f in
    #: place with no temporaries (sigmoid: negative, logaddexp(0, ·), negative, exp); empty:
    #: the backend calls ``f``.
    ufuncs: tuple[Callable[..., Any], ...] = ()
    #: Numba lowering: a function of floats that Numba compiles (``math.exp``, or a plain
    #: Python function as a ``staticmethod``); None: ``f`` itself is compiled.
    scalar: Callable[..., float] | None = None
    #: The NumPy ufunc this function is (``np.sin`` for sin): ``np.sin(term)`` appends it.
    numpy: Any = None

    def f(self, *v: Any) -> Any:
        """The value; must work elementwise on floats and NumPy arrays."""
        raise NotImplementedError(f"{type(self).__name__} {self.name!r} does not define f")

    def __call__(self, *args: Any) -> Any:
        """On Terms: append a node (numbers among the arguments become constants); on arrays of
        Terms, elementwise. On numbers or arrays: the plain value."""
        if len(args) != self.arity:
            raise TypeError(f"{self.name}() takes {self.arity} argument{'s' if self.arity > 1 else ''}, got {len(args)}")
        terms = [a for a in args if isinstance(a, Term)]
        if terms:
            lifted = [terms[0]._lift(a) for a in args]
            return terms[0].tape.apply(self, *lifted)
        if any(isinstance(a, np.ndarray) and a.dtype == object for a in args):
            # an array of Terms (a traced array argument): elementwise and broadcast, like np.sin
            return np.frompyfunc(self, self.arity, 1)(*args)
        for a in args:
            if isinstance(a, (bool, str)) or a is None:
                raise TypeError(f"{self.name}() takes Terms, numbers or arrays, got {type(a).__name__} {a!r}")
        with np.errstate(all="ignore"):
            value = self.f(*(np.asarray(a, dtype=float) if not np.isscalar(a) else np.float64(a) for a in args))
        return float(value) if np.ndim(value) == 0 else value

    @property
    def kind(self) -> str:
        """The extension point it comes from, for messages: UnaryFn or BinaryFn."""
        return "UnaryFn" if self.arity == 1 else "BinaryFn"

    def __repr__(self) -> str:
        return f"<{self.kind} {self.name}>"


class UnaryFn(Function):
    """Base class of pluggable one-argument functions.

    Subclasses set ``name`` and implement ``f`` (value), ``grad`` (f′ as a value) and, to be
    differentiable symbolically, ``fdiff(input, output)``: f′(input) as a Term (or None for a
    structural zero), which may reuse ``output`` itself (``exp′ = output``). Code written for the
    rustograd-style rule ``gen_graph(input, output, derived)`` (the chain rule applied by the
    function) keeps working: override ``gen_graph`` instead of ``fdiff``.

    Optional lowering: ``ufuncs`` (NumPy), ``scalar`` (Numba), ``to_sympy(arg)`` (SymPy).
    """

    arity = 1
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


class BinaryFn(Function):
    """Base class of pluggable two-argument functions f(lhs, rhs).

    Subclasses set ``name`` and implement ``f(a, b)`` (value), ``grad(a, b)`` (the two partials
    ∂f/∂a, ∂f/∂b as values) and, to be differentiable symbolically, ``fdiff(lhs, rhs, output)``:
    the two partials as Terms (either may be None for a structural zero). The rustograd-style
    ``gen_graph(lhs, rhs, output, dlhs, drhs)`` works too; there either derivative may be None.

    Optional lowering: ``ufuncs`` (the first called as ``u(a, b, out=buffer)``), ``scalar`` (a
    function of two floats for Numba), ``to_sympy(a, b)``.
    """

    arity = 2

    def f(self, a: Any, b: Any) -> Any:
        """The value; must work elementwise on floats and NumPy arrays."""
        raise NotImplementedError(f"BinaryFn {self.name!r} does not define f(a, b)")

    def grad(self, a: Any, b: Any) -> tuple[Any, Any]:
        """(∂f/∂a, ∂f/∂b) as values; used by the numeric forward and reverse modes."""
        raise NotImplementedError(f"BinaryFn {self.name!r} does not define grad(a, b)")

    def fdiff(self, lhs: Term, rhs: Term, output: Term) -> tuple[Term | None, Term | None]:
        """The partials (∂f/∂lhs, ∂f/∂rhs) as Terms of the same tape (None: zero)."""
        raise NotImplementedError(
            f"BinaryFn {self.name!r} has no symbolic derivative, so it cannot be differentiated "
            "symbolically (eval, derive and grad still work); define fdiff(lhs, rhs, output), or a "
            "rustograd-style gen_graph(lhs, rhs, output, dlhs, drhs)"
        )

    def gen_graph(self, lhs: Term, rhs: Term, output: Term, dlhs: Term | None, drhs: Term | None) -> Term | None:
        """d(output) given d(lhs), d(rhs) (None: zero): the chain rule over ``fdiff``."""
        da, db = self.fdiff(lhs, rhs, output)
        return _add(chain(da, dlhs), chain(db, drhs))


def _add(a: Term | None, b: Term | None) -> Term | None:
    if a is None:
        return b
    return a if b is None else a + b


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


def _checked(fn: Function, result: Any, output: Term, rule: str) -> Any:
    if result is not None and not (isinstance(result, Term) and result.tape is output.tape):
        raise TypeError(
            f"{rule} rule of {fn.kind} {fn.name!r} returned {type(result).__name__} {result!r}; "
            "expected a Term of the same tape or None"
        )
    return result


def _overrides(fn: Function, method: str) -> bool:
    base = UnaryFn if fn.arity == 1 else BinaryFn
    return getattr(type(fn), method) is not getattr(base, method)


def differentiate(fn: Function, *terms: Term | None) -> Term | None:
    """d(output) as the forward engines call it, with ``terms`` = the inputs, the output and the
    inputs' derivatives: structural zeros short-circuit, a user's own ``gen_graph`` rule is
    honoured, and a rule returning anything but a Term of this tape or None is a TypeError
    naming the function."""
    n = fn.arity
    inputs, output, derived = terms[:n], terms[n], terms[n + 1:]
    if all(d is None for d in derived):
        return None
    if _overrides(fn, "gen_graph") or not _overrides(fn, "fdiff"):
        return _checked(fn, fn.gen_graph(*inputs, output, *derived), output, "gen_graph")  # type: ignore[arg-type]
    total = None
    for local, d in zip(local_derivatives(fn, inputs, output), derived):  # type: ignore[arg-type]
        total = _add(total, chain(local, d))
    return total


def local_derivatives(fn: Function, inputs: tuple[Term, ...], output: Term) -> tuple[Term | None, ...]:
    """The partials of ``fn`` as Terms, for the engines that need them alone (Taylor mode). A
    function with only a rustograd-style ``gen_graph`` is asked for d(output) with one input's
    derivative 1 and the others' zero; the caller drops what that leaves unused."""
    if _overrides(fn, "fdiff"):
        found = fn.fdiff(*inputs, output)  # type: ignore[attr-defined]
        partials = (found,) if fn.arity == 1 else tuple(found)
        if len(partials) != fn.arity:
            raise TypeError(f"fdiff of {fn.kind} {fn.name!r} returned {found!r}; expected {fn.arity} partials")
        return tuple(_checked(fn, p, output, "fdiff") for p in partials)
    if _overrides(fn, "gen_graph"):
        one = output.tape.const(1.0)
        seeds = [[one if j == k else None for j in range(fn.arity)] for k in range(fn.arity)]
        if fn.arity == 1:
            return (_checked(fn, fn.gen_graph(*inputs, output, one), output, "gen_graph"),)  # type: ignore[attr-defined]
        return tuple(_checked(fn, fn.gen_graph(*inputs, output, *seed), output, "gen_graph") for seed in seeds)  # type: ignore[attr-defined]
    return fn.fdiff(*inputs, output)  # type: ignore[attr-defined]  # raises NotImplementedError naming it


#: Functions known to the parser and the SymPy bridge, by name. Add yours with ``register``.
FUNCTIONS: dict[str, Function] = {}


def register(fn: Function) -> Function:
    """Make ``fn`` known by its name to ``parse`` and ``from_sympy``; returns it (decorator-friendly)."""
    if not isinstance(fn, Function):
        raise TypeError(f"register() takes a UnaryFn or BinaryFn instance, got {type(fn).__name__} {fn!r}")
    if not fn.name.isidentifier():
        raise ValueError(f"a registered function needs an identifier name, got {fn.name!r}")
    FUNCTIONS[fn.name] = fn
    return fn
