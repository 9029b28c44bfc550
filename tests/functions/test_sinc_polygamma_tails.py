"""Accuracy where a method hands over to another: sinc's derivatives at every order up to 60
over twelve decades of x, and the polygamma family on JAX out to 1e308 and inf, against mpmath
at high precision.

sinc⁽ᵏ⁾ is checked against its envelope: |sinc⁽ᵏ⁾(x)| <= πᵏ·min(1/(k+1), 2/(π|x|)) (from
sinc(x) = ∫₀¹ cos(πxt) dt), the size of the oscillation it is a point of; relative to the value
itself, no float64 method can do better than its rounding next to a zero."""

import math
import warnings

import jax
import mpmath
import numpy as np
import pytest

import subgraph_ad as sad
from subgraph_ad.compile.backends.jax import asymptotic
from subgraph_ad.functions.sinc import sinc_derivative

ORDERS = range(1, 61)
#: twelve decades on both sides of 0, the switch points u = πx ≈ 2 + k/2 of the old method
#: choice, and 8.594 (u = 27.0, order 50)
XS = sorted({0.0, 8.594, -8.594, *np.round(np.geomspace(1e-6, 1e6, 25), 12), *-np.geomspace(3e-4, 3e4, 6),
             *[(2.0 + k / 2.0) / math.pi for k in (10, 30, 50, 60)]})


def sinc_truth(x: float, k: int) -> float:
    """d^k/dx^k sin(πx)/(πx) at the float x: its Maclaurin series with enough digits for the
    cancellation (the terms reach e^{π|x|}), or Leibniz's rule for π|x| >= 40 (its terms, at
    most k!/(π|x|)^{k+1} <= 1, do not cancel beyond 30 digits)."""
    u0 = abs(x) * math.pi
    with mpmath.workdps(40 + int(u0 / 2.3) if u0 < 40 else 60):
        u = mpmath.mpf(x) * mpmath.pi
        if abs(u) < 40:
            total, m = mpmath.mpf(0), (k + 1) // 2
            while True:
                term = (-1) ** m * u ** (2 * m - k) / ((2 * m + 1) * mpmath.factorial(2 * m - k))
                total += term
                if 2 * m - k > abs(u) + 10 and abs(term) < mpmath.mpf(10) ** (-mpmath.mp.dps):
                    break
                m += 1
        else:
            total = sum(mpmath.binomial(k, j) * mpmath.sin(u + j * mpmath.pi / 2) * (-1) ** (k - j)
                        * mpmath.factorial(k - j) / u ** (k - j + 1) for j in range(k + 1))
        return float(total * mpmath.pi ** k)


def envelope(x: float, k: int) -> float:
    u = abs(x) * math.pi
    return math.pi ** k * (1.0 / (k + 1) if u == 0 else min(1.0 / (k + 1), 2.0 / u))


@pytest.mark.parametrize("k", ORDERS)
def test_sinc_derivatives_within_1e_12_of_their_envelope(k):
    got = sinc_derivative(np.array(XS), k)
    for x, value in zip(XS, got):
        truth = sinc_truth(x, k)
        assert abs(value - truth) <= 1e-12 * envelope(x, k), (k, x, value, truth)


@pytest.mark.parametrize("k", [1, 2, 7, 30, 60])
def test_sinc_derivatives_on_numba_and_at_one_point_within_1e_12_of_their_envelope(k):
    """The same recurrence on one float (``_sinc_derivative_at``): compiled by Numba into its
    kernels (no fallback to NumPy) and run by the one-point code, against mpmath; ±inf and nan
    give nan, as NumPy's sinc does."""
    tape = sad.Tape()
    x = tape.var("x")
    d = sad.sinc(x).diff(x, k)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a BackendWarning would mean NumPy ran it
        on_numba = sad.lambdify([x], d, backend="numba", cache=False)
        got = on_numba(np.array(XS + [math.inf, -math.inf, math.nan]))
    assert on_numba.backend == "numba"
    for x_, value in zip(XS, got):
        truth = sinc_truth(x_, k)
        assert abs(value - truth) <= 1e-12 * envelope(x_, k), (k, x_, value, truth)
        assert abs(on_numba(x_) - truth) <= 1e-12 * envelope(x_, k), (k, x_, "one point")
    assert np.isnan(got[-3:]).all()


