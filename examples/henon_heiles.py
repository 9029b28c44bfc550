"""A Poincaré section of the Hénon–Heiles system at energy H = 1/8 from events: the crossings of
x = 0 with x rising, located on the step polynomials to machine precision. Each crossing keeps H.

Run with a final time as argument for more points (default T = 300)."""

import sys

import numpy as np

import subgraph_ad as sad


def rhs(t, s):
    x, y, px, py = s
    return np.array([px, py, -x - 2.0 * x * y, -y - x * x + y * y])


def hamiltonian(s):
    x, y, px, py = s
    return 0.5 * (px * px + py * py + x * x + y * y) + x * x * y - y ** 3 / 3.0


def section(t, s):
    return s[0]


section.direction = 1

if __name__ == "__main__":
    T = float(sys.argv[1]) if len(sys.argv) > 1 else 300.0
    y, py = 0.1, 0.1
    h = 0.125
    px = np.sqrt(2 * (h - 0.5 * py * py - 0.5 * y * y + y ** 3 / 3.0))  # x = 0 on the energy surface
    s0 = np.array([0.0, y, px, py])
    res = sad.taylor_integrate(rhs, (0.0, T), s0, events=section)
    points = res.y_events[0]
    print(f"{len(points)} crossings of x = 0 (px > 0) in {res.nsteps} steps")
    print("         t          y          py")
    for t, p in list(zip(res.t_events[0], points))[:8]:
        print(f"{t:10.4f} {p[1]: .6f} {p[3]: .6f}")
    drift = max(abs(hamiltonian(p) - h) for p in points)
    print(f"largest |H - 1/8| at a crossing: {drift:.1e}; largest |x| there: {np.max(np.abs(points[:, 0])):.1e}")
    assert drift < 1e-13 and np.max(np.abs(points[:, 0])) < 1e-14
