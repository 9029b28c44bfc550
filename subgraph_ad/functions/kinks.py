"""Kinks and selections: comparisons as condition Terms, ``where``, ``maximum``/``minimum``
(and NumPy's nan-ignoring ``fmax``/``fmin``), ``relu``, ``clip``, ``heaviside``, and the
rounding functions ``floor``, ``ceil``, ``round``, ``trunc``, ``mod``, ``fmod``, all through the
UnaryFn/BinaryFn door.

Each is smooth but for a set of measure zero, so its derivative at a point is the derivative of
the piece the point is in; every order follows, in every engine, from the one ``fdiff``. At a
kink or a tie the convention is JAX's (PyTorch's differs only for ``clip`` at its bounds):

===================  ====================================  ==============================
function             derivative                            at ties and kinks
===================  ====================================  ==============================
``maximum(a, b)``    1 to the larger argument, 0 to the     ½ each when a == b (JAX and
                     other                                  PyTorch alike)
``minimum(a, b)``    1 to the smaller                      ½ each when a == b
``fmax``/``fmin``    as NumPy picks: the non-nan one        all to b when a == b (JAX)
``relu(x)``          1 for x > 0, else 0                   relu′(0) = 0 (JAX, PyTorch)
``clip(x, lo, hi)``  minimum(maximum(x, lo), hi)           ½ at x == lo or hi (JAX;
                                                            PyTorch's clamp gives 1)
``heaviside(x, h)``  0 in x; in h: 1 where x == 0          H(0) = h, ½ by default (SymPy)
floor, ceil, round,  0 (a structural zero)                  0 at the jumps (JAX, PyTorch)
trunc
``mod(a, b)``        1 in a, −floor(a/b) in b              the same at the jumps
``fmod(a, b)``       1 in a, −trunc(a/b) in b              the same at the jumps
===================  ====================================  ==============================

``round`` rounds half to even, as NumPy, JAX and PyTorch do.

A comparison of Terms (``x > 0``, ``np.less(x, y)``) is a *condition*: a node whose value is 1.0
or 0.0 and whose derivative is a structural zero; ``bool()`` of it is still the control-flow
error, since the graph is traced once. ``where(c, a, b)`` is ``select(c, a) + select(not c, b)``
with ``select(c, a)`` = a where c holds, else exactly 0 — also where a is inf or nan. ``select``
is linear in a and a condition is constant to every engine, so a forward derivative is
``select`` of the branch's derivative, Taylor mode's coefficient k the selected coefficient k,
and a reverse sweep's adjoint of a the selected adjoint, kept a selection as it goes down the
branch (every rule is linear in the adjoint): the untaken branch's inf or nan never reaches a
value or a derivative of any order, in any engine — unlike JAX's where-nan-gradient pitfall.

>>> import subgraph_ad as sad
>>> tape = sad.Tape(); x = tape.var("x", 0.0)
>>> f = sad.where(x > 0, sad.log(x), x * x)
>>> f.eval(), f.gen_graph(x).eval(), f.diff(x, 2, method="graph").eval()
(0.0, 0.0, 2.0)
>>> sad.maximum(x, 0.0).derive(x), sad.relu(x).derive(x)
(0.5, 0.0)
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..core.term import Term
from .base import BinaryFn, Function, UnaryFn, node_function, register
from .elementary import Elementary, Step


def _sympy_indicator(cond: Any) -> Any:
    """1 where the SymPy condition holds, else 0: the SymPy form of a condition Term."""
    import sympy

    return sympy.Piecewise((1, cond), (0, True))


def _indicated(expr: Any) -> Any:
    """The SymPy condition of a 0/1 indicator ``Piecewise((1, c), (0, True))``, else None."""
    import sympy

    if isinstance(expr, sympy.Piecewise) and len(expr.args) == 2:
        (one, cond), (zero, rest) = expr.args
        if one == 1 and zero == 0 and rest == sympy.true:
            return cond
    return None


def sympy_truth(c: Any) -> Any:
    """The SymPy condition "c is not 0" of a condition's SymPy form, read back as the relation
    it stands for (``x > 0``, not ``Ne(Piecewise((1, x > 0), (0, True)), 0)``)."""
    import sympy

    inner = _indicated(c)
    if inner is None:
        return sympy.Ne(c, 0)
    if isinstance(inner, sympy.Eq) and inner.rhs == 0 and _indicated(inner.lhs) is not None:
        return sympy.Not(_indicated(inner.lhs))  # the complement: equal(c, 0)
    return inner


def _relation(name: str, ufunc: Any, symbol: str, sympy_name: str) -> Elementary:
    def convert(a: Any, b: Any) -> Any:
        import sympy

        return _sympy_indicator(getattr(sympy, sympy_name)(a, b))

    return Elementary(name, 2, (ufunc,), f"(1.0 if {{0}} {symbol} {{1}} else 0.0)", f"((({{0}}) {symbol} ({{1}})) ? 1.0 : 0.0)",
                      convert)


def _select_array(c: Any, a: Any) -> Any:
    """a where c is not 0, else exactly 0 (an inf or nan a included)."""
    return np.where(np.asarray(c) != 0.0, a, 0.0)[()]


def _select(c: float, a: float) -> float:
    return a if c != 0.0 else 0.0


def _sympy_select(c: Any, a: Any) -> Any:
    import sympy

    return sympy.Piecewise((a, sympy_truth(c)), (0, True))


def _maximum(a: float, b: float) -> float:
    return a if a > b or a != a else b  # a != a: nan, which np.maximum propagates


def _minimum(a: float, b: float) -> float:
    return a if a < b or a != a else b


def _relu(v: float) -> float:
    """max(0, v) with NumPy's tie: −0.0 at −0.0, as np.maximum(0.0, v) and the C form give."""
    return v if v >= 0.0 or v != v else 0.0


