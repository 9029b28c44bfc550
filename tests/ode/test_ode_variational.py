"""Sensitivities ∂y(t)/∂y0 from the variational equations, against the oscillator's state
transition matrix and central finite differences on Kepler's problem."""

import numpy as np

import subgraph_ad as sad


def kepler(t, s):
    x, y, vx, vy = s
    r3 = (x * x + y * y) ** 1.5
    return np.array([vx, vy, -x / r3, -y / r3])


def test_oscillator_sensitivity_is_the_rotation_matrix():
    t_eval = np.linspace(0.0, 7.0, 8)
    res = sad.taylor_integrate(lambda t, y: np.array([y[1], -y[0]]), (0.0, 7.0), [0.3, -0.2], t_eval=t_eval,
                               variational=True)
    assert res.y.shape == (2, 8) and res.sensitivity.shape == (2, 2, 8)
    c, s = np.cos(t_eval), np.sin(t_eval)
    assert np.max(np.abs(res.sensitivity - np.array([[c, s], [-s, c]]))) < 1e-14


def test_kepler_sensitivity_against_central_differences():
    y0 = np.array([0.5, 0.0, 0.0, np.sqrt(3.0)])
    span = (0.0, 3.0)
    res = sad.taylor_integrate(kepler, span, y0, variational=True)
    # central differences: the error is c·h² with c ≈ 1.6e3 here (it falls 100× per 10× smaller h from
    # 1e-3 to 1e-5), so ~2e-9 at h = 1e-6, plus rounding ~ε·|y(t)|/h·‖∂y/∂y0‖ ~ 1e-9
    h = 1e-6
    columns = []
    for j in range(4):
        e = np.zeros(4)
        e[j] = h
        plus = sad.taylor_integrate(kepler, span, y0 + e).y[:, -1]
        minus = sad.taylor_integrate(kepler, span, y0 - e).y[:, -1]
        columns.append((plus - minus) / (2 * h))
    assert np.max(np.abs(res.sensitivity[:, :, -1] - np.array(columns).T)) < 1e-8
    plain = sad.taylor_integrate(kepler, span, y0)
    assert np.max(np.abs(res.y[:, -1] - plain.y[:, -1])) < 1e-13
