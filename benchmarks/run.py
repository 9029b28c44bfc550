"""Benchmark: size, build, compile and evaluation time of the n-th derivative of F1–F5.

Ours (repeated gen_graph; Taylor mode for all orders; ``diff`` for the n-th alone, with NumPy and
Numba backends) and, measured in the same run, SymPy (diff + lambdify(cse=True)) and, when
installed, SymEngine (lambdify, LLVM when available), JAX two ways — nested grad and its Taylor
mode ``jax.experimental.jet``, each jit(vmap)ed over the points — and PyTorch (nested
autograd.grad with create_graph). F1–F5 are functions of one scalar, so every peer is given F
written on one scalar with its own functions (benchmark_functions.written_with), as its documentation
writes such a function.

Sizes: ours = nodes appended after f is built (Taylor: all orders up to n; diff: the n-th alone),
and "ops" = the operations the n-th derivative evaluates (its program's nodes other than vars and
constants, f's own included: the measure SymPy's cse count is); SymPy = count_ops of the n-th
derivative and of its cse form; SymEngine = count_ops; JAX = jaxpr equations (nested grad, or the
jet); PyTorch = autograd graph nodes reachable from the n-th derivative. Times are medians of --repeats runs (more for
what is quick: builds of ours and SymEngine at least BUILD_RUNS), garbage collector paused as in
timeit; every build starts from a built expression (ours: f on a fresh tape, made untimed before
each run). Evaluation is on 100,000 points in [-2, 2] (F5: w1 in [1.1, 3], where log(w1) > 0),
every tool's compiled function called in turn, round after round (up to 25 rounds), so that the
VM's slow spells hit all of them alike; the median of each is quoted.
A peer whose build + compile times its growth to the next order (GROWTH) passes --cap seconds is
not run at higher orders of that function, PyTorch not past n = 6 and JAX's nested grad not past
n = 8 (memory); the JSON records them as skipped. Orders 1–12 run every tool; n = 20 runs ours
and JAX's jet. Writes benchmarks/results/bench.json, table.md (n = 10 and n = 20) and sizes.png.

    python benchmarks/run.py [--quick | --orders 10,20] [--repeats 3] [--rounds 1] [--cap 30]
                             [--functions F1,F3] [--out DIR]
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

import subgraph_ad as sad
from subgraph_ad.ad.taylor import taylor_graph
from subgraph_ad.benchmark_functions import BENCHMARKS, TEXT, written_with
from subgraph_ad.core import dependencies

RESULTS = Path(__file__).resolve().parent / "results"
POINTS = 100_000
#: Runs of the sub-millisecond builds (ours, SymEngine): on a shared 2-core VM a few slow runs
#: (a cold cache after the previous peer's evaluation) would otherwise move a median of 7.
BUILD_RUNS = 21


def points_for(name: str) -> np.ndarray:
    return np.linspace(1.1, 3.0, POINTS) if name == "F5" else np.linspace(-2.0, 2.0, POINTS)


def median_time(fn: Callable[..., Any], repeats: int, setup: Callable[[], tuple] = tuple) -> tuple[float, Any]:
    """Median wall time of ``repeats`` calls ``fn(*setup())``, the untimed ``setup`` run before
    each, with the garbage collector paused during each call as ``timeit`` does (for every tool
    alike: a collection scanning the heap of whatever peers are loaded would otherwise land in
    whichever call happens to trigger it)."""
    times, result = [], None
    for _ in range(repeats):
        args = setup()
        gc.disable()
        try:
            t0 = time.perf_counter()
            result = fn(*args)
            times.append(time.perf_counter() - t0)
        finally:
            gc.enable()
    return statistics.median(times), result


Evaluators = dict[str, Callable[[], Any]]
#: (tool, field of its row): the evaluators of one order, timed together
Timed = dict[tuple[str, str], Callable[[], Any]]


def interleaved(evaluators: Timed, repeats: int) -> dict[tuple[str, str], float]:
    """Median time of each evaluator, after one untimed warm-up call each, timed in rounds that
    call every evaluator once: at least ``repeats`` rounds, more (up to 25) while a round is
    short. Timing one tool after another instead would let the VM's noise (10–40 % between
    minutes) decide ratios such as F5's NumPy against SymPy."""
    first = 0.0
    for fn in evaluators.values():
        t0 = time.perf_counter()
        fn()
        first += time.perf_counter() - t0
    rounds = max(repeats, min(25, int(0.5 / max(first, 1e-9))))
    times: dict[tuple[str, str], list[float]] = {key: [] for key in evaluators}
    for _ in range(rounds):
        for key, fn in evaluators.items():
            gc.disable()
            try:
                t0 = time.perf_counter()
                fn()
                times[key].append(time.perf_counter() - t0)
            finally:
                gc.enable()
    return {key: statistics.median(ts) for key, ts in times.items()}


