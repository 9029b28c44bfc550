"""Benchmark, compiling: how long ``lambdify`` takes to give a first answer, at any program size.

- **MLP gradient**: ``sad.grad`` of a 961-parameter tanh network's squared loss (10 → 80 → 1,
  batch 32), written as a JAX user would (``np.tanh(X @ W1 + b1) @ w2 + b2``): its first call
  (trace, gradient graph, compile, run) and a repeated call, against ``jax.jit(jax.grad)``; then
  the first call in a new process with the persistent cache warm.
- **Compile time** at about 10³, 10⁴ and 10⁵ steps (the Laplacian of a tanh network, width 32,
  built by summing ``diff(x_i, 2)``): ``lambdify`` and a first call on 8 points, which compiles
  the array kernel, on the NumPy and Numba backends; the cache is off.
- **Evaluation** on 10⁴ points of the ~20k-step Laplacian: median time, Gop/s (steps × points
  per second) and Gop per CPU-second (the work, whatever else the machine runs), against the
  same program compiled as one chunk; and a warm-cache first call of the ~39k-step one on Numba
  in a new process.

Every measurement runs in a fresh process (so nothing compiled by an earlier one is reused),
with at most ``--timeout`` seconds; the same script measures an older checkout for a "before"
column (``PYTHONPATH=/path/to/checkout python benchmarks/compile.py --label before``), where
options that checkout lacks are left out (its Numba backend is forced past NUMBA_MAX_STEPS).
Prints a Markdown table and writes results/compile_<label>.json.

    PYTHONPATH=. python benchmarks/compile.py [--quick] [--label after] [--timeout 1200] [--only mlp,compile,eval]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"
POINTS = 10_000
#: (inputs, hidden layers) of the Laplacian programs: about 10³, 10⁴, 2·10⁴, 4·10⁴, 10⁵ steps.
SIZES = {"1e3": (4, 1), "1e4": (2, 2), "2e4": (4, 2), "4e4": (8, 2), "1e5": (22, 2)}


# -- the programs --------------------------------------------------------------------------------
def laplacian_program(inputs: int, layers: int, width: int = 32, seed: int = 0) -> tuple[Any, list[Any], list[Any]]:
    """A tanh network u(x) of ``layers`` hidden layers and its Laplacian Σ ∂²u/∂x_i², both as
    outputs: the inputs x_i and the two Terms."""
    import subgraph_ad as sad

    rng = np.random.default_rng(seed)
    tape = sad.Tape()
    xs = [tape.var(f"x{i}", 0.1 * i) for i in range(inputs)]
    h = xs
    for _ in range(layers):
        w = rng.normal(size=(width, len(h))) / np.sqrt(len(h))
        b = rng.normal(size=width)
        h = [sad.tanh(sum((float(w[j, i]) * h[i] for i in range(len(h))), float(b[j]))) for j in range(width)]
    out = rng.normal(size=width) / np.sqrt(width)
    u = sum((float(out[j]) * h[j] for j in range(width)), 0.0)
    return tape, xs, [u, sum((u.diff(x, 2) for x in xs), 0.0)]


def mlp_loss(p: np.ndarray, x: np.ndarray, y: np.ndarray, np_: Any = np) -> Any:
    """Squared loss of a 10 → 80 → 1 tanh network; its 961 parameters packed in ``p``."""
    w1, b1, w2, b2 = p[:800].reshape(10, 80), p[800:880], p[880:960].reshape(80, 1), p[960:]
    return np_.mean((np_.tanh(x @ w1 + b1) @ w2 + b2 - y) ** 2)


def mlp_data() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    p = np.concatenate([rng.normal(size=800) / 3, rng.normal(size=80), rng.normal(size=80) / 9, [0.0]])
    return p, rng.normal(size=(32, 10)), rng.normal(size=(32, 1))


def _lambdify(xs: list[Any], outs: list[Any], backend: str, **options: Any) -> Any:
    """lambdify with the options this checkout has (an older one lacks chunk and cache)."""
    import inspect
    import warnings

    import subgraph_ad as sad
    import subgraph_ad.compile.lambdify as lam

    known = inspect.signature(sad.lambdify).parameters
    if hasattr(lam, "NUMBA_MAX_STEPS"):
        lam.NUMBA_MAX_STEPS = None  # the measure of the old Numba backend at every size
    with warnings.catch_warnings():
        warnings.simplefilter("error", lam.BackendWarning)  # a fallback would time the wrong backend
        return sad.lambdify(xs, outs, backend=backend, **{k: v for k, v in options.items() if k in known})


def _median(f: Any, repeats: int) -> float:
    return _medians(f, repeats)[0]


def _medians(f: Any, repeats: int) -> tuple[float, float]:
    """The median wall and CPU seconds of ``repeats`` calls, both clocks read around each call."""
    walls, cpus = [], []
    for _ in range(repeats):
        start, cpu = time.perf_counter(), time.process_time()
        f()
        walls.append(time.perf_counter() - start)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus)


# -- one measurement per process -----------------------------------------------------------------
def measure_mlp(repeats: int) -> dict[str, Any]:
    import subgraph_ad as sad

    p, x, y = mlp_data()
    grad = sad.grad(mlp_loss)
    start, cpu = time.perf_counter(), time.process_time()
    first = grad(p, x, y)
    row = {"first": time.perf_counter() - start, "first_cpu": time.process_time() - cpu}
    row["repeat"], row["repeat_cpu"] = _medians(lambda: grad(p, x, y), repeats)
    compiled = next(iter(grad.cache.entries.values()))[0]
    row["package"] = sad.__file__
    # a scalar program's steps, or an array program's statements (one per array node)
    program = getattr(compiled, "program", None)
    row["steps"] = len(program.steps) if program is not None else compiled.block_source.count("\n    t")
    row["built"] = list(getattr(compiled, "built", ["point", "point IEEE", "numpy (array)"]))
    row["check"] = float(np.linalg.norm(first))
    return row


def measure_jax(repeats: int) -> dict[str, Any]:
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    p, x, y = mlp_data()
    grad = jax.jit(jax.grad(lambda p, x, y: mlp_loss(p, x, y, jnp)))
    start, cpu = time.perf_counter(), time.process_time()
    first = np.asarray(grad(p, x, y))
    row = {"first": time.perf_counter() - start, "first_cpu": time.process_time() - cpu}
    row["repeat"], row["repeat_cpu"] = _medians(lambda: grad(p, x, y).block_until_ready(), repeats)
    row["check"] = float(np.linalg.norm(first))
    return row


def measure_compile(size: str, backend: str) -> dict[str, Any]:
    tape, xs, outs = laplacian_program(*SIZES[size])
    points = np.linspace(-1, 1, 8)
    start, cpu = time.perf_counter(), time.process_time()
    f = _lambdify(xs, outs, backend, cache=False)
    f(*[points + 0.1 * k for k in range(len(xs))])
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    steps = len(f.program.steps)
    return {"steps": steps, "compile": seconds, "cpu": cpu, "per_1e4": seconds * 1e4 / steps, "cpu_per_1e4": cpu * 1e4 / steps}


def measure_eval(size: str, backend: str, chunk: int | None, repeats: int) -> dict[str, Any]:
    tape, xs, outs = laplacian_program(*SIZES[size])
    rng = np.random.default_rng(1)
    args = [rng.normal(size=POINTS) for _ in xs]
    options: dict[str, Any] = {"cache": False}
    if chunk is not None:
        options["chunk"] = chunk
    start = time.perf_counter()
    f = _lambdify(xs, outs, backend, **options)
    values = f(*args)
    first = time.perf_counter() - start
    seconds = _median(lambda: f(*args), repeats)
    cpu = min(_cpu(lambda: f(*args)) for _ in range(repeats))
    steps = len(f.program.steps)
    reference = outs[1].eval({x: a[:50] for x, a in zip(xs, args)})
    error = float(np.max(np.abs(values[1][:50] - reference)) / np.max(np.abs(reference)))
    return {"steps": steps, "first": first, "eval": seconds, "gops": steps * POINTS / seconds / 1e9,
            "cpu": cpu, "gops_cpu": steps * POINTS / cpu / 1e9, "error": error}


def _cpu(f: Any) -> float:
    """CPU seconds of every thread of this process during ``f()``: the work done, whatever the
    machine's other load."""
    start = time.process_time()
    f()
    return time.process_time() - start


