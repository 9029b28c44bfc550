"""UnaryFn and BinaryFn, the one extension point for functions, and the registry the parser and
bridges read.

A function declares two things once: how its value is computed (``spelling``, a chain of
elementary operations every backend can lower, or just ``f``) and its *local* derivative
(``fdiff``: f′ as Terms built from the node's input and output). Everything else is derived:
the value ``f`` from the spelling, the numeric derivative ``grad`` by running ``fdiff`` on
numbers, the NumPy ufunc it answers to, its SymPy form; and every engine (forward and reverse
subgraphs, Taylor mode, the numeric modes) applies the chain rule to that one ``fdiff``. A
rustograd-style ``gen_graph(input, output, derived)`` rule is turned into ``fdiff`` when the
class is defined, so no engine ever sees two rules. The built-ins are written through this door.

>>> import subgraph_ad as sad
>>> round(sad.sin(0.5), 6)
0.479426
>>> tape = sad.Tape(); x = tape.var("x", 0.0)
>>> sad.sin(x).diff(x, 2).to_sympy()
-sin(x)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence, overload

import numpy as np
from numpy.typing import NDArray

from ..core.tape import Tape
from ..core.term import Term
from .elementary import Step, steps

Partial = Optional[Term]  # a local derivative: a Term, or None for a structural zero


class Function:
    """What every pluggable function shares: a name, an arity, how its value is computed, and
    the call that appends a node on Terms or computes the value on numbers."""

    arity: int = 1
    #: Per argument, whether f is linear in it (xlogy(p, a) = p·log(a) in p): the chain rule
    #: then applies f itself to the tangent, f(dp, a), which is 0 wherever dp is — the strong
    #: zero that 0·log(0) would turn into nan — and Taylor mode's coefficient k is f(p_k, a).
    linear: tuple[bool, ...] = ()
    #: Whether f is constant to differentiation: its derivative a structural zero in every
    #: argument (a condition such as x > 0, sign, floor). Every engine takes it as constant in
    #: every var, Taylor mode's degree plan too, so a selection by it stays linear there.
    constant: bool = False
    #: Whether a function constant to differentiation changes its value in jumps (a condition,
    #: floor), so an ODE step must end where it does, or only steadies numbers that cancel from
    #: the result (stop_gradient), so it may be held through a step.
    jumps: bool = True

    # name, spelling and through are read-only to the type checker, so that a subclass may state
    # them as class attributes or compute them (SinFn's name is its member's); plain attributes
    # when running, so that an instance may also set its own.
    if TYPE_CHECKING:
        @property
        def name(self) -> str:
            """How the parser, the printers and the registry call it."""

        @property
        def spelling(self) -> tuple[Step, ...]:
            """How the value is computed, for every backend: elementary operations (``ELEMENTARY``
            names or ``Elementary`` records) applied in turn, the first to the operands. Empty:
            the backends call ``f``, and C/CUDA cannot compile the function."""

        @property
        def through(self) -> tuple[Function, Callable[[Any], Any]] | None:
            """"My derivative runs through g": (g, Q) for a function whose value is Q(g(u)),
            computed apart where Q cancels (tanh′ = sech² is Q(tanh) with Q(g) = 1 − g², σ′ is
            Q(σ) with Q(g) = ¼ − (g − ½)²). Where g(u) is on the tape already, the engines
            differentiate Q(g) through g's own derivative, so repeated passes close on g's
            nodes; elsewhere they read ``fdiff``, which is Q′(g(u))·g′(u) unless the class
            writes its own. Q′(g) that is more than a constant times g is one node of g alone
            (``slope``). Q takes a Term or a ``Dual``."""
    else:
        name = "fn"
        spelling = ()
        through = None

    def fdiff(self, *terms: Any) -> Any:
        """The local derivative as Terms of the node's tape, None for a structural zero: f′ for a
        UnaryFn, the two partials for a BinaryFn (their ``fdiff`` give the arguments). What
        every engine's chain rule reads (``partials``)."""
        raise NotImplementedError(f"{self.kind} {self.name!r} defines no fdiff")

    def grad(self, *v: Any) -> Any:
        """The local derivative as values, for the numeric forward and reverse modes: f′(v) for a
        UnaryFn, (∂f/∂a, ∂f/∂b) for a BinaryFn; by default ``fdiff`` run on numbers. Override
        it only where the numbers need care."""
        found = self.rule_values(*v)
        return found[0] if self.arity == 1 else found

    def f(self, *v: Any) -> Any:
        """The value; must work elementwise on floats and NumPy arrays. By default the spelling's
        NumPy chain."""
        chain = steps(self.spelling)
        if not chain:
            raise NotImplementedError(f"{self.kind} {self.name!r} defines neither f nor a spelling")
        out = chain[0].array(*v)
        for step in chain[1:]:
            out = step.array(out)
        return out

    @property
    def numpy(self) -> Any:
        """The NumPy ufunc this function is (``np.sin`` for sin), so ``np.sin(term)`` appends it:
        a spelling of one elementary whose NumPy form is one ufunc of as many arguments."""
        chain = steps(self.spelling)
        if len(chain) == 1 and len(chain[0].numpy) == 1:
            ufunc = chain[0].numpy[0]
            if isinstance(ufunc, np.ufunc) and ufunc.nin == self.arity:
                return ufunc
        return None

    @property
    def printed(self) -> tuple[str, bool]:
        """The name a formula writes it with, and whether it is that function negated: a
        spelling of an elementary then negation (−sin) prints as −sin(…)."""
        chain = steps(self.spelling)
        if len(chain) == 2 and chain[1].name == "neg":
            return chain[0].name, True
        return self.name, False

    def is_linear(self, k: int) -> bool:
        """Whether f is linear in argument k (see ``linear``)."""
        return k < len(self.linear) and self.linear[k]

    @overload
    def __call__(self, first: Term, /, *args: Term | float) -> Term: ...

    @overload
    def __call__(self, first: float, second: Term, /, *args: Term | float) -> Term: ...

    @overload
    def __call__(self, *args: float) -> float: ...

    @overload
    def __call__(self, *args: NDArray[Any]) -> NDArray[Any]: ...

    def __call__(self, *args: Any) -> Any:
        """On Terms: append a node (numbers among the arguments become constants); on arrays of
        Terms, elementwise. On numbers or arrays: the plain value."""
        if len(args) != self.arity:
            raise TypeError(f"{self.name}() takes {self.arity} argument{'s' if self.arity > 1 else ''}, got {len(args)}")
        if any(isinstance(a, Dual) for a in args):
            return Dual.apply(self, args)
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
            value = self.f(*(np.float64(a) if isinstance(a, (int, float, np.number)) else np.asarray(a, dtype=float)
                             for a in args))
        return float(value) if np.ndim(value) == 0 else value

    def partials(self, *terms: Any) -> tuple[Partial, ...]:
        """The local partials as Terms (None: zero), from ``fdiff``; ``terms`` are the inputs
        and the output. What every engine's chain rule reads."""
        found = self.fdiff(*terms)
        parts = (found,) if self.arity == 1 else tuple(found)
        if len(parts) != self.arity:
            raise TypeError(f"fdiff of {self.kind} {self.name!r} returned {found!r}; expected {self.arity} partials")
        output = terms[-1]
        for p in parts:
            if p is not None and not (isinstance(p, Term) and p.tape is output.tape):
                raise TypeError(f"the derivative rule of {self.kind} {self.name!r} returned {type(p).__name__} "
                                f"{p!r}; expected a Term of the same tape or None")
        return parts

    def numeric_partials(self, *v: Any, output: Any = None) -> tuple[Any, ...]:
        """The partials as values at ``v`` (``output``: f(v) where the caller has it): the
        class's own ``grad`` where it overrides it, else the rule on numbers (``rule_values``)."""
        if type(self).grad is not Function.grad:
            found = self.grad(*v)
            return (found,) if self.arity == 1 else tuple(found)
        return self.rule_values(*v, output=output)

    def rule_values(self, *v: Any, output: Any = None) -> tuple[Any, ...]:
        """``fdiff`` run on numbers: the rule builds with arithmetic and functions, which compute
        values on floats and arrays; a structural zero is 0."""
        found = self.fdiff(*v, self.f(*v) if output is None else output)
        parts = (found,) if self.arity == 1 else tuple(found)
        return tuple(np.zeros_like(v[0], dtype=float) if p is None else _values(p) for p in parts)

    @property
    def kind(self) -> str:
        """The extension point it comes from, for messages: UnaryFn or BinaryFn."""
        return "UnaryFn" if self.arity == 1 else "BinaryFn"

    def __repr__(self) -> str:
        return f"<{self.kind} {self.name}>"


