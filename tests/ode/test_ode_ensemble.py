"""Ensembles: y0 of shape (n, B) gives each member its own steps, equal to member-by-member runs."""

import numpy as np

import subgraph_ad as sad


def pendulum(t, y):
    return np.array([y[1], -np.sin(y[0])])


def test_ensemble_equals_member_by_member_runs():
    y0 = np.array([[0.1, 1.0, 2.0, 2.5], [0.0, 0.5, 0.0, -0.2]])
    t_eval = np.linspace(0.0, 8.0, 5)
    ensemble = sad.taylor_integrate(pendulum, (0.0, 8.0), y0, t_eval=t_eval, dense_output=True)
    assert ensemble.y.shape == (2, 5, 4) and ensemble.success
    for b in range(4):
        one = sad.taylor_integrate(pendulum, (0.0, 8.0), y0[:, b], t_eval=t_eval, dense_output=True)
        assert ensemble.nsteps[b] == one.nsteps
        # one member's values come from lambdify's point path (math.sin), an ensemble's from NumPy's
        # sin: they may differ in the last bit, which 8 time units of a pendulum amplify to ~1e-14
        assert np.max(np.abs(ensemble.y[:, :, b] - one.y)) < 1e-13
        assert np.max(np.abs(ensemble.sol(np.array([1.3, 6.1]))[:, :, b] - one.sol(np.array([1.3, 6.1])))) < 1e-13
    assert len(set(ensemble.nsteps.tolist())) > 1  # each member its own steps


def test_ensemble_events_and_terminal_members():
    def zero(t, y):
        return y[0]
    zero.terminal = True
    y0 = np.array([[0.5, 1.0], [1.0, 0.3]])
    res = sad.taylor_integrate(lambda t, y: np.array([y[1], -y[0]]), (0.0, 10.0), y0, events=zero)
    # x = A sin(t + φ) with A sin φ = x0, A cos φ = v0: the first zero at t = π − φ
    first = np.pi - np.arctan2(y0[0], y0[1])
    assert np.allclose([res.t_events[0][b][0] for b in range(2)], first, rtol=1e-15, atol=0)
    assert np.all(res.status == 1) and np.allclose(res.t_final, first, rtol=1e-15, atol=0)
    assert np.all(np.isnan(res.y[:, 1]))  # stopped before t1
