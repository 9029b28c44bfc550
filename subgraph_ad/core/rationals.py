"""Exact scalars for the builds that keep rational factors exact (Taylor mode above order 150 or
from exact inputs, closed forms).

``fractions.Fraction`` normalises every result in Python and made exact Taylor builds three
times slower than float ones; SymPy already picks the fastest rational type there is: gmpy2's
``mpq`` where gmpy2 is installed (the ``exact`` extra; about ten times Fraction's speed), its own
``PythonMPQ`` otherwise. Neither mixes silently with floats (``mpq * 1.0`` is an mpfr,
``PythonMPQ * 1.0`` a TypeError), so every number enters through ``rational`` and leaves as a
float or as a ``Fraction`` (``fraction``), the exact value a constant node records.
"""

from __future__ import annotations

from fractions import Fraction
from numbers import Rational as _Rational
from typing import Any, Union

from sympy.external.gmpy import MPQ

#: The exact scalar type of the builds: gmpy2's mpq or SymPy's PythonMPQ.
Q: Any = MPQ
#: An exact scalar, for annotations (the two types share no base class a checker knows).
Exact = Any

__all__ = ["Exact", "Q", "fraction", "rational"]


def rational(x: Union[int, float, Fraction, Exact]) -> Exact:
    """x as an exact scalar: an int, a Fraction, a finite float (exactly its binary value) or
    already one.

    >>> rational(0.5) == Fraction(1, 2), rational(Fraction(9, 40)) * 2 == Fraction(9, 20)
    (True, True)
    """
    if type(x) is MPQ:
        return x
    if isinstance(x, _Rational):
        return MPQ(int(x.numerator), int(x.denominator))
    num, den = float(x).as_integer_ratio()
    return MPQ(num, den)


def fraction(q: Exact) -> Fraction:
    """An exact scalar as the ``Fraction`` a constant node records."""
    return Fraction(int(q.numerator), int(q.denominator))
