"""Exact scalars for the builds that keep rational factors exact (Taylor mode above order 150 or
from exact inputs, closed forms).

``fractions.Fraction`` normalises every result in Python: with it an exact Taylor build took
three times as long as a float one. gmpy2's ``mpq`` (the ``exact`` extra, what SymPy uses when it
is installed) is about ten times faster; without gmpy2 the scalars are Fractions. The two do not
mix with floats alike (``mpq * 1.0`` is an mpfr, ``Fraction * 1.0`` a float), so every number
enters through ``rational`` and leaves as a float or as a ``Fraction`` (``fraction``), the
exact value a constant node records.
"""

from __future__ import annotations

from fractions import Fraction
from numbers import Rational
from typing import Any, Union

try:
    from gmpy2 import mpq as _mpq
except ImportError:  # the exact extra is not installed: the same numbers, slower
    _mpq = Fraction

#: The exact scalar type of the builds: gmpy2's mpq, else Fraction.
Q: Any = _mpq
#: An exact scalar, for annotations (the two types share no base class a checker knows).
Exact = Any

__all__ = ["Exact", "Q", "fraction", "rational"]


def rational(x: Union[int, float, Fraction, Exact]) -> Exact:
    """x as an exact scalar: an int, a Fraction, a finite float (exactly its binary value) or
    already one.

    >>> rational(0.5) == Fraction(1, 2), rational(Fraction(9, 40)) * 2 == Fraction(9, 20)
    (True, True)
    """
    if type(x) is Q:
        return x
    if isinstance(x, Rational):
        return Q(int(x.numerator), int(x.denominator))
    num, den = float(x).as_integer_ratio()
    return Q(num, den)


def fraction(q: Exact) -> Fraction:
    """An exact scalar (or an int) as the ``Fraction`` a constant node records."""
    return Fraction(int(q.numerator), int(q.denominator))