# -- ours -----------------------------------------------------------------------------------------


def ours(name: str, n: int, method: str, repeats: int, backends: list[str]) -> tuple[dict[str, Any], Evaluators]:
    """One of our ways: "taylor" (all orders 1..n, as the size targets count them), "diff" (the
    n-th alone, what a user compiles: ``f.diff(x, n)``) or "graph" (n gen_graph passes)."""
    def build(tape: Any, f: Any, x: Any) -> tuple[int, Any, Any, Any]:
        mark = len(tape)
        if method == "taylor":
            d = taylor_graph(f, x, n)[-1]
        elif method == "diff":
            d = f.diff(x, n)
        else:
            d = f
            for _ in range(n):
                d = d.gen_graph(x)
        return len(tape) - mark, tape, x, d

    # f on a fresh tape each time, untimed: the peers' timings start from a built expression too
    build_time, (size, tape, x, d) = median_time(build, max(repeats, BUILD_RUNS), BENCHMARKS[name])
    ops = sum(tape.nodes[i].op not in ("var", "const") for i in dependencies(tape, [d.index]))
    row: dict[str, Any] = {"size": size, "ops": ops, "build": build_time}
    others = [v for v in tape.vars.values() if v != x]
    args = [points_for(name)] + [v.value for v in others]
    evaluators: Evaluators = {}
    for backend in backends:
        compile_time, g = median_time(lambda: sad.lambdify([x] + others, d, backend=backend), 1 if backend == "numba" else repeats)
        row[f"compile_{backend}"] = compile_time
        evaluators[backend] = lambda g=g: g(*args)
    return row, evaluators


# -- peers ----------------------------------------------------------------------------------------
def sympy_peer(name: str, n: int, repeats: int) -> tuple[dict[str, Any], Callable[[], Any]]:
    import sympy

    tape, f, x = BENCHMARKS[name]()
    expr = f.to_sympy()
    X = sympy.Symbol(x.name)
    others = [v for v in tape.vars.values() if v != x]
    subs = {sympy.Symbol(v.name): v.value for v in others}

    def cold() -> tuple:
        """SymPy memoises (sympy.core.cache): uncleared, a repeat or the order after another
        would mostly time cache hits of the previous run (5x faster on F3 at n = 6)."""
        sympy.core.cache.clear_cache()
        return ()

    build_time, d = median_time(lambda: sympy.diff(expr, X, n), 1 if n > 6 else repeats, cold)
    d = d.subs(subs)
    replacements, reduced = sympy.cse(d)
    cse_ops = sum(sympy.count_ops(e) for _, e in replacements) + sympy.count_ops(reduced[0])
    compile_time, g = median_time(lambda: sympy.lambdify([X], d, "numpy", cse=True), 1)
    pts = points_for(name)

    def evaluate() -> Any:
        with np.errstate(all="ignore"):
            return g(pts)
    return {"size": int(sympy.count_ops(d)), "size_cse": int(cse_ops), "build": build_time,
            "compile": compile_time}, evaluate


