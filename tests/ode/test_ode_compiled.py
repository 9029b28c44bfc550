"""The compiled stepping loop (``ode/compiled.py``) against the NumPy driver, NumPy's elementaries
and closed forms: its values, its output buffers refilled many times, events handed back to
Python, and the accuracy of the compensated state over a long integration."""

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import subgraph_ad as sad
from subgraph_ad.functions.elementary import ELEMENTARY
from subgraph_ad.ode import compiled, run
from subgraph_ad.ode.system import NATIVE

from tests.conftest import Softplus


def kepler(t, s):
    x, y, vx, vy = s
    r3 = (x * x + y * y) ** 1.5
    return np.array([vx, vy, -x / r3, -y / r3])


POINTS = np.array([-2.5, -1.0, -0.3, -0.0, 0.0, 1e-300, 0.4, 0.5, 0.999, 1.0, 1.7, 3.0, 40.0, np.inf, -np.inf, np.nan])


@pytest.mark.parametrize("name", NATIVE)
def test_native_elementaries_are_numpys(name):
    elementary = ELEMENTARY[name]
    for x in POINTS:
        for y in (POINTS if elementary.arity == 2 else [0.0]):
            if name == "pow" and x == -np.inf and y == 0.5:  # NumPy's x ** 0.5 is sqrt(x): nan, C's pow: inf
                continue
            with np.errstate(all="ignore"):
                want = float(elementary.array(*(np.float64(x), np.float64(y))[:elementary.arity]))
            got = compiled.native(NATIVE.index(name), x, y)
            if np.isnan(want):
                assert np.isnan(got), (name, x, y)
            else:  # libm's and NumPy's own loops may differ in the last bits
                assert got == pytest.approx(want, rel=4e-16, abs=1e-300), (name, x, y)


def test_buffers_refilled_and_events_handed_back_give_the_numpy_drivers_results(monkeypatch):
    monkeypatch.setattr(run, "_PATH", 3)
    monkeypatch.setattr(run, "_DENSE", 2)
    monkeypatch.setattr(run, "_CHUNK", 5)

    def crossing(t, y):
        return y[0] - 0.25

    def oscillator(t, y):
        return np.array([y[1], -y[0] - 0.1 * np.sin(t)])

    kwargs = dict(events=crossing, dense_output=True)
    for extra in ({}, {"t_eval": np.linspace(0.0, 20.0, 41)}):
        a = sad.taylor_integrate(oscillator, (0.0, 20.0), [0.0, 1.0], backend="numpy", **kwargs, **extra)
        b = sad.taylor_integrate(oscillator, (0.0, 20.0), [0.0, 1.0], backend="numba", **kwargs, **extra)
        assert a.nsteps == b.nsteps > 15 and a.t.shape == b.t.shape
        assert np.max(np.abs(a.t - b.t)) < 1e-13 and np.max(np.abs(a.y - b.y)) < 1e-13
        assert len(a.t_events[0]) == len(b.t_events[0]) == 7
        assert np.max(np.abs(a.t_events[0] - b.t_events[0])) < 1e-13
        times = np.linspace(0.0, 20.0, 333)
        assert np.max(np.abs(a.sol(times) - b.sol(times))) < 1e-13
    ref = solve_ivp(oscillator, (0.0, 20.0), [0.0, 1.0], method="DOP853", rtol=2.3e-14, atol=1e-16,
                    events=crossing, dense_output=True)
    assert np.max(np.abs(b.t_events[0] - ref.t_events[0])) < 1e-11
    assert np.max(np.abs(b.sol(times) - ref.sol(times))) < 1e-11


def test_max_steps_and_terminal_events_stop_the_compiled_loop(monkeypatch):
    monkeypatch.setattr(run, "_CHUNK", 4)
    res = sad.taylor_integrate(kepler, (0.0, 100.0), [0.5, 0.0, 0.0, np.sqrt(3.0)], max_steps=10)
    assert res.status == -1 and res.nsteps == 10 and "max_steps = 10" in res.message

    def apocentre(t, y):
        return y[0] * y[2] + y[1] * y[3]  # r·v: 0 at the apsides, falling through 0 at the apocentre
    apocentre.terminal, apocentre.direction = 2, -1
    res = sad.taylor_integrate(kepler, (0.0, 100.0), [0.5, 0.0, 0.0, np.sqrt(3.0)], events=apocentre)
    # a = 1, period 2π: the apocentre at π, 3π
    assert res.status == 1 and res.t_events[0] == pytest.approx([np.pi, 3 * np.pi], rel=1e-14)
    assert res.t[-1] == pytest.approx(3 * np.pi, rel=1e-14)


def test_a_function_the_kernel_does_not_know_steps_in_python_with_the_same_result():
    softplus = Softplus()

    def rhs(t, y):
        return np.array([softplus(y[1]) - 0.5, -y[0]])

    a = sad.taylor_integrate(rhs, (0.0, 5.0), [0.1, 0.2], backend="numpy")
    b = sad.taylor_integrate(rhs, (0.0, 5.0), [0.1, 0.2], backend="numba")
    ref = solve_ivp(rhs, (0.0, 5.0), [0.1, 0.2], method="DOP853", rtol=2.3e-14, atol=1e-16)
    assert np.max(np.abs(a.y[:, -1] - b.y[:, -1])) < 1e-14
    assert np.max(np.abs(b.y[:, -1] - ref.y[:, -1])) < 1e-11


def test_kepler_returns_to_its_initial_state_after_1000_orbits():
    """e = 0.5, a = 1: the period is 2π exactly. The state is a compensated pair and each step's
    increment summed in pairs, so the rounding a step adds is that of y_1·h's factors, not of y:
    2.7e-10 without them (heyoka's default 6.9e-10, its high-accuracy mode 1.8e-10)."""
    y0 = np.array([0.5, 0.0, 0.0, np.sqrt(3.0)])
    res = sad.taylor_integrate(kepler, (0.0, 2000.0 * np.pi), y0)
    assert res.success
    assert np.max(np.abs(res.y_final - y0)) < 1e-10
