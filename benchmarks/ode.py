"""Benchmark: taylor_integrate against heyoka (where ``import heyoka`` works) and scipy's DOP853.

- the outer Solar System (examples/outer_solar_system.py) at tol = ε over ``--days`` (10⁷):
  wall time against heyoka's propagation (its build timed apart) and DOP853 at its tightest
  rtol 2.3e-14 (run over ``--dop-days`` and scaled: it takes minutes over 10⁷ days), the cost
  per step and where it goes (coefficients, values, the rest of the step); over
  ``--compare-days`` (10⁶) the final state against heyoka's and both energy errors;
- the first call (trace, build, load the compiled loop) in a fresh process: that system, and
  a neural ODE y′ = W2 tanh(W1 tanh(W0 y + b0) + b1) + b2 (3 states, two layers of 32);
- Kepler e = 0.5 over ``--orbits`` (1000): the distance of the returned state from the start;
- Hénon–Heiles at H = 1/8 up to T = 2000: the Poincaré crossings (x = 0, x rising) against
  heyoka's event detection.

Times are medians of ``--repeat`` runs (the machine may be shared: repeat, and read ratios).

    python benchmarks/ode.py [--days 1e7] [--dop-days 1e5] [--orbits 1000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import runpy
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from scipy.integrate import solve_ivp

import subgraph_ad as sad

ROOT = Path(__file__).parent.parent
SOLAR = runpy.run_path(str(ROOT / "examples" / "outer_solar_system.py"))
HENON = runpy.run_path(str(ROOT / "examples" / "henon_heiles.py"))

NEURAL = """
import numpy as np
rng = np.random.default_rng(0)
W0, b0 = rng.normal(size=(32, 3)) / np.sqrt(3), 0.1 * rng.normal(size=32)
W1, b1 = rng.normal(size=(32, 32)) / np.sqrt(32), 0.1 * rng.normal(size=32)
W2, b2 = rng.normal(size=(3, 32)) / np.sqrt(32), 0.1 * rng.normal(size=3)
def rhs(t, y):
    return W2 @ np.tanh(W1 @ np.tanh(W0 @ y + b0) + b1) + b2
y0 = np.array([0.5, -0.3, 0.2])
"""
FIRST = """
import runpy, time
start = time.perf_counter()
import subgraph_ad as sad
{setup}
sad.taylor_integrate(rhs, (0.0, 1.0), y0)
print(time.perf_counter() - start)
"""


def kepler(t, s):
    x, y, vx, vy = s
    r3 = (x * x + y * y) ** 1.5
    return np.array([vx, vy, -x / r3, -y / r3])


def median_time(run, repeat):
    times, out = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        out = run()
        times.append(time.perf_counter() - start)
    return out, statistics.median(times)


def first_call(setup: str) -> float:
    """Seconds from ``import subgraph_ad`` to the end of a first integration, in a new process."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", FIRST.format(setup=setup)], cwd=ROOT, env=env, check=True,
                         capture_output=True, text=True)
    return float(out.stdout.split()[-1])


def heyoka_solar(kind=float):
    """heyoka's integrator of the system (``kind``: float, or np.longdouble for a reference at
    tol 1e-19) as a function of the span, and its build time."""
    import heyoka as hy

    n = len(SOLAR["MASSES"])
    start = time.perf_counter()
    ta = hy.taylor_adaptive(hy.model.nbody(n, masses=list(SOLAR["MASSES"]), Gconst=SOLAR["G"]),
                            np.zeros(6 * n, dtype=kind), fp_type=kind)
    build = time.perf_counter() - start

    def propagate(days):
        ta.time = kind(0.0)
        ta.state[:] = np.concatenate([np.concatenate([SOLAR["POSITIONS"][b], SOLAR["VELOCITIES"][b]])
                                      for b in range(n)])
        outcome = ta.propagate_until(kind(days))
        body = np.array(ta.state, dtype=float).reshape(n, 6)
        return np.concatenate([body[:, :3].ravel(), body[:, 3:].ravel()]), outcome[3]

    return propagate, build


def cost_per_step(rhs, y0):
    """µs per step of the compiled coefficient kernel and of the value table alone."""
    from subgraph_ad.ode import compiled
    from subgraph_ad.ode.traced import system_of

    s = system_of(rhs, len(y0), [], (), False, 20)
    c = np.zeros((s.rows, 21))
    c[s.states, 0] = y0
    compiled.values(s.values, s.constants, c)
    compiled.fill(s.code, s.scalars, s.segments, c, 20)
    _, fill = median_time(lambda: [compiled.fill(s.code, s.scalars, s.segments, c, 20) for _ in range(1000)], 3)
    _, values = median_time(lambda: [compiled.values(s.values, s.constants, c) for _ in range(1000)], 3)
    return 1e3 * fill, 1e3 * values