def symengine_peer(name: str, n: int, repeats: int) -> tuple[dict[str, Any], Callable[[], Any]]:
    import symengine as se

    tape, f, x = BENCHMARKS[name]()
    expr = se.sympify(str(f.to_sympy()))
    X = se.Symbol(x.name)
    others = [v for v in tape.vars.values() if v != x]
    expr = expr.subs({se.Symbol(v.name): v.value for v in others})
    build_time, d = median_time(lambda: se.diff(expr, X, n), max(repeats, BUILD_RUNS))
    backend = "llvm" if getattr(se, "have_llvm", False) else "lambda"
    compile_time, g = median_time(lambda: se.lambdify([X], [d], backend=backend, cse=True), 1)
    pts = points_for(name)

    def evaluate() -> Any:
        with np.errstate(all="ignore"):
            return g(pts)
    return {"size": int(se.count_ops(d)), "build": build_time, "compile": compile_time,
            "backend": backend}, evaluate


JAX_FNS: dict[str, Callable[..., Any]] = {}


def jax_peer(name: str, n: int, repeats: int) -> tuple[dict[str, Any], Callable[[], Any]]:
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    def build() -> tuple[Any, int]:
        d = written_with(jnp, name)  # a new function each time, as for the jet
        for _ in range(n):
            d = jax.grad(d)
        jaxpr = jax.make_jaxpr(d)(0.5)
        return d, len(jaxpr.jaxpr.eqns)

    build_time, (d, eqns) = median_time(build, 1 if n > 5 else repeats)
    pts = jnp.asarray(points_for(name))
    compile_time, g = median_time(lambda: jax.jit(jax.vmap(d)).lower(pts).compile(), 1)
    return {"size": eqns, "build": build_time, "compile": compile_time}, lambda: g(pts).block_until_ready()


def jet_derivative(f: Callable[[Any], Any], n: int) -> Callable[[Any], Any]:
    """The n-th derivative of f by JAX's Taylor mode: jet propagates the path x + t (series 1, 0,
    …, 0; jet's series are derivatives, not divided by k!) and its n-th output term is f⁽ⁿ⁾(x)."""
    from jax.experimental.jet import jet

    def derivative(x: Any) -> Any:
        _, series = jet(f, (x,), ((1.0,) + (0.0,) * (n - 1),))
        return series[-1]
    return derivative


def jax_jet_peer(name: str, n: int, repeats: int) -> tuple[dict[str, Any], Callable[[], Any]]:
    """JAX's own tool for high orders: one jet, jit(vmap)ed over the points (size: its jaxpr's
    equations; build: tracing it)."""
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)

    def build() -> tuple[Callable[[Any], Any], Any]:
        """A new function each time: make_jaxpr caches by function, so a repeat of the same one
        would time a cache hit."""
        d = jet_derivative(written_with(jnp, name), n)
        return d, jax.make_jaxpr(d)(0.5)

    build_time, (d, jaxpr) = median_time(build, repeats)
    pts = jnp.asarray(points_for(name))
    compile_time, g = median_time(lambda: jax.jit(jax.vmap(d)).lower(pts).compile(), 1)
    return ({"size": len(jaxpr.jaxpr.eqns), "build": build_time, "compile": compile_time},
            lambda: g(pts).block_until_ready())


def torch_peer(name: str, n: int, repeats: int) -> tuple[dict[str, Any], Callable[[], Any]]:
    import torch

    torch.set_default_dtype(torch.float64)
    base = written_with(torch, name)
    pts = points_for(name)

    def run(size: int) -> Any:
        x = torch.tensor(pts[:size], requires_grad=True)
        d = base(x)
        for _ in range(n):
            (d,) = torch.autograd.grad(d.sum(), x, create_graph=True)
        return d

    build_time, d = median_time(lambda: run(1), 1 if n > 5 else repeats)
    seen, stack = set(), [d.grad_fn]
    while stack:  # count the autograd graph's nodes, iteratively
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        stack.extend(nxt for nxt, _ in node.next_functions)
    # define-by-run: its evaluation is a build and an evaluation at once
    return {"size": len(seen), "build": build_time, "compile": 0.0}, lambda: run(POINTS)


PEERS = {"sympy": sympy_peer, "symengine": symengine_peer, "jax": jax_peer, "jax_jet": jax_jet_peer,
         "torch": torch_peer}