@pytest.mark.parametrize("k", [50, 60])
def test_sinc_diff_at_the_old_switch_is_exact(k):
    """The reported point: x = 8.594 (πx = 27.0), where summing the series in float64 was 3.1e-5
    off at order 50 and 8.7e-4 at 60. sinc⁽ᵏ⁾ is nowhere near a zero there, so relative."""
    tape = sad.Tape()
    x = tape.var("x", 8.594)
    truth = sinc_truth(8.594, k)
    assert abs(truth) > 1e-3 * envelope(8.594, k)
    assert sad.sinc(x).diff(x, k).eval() == pytest.approx(truth, rel=1e-12, abs=0)
    assert sad.sinc(x).diff(x, k, method="taylor").eval() == pytest.approx(truth, rel=1e-12, abs=0)


def test_sinc_derivative_numbers_and_arrays_agree():
    for k in (1, 2, 7, 60):
        for x in (0.0, -0.3, 5.5, 1e4):
            one = sinc_derivative(x, k)
            assert isinstance(one, np.float64) and one == sinc_derivative(np.array([x, 1.0]), k)[0]


# -- the polygamma family on JAX -----------------------------------------------------------------------
#: finite points out to the largest float, where ψ⁽ⁿ⁾ for n >= 1 is (−1)ⁿ⁺¹(n−1)!/xⁿ to first order
#: (below 1e-308 it underflows), the neighbourhood of the switch to the asymptotic series, and inf
BIG = [0.25, 1.0, 3.5, 7.0, 12.0, 20.0, 27.0, 40.0, 75.0, 150.0, 1e3, 1e8, 1e20, 1e50, 1e100, 1e150, 1e200, 1e300,
       1.7e308]
TINY = np.finfo(float).tiny


def polygamma_truth(n: int, x: float) -> float:
    with mpmath.workdps(40):
        return float(mpmath.polygamma(n, mpmath.mpf(x)))


@pytest.mark.parametrize("n", [1, 2, 3, 4, 6, 10])
def test_jax_lgamma_derivatives_in_the_tails(n):
    """``diff(lgamma(x), x, n + 1)`` is ψ⁽ⁿ⁾: on JAX within 1e-13 of mpmath wherever the value is a
    normal float (JAX's own polygamma is 0 at 1e200 for ψ′, where it is 1e-200), below that
    within the smallest normal (XLA flushes subnormals), and 0 at inf (JAX's: nan), as SciPy."""
    tape = sad.Tape()
    x = tape.var("x")
    run = sad.lambdify([x], sad.lgamma(x).diff(x, n + 1), backend="jax")
    start, _ = asymptotic(n)  # the switch to the asymptotic series, and both sides of it
    points = BIG + [start * (1 - 1e-12), start, start * (1 + 1e-12), start * 0.9, start * 1.1]
    got = np.asarray(run(np.array(points + [math.inf])))
    for point, value in zip(points, got):
        truth = polygamma_truth(n, point)
        if abs(truth) >= TINY:
            assert value == pytest.approx(truth, rel=1e-13, abs=0), (n, point, value, truth)
        else:
            assert abs(value - truth) <= TINY, (n, point, value, truth)
    assert got[-1] == 0.0
    numpy = sad.lambdify([x], sad.lgamma(x).diff(x, n + 1), backend="numpy")
    assert numpy(math.inf) == 0.0  # the NumPy path (SciPy) agrees


def test_jax_polygamma_in_float32_keeps_its_tail():
    """float32 in: ψ′(1e30) = 1e-30, a normal float32, not JAX's 0."""
    tape = sad.Tape()
    x = tape.var("x")
    run = sad.lambdify([x], sad.polygamma(1, x), backend="jax")
    got = run(np.array([1e30, 1e10, 3.0], np.float32))
    assert got.dtype == np.float32
    truth = [polygamma_truth(1, float(np.float32(p))) for p in (1e30, 1e10, 3.0)]
    assert np.allclose(np.asarray(got, float), truth, rtol=1e-6, atol=0)


def test_jax_grad_of_polygamma_is_the_next_one_in_the_tails():
    """jax.grad of ψ⁽ⁿ⁾'s program is ψ⁽ⁿ⁺¹⁾, in the tails too (under jit, in float64)."""
    tape = sad.Tape()
    x = tape.var("x")
    run = sad.lambdify([x], sad.polygamma(1, x), backend="jax")
    points = np.array([0.7, 30.0, 1e5, 1e100, 1e150])
    with jax.enable_x64(True):
        got = np.asarray(jax.jit(jax.vmap(jax.grad(run)))(points))
        at_inf = float(jax.grad(run)(math.inf))
    for point, value in zip(points, got):
        assert value == pytest.approx(polygamma_truth(2, point), rel=1e-13, abs=0), point
    assert at_inf == 0.0