def solar(a) -> None:
    rhs, s0, energy = SOLAR["rhs"], SOLAR["STATE"], SOLAR["energy"]
    e0 = energy(s0)
    sad.taylor_integrate(rhs, (0.0, 1.0), s0)
    ours, t_ours = median_time(lambda: sad.taylor_integrate(rhs, (0.0, a.days), s0), a.repeat)
    print(f"outer Solar System, {a.days:g} days, tol = ε")
    print(f"  taylor_integrate: {t_ours:.3f} s, {ours.nsteps} steps, {1e6 * t_ours / ours.nsteps:.1f} µs/step")
    fill, values = cost_per_step(rhs, s0)
    print(f"    per step: coefficients {fill:.1f} µs, values {values:.1f} µs, the rest (step size, update, "
          f"Python per call) {1e6 * t_ours / ours.nsteps - fill - values:.1f} µs")
    dop, t_dop = median_time(lambda: solve_ivp(rhs, (0.0, a.dop_days), s0, method="DOP853", rtol=2.3e-14,
                                               atol=1e-16), 1)
    scaled = t_dop * a.days / a.dop_days
    print(f"  DOP853 rtol 2.3e-14 over {a.dop_days:g} days: {t_dop:.2f} s ({dop.nfev} f evaluations), scaled to "
          f"{a.days:g} days {scaled:.1f} s; ours/DOP853 = {t_ours / scaled:.3f}")
    try:
        propagate, build = heyoka_solar()
    except ImportError:
        print("  heyoka: not installed")
        return
    (_, steps), t_hy = median_time(lambda: propagate(a.days), a.repeat)
    print(f"  heyoka: build {build:.2f} s, propagate {t_hy:.3f} s, {steps} steps, {1e6 * t_hy / steps:.1f} µs/step; "
          f"ours/heyoka = {t_ours / t_hy:.2f}")
    final, _ = propagate(a.compare_days)
    mine = sad.taylor_integrate(rhs, (0.0, a.compare_days), s0).y_final
    reference, _ = heyoka_solar(np.longdouble)[0](a.compare_days)

    def gap(x, y):  # relative to the size of each block (positions, velocities)
        return np.max(np.abs(x - y) / np.max(np.abs(y.reshape(2, -1)), axis=1).repeat(y.size // 2))
    print(f"  over {a.compare_days:g} days: final states apart by {gap(mine, final):.1e}; from heyoka's in long "
          f"double (tol 1e-19) ours {gap(mine, reference):.1e}, heyoka's {gap(final, reference):.1e}; energy error "
          f"ours {abs(energy(mine) - e0) / abs(e0):.1e}, heyoka {abs(energy(final) - e0) / abs(e0):.1e}")


def first_calls() -> None:
    setup = "S = runpy.run_path('examples/outer_solar_system.py'); rhs, y0 = S['rhs'], S['STATE']"
    print(f"first call in a new process (compiled loop from Numba's cache): outer Solar System "
          f"{first_call(setup):.2f} s, neural ODE (two tanh layers of 32) {first_call(NEURAL):.2f} s")


def kepler_orbits(a) -> None:
    y0 = np.array([0.5, 0.0, 0.0, np.sqrt(3.0)])
    span = (0.0, 2 * np.pi * a.orbits)
    ours, t_ours = median_time(lambda: sad.taylor_integrate(kepler, span, y0), a.repeat)
    print(f"Kepler e = 0.5, {a.orbits} orbits: {t_ours:.3f} s, {ours.nsteps} steps, |y(T) − y0| = "
          f"{np.max(np.abs(ours.y_final - y0)):.1e}")


def henon_heiles(a) -> None:
    rhs, section = HENON["rhs"], HENON["section"]
    y, py, h = 0.1, 0.1, 0.125
    s0 = np.array([0.0, y, np.sqrt(2 * (h - 0.5 * py * py - 0.5 * y * y + y ** 3 / 3.0)), py])
    ours, t_ours = median_time(lambda: sad.taylor_integrate(rhs, (0.0, 2000.0), s0, events=section), a.repeat)
    found = ours.t_events[0]
    print(f"Hénon–Heiles H = 1/8, T = 2000: {len(found)} crossings, {t_ours:.3f} s, {ours.nsteps} steps")
    try:
        import heyoka as hy
    except ImportError:
        print("  heyoka: not installed")
        return
    x, yy, px, pyy = hy.make_vars("x", "y", "px", "py")
    times = []
    event = hy.nt_event(x, lambda ta, t, d_sgn: times.append(t), direction=hy.event_direction.positive)
    ta = hy.taylor_adaptive([(x, px), (yy, pyy), (px, -x - 2.0 * x * yy), (pyy, -yy - x * x + yy * yy)], s0,
                            nt_events=[event])
    ta.propagate_until(2000.0)
    theirs = np.array([t for t in times if t > 0.0])
    if len(theirs) != len(found):
        print(f"  heyoka: {len(theirs)} crossings: the counts differ")
        return
    print(f"  heyoka: {len(theirs)} crossings; largest |Δt| {np.max(np.abs(theirs - found)):.1e}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--days", type=float, default=1e7)
    parser.add_argument("--dop-days", type=float, default=1e5)
    parser.add_argument("--compare-days", type=float, default=1e6)
    parser.add_argument("--orbits", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    a = parser.parse_args()
    solar(a)
    first_calls()
    kepler_orbits(a)
    henon_heiles(a)


if __name__ == "__main__":
    main()