#: What the tables call each peer: the method, and the code it is given.
LABELS = {"sympy": "SymPy diff + lambdify(cse)", "symengine": "SymEngine diff + lambdify",
          "jax": "JAX nested grad, jit(vmap)", "jax_jet": "JAX jet (Taylor mode), jit(vmap)",
          "torch": "PyTorch nested autograd.grad"}
MODULES = {"jax_jet": "jax"}
#: Highest order run per peer: PyTorch keeps every autograd node's 1e5-point tensor alive (its
#: F3 graph has ~2 M nodes at n = 10: far past 24 GiB), JAX's nested-grad jaxpr grows x3 per order.
MAX_ORDER = {"torch": 6, "jax": 8}
#: Peers run at n = 20 too: Taylor mode, whose size grows like n², not by a factor per order.
EVERY_ORDER = {"jax_jet"}
#: Growth of build + compile to the next order run: x2-4 per order for nested differentiation;
#: the jet's n² makes n = 20 about (20/12)² = 2.8 times n = 12.
GROWTH = {"jax_jet": 2.8}
DEFAULT_GROWTH = 4.0


def available(peer: str) -> bool:
    try:
        __import__(MODULES.get(peer, peer))
        return True
    except ImportError:
        return False


def measure(name: str, orders: list[int], peers: list[str], backends: list[str], repeats: int, cap: float,
            started: float) -> dict[str, Any]:
    """Every tool on function ``name`` at each order: one row per order."""
    rows: dict[str, Any] = {}
    capped: dict[str, int] = {}
    for n in orders:
        row: dict[str, Any] = {}
        evaluators: Timed = {}
        row["taylor"], _ = ours(name, n, "taylor", repeats, [])
        row["diff"], found = ours(name, n, "diff", repeats, backends)
        evaluators.update({("diff", f"eval_{b}"): fn for b, fn in found.items()})
        if n <= 12:
            row["graph"], found = ours(name, n, "graph", repeats, ["numpy"])
            evaluators[("graph", "eval_numpy")] = found["numpy"]
        for peer in peers:
            if n > 12 and peer not in EVERY_ORDER:
                continue
            if n > MAX_ORDER.get(peer, 99):
                row[peer] = {"skipped": f"orders above {MAX_ORDER[peer]} not run (memory)"}
                continue
            if peer in capped:
                row[peer] = {"skipped": f"build would pass {cap} s after n = {capped[peer]}"}
                continue
            try:
                row[peer], evaluators[(peer, "eval")] = PEERS[peer](name, n, repeats)
            except Exception as error:  # a peer failing is a result, not a crash
                row[peer] = {"error": f"{type(error).__name__}: {error}"[:200]}
                capped[peer] = n
                continue
            if (row[peer]["build"] + row[peer].get("compile", 0.0)) * GROWTH.get(peer, DEFAULT_GROWTH) > cap:
                capped[peer] = n
        for (tool, field), seconds in interleaved(evaluators, repeats).items():
            row[tool][field] = seconds
        del evaluators  # PyTorch's and JAX's buffers go before the next order
        rows[str(n)] = row
        t, d = row["taylor"], row["diff"]
        print(f"{name} n={n:2d} taylor {t['size']:5d} nodes build {t['build'] * 1e3:7.2f} ms | "
              f"diff {d['size']:5d} nodes ({d['ops']} ops) build {d['build'] * 1e3:7.2f} ms "
              f"eval numpy {d['eval_numpy'] * 1e3:6.2f} ms"
              + (f" numba {d['eval_numba'] * 1e3:6.2f} ms" if "eval_numba" in d else "")
              + f"   [{time.perf_counter() - started:5.0f} s]", flush=True)
    return rows