def _heaviside(v: float, h: float) -> float:
    if v != v:
        return v
    return 1.0 if v > 0.0 else 0.0 if v < 0.0 else h


def _sympy_relu(a: Any) -> Any:
    import sympy

    return sympy.Piecewise((a, a > 0), (0, True))  # relu'(0) = 0, as here (Max(0, x) would say ½)


def _sympy_isfinite(a: Any) -> Any:
    import sympy

    return _sympy_indicator(sympy.Abs(a) < sympy.oo)


def _sympy_isnan(a: Any) -> Any:
    import sympy

    return sympy.S.Zero  # a real SymPy expression is never nan


def _sympy_named(name: str) -> Callable[..., Any]:
    def convert(*args: Any) -> Any:
        from .sympy_rounding import CLASSES

        return CLASSES[name](*args)

    return convert


def _sympy_fmod(a: Any, b: Any) -> Any:
    from .sympy_rounding import fmod

    return fmod(a, b)


def _mod(a: float, b: float) -> float:
    """Python's float ``%`` is NumPy's remainder (the sign of b); at b = 0 it raises, and the
    one-point path reruns the point on NumPy (nan)."""
    return a % b


def _fmod(a: float, b: float) -> float:
    """C's fmod (the sign of a) from ``%``, which Numba compiles and math.fmod it does not: for
    |a| and |b| the two are the same exact remainder. At b = 0 (or an infinite a) it raises
    in Python, and the one-point path reruns the point on NumPy (nan); Numba gives nan."""
    return math.copysign(abs(a) % abs(b), a)


def _sympy_op(name: str) -> Callable[..., Any]:
    def convert(*args: Any) -> Any:
        import sympy

        return getattr(sympy, name)(*args)

    return convert


