"""Benchmark, many variables: gradient, Hessian and Hessian-vector product of R_N (Rosenbrock,
N = 10, 100, 1,000), S (Σ sin(x_i x_{i+1}) + exp(Σ x_i²), 50 vars) and M (a 2-layer tanh
network's squared loss over its 97 weights, 8 samples in R⁴, 16 hidden units).

Ours: nodes appended (gradient by one grad_graph sweep, Hessian forward over reverse, HVP with v
as vars), build time, NumPy-backend compile time, and the HVP evaluated on one point and on
10⁴ points. Peers measured in the same run when installed: CasADi SX (gradient, hessian,
jtimes node counts: ``Function.n_nodes``) and JAX (``jit(vmap(hvp))`` on the same points, and
one point). Prints a table with the ratios to the targets and writes
results/many_variables.json.

    python benchmarks/many_variables.py [--quick] [--out DIR]
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

import subgraph_ad as sad
from subgraph_ad.core import dependencies

RESULTS = Path(__file__).resolve().parent / "results"
POINTS = 10_000
SAMPLES, HIDDEN = 8, 16


def _data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.standard_normal((SAMPLES, 4)), rng.standard_normal(SAMPLES)


def rosenbrock(x: Any, np_: Any = np) -> Any:
    return sum(100 * (x[i + 1] - x[i] ** 2) ** 2 + (1 - x[i]) ** 2 for i in range(len(x) - 1))


def s_function(x: Any, np_: Any = np) -> Any:
    squares = x[0] * x[0]
    for v in x[1:]:
        squares = squares + v * v
    return sum(np_.sin(x[i] * x[i + 1]) for i in range(len(x) - 1)) + np_.exp(squares)


def network(w: Any, np_: Any = np) -> Any:
    """Squared loss of tanh(W1 x + b1) · W2 + b2 over the samples; w holds W1, b1, W2, b2."""
    inputs, targets = _data()
    loss = 0.0
    for x, y in zip(inputs, targets):
        out = w[96]
        for h in range(HIDDEN):
            pre = w[64 + h]
            for j in range(4):
                pre = pre + w[4 * h + j] * float(x[j])
            out = out + w[80 + h] * np_.tanh(pre)
        loss = loss + (out - float(y)) ** 2
    return loss


CASES: dict[str, tuple[Callable[..., Any], int]] = {
    "R10": (rosenbrock, 10), "R100": (rosenbrock, 100), "R1000": (rosenbrock, 1000),
    "S": (s_function, 50), "M": (network, 97),
}
#: sad's functions under NumPy's names, for the traced/peer versions
SAD = type("sadnp", (), {"sin": staticmethod(sad.sin), "exp": staticmethod(sad.exp), "tanh": staticmethod(sad.tanh)})


def timed(fn: Callable[[], Any], repeats: int = 3) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeats):
        gc.disable()
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
        gc.enable()
    return statistics.median(times), result


def ours(name: str) -> dict[str, Any]:
    f, n = CASES[name]
    rng = np.random.default_rng(1)
    point = rng.uniform(-0.5, 0.5, n)
    row: dict[str, Any] = {}

    def fresh() -> tuple[sad.Tape, list[sad.Term], sad.Term]:
        tape = sad.Tape()
        xs = [tape.var(f"x{i}", float(point[i])) for i in range(n)]
        return tape, xs, f(xs, SAD)

    tape, xs, z = fresh()
    row["f"] = len(tape)
    for what, build in (("gradient", lambda t, xs, z: list(z.grad_graph(xs))),
                        ("hessian", lambda t, xs, z: [h for r in sad.hessian(z, xs) for h in r]),
                        ("hvp", lambda t, xs, z: sad.hvp(z, xs, [t.var(f"v{i}") for i in range(len(xs))]))):
        def run() -> tuple[int, int]:
            tape, xs, z = fresh()
            start = len(tape)
            terms = build(tape, xs, z)
            # appended, and the size of the graph the results need (f's part included), the
            # measure CasADi's Function.n_nodes gives
            return len(tape) - start - (len(xs) if what == "hvp" else 0), len(dependencies(tape, [t.index for t in terms]))
        row[f"{what}_build"], (row[f"{what}_appended"], row[what]) = timed(run, 1 if name in ("R1000", "M") else 3)
    tape, xs, z = fresh()
    vs = [tape.var(f"v{i}") for i in range(n)]
    hv = sad.hvp(z, xs, vs)
    row["compile"], compiled = timed(lambda: sad.lambdify(xs + vs, hv), 1)
    v = rng.standard_normal(n)
    batch = [np.full(POINTS, p) + 0.01 * rng.standard_normal(POINTS) for p in point]
    row["eval_1"], _ = timed(lambda: compiled(*point, *v), 7)
    row["eval_batch"], _ = timed(lambda: compiled(*batch, *v), 3)
    return row


def casadi_peer(name: str) -> dict[str, Any] | None:
    try:
        import casadi
    except ImportError:
        return None
    f, n = CASES[name]
    x = casadi.SX.sym("x", n)
    v = casadi.SX.sym("v", n)
    z = f([x[i] for i in range(n)], casadi)
    g = casadi.gradient(z, x)
    h = casadi.hessian(z, x)[0]
    hv = casadi.jtimes(g, x, v)
    count = lambda expr, ins: casadi.Function("f", ins, [expr]).n_nodes()  # noqa: E731
    return {"f": count(z, [x]), "gradient": count(g, [x]), "hessian": count(h, [x]), "hvp": count(hv, [x, v])}


def jax_peer(name: str) -> dict[str, Any] | None:
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    f, n = CASES[name]
    fun = lambda x: f([x[i] for i in range(n)], jnp)  # noqa: E731
    hvp = lambda x, v: jax.jvp(jax.grad(fun), (x,), (v,))[1]  # noqa: E731
    rng = np.random.default_rng(1)
    point = rng.uniform(-0.5, 0.5, n)
    v = rng.standard_normal(n)
    batch = point + 0.01 * rng.standard_normal((POINTS, n))
    one = jax.jit(hvp)
    many = jax.jit(jax.vmap(hvp, in_axes=(0, None)))
    compile_time, _ = timed(lambda: (one(point, v).block_until_ready(), many(batch, v).block_until_ready()), 1)
    eval_1, _ = timed(lambda: one(point, v).block_until_ready(), 7)
    eval_batch, _ = timed(lambda: many(batch, v).block_until_ready(), 3)
    return {"compile": compile_time, "eval_1": eval_1, "eval_batch": eval_batch}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="R10, R100 and S only")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    names = ["R10", "R100", "S"] if args.quick else list(CASES)
    results: dict[str, Any] = {}
    lines = ["| case | f nodes: ours / CasADi | gradient graph: ours / CasADi (appended ÷ f) | Hessian graph: ours / CasADi | HVP graph: ours / CasADi jtimes "
             "| build grad / H / HVP (ms) | compile HVP (s) | HVP 1 point: ours / JAX (µs) | HVP 10⁴ points: ours / JAX (ms) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name in names:
        row = {"ours": ours(name), "casadi": casadi_peer(name), "jax": jax_peer(name)}
        results[name] = row
        o, c, j = row["ours"], row["casadi"] or {}, row["jax"] or {}
        ratio = lambda a, b: f"{a / b:.2f}×" if b else "–"  # noqa: E731
        lines.append(
            f"| {name} | {o['f']} / {c.get('f', '–')} | {o['gradient']} / {c.get('gradient', '–')} ({o['gradient_appended'] / o['f']:.2f}) "
            f"| {o['hessian']} / {c.get('hessian', '–')} | {o['hvp']} / {c.get('hvp', '–')} "
            f"| {o['gradient_build'] * 1e3:.1f} / {o['hessian_build'] * 1e3:.0f} / {o['hvp_build'] * 1e3:.1f} "
            f"| {o['compile']:.2f} | {o['eval_1'] * 1e6:.0f} / {j.get('eval_1', 0) * 1e6:.0f} ({ratio(o['eval_1'], j.get('eval_1'))}) "
            f"| {o['eval_batch'] * 1e3:.1f} / {j.get('eval_batch', 0) * 1e3:.1f} ({ratio(o['eval_batch'], j.get('eval_batch'))}) |")
        print(lines[-1], flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "many_variables.json").write_text(json.dumps(results, indent=1))
    (args.out / "many_variables.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
