"""Throughput on a Dask LocalCluster against one local process (issue 38's targets).

Two programs, on ``--points`` points each: F4's 10th derivative (tanh(tanh(tanh(x)))) and the
Laplacian of a function of 3 variables whose program has about 10⁴ steps. Each runs three ways:
one local process on one thread (``parallel=False``), one local process on every core
(``parallel=True``, threads), and ``LocalCluster(n_workers=2, threads_per_worker=1)`` after
warm-up, the points made on the workers and the result kept there (``persist``). Printed: the
seconds of each, the cluster's throughput over one thread (target ≥ 1.6x), its wall time over
the two-core process (target ≤ 1.25x), the kernels the workers compiled during the run (target
0) and the pickled task graph's size (target < 1 MB).

    python benchmarks/cluster.py                     # 2e7 points each, ~1e4 steps: as `make bench` runs it
    python benchmarks/cluster.py --quick             # 2e5 points, ~1e3 steps: a smoke run
    python benchmarks/cluster.py --points 2e6        # a quicker look at the full programs
"""

from __future__ import annotations

import argparse
import pickle
import time
from typing import Any, Callable

import numpy as np

import subgraph_ad as sad
from subgraph_ad.benchmark_functions import BENCHMARKS

#: (points, terms of the Laplacian's function) at full size and for --quick.
FULL, QUICK = (2e7, 360), (2e5, 36)


def f4_order10() -> tuple[list[sad.Term], sad.Term, str]:
    _, f, x = BENCHMARKS["F4"]()
    return [x], sad.diff(f, x, 10), "F4, 10th derivative"


def laplacian_program(terms: int = 360) -> tuple[list[sad.Term], sad.Term, str]:
    """Δ of a sum of ``terms`` products of sines and exponentials in 3 variables."""
    tape = sad.Tape()
    xs = [tape.var(f"x{k}") for k in range(3)]
    rng = np.random.default_rng(0)
    u = tape.const(0.0)
    for w in rng.uniform(-1.0, 1.0, size=(terms, 4)):
        u = u + sad.sin(w[0] * xs[0] + w[1] * xs[1]) * sad.exp(w[2] * xs[2]) * sad.tanh(w[3] * xs[0] * xs[2])
    return xs, sad.laplacian(u, xs), "Laplacian program"


def timed(run) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def on_threads(single: Callable[..., Any], f: Callable[..., Any], inputs: int, n: int) -> tuple[float, float]:
    """Seconds of ``single`` (one thread) and ``f`` (two) on n points in memory, which is freed
    when this returns, before the cluster runs."""
    local = [np.linspace(-1.0 + 0.1 * k, 1.0, n) for k in range(inputs)]
    single(*(a[:1000] for a in local)), f(*(a[:1000] for a in local))  # compiled before timing
    return timed(lambda: single(*local)), timed(lambda: f(*local))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=float, help=f"points per program (default {FULL[0]:.0e})")
    parser.add_argument("--terms", type=int, help=f"terms of the Laplacian's function (default {FULL[1]}: ~1e4 steps)")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK[0]:.0e} points, {QUICK[1]} terms (~1e3 steps)")
    args = parser.parse_args()
    points, terms = QUICK if args.quick else FULL
    n, terms = int(args.points or points), args.terms or terms

    import dask.array as da
    from dask.distributed import Client, LocalCluster, wait

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        print(f"{'program':<22} {'steps':>7} {'points':>10} {'1 thread s':>10} {'2 threads s':>11} {'cluster s':>9} "
              f"{'vs 1 thread':>11} {'vs 2 threads':>12} {'compiles':>8} {'graph KB':>8}")
        for make in (f4_order10, lambda: laplacian_program(terms)):
            xs, out, name = make()
            f, single = sad.lambdify(xs, out), sad.lambdify(xs, out, parallel=False)
            inputs = len(xs)
            one, two = on_threads(single, f, inputs, n)
            chunks = sad.dask.chunk_rows(f, n)  # as f cuts them for this client: no rechunking
            lazy = f(*(da.linspace(-1.0 + 0.1 * k, 1.0, n, chunks=chunks) for k in range(inputs)))
            lazy = lazy if isinstance(lazy, tuple) else (lazy,)
            sad.dask.warm(client, lazy[0])
            before = client.run(sad.dask.compiles)
            graph = len(pickle.dumps(dict(lazy[0].__dask_graph__())))
            on_cluster = timed(lambda: wait(client.persist(list(lazy))))
            compiled = sum(client.run(sad.dask.compiles).values()) - sum(before.values())
            print(f"{name:<22} {len(f.program.steps):>7} {n:>10.0e} {one:>10.2f} {two:>11.2f} {on_cluster:>9.2f} "
                  f"{one / on_cluster:>10.2f}x {on_cluster / two:>11.2f}x {compiled:>8} {graph / 1024:>8.0f}")


if __name__ == "__main__":
    main()