def median_of(rounds: list[Any]) -> Any:
    """One result from several rounds of the same measurement: the median of each number that
    varies, the first round's value of anything else (sizes and notes agree in every round; a
    key the first round lacks, such as a cap reached in one round only, is left out)."""
    first = rounds[0]
    if isinstance(first, dict):
        return {key: median_of([r[key] for r in rounds if isinstance(r, dict) and key in r]) for key in first}
    if isinstance(first, float) and all(isinstance(r, float) for r in rounds) and any(r != first for r in rounds):
        return statistics.median(rounds)
    return first


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="orders 1, 5, 10 only, for a smoke run")
    parser.add_argument("--orders", help="orders to run, e.g. 10,20 (default 1–12 and 20)")
    parser.add_argument("--repeats", type=int, default=3, help="runs per measurement (median)")
    parser.add_argument("--rounds", type=int, default=1, help="whole runs, one after another (medians of each figure)")
    parser.add_argument("--cap", type=float, default=30.0, help="seconds a peer's build may take before its higher orders are skipped")
    parser.add_argument("--functions", default="F1,F2,F3,F4,F5")
    parser.add_argument("--out", type=Path, default=RESULTS, help="folder for bench.json, table.md, sizes.png")
    args = parser.parse_args()
    if args.orders:
        orders = [int(n) for n in args.orders.split(",")]
    else:
        orders = [1, 5, 10] if args.quick else list(range(1, 13)) + [20]
    backends = ["numpy"] + (["numba"] if available("numba") else [])
    peers = [p for p in PEERS if available(p)]
    names = args.functions.split(",")
    print(f"peers: {', '.join(peers)}; backends: {', '.join(backends)}; {os.cpu_count()} cores", flush=True)
    results: dict[str, Any] = {"machine": {"python": platform.python_version(), "cores": os.cpu_count(),
                                           "numpy": np.__version__},
                               "points": POINTS, "repeats": args.repeats, "rounds": args.rounds, "cap_seconds": args.cap,
                               "peers": {peer: LABELS[peer] for peer in peers}, "functions": {}}
    started = time.perf_counter()
    found: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    for _ in range(args.rounds):
        for name in names:
            found[name].append(measure(name, orders, peers, backends, args.repeats, args.cap, started))
    for name in names:
        results["functions"][name] = {"text": TEXT[name], "orders": median_of(found[name])}
    results["fit"] = fit_exponents(results)
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench.json").write_text(json.dumps(results, indent=1))
    table = "\n".join(summary(results, n) for n in (10, 20) if n in orders)
    (out / "table.md").write_text(table)
    print(table)
    written = ["bench.json", "table.md"]
    try:
        plot(results, out / "sizes.png")
        written.append("sizes.png")
    except ImportError:
        print("matplotlib is not installed: no plot (pip install matplotlib)")
    print(f"wrote {', '.join(written)} in {out} in {time.perf_counter() - started:.0f} s")
    return 0


def fit_exponents(results: dict[str, Any]) -> dict[str, float]:
    """Least-squares slope of log(size) against log(n) for Taylor mode over n = 4..20."""
    fit = {}
    for name, data in results["functions"].items():
        pairs = [(int(n), row["taylor"]["size"]) for n, row in data["orders"].items() if int(n) >= 4]
        if len(pairs) >= 2:
            xs = np.log([p[0] for p in pairs])
            ys = np.log([max(p[1], 1) for p in pairs])
            fit[name] = float(np.polyfit(xs, ys, 1)[0])
    return fit


def _fmt(value: float | None, unit: str = "ms") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value * 1e3:.3g}" if unit == "ms" else f"{value:.3g}"


def _peer_cell(peer: str, p: dict[str, Any] | None) -> str:
    if not p or "size" not in p:
        return "not run" if not p else ("skipped" if "skipped" in p else "error")
    size = f"{p['size']} ({p['size_cse']})" if peer == "sympy" else f"{p['size']}"
    if peer == "torch":  # define-by-run: no build apart from its evaluation
        return f"{size} / {_fmt(p['eval'])}"
    compiled = f" / {_fmt(p['compile'])}" if peer.startswith("jax") else ""
    return f"{size} / {_fmt(p['build'])}{compiled} / {_fmt(p['eval'])}"