def _one(output: Any) -> Any:
    """The derivative 1 a rustograd-style rule is seeded with: a constant of the output's tape,
    or the number 1 when the rule runs on numbers (``grad``)."""
    return output.tape.const(1.0) if isinstance(output, Term) else 1.0


def _values(p: Any) -> Any:
    """A partial computed on numbers as floats (an exact constant in a rule, e.g. Fraction(1, 3),
    makes an object array)."""
    if isinstance(p, np.ndarray) and p.dtype == object:
        return p.astype(float)
    return float(p) if np.ndim(p) == 0 else p


def _first_defining(cls: type, names: tuple[str, ...], base: type) -> str | None:
    """Which of ``names`` the most derived class below ``base`` defines first."""
    for klass in cls.__mro__:
        if klass is base:
            return None
        for name in names:
            if name in vars(klass):
                return name
    return None


class UnaryFn(Function):
    """Base class of pluggable one-argument functions.

    Subclasses set ``name``, the value (``spelling`` or ``f``) and the local derivative
    ``fdiff(input, output)``: f′(input) as a Term of the same tape, or None for a structural
    zero, which may reuse ``output`` itself (``exp′ = output``). ``grad`` (f′ as a value) is
    ``fdiff`` run on numbers; override it only where the numbers need care. A rustograd-style
    ``gen_graph(input, output, derived)`` instead of ``fdiff`` keeps working: it becomes
    ``fdiff`` (``derived`` = 1) when the class is defined.

    Optional: ``to_sympy(arg)`` where the SymPy form is not the spelling's.
    """

    arity = 1
    #: Facts that give Taylor mode a shorter recurrence: f(u) = u ** power (sqrt: 0.5), and
    #: f(u) = −g(u) for the function ``negative_of`` (−sin of sin), whose coefficients it reuses.
    power: float | None = None
    if TYPE_CHECKING:  # read-only to the type checker, as ``name`` is
        @property
        def negative_of(self) -> UnaryFn | None: ...
    else:
        negative_of = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if _first_defining(cls, ("fdiff", "gen_graph"), UnaryFn) == "gen_graph":
            rule = cls.gen_graph

            def fdiff(self: UnaryFn, input: Term, output: Term) -> Term | None:
                return rule(self, input, output, _one(output))

            cls.fdiff = fdiff  # type: ignore[method-assign]

    def fdiff(self, input: Term, output: Term) -> Term | None:
        """The local derivative f′(input) as a Term of the same tape, or None for zero; for a
        function declared ``through`` (g, Q), Q′(g(u))·g′(u)."""
        if self.through is not None:
            g, q = self.through
            inner = g(input)
            dg = g.fdiff(input, inner)
            factor = slope(self, inner)
            return q(Dual(inner, dg)).tangent if factor is None else factor * dg  # type: ignore[no-any-return]
        raise NotImplementedError(
            f"UnaryFn {self.name!r} has no symbolic derivative, so it cannot be differentiated "
            "symbolically (eval, derive and grad still work where grad is defined); define "
            "fdiff(input, output), or a rustograd-style gen_graph(input, output, derived)"
        )

    def gen_graph(self, input: Term, output: Term, derived: Term) -> Term | None:
        """d(output) given ``derived`` = d(input): the chain rule over ``fdiff``."""
        return chain(self.partials(input, output)[0], derived)  # type: ignore[no-any-return]


