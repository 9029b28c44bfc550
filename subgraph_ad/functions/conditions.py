"""Conditions and selections: comparisons and tests as condition Terms (1.0 or 0.0, derivative a
structural zero), ``truth`` and the logical operators on them, ``select`` and ``where``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..core.term import Term
from .base import BinaryFn, Function, UnaryFn, register
from .chain_rule import node_function
from .kink_elementaries import KINKS, Kinded


def is_condition(t: Any) -> bool:
    """Whether ``t`` is a condition Term: a comparison or test node, valued 1.0 or 0.0."""
    return isinstance(t, Term) and bool(getattr(node_function(t.node), "condition", False))


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
    shaped = next((v for v in (condition, a, b) if isinstance(v, Term) and v.shape), None)
    if shaped is not None:  # beside an array node, an array joins it as one node (not one per element)
        condition, a, b = (shaped._lift(v) if isinstance(v, np.ndarray) else v for v in (condition, a, b))
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
