"""Benchmark: taylor_integrate against scipy's DOP853 (and heyoka, where ``import heyoka`` works) on
the outer Solar System (examples/outer_solar_system.py; tol = ε, DOP853 at its tightest rtol
2.3e-14) and Kepler's problem (e = 0.5), printing times, steps, errors and the ratios.

    python benchmarks/ode.py [--days 1e6] [--orbits 1000]
"""

from __future__ import annotations

import argparse
import runpy
import time
from pathlib import Path

import numpy as np
from scipy.integrate import solve_ivp

import subgraph_ad as sad

SOLAR = runpy.run_path(str(Path(__file__).parent.parent / "examples" / "outer_solar_system.py"))


def kepler(t, s):
    x, y, vx, vy = s
    r3 = (x * x + y * y) ** 1.5
    return np.array([vx, vy, -x / r3, -y / r3])


def timed(run):
    start = time.perf_counter()
    out = run()
    return out, time.perf_counter() - start


def heyoka_solar(days):
    import heyoka as hy

    n = len(SOLAR["MASSES"])
    sys_ = hy.model.nbody(n, masses=list(SOLAR["MASSES"]), Gconst=SOLAR["G"])
    state = np.concatenate([np.concatenate([SOLAR["POSITIONS"][b], SOLAR["VELOCITIES"][b]]) for b in range(n)])
    ta, build = timed(lambda: hy.taylor_adaptive(sys_, state))
    _, run = timed(lambda: ta.propagate_until(days))
    pos = np.array(ta.state).reshape(n, 6)
    return np.concatenate([pos[:, :3].ravel(), pos[:, 3:].ravel()]), build, run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--days", type=float, default=1e5)
    parser.add_argument("--orbits", type=int, default=100)
    a = parser.parse_args()
    rhs, s0, energy = SOLAR["rhs"], SOLAR["STATE"], SOLAR["energy"]
    _, t_first = timed(lambda: sad.taylor_integrate(rhs, (0.0, 1.0), s0))
    ours, t_ours = timed(lambda: sad.taylor_integrate(rhs, (0.0, a.days), s0))
    dop, t_dop = timed(lambda: solve_ivp(rhs, (0.0, a.days), s0, method="DOP853", rtol=2.3e-14, atol=1e-16))
    e0 = energy(s0)
    print(f"outer Solar System, {a.days:g} days")
    print(f"  taylor_integrate: first call (trace, build, compile) {t_first:.2f} s; run {t_ours:.3f} s, "
          f"{ours.nsteps} steps ({1e6 * t_ours / ours.nsteps:.0f} µs/step), energy error "
          f"{abs(energy(ours.y[:, -1]) - e0) / abs(e0):.1e}")
    print(f"  DOP853 rtol 2.3e-14: {t_dop:.3f} s, {dop.nfev} f evaluations, energy error "
          f"{abs(energy(dop.y[:, -1]) - e0) / abs(e0):.1e}; ratio ours/DOP853 = {t_ours / t_dop:.3f}")
    try:
        final, build, run = heyoka_solar(a.days)
    except ImportError:
        print("  heyoka: not installed")
    else:
        gap = np.max(np.abs(final - ours.y[:, -1]) / np.maximum(np.abs(final), 1e-300))
        print(f"  heyoka: build {build:.2f} s, run {run:.4f} s; ratio ours/heyoka = {t_ours / run:.1f}; "
              f"largest relative difference of the final states {gap:.1e}")
    y0 = np.array([0.5, 0.0, 0.0, np.sqrt(3.0)])
    span = (0.0, 2 * np.pi * a.orbits)
    ours, t_ours = timed(lambda: sad.taylor_integrate(kepler, span, y0))
    dop, t_dop = timed(lambda: solve_ivp(kepler, span, y0, method="DOP853", rtol=2.3e-14, atol=1e-16))
    print(f"Kepler e = 0.5, {a.orbits} orbits")
    print(f"  taylor_integrate: {t_ours:.3f} s, {ours.nsteps} steps, |y(T) - y0| = "
          f"{np.max(np.abs(ours.y[:, -1] - y0)):.1e}")
    print(f"  DOP853 rtol 2.3e-14: {t_dop:.3f} s, |y(T) - y0| = {np.max(np.abs(dop.y[:, -1] - y0)):.1e}; "
          f"ratio ours/DOP853 = {t_ours / t_dop:.3f}")


if __name__ == "__main__":
    main()