#: The elementaries of this module: comparisons, selection, extrema, rounding.
KINKS: dict[str, Elementary] = {e.name: e for e in (
    _relation("less", np.less, "<", "Lt"),
    _relation("less_equal", np.less_equal, "<=", "Le"),
    _relation("greater", np.greater, ">", "Gt"),
    _relation("greater_equal", np.greater_equal, ">=", "Ge"),
    _relation("equal", np.equal, "==", "Eq"),
    _relation("not_equal", np.not_equal, "!=", "Ne"),
    Elementary("isnan", 1, (np.isnan,), "(1.0 if {0} != {0} else 0.0)", "(isnan({0}) ? 1.0 : 0.0)", _sympy_isnan),
    Elementary("isfinite", 1, (np.isfinite,), "(1.0 if abs({0}) < _inf else 0.0)", "(isfinite({0}) ? 1.0 : 0.0)",
               _sympy_isfinite),
    Elementary("select", 2, (_select_array,), _select, "((({0}) != 0.0) ? ({1}) : 0.0)", _sympy_select),
    Elementary("maximum", 2, (np.maximum,), _maximum, "((({0}) > ({1}) || ({0}) != ({0})) ? ({0}) : ({1}))",
               _sympy_op("Max")),
    Elementary("minimum", 2, (np.minimum,), _minimum, "((({0}) < ({1}) || ({0}) != ({0})) ? ({0}) : ({1}))",
               _sympy_op("Min")),
    Elementary("fmax", 2, (np.fmax,), np.fmax, "fmax({0}, {1})", _sympy_op("Max")),
    Elementary("fmin", 2, (np.fmin,), np.fmin, "fmin({0}, {1})", _sympy_op("Min")),
    Elementary("relu", 1, (functools.partial(np.maximum, 0.0),), _relu,
               "((({0}) >= 0.0 || ({0}) != ({0})) ? ({0}) : 0.0)", _sympy_relu),  # -0 at -0: np.maximum's tie
    Elementary("heaviside", 2, (np.heaviside,), _heaviside,
               "(({0}) != ({0}) ? ({0}) : ({0}) > 0.0 ? 1.0 : ({0}) < 0.0 ? 0.0 : ({1}))", _sympy_op("Heaviside")),
    Elementary("floor", 1, (np.floor,), np.floor, "floor({0})", _sympy_named("floor")),
    Elementary("ceil", 1, (np.ceil,), np.ceil, "ceil({0})", _sympy_named("ceiling"), ("ceiling",)),
    Elementary("rint", 1, (np.rint,), np.rint, "nearbyint({0})", _sympy_named("rint")),
    Elementary("trunc", 1, (np.trunc,), np.trunc, "trunc({0})", _sympy_named("trunc")),
    Elementary("mod", 2, (np.remainder,), _mod,
               "(fmod({0}, {1}) != 0.0 && ((fmod({0}, {1}) < 0.0) != (({1}) < 0.0)) ? fmod({0}, {1}) + ({1}) "
               ": fmod({0}, {1}) != 0.0 ? fmod({0}, {1}) : copysign(0.0, {1}))", _sympy_named("Mod"), ("remainder",)),
    Elementary("fmod", 2, (np.fmod,), _fmod, "fmod({0}, {1})", _sympy_fmod),
)}


def _const(like: Any, value: float) -> Any:
    """The number ``value`` as a constant of ``like``'s tape, or as a number when the rule runs
    on numbers."""
    return like.tape.const(value) if isinstance(like, Term) else value


def is_condition(t: Any) -> bool:
    """Whether ``t`` is a condition Term: a comparison or test node, valued 1.0 or 0.0."""
    return isinstance(t, Term) and bool(getattr(node_function(t.node), "condition", False))


class Kinded(Function):
    """A family of functions told apart by ``kind``: each one's name is its kind, and its
    spelling that entry of ``KINKS``."""

    kind: str

    @property
    def name(self) -> str:
        return self.kind

    @property
    def spelling(self) -> tuple[Step, ...]:
        return (KINKS[self.kind],)


