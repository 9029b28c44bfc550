"""taylor_integrate against closed forms and scipy's DOP853: the Taylor step, dense output,
forward and backward, non-autonomous right-hand sides, singularities and both backends."""

from fractions import Fraction

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import subgraph_ad as sad
from subgraph_ad.ode.pairs import advance


def oscillator(t, y):
    return np.array([y[1], -y[0]])


def kepler(t, s):
    x, y, vx, vy = s
    r3 = (x * x + y * y) ** 1.5
    return np.array([vx, vy, -x / r3, -y / r3])


def pendulum(t, y):
    return np.array([y[1], -np.sin(y[0])])


def test_harmonic_oscillator_dense_output_matches_the_closed_form():
    res = sad.taylor_integrate(oscillator, (0.0, 20.0), [0.0, 1.0], dense_output=True)
    assert res.success and res.status == 0 and res.order == 20
    t = np.linspace(0.0, 20.0, 2001)  # points inside the steps, not only their ends
    assert np.max(np.abs(res.sol(t) - np.array([np.sin(t), np.cos(t)]))) < 1e-13
    assert res.sol(3.0).shape == (2,)
    assert np.allclose(res.y[:, -1], [np.sin(20.0), np.cos(20.0)], atol=1e-13, rtol=0)


def test_t_eval_backward_in_time_matches_the_closed_form():
    t_eval = np.linspace(10.0, -5.0, 31)
    res = sad.taylor_integrate(oscillator, (10.0, -5.0), [np.sin(10.0), np.cos(10.0)], t_eval=t_eval)
    assert np.array_equal(res.t, t_eval)
    assert np.max(np.abs(res.y - np.array([np.sin(t_eval), np.cos(t_eval)]))) < 1e-13


def test_kepler_returns_to_its_initial_state_after_100_orbits():
    # e = 0.5, a = 1, μ = 1: period 2π; from pericentre r = a(1 − e) with speed sqrt((1 + e)/(1 − e))
    y0 = np.array([0.5, 0.0, 0.0, np.sqrt(3.0)])
    res = sad.taylor_integrate(kepler, (0.0, 200.0 * np.pi), y0)
    assert res.success
    assert np.max(np.abs(res.y[:, -1] - y0)) < 1e-10


def test_kepler_follows_the_analytic_orbit_between_steps():
    # the eccentric anomaly E solves Kepler's equation M = E − e·sin E; x = cos E − e, y = sqrt(1 − e²)·sin E
    e = 0.5
    res = sad.taylor_integrate(kepler, (0.0, 4.0 * np.pi), [1 - e, 0.0, 0.0, np.sqrt((1 + e) / (1 - e))],
                               dense_output=True)
    t = np.linspace(0.0, 4.0 * np.pi, 97)
    big_e = t.copy()
    for _ in range(60):
        big_e -= (big_e - e * np.sin(big_e) - t) / (1 - e * np.cos(big_e))
    expected = np.array([np.cos(big_e) - e, np.sqrt(1 - e * e) * np.sin(big_e)])
    assert np.max(np.abs(res.sol(t)[:2] - expected)) < 1e-13


def test_non_autonomous_right_hand_side():
    t_eval = np.linspace(0.0, 3.0, 13)
    res = sad.taylor_integrate(lambda t, y: -2.0 * t * y, (0.0, 3.0), [1.0], t_eval=t_eval)
    assert np.max(np.abs(res.y[0] - np.exp(-t_eval ** 2))) < 1e-15


def test_args_are_passed_to_fun():
    res = sad.taylor_integrate(lambda t, y, k: -k * y, (0.0, 2.0), [1.0], args=(3.0,))
    assert res.y[0, -1] == pytest.approx(np.exp(-6.0), rel=1e-14, abs=0)


