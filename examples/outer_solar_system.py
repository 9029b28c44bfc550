"""The outer Solar System (Sun, Jupiter, Saturn, Uranus, Neptune, Pluto; Hairer, Lubich & Wanner,
Geometric Numerical Integration, I.2.4: AU, days, solar masses) by Taylor steps at machine
precision: the relative energy error against t stays at the level of rounding.

Run with a number of days as argument for a longer span (default 2·10⁴ days, ~2 Jupiter orbits)."""

import sys

import numpy as np

import subgraph_ad as sad

G = 2.95912208286e-4
MASSES = np.array([1.00000597682, 0.000954786104043, 0.000285583733151, 0.0000437273164546,
                   0.0000517759138449, 1.0 / 1.3e8])
POSITIONS = np.array([[0.0, 0.0, 0.0], [-3.5023653, -3.8169847, -1.5507963], [9.0755314, -3.0458353, -1.6483708],
                      [8.3101420, -16.2901086, -7.2521278], [11.4707666, -25.7294829, -10.8169456],
                      [-15.5387357, -25.2225594, -3.1902382]])
VELOCITIES = np.array([[0.0, 0.0, 0.0], [0.00565429, -0.00412490, -0.00190589], [0.00168318, 0.00483525, 0.00192462],
                       [0.00354178, 0.00137102, 0.00055029], [0.00288930, 0.00114527, 0.00039677],
                       [0.00276725, -0.00170702, -0.00136504]])
N = len(MASSES)
STATE = np.concatenate([POSITIONS.ravel(), VELOCITIES.ravel()])


def rhs(t, s):
    """Newton's equations: positions then velocities, 3 coordinates per body."""
    q = s[:3 * N].reshape(N, 3)
    acc = [0.0 * q[i] for i in range(N)]
    for i in range(N):
        for j in range(i + 1, N):
            d = q[j] - q[i]
            inv3 = (d @ d) ** -1.5
            acc[i] = acc[i] + (G * MASSES[j]) * inv3 * d
            acc[j] = acc[j] - (G * MASSES[i]) * inv3 * d
    return np.concatenate([s[3 * N:], np.concatenate(acc)])


def energy(s):
    q, v = s[:3 * N].reshape(N, 3), s[3 * N:].reshape(N, 3)
    kinetic = 0.5 * np.sum(MASSES * np.sum(v * v, axis=1))
    potential = -sum(G * MASSES[i] * MASSES[j] / np.linalg.norm(q[i] - q[j]) for i in range(N) for j in range(i + 1, N))
    return kinetic + potential


if __name__ == "__main__":
    days = float(sys.argv[1]) if len(sys.argv) > 1 else 2e4
    t_eval = np.linspace(0.0, days, 11)
    res = sad.taylor_integrate(rhs, (0.0, days), STATE, t_eval=t_eval)
    e0 = energy(STATE)
    print(f"{res.nsteps} steps of order {res.order} over {days:g} days ({res.message})")
    print("      t [days]   relative energy error")
    errors = [abs(energy(res.y[:, k]) - e0) / abs(e0) for k in range(len(t_eval))]
    for t, error in zip(t_eval, errors):
        print(f"{t:14.1f}   {error:.2e}")
    assert max(errors) < 1e-13
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        pass
    else:
        plt.semilogy(t_eval[1:], np.maximum(errors[1:], 1e-18), "o-")
        plt.xlabel("t [days]")
        plt.ylabel("relative energy error")
        plt.savefig("outer_solar_system.png")
        print("plot: outer_solar_system.png")