@dataclass(frozen=True, repr=False)
class Compare(Kinded, BinaryFn):
    """``a < b`` and the other comparisons as a number, 1.0 or 0.0 (0.0 where an operand is
    nan, but for ``!=``); their derivative is a structural zero."""

    kind: str = "less"
    condition = True
    constant = True

    def f(self, a: Any, b: Any) -> Any:
        return super().f(a, b) + 0.0  # NumPy's bools as the floats 1.0 and 0.0

    def fdiff(self, lhs: Term, rhs: Term, output: Term) -> tuple[None, None]:
        return None, None


@dataclass(frozen=True, repr=False)
class Predicate(Kinded, UnaryFn):
    """``isnan`` and ``isfinite`` as conditions (1.0 or 0.0; derivative 0)."""

    kind: str = "isnan"
    condition = True
    constant = True

    def f(self, v: Any) -> Any:
        return super().f(v) + 0.0

    def fdiff(self, input: Term, output: Term) -> None:
        return None


less = register(Compare("less"))
less_equal = register(Compare("less_equal"))
greater = register(Compare("greater"))
greater_equal = register(Compare("greater_equal"))
equal = register(Compare("equal"))
not_equal = register(Compare("not_equal"))
#: Not registered: tests of a value, for the partials of fmax and fmin and for np.isnan/np.isfinite
#: on Terms, not functions a formula is written with (SymPy's reals are never nan).
isnan = Predicate("isnan")
isfinite = Predicate("isfinite")

#: Python's comparison operators by the condition they build.
COMPARISONS: dict[str, Function] = {"<": less, "<=": less_equal, ">": greater, ">=": greater_equal,
                                   "==": equal, "!=": not_equal}


def truth(c: Any) -> Any:
    """``c`` as a condition: a condition Term as it is, any other Term as ``c != 0`` (NumPy's
    truth of a number, nan counting as true), a number as a bool."""
    if is_condition(c):
        return c
    if isinstance(c, Term):
        return not_equal(c, 0.0)
    return bool(c)


def logical_not(c: Any) -> Any:
    """The complement of a condition (exactly, nan included): ``truth(c) == 0``."""
    c = truth(c)
    return equal(c, 0.0) if isinstance(c, Term) else not c


def logical_and(a: Any, b: Any) -> Any:
    """Both conditions hold: their product, 1.0 or 0.0, a condition again."""
    a, b = truth(a), truth(b)
    if not isinstance(a, Term) or not isinstance(b, Term):
        return (b if a else False) if not isinstance(a, Term) else (a if b else False)
    return truth(a * b)


def logical_or(a: Any, b: Any) -> Any:
    """Either condition holds: ``a + b != 0``."""
    a, b = truth(a), truth(b)
    if not isinstance(a, Term) or not isinstance(b, Term):
        return (True if a else b) if not isinstance(a, Term) else (True if b else a)
    return truth(a + b)


@dataclass(frozen=True, repr=False)
class Select(BinaryFn):
    """select(c, a): a where the condition c holds, else exactly 0, even for an inf or nan a.
    Linear in a, so the forward chain rule is select(c, da): the strong zero."""

    name = "select"
    spelling = (KINKS["select"],)
    linear = (False, True)

    def fdiff(self, lhs: Term, rhs: Term, output: Term) -> tuple[None, Any]:
        return None, (lhs if is_condition(lhs) else not_equal(lhs, 0.0))


select = register(Select())


def selection(t: Term) -> tuple[Term, Term] | None:
    """(c, a) of a selection node select(c, a), else None: the reverse sweep keeps an adjoint
    that is one outermost, so that no partial multiplies its zero."""
    node = t.node
    if isinstance(node_function(node), Select):
        c, a = node.args
        return Term(t.tape, c), Term(t.tape, a)
    return None


def _is_zero(v: Any) -> bool:
    if isinstance(v, Term):
        return v.node.op == "const" and v.node.payload == 0.0
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) and v == 0.0


