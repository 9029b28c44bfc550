"""Taylor mode at orders past the floats' factorials (k! overflows at 171, 1/k! underflows near
180): exact scalars above ``EXACT_ABOVE``, checked against independent oracles (math, the
Hermite recurrence and exact complex powers in mpmath at high precision)."""

from __future__ import annotations

import math

import mpmath
import pytest

import subgraph_ad as sad
from subgraph_ad import Tape

mpmath.mp.dps = 60  # 60 digits: the oracles below are exact to far beyond a float's 16


def close(got: float, want, rtol: float) -> bool:
    return abs(mpmath.mpf(got) - want) <= rtol * abs(want)


@pytest.mark.parametrize("k", [171, 1000, 10_000])
def test_sin_any_order_constant_nodes(k: int) -> None:
    tape = Tape()
    x = tape.var("x", 1.0)
    f = sad.sin(x)
    before = len(tape.nodes)
    d = f.diff(x, k)
    want = [math.sin(1.0), math.cos(1.0), -math.sin(1.0), -math.cos(1.0)][k % 4]
    assert d.eval() == pytest.approx(want, rel=1e-15, abs=0)
    assert len(tape.nodes) - before <= 10  # O(1): a cos and a neg at most, whatever k


def test_exp_500() -> None:
    tape = Tape()
    x = tape.var("x", 0.3)
    assert sad.exp(x).diff(x, 500).eval() == pytest.approx(math.exp(0.3), rel=1e-15)


def hermite_derivative(n: int, x: float):
    """(d/dx)^n exp(−x²/2) = (−1)^n He_n(x) exp(−x²/2), He_{n+1} = x·He_n − n·He_{n−1}."""
    x = mpmath.mpf(x)
    a, b = mpmath.mpf(1), x
    for k in range(1, n):
        a, b = b, x * b - k * a
    return (-1) ** n * (b if n else a) * mpmath.exp(-x * x / 2)


# rtol 1e-8: the graph sums about n terms of alternating sign whose magnitudes exceed the result
# (He_n(x) at moderate x is a cancelling sum), so a float evaluation loses some digits with n;
# measured errors are ~1e-14, 1e-8 leaves room without hiding a wrong coefficient (those are off
# by O(1) relative).
@pytest.mark.parametrize("at", [0.5, 1.3, -2.0])
def test_gaussian_200_and_graph_250(at: float) -> None:
    tape = Tape()
    x = tape.var("x", at)
    f = sad.exp(-x**2 / 2)
    assert close(f.diff(x, 200).eval(), hermite_derivative(200, at), 1e-8)
    ds = sad.taylor_graph(f, x, 250)
    assert len(ds) == 250
    assert close(ds[-1].eval(), hermite_derivative(250, at), 1e-8)
    assert close(ds[199].eval(), hermite_derivative(200, at), 1e-8)


def test_gaussian_300_builds() -> None:
    tape = Tape()
    x = tape.var("x", 1.3)
    assert close(sad.exp(-x**2 / 2).diff(x, 300).eval(), hermite_derivative(300, 1.3), 1e-8)


def test_rational_180() -> None:
    """(d/dx)^n 1/(1+x²) = (−1)^n n! Im[(x − i)^−(n+1)], as 1/(1+x²) = Im 1/(x − i)."""
    n = 180
    tape = Tape()
    x = tape.var("x", 2.0)
    want = (-1) ** n * mpmath.factorial(n) * mpmath.im(mpmath.mpc(2, -1) ** (-(n + 1)))
    assert close((1 / (1 + x**2)).diff(x, n).eval(), want, 1e-8)  # 1e-8: as for the Gaussian


def test_constant_factors_beyond_floats() -> None:
    """(1+x)**2.5 at order 200: the scalar k!·binom(2.5, k) (~1e366) overflows a float while the
    node (1+x)**(2.5−k) is ~1e−78; the result (~1e288) is finite and must come out so."""
    n = 200
    tape = Tape()
    x = tape.var("x", 1.5)
    want = mpmath.rf(mpmath.mpf(2.5) - n + 1, n) * mpmath.mpf(2.5) ** (mpmath.mpf(2.5) - n)
    assert close(((1 + x) ** 2.5).diff(x, n).eval(), want, 1e-8)


def test_overflow_only_where_true() -> None:
    """exp(2x) at order 1100: 2^1100·exp(2x) is beyond the floats: +inf, never nan or a raise;
    exp(x/2) at order 1100: 2^−1100·exp(x/2) underflows to 0."""
    tape = Tape()
    x = tape.var("x", 0.1)
    assert sad.exp(2 * x).diff(x, 1100).eval() == math.inf
    assert sad.exp(x / 2).diff(x, 1100).eval() == 0.0


def test_powers_at_the_edges_past_the_floats_factorials() -> None:
    """Order 200 (exact scalars): 0 ** x is 0 for x > 0 and so is every derivative; a var base
    at 0 likewise in the exponent; a base of 1/2 gives log(1/2)^200·(1/2)^x."""
    tape = Tape()
    x = tape.var("x", 1.5)
    y = tape.var("y", 0.0)
    assert (0.0**x).diff(x, 200).eval() == 0.0
    assert math.isnan(((-2.0) ** x).diff(x, 200).eval({x: 2.0}))
    d = (y**x).diff(x, 200)
    assert d.eval() == 0.0
    assert close(d.eval({y: 0.5}), mpmath.log(mpmath.mpf(0.5)) ** 200 * mpmath.mpf(0.5) ** 1.5, 1e-13)