class BinaryFn(Function):
    """Base class of pluggable two-argument functions f(lhs, rhs).

    Subclasses set ``name``, the value (``spelling`` or ``f``) and ``fdiff(lhs, rhs, output)``:
    the two partials as Terms (either may be None for a structural zero). ``grad`` (the
    partials as values) is ``fdiff`` run on numbers. The rustograd-style
    ``gen_graph(lhs, rhs, output, dlhs, drhs)`` keeps working: it becomes ``fdiff`` (one
    derivative 1, the other None) when the class is defined.

    Optional: ``to_sympy(a, b)`` where the SymPy form is not the spelling's.
    """

    arity = 2

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if _first_defining(cls, ("fdiff", "gen_graph"), BinaryFn) == "gen_graph":
            rule = cls.gen_graph

            def fdiff(self: BinaryFn, lhs: Term, rhs: Term, output: Term) -> tuple[Term | None, Term | None]:
                one = _one(output)
                return rule(self, lhs, rhs, output, one, None), rule(self, lhs, rhs, output, None, one)

            cls.fdiff = fdiff  # type: ignore[method-assign]

    def fdiff(self, lhs: Term, rhs: Term, output: Term) -> tuple[Term | None, Term | None]:
        """The partials (∂f/∂lhs, ∂f/∂rhs) as Terms of the same tape (None: zero)."""
        raise NotImplementedError(
            f"BinaryFn {self.name!r} has no symbolic derivative, so it cannot be differentiated "
            "symbolically (eval, derive and grad still work where grad is defined); define "
            "fdiff(lhs, rhs, output), or a rustograd-style gen_graph(lhs, rhs, output, dlhs, drhs)"
        )

    def gen_graph(self, lhs: Term, rhs: Term, output: Term, dlhs: Term | None, drhs: Term | None) -> Term | None:
        """d(output) given d(lhs), d(rhs) (None: zero): the chain rule over ``fdiff``."""
        return differentiate(self, lhs, rhs, output, dlhs, drhs)