def _is_one(v: Term | float | np.number) -> bool:
    if isinstance(v, Term):
        return v.node.op == "const" and v.node.payload == 1.0
    return bool(v == 1.0)  # a NumPy number compares to a NumPy bool


def _elementwise(fn: Callable[..., Any], *args: Any) -> Any | None:
    """``fn`` broadcast over the arguments when one is an array that holds Terms, or that meets a
    Term (an object array of the results, as NumPy's own object loops give); None otherwise."""
    arrays = [a for a in args if isinstance(a, np.ndarray) and a.ndim]
    if arrays and (any(a.dtype == object for a in arrays) or any(isinstance(a, Term) for a in args)):
        return np.frompyfunc(fn, len(args), 1)(*args)
    return None


def where(condition: Any, a: Any, b: Any) -> Any:
    """a where ``condition`` holds, else b, elementwise like ``np.where``: a selection node whose
    derivative is the derivative of the branch taken. Numbers and numeric arrays alone give
    ``np.where``'s value.

    >>> import subgraph_ad as sad
    >>> tape = sad.Tape(); x = tape.var("x", -1.0)
    >>> f = sad.where(x > 0, sad.sqrt(x), -x)
    >>> f.eval(), f.gen_graph(x).eval()
    (1.0, -1.0)
    """
    found = _elementwise(where, condition, a, b)
    if found is not None:
        return found
    c = truth(condition) if isinstance(condition, Term) else condition
    if isinstance(c, Term) and c.node.op == "const":  # decided already
        c = c.node.payload != 0.0
    if not isinstance(c, Term):
        if any(isinstance(v, Term) for v in (a, b)):
            return a if c else b
        return np.where(condition, a, b)[()]
    if _is_zero(b) and isinstance(a, (Term, int, float, np.number)) and not isinstance(a, bool) and _is_one(a):
        return c  # where(c, 1, 0): the condition itself
    parts = [select(c, a) if not _is_zero(a) else None, select(logical_not(c), b) if not _is_zero(b) else None]
    if parts[0] is None and parts[1] is None:
        return c.tape.zero
    return parts[0] if parts[1] is None else parts[1] if parts[0] is None else parts[0] + parts[1]


def _either(a: Any, b: Any) -> Any:
    """1 where either 0/1 value is 1 (on Terms and numbers alike)."""
    return a + b - a * b


@dataclass(frozen=True, repr=False)
class Extremum(Kinded, BinaryFn):
    """``maximum``, ``minimum`` (nan propagates; ties split the derivative ½/½) and ``fmax``,
    ``fmin`` (a nan operand is ignored; a tie gives all to b), with JAX's derivatives."""

    kind: str = "maximum"

    def fdiff(self, lhs: Any, rhs: Any, output: Any) -> tuple[Any, Any]:
        wins = greater if self.kind in ("maximum", "fmax") else less
        if self.kind in ("fmax", "fmin"):
            first = _either(wins(lhs, rhs), isnan(rhs))
            return first, 1.0 - first
        tie = 0.5 * equal(lhs, rhs)
        return wins(lhs, rhs) + tie, wins(rhs, lhs) + tie


maximum = register(Extremum("maximum"))
minimum = register(Extremum("minimum"))
fmax = register(Extremum("fmax"))
fmin = register(Extremum("fmin"))


@dataclass(frozen=True, repr=False)
class Relu(UnaryFn):
    """max(x, 0); relu′ = 1 for x > 0, else 0 (relu′(0) = 0, as JAX and PyTorch)."""

    name = "relu"
    spelling = (KINKS["relu"],)

    def fdiff(self, input: Any, output: Any) -> Any:
        return greater(input, 0.0)


relu = register(Relu())