# -- the polygamma family on Numba and at one point ----------------------------------------------------
#: both sides of 0, the reflection's half-integers (where cot πx is 0), the positive and the first
#: negative root of ψ, and the poles and infinities, where SciPy's values are the reference
NEGATIVE = [-0.3, -0.5, -0.504083, -1.5, -2.7, -7.5, -10.3, -745.2, -999.5]
EDGES = [0.0, -0.0, -1.0, -7.0, -1e300, math.inf, -math.inf, math.nan]


def test_digamma_taylor_coefficients_are_mpmaths():
    """ψ's root and its Taylor coefficients about it, as ``special_scalar`` holds them, are
    mpmath's at 40 digits rounded to floats."""
    from subgraph_ad.functions.special_scalar import DIGAMMA_ROOT, DIGAMMA_TAYLOR

    with mpmath.workdps(40):
        root = mpmath.findroot(mpmath.digamma, 1.4616)
        assert DIGAMMA_ROOT == (float(root), float(root - float(root)))
        assert DIGAMMA_TAYLOR == tuple(float(mpmath.polygamma(k, root) / mpmath.factorial(k))
                                       for k in range(len(DIGAMMA_TAYLOR), 0, -1))


@pytest.mark.parametrize("n", [0, 1, 2, 3, 7])
def test_polygamma_on_numba_and_at_one_point_against_mpmath(n):
    """ψ⁽ⁿ⁾ compiled by Numba (``special_scalar``: no fallback to SciPy's NumPy path) and at one
    point: within 1e-13 of mpmath relative where the value is a normal float, or (ψ) 2.5e-16
    absolute by its negative root, where the reflection's 1 − x rounds to the ulp of 1.5
    (2.2e-16), which ψ′ ≈ 0.93 there carries into a value of 7e-8; at the poles and infinities
    SciPy's values (ψ(±0) = ∓inf, nan at a negative whole number, (−1)ⁿ⁺¹·inf for n >= 1)."""
    import scipy.special

    tape = sad.Tape()
    x = tape.var("x")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a BackendWarning would mean NumPy ran it
        on_numba = sad.lambdify([x], sad.polygamma(n, x), backend="numba", cache=False)
        points = [1e-300, 1e-8, 0.3, 1.0, 1.4616321449683622, 2.5, 9.99, 10.0, 37.2] + BIG + NEGATIVE
        got = on_numba(np.array(points + EDGES))
    assert on_numba.backend == "numba"
    for point, value in zip(points, got):
        truth = polygamma_truth(n, point)
        one = on_numba(point)
        for found in (value, one):
            if abs(truth) >= TINY:
                assert found == pytest.approx(truth, rel=1e-13, abs=2.5e-16 if n == 0 else 0), (n, point, found, truth)
            else:
                assert abs(found - truth) <= TINY, (n, point, found, truth)
    with np.errstate(all="ignore"):
        want = scipy.special.digamma(np.array(EDGES)) if n == 0 else scipy.special.polygamma(n, np.array(EDGES))
    np.testing.assert_array_equal(got[len(points):], want)


def test_erfinv_on_numba_and_at_one_point_against_mpmath():
    """erf⁻¹ compiled by Numba (``special_scalar.erfinv_at``, no fallback to SciPy) and at one
    point, within 1e-15 of mpmath relative across (−1, 1), the tails to 1 − 2⁻⁵³ and the
    subnormals; ±1 give ±inf, beyond them nan, ±0 give +0 (SciPy's, the NumPy path's, value)."""
    tape = sad.Tape()
    x = tape.var("x")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        on_numba = sad.lambdify([x], sad.erfinv(x), backend="numba", cache=False)
        points = [*np.linspace(-0.999, 0.999, 41), 0.5, -0.5, 1e-300, 5e-324, -1e-10, 1 - 1e-6, -(1 - 1e-12),
                  1 - 2**-52, 1 - 2**-53]
        got = on_numba(np.array(points + [0.0, -0.0, 1.0, -1.0, 1.5, math.nan]))
    assert on_numba.backend == "numba"
    for point, value in zip(points, got):
        with mpmath.workdps(40):
            truth = float(mpmath.erfinv(mpmath.mpf(point)))
        for found in (value, on_numba(point)):
            assert found == pytest.approx(truth, rel=1e-15, abs=0), (point, found, truth)
    tail = got[len(points):]
    assert tail[0] == tail[1] == 0.0 and math.copysign(1, tail[0]) == math.copysign(1, tail[1]) == 1
    assert tail[2] == math.inf and tail[3] == -math.inf and np.isnan(tail[4:]).all()