def _add(a: Term | None, b: Term | None) -> Term | None:
    if a is None:
        return b
    return a if b is None else a + b


def chain(local: Any, derived: Any) -> Any:
    """f′ · d(input), the chain rule. A reciprocal f′ = c / v is written as the quotient
    (c · d(input)) / v: the quotient rule reuses that node as its own output at the next order,
    where a product with 1/v would differentiate the reciprocal again. A partial that is a gate
    (a condition: relu′ = u > 0) selects d(input) rather than multiplying it (``gate``)."""
    if local is None or derived is None:
        return None
    if not isinstance(local, Term) or not isinstance(derived, Term):
        return local * derived  # numbers, or the Duals of a ``through`` declaration
    if is_gate(local):
        return gate(local, derived)
    node = local.node
    if node.op == "div" and local.tape.nodes[node.args[0]].op == "const":
        numerator, denominator = (Term(local.tape, a) for a in node.args)
        return (numerator * derived) / denominator
    return local * derived


def node_function(node: Any) -> Function | None:
    """The function a node applies: a function node's, or an elementwise array node's (a ``map``
    of a function), so that a condition, a gate and a selection read alike on arrays."""
    if node.op == "fn":
        return node.payload  # type: ignore[no-any-return]
    if node.op == "map" and isinstance(node.payload[1], Function):
        return node.payload[1]
    return None


def _is_condition(node: Any) -> bool:
    return bool(getattr(node_function(node), "condition", False))


def is_gate(partial: Any) -> bool:
    """Whether a local partial is a gate: a condition (1 or 0: relu′ = u > 0, heaviside in h),
    or a sum of conditions with constant weights (maximum′ = (a > b) + ½·(a == b)). A gate is
    0 exactly where its piece of the function is flat, so it selects what it meets instead of
    multiplying it: relu(log x) at x = 0 has derivative 0 at every order, not 0·inf."""
    if not isinstance(partial, Term):
        return False
    nodes = partial.tape.nodes
    stack = [partial.index]
    while stack:
        node = nodes[stack.pop()]
        if _is_condition(node):
            continue
        if node.op == "add":
            stack += node.args
        elif node.op == "mul" and any(nodes[a].op == "const" for a in node.args):
            stack += [a for a in node.args if nodes[a].op != "const"]
        else:
            return False
    return True


def gate(partial: Term, value: Term) -> Term:
    """partial · value for a gate ``partial``, exactly 0 where it is 0 (also for an inf or nan
    value): select(c, value) for a condition c, select(partial ≠ 0, partial · value) for a
    weighted sum of them."""
    from .kinks import not_equal, select

    if _is_condition(partial.node):
        return select(partial, value)
    return select(not_equal(partial, 0.0), partial * value)


def shares(fn: Function, inputs: Sequence[Term], output: Term, tangents: Sequence[Term | None],
           forward: bool = True) -> list[Term | None]:
    """Each argument's share of d(output) for its tangent (``forward``) or of its adjoint for
    the output's adjoint (reverse), None where that is None: partial · tangent, the partials
    from the one rule ``fdiff`` (asked once, and only if needed); going forward, f applied to
    the tangent where f is linear in the argument, which is 0 wherever the tangent is."""
    partials: tuple[Partial, ...] | None = None
    out: list[Term | None] = []
    for k, t in enumerate(tangents):
        if t is None:
            out.append(None)
        elif forward and fn.is_linear(k):
            out.append(fn(*(t if j == k else a for j, a in enumerate(inputs))))
        else:
            partials = partials or fn.partials(*inputs, output)
            out.append(chain(partials[k], t))
    return out


def differentiate(fn: Function, *terms: Term | None) -> Term | None:
    """d(output) as the forward engines call it, with ``terms`` = the inputs, the output and the
    inputs' derivatives (None: zero, which short-circuits): the sum of the arguments' shares."""
    n = fn.arity
    inputs, output, derived = terms[:n], terms[n], terms[n + 1:]
    total = None
    if any(d is not None for d in derived):
        for share in shares(fn, inputs, output, derived):  # type: ignore[arg-type]
            total = _add(total, share)
    return total