def test_pendulum_forward_then_back_returns_to_the_start():
    y0 = np.array([2.5, 0.0])  # a large swing: far from the linear regime
    there = sad.taylor_integrate(pendulum, (0.0, 50.0), y0)
    back = sad.taylor_integrate(pendulum, (50.0, 0.0), there.y[:, -1])
    assert there.t[-1] == 50.0 and back.t[-1] == 0.0
    assert np.max(np.abs(back.y[:, -1] - y0)) < 1e-11


def test_singularity_stops_with_status_minus_one_and_says_where():
    # y' = y², y(0) = 1: y = 1/(1 − t) blows up at t = 1
    res = sad.taylor_integrate(lambda t, y: y ** 2, (0.0, 2.0), [1.0])
    assert res.status == -1 and not res.success
    assert "t = 0.99999999999" in res.message and "singularity" in res.message
    assert abs(res.t[-1] - 1.0) < 1e-12
    assert res.y[0, -1] > 1e11


def test_max_steps_bounds_the_loop():
    res = sad.taylor_integrate(oscillator, (0.0, 100.0), [0.0, 1.0], max_steps=3)
    assert res.status == -1 and res.nsteps == 3 and "max_steps = 3" in res.message
    assert len(res.t) == 4 and res.t[-1] < 100.0


def test_tolerance_sets_the_order_and_the_error():
    for rtol, bound in ((1e-6, 1e-5), (1e-10, 1e-9)):
        res = sad.taylor_integrate(oscillator, (0.0, 10.0), [0.0, 1.0], rtol=rtol, atol=rtol)
        assert res.order == int(np.ceil(-np.log(rtol) / 2 + 1))
        assert np.max(np.abs(res.y[:, -1] - [np.sin(10.0), np.cos(10.0)])) < bound


def test_agrees_with_scipy_dop853_on_van_der_pol():
    def vdp(t, y):
        return np.array([y[1], 2.0 * (1 - y[0] ** 2) * y[1] - y[0]])

    t_eval = np.linspace(0.0, 10.0, 41)
    res = sad.taylor_integrate(vdp, (0.0, 10.0), [2.0, 0.0], t_eval=t_eval)
    ref = solve_ivp(vdp, (0.0, 10.0), [2.0, 0.0], method="DOP853", rtol=1e-13, atol=1e-13, t_eval=t_eval)
    assert np.max(np.abs(res.y - ref.y)) < 1e-10  # DOP853's own error at rtol 1e-13 over this span


def test_backends_give_the_same_result():
    a = sad.taylor_integrate(kepler, (0.0, 10.0), [0.5, 0.0, 0.0, np.sqrt(3.0)], backend="numpy")
    b = sad.taylor_integrate(kepler, (0.0, 10.0), [0.5, 0.0, 0.0, np.sqrt(3.0)], backend="numba")
    assert a.nsteps == b.nsteps
    assert np.max(np.abs(a.y[:, -1] - b.y[:, -1])) < 1e-13


def test_terms_as_the_right_hand_side():
    tape = sad.Tape()
    t, x, v = tape.var("t"), tape.var("x"), tape.var("v")
    res = sad.taylor_integrate([v, -x + sad.cos(t)], (0.0, 5.0), [1.0, 0.0])
    # x'' + x = cos t, x(0) = 1, x'(0) = 0: x = cos t + t·sin t / 2
    assert res.y[0, -1] == pytest.approx(np.cos(5.0) + 2.5 * np.sin(5.0), abs=1e-13)


def test_time_is_kept_without_drift():
    # 10⁵ steps of 0.1 from 1e3: plain summation drifts by ~1e-10; the pair (hi, lo) is the exact sum
    # to within the pair's own rounding
    hi, lo = np.array([1e3]), np.array([0.0])
    for _ in range(100_000):
        hi, lo = advance(hi, lo, np.array([0.1]))
    exact = Fraction(1e3) + 100_000 * Fraction(0.1)  # the floats' exact sum
    assert abs(Fraction(hi[0]) + Fraction(lo[0]) - exact) <= Fraction(1e-20)
    plain = 1e3
    for _ in range(100_000):
        plain += 0.1
    assert abs(Fraction(plain) - exact) > 1e-9  # what the pair avoids