def clip(x: Any, lo: Any = None, hi: Any = None) -> Any:
    """``np.clip``: minimum(maximum(x, lo), hi), as JAX defines it (so at x == lo or hi the
    derivative is ½); None leaves that side open."""
    if lo is not None:
        x = maximum(x, lo)
    return x if hi is None else minimum(x, hi)


@dataclass(frozen=True, repr=False)
class Heaviside(BinaryFn):
    """heaviside(x, h0): 0 for x < 0, h0 at 0, 1 for x > 0 (h0 = ½ by default, SymPy's
    Heaviside(x)); derivative 0 in x, and in h0 1 where x == 0."""

    name = "heaviside"
    spelling = (KINKS["heaviside"],)

    def __call__(self, x: Any, h0: Any = 0.5) -> Any:  # type: ignore[override]
        return super().__call__(x, h0)

    def fdiff(self, lhs: Any, rhs: Any, output: Any) -> tuple[None, Any]:
        return None, equal(lhs, 0.0)


heaviside = register(Heaviside())

_ROUNDING = {"floor": "floor", "ceil": "ceil", "round": "rint", "trunc": "trunc"}


@dataclass(frozen=True, repr=False)
class Rounding(Kinded, UnaryFn):
    """floor, ceil, round (half to even) and trunc: piecewise constant, derivative a structural
    zero. ``round(x, decimals)`` rounds to that many decimals, as ``np.round``."""

    kind: str = "floor"
    constant = True

    @property
    def spelling(self) -> tuple[Step, ...]:
        return (KINKS[_ROUNDING[self.kind]],)

    def __call__(self, x: Any, decimals: int = 0) -> Any:  # type: ignore[override]
        if decimals:
            if self.kind != "round" or isinstance(decimals, bool) or not isinstance(decimals, (int, np.integer)):
                raise TypeError(f"{self.name}() takes decimals (an int) for round only, got {decimals!r}")
            scale = 10.0 ** int(decimals)
            return super().__call__(x * scale) / scale
        return super().__call__(x)

    def fdiff(self, input: Term, output: Term) -> None:
        return None


floor = register(Rounding("floor"))
ceil = register(Rounding("ceil"))
round_ = register(Rounding("round"))
trunc = register(Rounding("trunc"))


@dataclass(frozen=True, repr=False)
class Remainder(Kinded, BinaryFn):
    """mod(a, b) = a − b·floor(a/b), with the sign of b (NumPy's ``%``, ``np.mod``,
    ``np.remainder``), and fmod(a, b) = a − b·trunc(a/b), with the sign of a (C's fmod); the
    partials are 1 and −floor(a/b) (−trunc(a/b)), also at the jumps."""

    kind: str = "mod"

    def fdiff(self, lhs: Any, rhs: Any, output: Any) -> tuple[Any, Any]:
        quotient = (floor if self.kind == "mod" else trunc)(lhs / rhs)
        return _const(output, 1.0), -quotient


mod = register(Remainder("mod"))
fmod = register(Remainder("fmod"))


@dataclass(frozen=True, repr=False)
class StopGradient(UnaryFn):
    """The identity with a structurally zero derivative (JAX's ``lax.stop_gradient``): a shift
    that only steadies the numbers, such as the max in logsumexp."""

    name = "stop_gradient"
    constant = True
    jumps = False
    spelling = (Elementary("identity", 1, (np.positive,), "(+{0})", "({0})", lambda a: a),)

    def fdiff(self, input: Term, output: Term) -> None:
        return None


#: Not registered: np.positive stays the identity, and text never names it.
stop_gradient = StopGradient()


def reduce_extremum(values: Any, fn: Function) -> Any:
    """``np.max``/``np.min`` of a sequence (an object array, raveled) as a chain of
    maximum/minimum nodes; numbers among them stay numbers until they meet a Term."""
    items = list(np.asarray(values, dtype=object).ravel())
    if not items:
        raise ValueError(f"{fn.name} of an empty array has no identity")
    out = items[0]
    for item in items[1:]:
        out = fn(out, item)
    return out
