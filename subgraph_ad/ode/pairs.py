"""Sums kept as unevaluated pairs (hi, lo), so that 10⁶ steps do not drift by 10⁶ roundings:
Knuth's TwoSum, Dekker's product, a pair advanced by a step, and a Taylor step's increment added
to a compensated state. Plain arithmetic, so the same functions run on NumPy arrays in
``stepper`` and, registered with Numba by ``compiled``, on floats in the compiled loop."""

from __future__ import annotations

from typing import Any


def two_sum(a: Any, b: Any) -> tuple[Any, Any]:
    """s + e = a + b exactly, s = fl(a + b) (Knuth's TwoSum)."""
    s = a + b
    v = s - a
    return s, (a - (s - v)) + (b - v)


def two_product(a: Any, b: Any) -> tuple[Any, Any]:
    """s + e = a·b exactly, s = fl(a·b) (Dekker's product, by Veltkamp's splitting)."""
    s = a * b
    t = 134217729.0 * a
    a1 = t - (t - a)
    a2 = a - a1
    t = 134217729.0 * b
    b1 = t - (t - b)
    b2 = b - b1
    return s, ((a1 * b1 - s) + a1 * b2 + a2 * b1) + a2 * b2


def advance(hi: Any, lo: Any, h: Any) -> tuple[Any, Any]:
    """(hi, lo) + h as a normalised pair."""
    s, e = two_sum(hi, h)
    return two_sum(s, e + lo)


def add_increment(acc: Any, y1: Any, h: Any, y: Any, low: Any) -> tuple[Any, Any]:
    """(y, low) + (acc·h + y_1)·h as a pair, ``acc`` Horner's rule of the orders past 1 down to
    order 2 in floats: its last two steps and the sum in pairs, so a step adds no rounding of
    the size of y_1·h (those of the orders past 1 are h² smaller)."""
    m, e = two_product(acc, h)
    hi, lo = two_sum(m, y1)
    lo = lo + e  # (hi, lo) = acc·h + y_1
    m, e = two_product(hi, h)
    e = e + lo * h  # (m, e) = (hi + lo)·h, the increment
    total, error = two_sum(y, m)
    return two_sum(total, error + (e + low))