def measure_warm(size: str, backend: str) -> dict[str, Any]:
    """lambdify and a first call on 10⁴ points, with whatever the cache (SUBGRAPH_AD_CACHE) holds."""
    tape, xs, outs = laplacian_program(*SIZES[size])
    args = [np.linspace(-1, 1, POINTS) + 0.1 * k for k in range(len(xs))]
    start, cpu = time.perf_counter(), time.process_time()
    f = _lambdify(xs, outs, backend)
    f(*args)
    return {"steps": len(f.program.steps), "first": time.perf_counter() - start, "first_cpu": time.process_time() - cpu}


# -- the driver ----------------------------------------------------------------------------------
def _run(what: list[str], timeout: float, env: dict[str, str] | None = None) -> dict[str, Any] | str:
    """One measurement in a fresh process: its row, or why there is none."""
    code = f"import sys, json; sys.path.insert(0, {str(Path(__file__).parent)!r}); import compile as c; " \
           f"print(json.dumps(c.{what[0]}(*{what[1:]!r})))"
    # from a neutral directory (``-c`` puts the working directory first on sys.path), so a
    # relative PYTHONPATH (``PYTHONPATH=.``) is made absolute first: the checkout asked for is measured
    path = os.pathsep.join(os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p)
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, "PYTHONPATH": path, **(env or {})}, cwd=tempfile.gettempdir())
    except subprocess.TimeoutExpired:
        return f"> {timeout:.0f} s"
    if done.returncode:
        return "failed: " + (done.stderr.strip().splitlines() or ["?"])[-1]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _s(row: dict[str, Any] | str, key: str, scale: float = 1.0, digits: int = 2) -> str:
    return row if isinstance(row, str) else f"{row[key] * scale:,.{digits}f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10³ and 10⁴ steps only, fewer repeats")
    parser.add_argument("--label", default="after")
    parser.add_argument("--timeout", type=float, default=1200.0, help="seconds per measurement")
    parser.add_argument("--only", default="mlp,compile,eval")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    parts, repeats = args.only.split(","), 3 if args.quick else 7
    results: dict[str, Any] = {"label": args.label, "cpus": len(os.sched_getaffinity(0)), "load": os.getloadavg()[0]}
    lines = [f"### {args.label} ({results['cpus']} cores, load average {results['load']:.1f} at the start)", ""]
    with tempfile.TemporaryDirectory() as cache:
        env = {"SUBGRAPH_AD_CACHE": cache}
        if "mlp" in parts:
            ours = _run(["measure_mlp", repeats], args.timeout, env)
            warm = _run(["measure_mlp", repeats], args.timeout, env)
            jax = _run(["measure_jax", repeats], args.timeout)
            results["mlp"] = {"ours": ours, "warm": warm, "jax": jax}
            steps = ours["steps"] if isinstance(ours, dict) else "?"
            lines += [f"MLP gradient (961 parameters, batch 32; {steps} steps):", "",
                      "| | first call: wall / CPU (s) | repeated call: wall / CPU (ms) |", "| --- | ---: | ---: |"]
            for label, row in (("sad.grad", ours), ("sad.grad, new process, warm cache", warm), ("jax.jit(jax.grad)", jax)):
                lines.append(f"| {label} | {_s(row, 'first')} / {_s(row, 'first_cpu')} | {_s(row, 'repeat', 1e3)} / "
                             f"{_s(row, 'repeat_cpu', 1e3)} |")
            lines.append("")
        if "compile" in parts:
            sizes = ["1e3", "1e4"] if args.quick else ["1e3", "1e4", "4e4", "1e5"]
            lines += ["Compile (lambdify + a first call on 8 points), seconds per 10⁴ steps, wall / CPU (total wall):", "",
                      "| steps | numpy | numba |", "| ---: | ---: | ---: |"]
            results["compile"] = {}
            for size in sizes:
                rows = {b: _run(["measure_compile", size, b], args.timeout) for b in ("numpy", "numba")}
                results["compile"][size] = rows
                steps = next((r["steps"] for r in rows.values() if isinstance(r, dict)), size)
                cells = [r if isinstance(r, str) else f"{r['per_1e4']:.2f} / {r['cpu_per_1e4']:.2f} ({r['compile']:.1f} s)"
                         for r in rows.values()]
                lines.append(f"| {steps:,} | {cells[0]} | {cells[1]} |")
            lines.append("")
        if "eval" in parts:
            lines += [f"Evaluation of the ~20k-step Laplacian on {POINTS:,} points:", "",
                      "| backend | chunks | first call (s) | eval (ms) | Gop/s | Gop per CPU-second | rel. error |",
                      "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
            results["eval"] = {}
            for backend, chunk, label in (("numpy", None, "default"), ("numba", None, "default"),
                                          ("numba", 10**9, "one chunk")):
                row = _run(["measure_eval", "2e4", backend, chunk, repeats], args.timeout)
                results["eval"][f"{backend} {label}"] = row
                error = row if isinstance(row, str) else f"{row['error']:.1e}"
                lines.append(f"| {backend} | {label} | {_s(row, 'first')} | {_s(row, 'eval', 1e3, 1)} | "
                             f"{_s(row, 'gops', 1, 1)} | {_s(row, 'gops_cpu', 1, 1)} | {error} |")
            cold = _run(["measure_warm", "4e4", "numba"], args.timeout, env)
            warm = _run(["measure_warm", "4e4", "numba"], args.timeout, env)
            results["eval"]["numba cache"] = {"cold": cold, "warm": warm}
            lines += ["", f"Numba, ~39k steps, lambdify + first call on {POINTS:,} points in a new process, wall / CPU: "
                          f"cold cache {_s(cold, 'first')} / {_s(cold, 'first_cpu')} s, "
                          f"warm cache {_s(warm, 'first')} / {_s(warm, 'first_cpu')} s", ""]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"compile_{args.label}.json").write_text(json.dumps(results, indent=1))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
