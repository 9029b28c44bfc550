"""Special functions on one float, written with ``math`` and Python arithmetic only: the forms
the Numba backend compiles into its kernels and the one-point code runs, where the array forms
call SciPy or NumPy array code (``gamma``): sinc's k-th derivative, the polygammas ψ⁽ⁿ⁾ and
erf⁻¹.

ψ⁽ⁿ⁾ below 0 is reflected, ψ⁽ⁿ⁾(x) = (−1)ⁿ ψ⁽ⁿ⁾(1 − x) − πⁿ⁺¹ Pₙ(cot πx), with P₀(c) = c and
Pₖ₊₁(c) = −(1 + c²) Pₖ′(c) (each of one sign for c of one sign), cot πx from x reduced mod 1
exactly to |r| <= ½, as sin π(½ − |r|)/sin πr (0 at the half-integers). ψ is then moved into [1, 2] by
ψ(x + 1) = ψ(x) + 1/x below 10 and summed there as its Taylor series about its positive root
(coefficients from mpmath), so that it keeps its relative accuracy at the root; above 10 it is
its asymptotic series ln x − 1/(2x) − Σₖ B₂ₖ/(2k x²ᵏ). ψ⁽ⁿ⁾ (n >= 1) is shifted up by
ψ⁽ⁿ⁾(x) = ψ⁽ⁿ⁾(x + 1) − (−1)ⁿ⁺¹ n!/xⁿ⁺¹ (terms of one sign: nothing cancels) until its
asymptotic series is good to a quarter ulp (``asymptotic``). At the poles and at ±inf the
values are SciPy's: ψ(±0) = ∓inf, ψ at a negative whole number or −inf is nan, ψ⁽ⁿ⁾ (n >= 1)
there is (−1)ⁿ⁺¹·inf, ψ(inf) = inf and ψ⁽ⁿ⁾(inf) = 0.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction
from typing import Callable

import numpy as np

EPS = 2.0 ** -52

#: Bernoulli numbers B₂, B₄, …, B₂₂: the asymptotic series of ψ⁽ⁿ⁾ keeps the first ten
#: terms, and the eleventh bounds what it leaves out.
BERNOULLI = (Fraction(1, 6), Fraction(-1, 30), Fraction(1, 42), Fraction(-1, 30), Fraction(5, 66),
             Fraction(-691, 2730), Fraction(7, 6), Fraction(-3617, 510), Fraction(43867, 798),
             Fraction(-174611, 330), Fraction(854513, 138))

#: ψ's positive root in two parts, and ψ⁽ᵏ⁾(root)/k! for k = 45 … 1 (highest first): its Taylor
#: series about the root, from mpmath at 40 digits (the tests recompute them). The series'
#: radius is the root's distance to the pole at 0 (1.46): on [1, 2], at most 0.54 from the root,
#: a term is 0.37ᵏ of the first.
DIGAMMA_ROOT = (1.4616321449683622, 9.549995429965697e-17)
DIGAMMA_TAYLOR = (
    2.6148576951961865e-08, -3.821960061917494e-08, 5.586299683532171e-08, -8.165115189488409e-08,
    1.1934394829830244e-07, -1.7443695117727745e-07, 2.549626552021554e-07,
    -3.7266161283438227e-07, 5.446941930669446e-07, -7.96142543124197e-07, 1.1636675363548843e-06,
    -1.7008538854332607e-06, 2.486022733129538e-06, -3.6336507898010456e-06,
    5.3110609208898636e-06, -7.762817668462094e-06, 1.134638458466385e-05,
    -1.6584242271854135e-05, 2.424006611860132e-05, -3.5430070947659604e-05,
    5.178575795222081e-05, -7.569179582195066e-05, 0.0001106337276874741, -0.00016170622091974803,
    0.00023635601564027053, -0.0003454680251063077, 0.000504953265834602, -0.0007380709389960052,
    0.0010788252019162967, -0.0015769367714301972, 0.002305126326734928, -0.003369801655439328,
    0.004926781395729853, -0.007204534386356869, 0.010538791616612175, -0.01542476590494896,
    0.022597648232218104, -0.03316112647484736, 0.04880428816414311, -0.07219956125645471,
    0.10782405069126237, -0.16394270544240652, 0.258499760955651, -0.4427631689835921,
    0.9676722454476212,
)
#: B₂ₖ/(2k) for k = 7 … 1: ψ's asymptotic series, good to 2e-17 from 10 on.
DIGAMMA_ASYMPTOTIC = tuple(float(b / (2 * k)) for k, b in reversed(list(enumerate(BERNOULLI[:7], 1))))


def digamma_at(x: float) -> float:
    """ψ on one float (see the module)."""
    if x != x or x == math.inf:
        return x
    y = 0.0
    if x <= 0.0:
        if x == 0.0:
            return -1.0 / x
        r = np.fmod(x, 1.0) if x != -math.inf else 0.0  # exact
        if r == 0.0:  # a pole, or −inf
            return math.nan
        if r < -0.5:  # (exact) so that sin πr is taken near its zero, where it keeps its relative accuracy
            r += 1.0
        y, x = -math.pi * math.sin(math.pi * (0.5 - abs(r))) / math.sin(math.pi * r), 1.0 - x  # −π cot πr
    if x < 1.0:
        y -= 1.0 / x
        x += 1.0
    elif x < 10.0:
        while x > 2.0:
            x -= 1.0
            y += 1.0 / x
    if x <= 2.0:  # about the root, in two parts: ψ near it keeps its relative accuracy
        d = (x - DIGAMMA_ROOT[0]) - DIGAMMA_ROOT[1]
        series = 0.0
        for a in DIGAMMA_TAYLOR:
            series = series * d + a
        return y + series * d
    series = 0.0
    if x < 1e17:
        z = 1.0 / (x * x)
        for a in DIGAMMA_ASYMPTOTIC:
            series = series * z + a
        series *= z
    return y + math.log(x) - 0.5 / x - series


@functools.cache
def asymptotic(n: int) -> tuple[float, tuple[float, ...]]:
    """Where and how ψ⁽ⁿ⁾ (n >= 1) is its asymptotic series,
    ψ⁽ⁿ⁾(x) = (−1)ⁿ⁺¹ (n−1)!/xⁿ · (1 + n/(2x) + Σₖ cₖ x⁻²ᵏ),  cₖ = B₂ₖ (2k+n−1)!/((2k)! (n−1)!):
    the coefficients c₁…c₁₀, and the x from which the first term left out, which bounds the
    error of the series (it alternates once x > n), is below a quarter ulp."""
    c = [b * Fraction(math.factorial(2 * k + n - 1), math.factorial(2 * k) * math.factorial(n - 1))
         for k, b in enumerate(BERNOULLI, 1)]
    kept, first_left_out = c[:-1], abs(float(c[-1]))
    start = max(float(n), (first_left_out / (EPS / 4)) ** (1.0 / (2 * len(c))))
    return start, tuple(float(ck) for ck in kept)


def _cot_derivative(n: int) -> tuple[float, ...]:
    """The coefficients of Pₙ, lowest power first: dⁿ/dxⁿ cot x = Pₙ(cot x)."""
    p = [0, 1]  # P₀(c) = c
    for _ in range(n):
        slope = [k * p[k] for k in range(1, len(p))] + [0, 0]  # Pₖ′, room for the c² below
        p = [-(slope[k] + (slope[k - 2] if k >= 2 else 0)) for k in range(len(p) + 1)]
    return tuple(float(v) for v in p)


@functools.cache
def polygamma_at(n: int) -> Callable[[float], float]:
    """ψ⁽ⁿ⁾ on one float (see the module); for n >= 1 its constants are the closure's numbers."""
    if n == 0:
        return digamma_at
    start, coefficients = asymptotic(n)
    reversed_coefficients = coefficients[::-1]
    cot = _cot_derivative(n)[::-1]  # highest power first, for Horner
    sign = 1.0 if n % 2 else -1.0  # (−1)ⁿ⁺¹
    flip = -sign  # (−1)ⁿ
    factorial = float(math.factorial(n))
    power, reflection = n + 1, math.pi ** (n + 1)

    def value(x: float) -> float:
        if x != x:
            return x
        if x == math.inf:
            return 0.0
        reflected, scale = 0.0, 1.0
        if x <= 0.0:
            r = np.fmod(x, 1.0) if x != -math.inf else 0.0  # exact
            if r == 0.0:  # a pole, or −inf
                return sign * math.inf
            if r < -0.5:  # (exact) so that sin πr is taken near its zero, where it keeps its relative accuracy
                r += 1.0
            c = math.sin(math.pi * (0.5 - abs(r))) / math.sin(math.pi * r)  # cot πr
            p = 0.0
            for a in cot:
                p = p * c + a
            reflected, scale, x = -reflection * p, flip, 1.0 - x
        shifted = 0.0
        while x < start:
            shifted += factorial / x ** power
            x += 1.0
        t = 1.0 / x
        y = t * t
        series = 0.0
        for a in reversed_coefficients:
            series = series * y + a
        lead = t
        for j in range(1, n):
            lead = lead * (j * t)
        return scale * sign * (lead * (1.0 + 0.5 * n * t + series * y) + shifted) + reflected

    return value


TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def erfinv_at(y: float) -> float:
    """erf⁻¹ on one float: Winitzki's estimate (2e-3 relative) then four Newton steps on erf
    for |y| <= ½, on erfc beyond, where 1 − |y| is exact and erfc keeps the tail's digits. ±0
    give +0, as SciPy's erfinv (the NumPy path's) does."""
    if y != y:
        return y
    if y == 0.0:
        return 0.0
    a = abs(y)
    if a >= 1.0:
        return math.copysign(math.inf, y) if a == 1.0 else math.nan
    q = 1.0 - a
    log_term = math.log(q) + math.log1p(a)  # ln(1 − a²) without the cancellation
    w = 2.0 / (math.pi * 0.147) + 0.5 * log_term
    x = math.sqrt(math.sqrt(w * w - log_term / 0.147) - w)
    for _ in range(4):
        slope = TWO_OVER_SQRT_PI * math.exp(-x * x)
        if a <= 0.5:
            x -= (math.erf(x) - a) / slope
        else:
            x += (math.erfc(x) - q) / slope
    return math.copysign(x, y)


def sinc_derivative_at(k: int, extra: int) -> Callable[[float], float]:
    """sinc's k-th derivative on one float: ``sinc.sinc_derivative``'s recurrence on Python
    complex numbers (``extra``: the steps of the downward recurrence past k + u)."""
    rotation = 1j ** k  # iᵏ, and the other constants of this order, as the closure's numbers
    scale, odd, start = math.pi ** k, k % 2 == 1, k + extra

    def value(x: float) -> float:
        a = abs(x)
        u = math.pi * a
        r = a % 2.0  # exact (a >= 0: fmod): sin(πx) and cos(πx) without the rounding of πx
        e = complex(math.cos(math.pi * r), math.sin(math.pi * r))
        if not u < k:  # upward from I₀ (nan and inf too)
            moment = (e - 1.0) / (1j * u)
            for j in range(1, k + 1):
                moment = (e - j * moment) / (1j * u)
        else:  # downward from I_N = 0
            moment = 0j
            for j in range(start + int(math.ceil(u)), k, -1):
                moment = (e - 1j * u * moment) / j
        sign = -1.0 if odd and x < 0 else 1.0
        return (moment * rotation).real * scale * sign

    return value


__all__ = ["BERNOULLI", "DIGAMMA_ROOT", "DIGAMMA_TAYLOR", "asymptotic", "digamma_at", "erfinv_at", "polygamma_at",
           "sinc_derivative_at"]