def summary(results: dict[str, Any], n: int) -> str:
    """The Markdown table at order n: sizes, build and eval times, ratios ours / best peer."""
    peers = [peer for peer in PEERS if any(peer in data["orders"].get(str(n), {}) for data in results["functions"].values())]
    unit = {"sympy": "ops (cse) / build / eval", "symengine": "ops / build / eval", "jax": "eqns / build / compile / eval",
            "jax_jet": "eqns / build / compile / eval", "torch": "nodes / eval"}
    lines = [f"### order n = {n}, {results['points']:,} points, medians (times in ms)", "",
             "Each peer is given F on one scalar x written with its own functions (F1–F5 are one-variable "
             "functions), applied to the points as it documents: SymPy and SymEngine lambdify on a NumPy array, "
             "JAX jit(vmap(·)), PyTorch elementwise on a tensor. Peers not installed: "
             + (", ".join(LABELS[p] for p in PEERS if p not in results["peers"]) or "none") + ".", "",
             "| F | ours Taylor, all orders: nodes / build | ours diff, n-th alone: nodes (ops) / build / "
             "eval numpy / eval numba | ours gen_graph: nodes / build | "
             + " | ".join(f"{LABELS[p]}: {unit[p]}" for p in peers)
             + " | best peer: size, build, eval | ours/best: ops, build (all orders, n-th alone), eval (numpy, numba) |",
             "|" + "---|" * (6 + len(peers))]
    for name, data in results["functions"].items():
        row = data["orders"].get(str(n))
        if row is None:
            continue
        t, d, g = row["taylor"], row["diff"], row.get("graph")
        found = [row[p] for p in peers if "size" in row.get(p, {})]
        numba = d.get("eval_numba")
        best, ratio = "–", "–"
        if found:
            size = min(p.get("size_cse", p["size"]) for p in found)
            build = min(p["build"] for p in found)
            ev = min(p["eval"] for p in found)
            best = f"{size}, {_fmt(build)}, {_fmt(ev)}"
            ratio = (f"{d['ops'] / size:.2f}, {t['build'] / build:.2f} / {d['build'] / build:.2f}, "
                     f"{d['eval_numpy'] / ev:.2f}" + (f" / {numba / ev:.2f}" if numba else ""))
        graph = f"{g['size']} / {_fmt(g['build'])}" if g else "not run"
        lines.append(
            f"| {name} | {t['size']} / {_fmt(t['build'])} | {d['size']} ({d['ops']}) / {_fmt(d['build'])} / "
            f"{_fmt(d['eval_numpy'])} / {_fmt(numba)} | {graph} | "
            + " | ".join(_peer_cell(p, row.get(p)) for p in peers) + f" | {best} | {ratio} |")
    fit = results.get("fit", {})
    lines += ["", "Fitted growth exponent of Taylor-mode size, all orders (log size vs log n, n = 4..20): "
              + ", ".join(f"{k} {v:.2f}" for k, v in fit.items())]
    return "\n".join(lines) + "\n"


def plot(results: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(results["functions"])
    fig, axes = plt.subplots(1, len(names), figsize=(3.2 * len(names), 3.4), sharey=True)
    axes = np.atleast_1d(axes)
    series = [("taylor", "ours, Taylor (all orders)", "size"), ("diff", "ours, diff (n-th, ops)", "ops"),
              ("graph", "ours, gen_graph", "size"),
              ("sympy", "SymPy (cse)", "size_cse"), ("symengine", "SymEngine", "size"),
              ("jax", "JAX nested grad eqns", "size"), ("jax_jet", "JAX jet eqns", "size"),
              ("torch", "PyTorch nodes", "size")]
    for ax, name in zip(axes, names):
        orders = results["functions"][name]["orders"]
        for key, label, field in series:
            pts = [(int(n), row[key][field]) for n, row in orders.items()
                   if key in row and field in row[key]]
            if pts:
                pts.sort()
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", ms=3, label=label)
        ax.set_yscale("log")
        ax.set_title(f"{name}: {results['functions'][name]['text']}", fontsize=8)
        ax.set_xlabel("order n")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("size of the n-th derivative")
    axes[-1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=80)


if __name__ == "__main__":
    sys.exit(main())