class Dual:
    """A value and its tangent (None: zero) carried through arithmetic and functions: how a
    ``through`` declaration's Q is differentiated, on Terms, numbers or Duals of them, by the
    same local derivatives every engine reads."""

    def __init__(self, value: Any, tangent: Any) -> None:
        self.value, self.tangent = value, tangent

    @staticmethod
    def apply(fn: Function, args: Sequence[Any]) -> Dual:
        values = [a.value if isinstance(a, Dual) else a for a in args]
        out = fn(*values)
        found = fn.fdiff(*values, out)
        parts = (found,) if fn.arity == 1 else tuple(found)
        total = None
        for a, p in zip(args, parts):
            if isinstance(a, Dual):
                total = _add(total, chain(p, a.tangent))
        return Dual(out, total)

    def _pair(self, other: Any) -> tuple[Any, Any]:
        return (other.value, other.tangent) if isinstance(other, Dual) else (other, None)

    def __add__(self, other: Any) -> Dual:
        v, t = self._pair(other)
        return Dual(self.value + v, _add(self.tangent, t))

    __radd__ = __add__

    def __neg__(self) -> Dual:
        return Dual(-self.value, None if self.tangent is None else -self.tangent)

    def __sub__(self, other: Any) -> Dual:
        v, t = self._pair(other)
        return Dual(self.value - v, _add(self.tangent, None if t is None else -t))

    def __rsub__(self, other: Any) -> Dual:
        return (-self).__add__(other)

    def __mul__(self, other: Any) -> Dual:
        v, t = self._pair(other)
        return Dual(self.value * v, _add(chain(v, self.tangent), chain(self.value, t)))

    __rmul__ = __mul__

    def __truediv__(self, other: Any) -> Dual:
        v, t = self._pair(other)
        out = self.value / v
        return Dual(out, _add(self.tangent, None if t is None else -(out * t)) / v
                    if (self.tangent is not None or t is not None) else None)

    def __pow__(self, p: float) -> Dual:
        return Dual(self.value ** p, chain(p * self.value ** (p - 1), self.tangent))


_SCALED: dict[Any, bool] = {}


def slope(fn: Function, g: Term) -> Term | None:
    """Q′(g) for ``fn`` declared ``through`` (g, Q), as a node of g alone, where it needs one
    besides g (σ′ = ¼ − (σ − ½)²: −2·(σ − ½)). The local partial Q′(g)·g′(u) (``fdiff``) and
    the reverse adjoint bar·Q′(g) multiply it in, so every later pass meets that node again
    (4 repeated ``grad_graph`` passes of σ: 18 nodes, against 23 with Q′ written out through
    the tangent and the adjoint). None where Q′(g) is a constant times g (tanh′ = 1 − tanh²:
    −2·tanh): there the constant goes with the tangent, as Q(g) written out puts it (F4's 10th
    repeated ``grad_graph``: 18,359 nodes, against 19,833 for bar·(−2·tanh) and (−2·tanh)·g′))."""
    if _scaled(fn):
        return None
    return fn.through[1](Dual(g, 1.0)).tangent  # type: ignore[index, no-any-return]


def _scaled(fn: Function) -> bool:
    """Whether Q′(g) of ``fn``'s ``through`` is c·g: read once per function on a scratch tape."""
    try:
        return _SCALED[fn]
    except KeyError:
        pass
    except TypeError:  # an unhashable function: asked afresh
        return _scratch_scaled(fn)
    found = _SCALED[fn] = _scratch_scaled(fn)
    return found


def _scratch_scaled(fn: Function) -> bool:
    scratch = Tape(max_nodes=None)
    g = scratch.var("g")
    found = fn.through[1](Dual(g, 1.0)).tangent  # type: ignore[index]
    nodes, i = scratch.nodes, int(found.index)
    while nodes[i].op == "neg" or (nodes[i].op == "mul" and nodes[nodes[i].args[0]].op == "const"):
        i = nodes[i].args[-1]
    return i == g.index


def local_derivatives(fn: Function, inputs: tuple[Term, ...], output: Term) -> tuple[Partial, ...]:
    """The partials of ``fn`` as Terms, for the engines that need them alone (Taylor mode)."""
    return fn.partials(*inputs, output)


def sympy_hook(fn: Function) -> Callable[..., Any] | None:
    """How ``fn`` becomes SymPy: its ``to_sympy`` hook, else its spelling's SymPy forms composed,
    else None (an undefined ``sympy.Function(name)`` stands for it)."""
    hook = getattr(fn, "to_sympy", None)
    if hook is not None:
        return hook  # type: ignore[no-any-return]
    chain_ = steps(fn.spelling)
    if not chain_:
        return None

    def compose(*args: Any) -> Any:
        out = chain_[0].sympy(*args)
        for step in chain_[1:]:
            out = step.sympy(out)
        return out

    return compose


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
