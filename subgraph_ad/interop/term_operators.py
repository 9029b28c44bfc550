"""The operators NumPy-style code uses on a Term beyond arithmetic: comparisons that build
conditions, ``& | ^ ~`` on conditions, ``// % divmod``, ``round`` and ``math.floor`` and
friends."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..core.term import Term
from ..functions import kinks
from .array_functions import array_function
from .ufuncs import floor_divide


def _number(value: Any) -> bool:
    """A real number (a SymPy number too), or a 0-d numeric array: what a comparison with a Term
    turns into a condition."""
    if isinstance(value, np.ndarray):
        return value.ndim == 0 and value.dtype.kind in "biuf"
    if isinstance(value, (bool, np.bool_)):
        return False
    return isinstance(value, (int, float, np.integer, np.floating)) or (
        type(value).__module__.startswith("sympy") and getattr(value, "is_number", False))


def _comparison(symbol: str) -> Callable[[Term, Any], Any]:
    fn = kinks.COMPARISONS[symbol]

    def compare(self: Term, other: Any) -> Any:
        if isinstance(other, Term) or _number(other):
            return fn(self, self._lift(other[()] if isinstance(other, np.ndarray) else other))
        return NotImplemented

    compare.__name__ = f"__{fn.name}__"
    compare.__doc__ = f"``self {symbol} other`` as a condition Term (1.0 or 0.0, derivative 0)."
    return compare


def _equality(symbol: str) -> Callable[[Term, Any], Any]:
    fn = kinks.COMPARISONS[symbol]

    def compare(self: Term, other: Any) -> Any:
        if isinstance(other, Term):  # the same node or not: what dicts, sets and `in` rely on
            same = other.tape is self.tape and other.index == self.index
            return same if symbol == "==" else not same
        if _number(other):
            return fn(self, self._lift(other[()] if isinstance(other, np.ndarray) else other))
        if isinstance(other, (complex, np.complexfloating)):  # False for every x would be a silent branch
            raise TypeError(f"cannot compare a Term ({self!r} {symbol} {other!r}): a Term is real, so equality with a "
                            "complex number is no condition; compare with its real part")
        return NotImplemented

    compare.__doc__ = (f"Term {symbol} Term: whether they are (not) the same node; Term {symbol} number: a "
                       "condition Term.")
    return compare


def _binary(fn: Callable[[Any, Any], Any], reflected: bool = False) -> Callable[[Term, Any], Any]:
    def method(self: Term, other: Any) -> Any:
        if not (isinstance(other, Term) or _number(other)):
            return NotImplemented
        other = self._lift(other[()] if isinstance(other, np.ndarray) else other)
        return fn(other, self) if reflected else fn(self, other)

    return method


def _divmod(a: Any, b: Any) -> tuple[Any, Any]:
    return floor_divide(a, b), kinks.mod(a, b)


def _round(self: Term, ndigits: int | None = None) -> Term:
    return kinks.round_(self, ndigits or 0)


#: The operators NumPy-style code uses on Terms, set on Term by ``numpy_dispatch``: comparisons
#: (conditions), ``& | ^ ~`` on conditions, ``// % divmod``, ``round``, ``math.floor`` and
#: friends, and NumPy's array functions.
TERM_OPERATORS: dict[str, Any] = {
    "__lt__": _comparison("<"), "__le__": _comparison("<="), "__gt__": _comparison(">"), "__ge__": _comparison(">="),
    "__eq__": _equality("=="), "__ne__": _equality("!="),
    "__and__": _binary(kinks.logical_and), "__rand__": _binary(kinks.logical_and, True),
    "__or__": _binary(kinks.logical_or), "__ror__": _binary(kinks.logical_or, True),
    "__xor__": _binary(lambda a, b: kinks.not_equal(kinks.truth(a), kinks.truth(b))),
    "__rxor__": _binary(lambda a, b: kinks.not_equal(kinks.truth(a), kinks.truth(b)), True),
    "__invert__": kinks.logical_not,
    "__floordiv__": _binary(floor_divide), "__rfloordiv__": _binary(floor_divide, True),
    "__mod__": _binary(kinks.mod), "__rmod__": _binary(kinks.mod, True),
    "__divmod__": _binary(_divmod), "__rdivmod__": _binary(_divmod, True),
    "__round__": _round, "__floor__": lambda self: kinks.floor(self), "__ceil__": lambda self: kinks.ceil(self),
    "__trunc__": lambda self: kinks.trunc(self),
    "__array_function__": array_function,
}
