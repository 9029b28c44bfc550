"""A condition that switches inside a step: the step ends at the switch, against closed forms.

Each right-hand side is a polynomial or exponential on each side of its switch, so the step
rule alone would take one step over the switch with the first branch's series; the closed
forms below are the exact solutions, piece by piece."""

import math

import numpy as np
import pytest

import subgraph_ad as sad

BACKENDS = ["numba", "numpy"]
C = 1.0 / 3.0 + 0.5  # the kink of F(t − C), at no float a step would land on by chance


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_time_condition_switches_inside_the_only_step(backend):
    t_eval = np.linspace(0.0, 2.0, 41)
    res = sad.taylor_integrate(lambda t, y: np.array([sad.where(t < 1.0, 1.0, 0.0)]), (0.0, 2.0), [0.0],
                               t_eval=t_eval, backend=backend)
    assert res.status == 0
    assert np.max(np.abs(res.y[0] - np.minimum(t_eval, 1.0))) < 1e-13
    assert abs(res.y_final[0] - 1.0) < 1e-13


# F(u) and its antiderivative G(u) = ∫_0^u F: y(t) = G(t − C) − G(−C) for y′ = F(t − C), y(0) = 0
KINKS = {
    "relu": (sad.relu, lambda u: np.maximum(u, 0.0) ** 2 / 2.0),
    "abs": (sad.abs, lambda u: u * np.abs(u) / 2.0),
    "maximum": (lambda u: sad.maximum(u, 0.0), lambda u: np.maximum(u, 0.0) ** 2 / 2.0),
    "clip": (lambda u: sad.clip(u, -0.25, 0.5),
             lambda u: np.where(u < -0.25, -0.25 * u - 0.03125, np.where(u > 0.5, 0.5 * u - 0.125, u * u / 2.0))),
    "heaviside": (lambda u: sad.heaviside(u, 0.5), lambda u: np.maximum(u, 0.0)),
    "sign": (sad.sign, np.abs),
    "floor": (sad.floor, lambda u: np.maximum(-u, 0.0) + np.maximum(u - 1.0, 0.0)),  # u in [−0.83, 1.17]
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(KINKS))
def test_a_kink_or_jump_in_t(name, backend):
    fn, antiderivative = KINKS[name]
    t_eval = np.linspace(0.0, 2.0, 57)
    res = sad.taylor_integrate(lambda t, y: np.array([fn(t - C)]), (0.0, 2.0), [0.0], t_eval=t_eval,
                               backend=backend)
    assert res.status == 0
    exact = antiderivative(t_eval - C) - antiderivative(-C)
    assert np.max(np.abs(res.y[0] - exact)) < 1e-13


def _abs_crossing(t, a):
    """y′ = |y| + 1, y(0) = −a < 0: y = 1 − (1 + a)·e^{−t} until it crosses 0 at ln(1 + a), then e^{t − ln(1 + a)} − 1."""
    cross = math.log1p(a)
    return np.where(t <= cross, 1.0 - (1.0 + a) * np.exp(-t), np.exp(t - cross) - 1.0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_state_crosses_a_kink(backend):
    t_eval = np.linspace(0.0, 2.0, 81)
    res = sad.taylor_integrate(lambda t, y: np.array([sad.abs(y[0]) + 1.0]), (0.0, 2.0), [-1.0], t_eval=t_eval,
                               dense_output=True, backend=backend)
    assert res.status == 0
    exact = _abs_crossing(t_eval, 1.0)
    assert np.max(np.abs(res.y[0] - exact) / np.maximum(1.0, np.abs(exact))) < 1e-13
    fine = np.linspace(0.0, 2.0, 1001)  # the dense output between and across the steps
    assert np.max(np.abs(res.sol(fine)[0] - _abs_crossing(fine, 1.0))) < 1e-13 * math.e ** 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_piecewise_constant_floor_of_t(backend):
    t_eval = np.linspace(0.0, 4.5, 91)
    res = sad.taylor_integrate(lambda t, y: np.array([sad.floor(t)]), (0.0, 4.5), [0.0], t_eval=t_eval,
                               backend=backend)
    n = np.floor(t_eval)
    assert res.status == 0
    assert np.max(np.abs(res.y[0] - (n * (n - 1.0) / 2.0 + n * (t_eval - n)))) < 1e-13


@pytest.mark.parametrize("backend", BACKENDS)
def test_backward_in_time(backend):
    """y′ = relu(t − 1) from y(3) = 2 back to 0: y = (t − 1)²/2 past 1, 0 before."""
    t_eval = np.linspace(3.0, 0.0, 61)
    res = sad.taylor_integrate(lambda t, y: np.array([sad.relu(t - 1.0)]), (3.0, 0.0), [2.0], t_eval=t_eval,
                               dense_output=True, backend=backend)
    exact = np.maximum(t_eval - 1.0, 0.0) ** 2 / 2.0
    assert res.status == 0
    assert np.max(np.abs(res.y[0] - exact)) < 1e-13
    assert np.max(np.abs(res.sol(t_eval)[0] - exact)) < 1e-13


@pytest.mark.parametrize("backend", BACKENDS)
def test_ensemble_members_switch_at_their_own_times(backend):
    a = np.array([0.5, 1.0, 2.0, 3.0])  # crossings at ln(1 + a): 0.41 … 1.39
    t_eval = np.linspace(0.0, 2.0, 41)
    res = sad.taylor_integrate(lambda t, y: np.array([sad.abs(y[0]) + 1.0]), (0.0, 2.0), -a[None, :],
                               t_eval=t_eval, backend=backend)
    assert np.all(res.status == 0)
    for b, ab in enumerate(a):
        exact = _abs_crossing(t_eval, ab)
        assert np.max(np.abs(res.y[0, :, b] - exact) / np.maximum(1.0, np.abs(exact))) < 1e-13


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("max_steps", [None, 50])
def test_a_chattering_threshold_stops_with_a_status(backend, max_steps):
    """y′ = 2 below 1, −1 above: y reaches 1 at t = 0.5 and then each branch drives it back across
    (a sliding mode, no classical solution): the integration stops there instead of looping."""
    res = sad.taylor_integrate(lambda t, y: np.array([sad.where(y[0] < 1.0, 2.0, -1.0)]), (0.0, 2.0), [0.0],
                               backend=backend, max_steps=max_steps)
    assert res.status == -1 and not res.success
    assert ("switches back and forth" in res.message) if max_steps is None else ("max_steps" in res.message)
    assert abs(res.t_final - 0.5) < 1e-12 and abs(res.y_final[0] - 1.0) < 1e-12


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_condition_that_does_not_switch_changes_nothing(backend):
    """A condition that holds throughout: the same steps as the system without it."""
    plain = sad.taylor_integrate(lambda t, y: np.array([y[1], -y[0]]), (0.0, 10.0), [0.0, 1.0], backend=backend)
    gated = sad.taylor_integrate(lambda t, y: np.array([sad.where(t < 20.0, y[1], 0.0), -y[0]]), (0.0, 10.0),
                                 [0.0, 1.0], backend=backend)
    assert gated.nsteps == plain.nsteps
    assert np.array_equal(gated.y, plain.y)
    assert abs(gated.y_final[0] - math.sin(10.0)) < 1e-13
