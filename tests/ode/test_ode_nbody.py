"""A small N-body problem: energy and angular momentum are conserved to rounding level."""

import numpy as np

import subgraph_ad as sad

MASSES = np.array([1.0, 1e-3, 3e-4])


def nbody(t, s):
    q, p = s[:9].reshape(3, 3), s[9:].reshape(3, 3)
    acc = [0.0 * q[i] for i in range(3)]
    for i in range(3):
        for j in range(i + 1, 3):
            d = q[j] - q[i]
            r3 = (d @ d) ** 1.5
            acc[i] = acc[i] + MASSES[j] * d / r3
            acc[j] = acc[j] - MASSES[i] * d / r3
    return np.concatenate([p.ravel(), np.concatenate(acc)])


def invariants(s):
    q, p = s[:9].reshape(3, 3), s[9:].reshape(3, 3)
    kinetic = 0.5 * np.sum(MASSES * np.sum(p * p, axis=1))
    potential = -sum(MASSES[i] * MASSES[j] / np.linalg.norm(q[i] - q[j]) for i in range(3) for j in range(i + 1, 3))
    return kinetic + potential, np.sum(MASSES[:, None] * np.cross(q, p), axis=0)


def test_energy_and_angular_momentum_are_conserved():
    q = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.01], [0.0, 2.0, -0.02]])
    p = np.array([[0.0, 0.0, 0.0], [0.0, 1.0, 0.0], [-0.7, 0.0, 0.05]])
    s0 = np.concatenate([q.ravel(), p.ravel()])
    res = sad.taylor_integrate(nbody, (0.0, 50.0), s0, t_eval=np.linspace(0.0, 50.0, 11))
    assert res.success
    e0, l0 = invariants(s0)
    for k in range(11):
        e, ang = invariants(res.y[:, k])
        assert abs(e - e0) < 1e-14 * abs(e0) * 10  # ~ε per step over ~10² steps, as a random walk
        assert np.max(np.abs(ang - l0)) < 1e-15 * 100
