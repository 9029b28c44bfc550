"""Benchmark, differential operators: the Laplacian and the biharmonic of gauss_sin
(exp(−|x|²)·Π sin xᵢ; d = 4, 16, 64), a tanh network w₃·tanh(W₂ tanh(W₁x + b₁) + b₂) of width 8
with seeded weights (d = 4, 16) and Rosenbrock (d = 100).

Graphs: the nodes each operator appends and the nodes of its whole graph (u's part included),
each ÷ u's nodes; the Hessian trace Σ diff(xᵢ, 2) for comparison (measured on trial); the
biharmonic by both methods (the Laplacian pass twice, "nested", and one fourth-order pass,
"direct"). Times: build, compile (NumPy backend), and evaluation on 10⁴ points (one compiled
call), against JAX on the same points (jit and vmap, compiled first): the trace of
``jax.hessian``, a loop of Hessian-vector products eᵢᵀH eᵢ vmapped over the basis, and
``jax.experimental.jet`` (second-order jets along each eᵢ); the biharmonic as the HVP loop over
the trace of ``jax.hessian`` (d <= 16). Every time is a median; the ratios are ours ÷ the
fastest JAX way. Also one training step of examples/pinn_poisson.py against JAX (``--pinn``).
Networks written with arrays are ``benchmarks/networks.py``'s.
Writes results/operators.json and operators.md.

    python benchmarks/operators.py [--quick] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

import subgraph_ad as sad
from subgraph_ad.benchmark_functions import OPERATOR_CASES as CASES  # name: (u, dimension d)
from subgraph_ad.benchmark_functions import gauss_sin, mlp, weights
from subgraph_ad.core import dependencies

import many_variables  # the script's folder is on sys.path when it runs

RESULTS = Path(__file__).resolve().parent / "results"
POINTS = 10_000
#: The direct biharmonic is stopped past this many times the nested one's nodes (or u's, if more).
DIRECT_BUDGET = 20
#: The cases whose biharmonic JAX builds as the Hessian trace of its Laplacian (larger ones take
#: minutes to compile).
JAX_BIHARMONIC_MAX_D = 16


def jax_version(name: str) -> Callable[[Any], Any]:
    """The same function in jax.numpy, vectorised as a JAX user writes it."""
    import jax.numpy as jnp

    f, d = CASES[name]
    if f is gauss_sin:
        return lambda x: jnp.exp(-jnp.sum(x**2)) * jnp.prod(jnp.sin(x))
    if f is mlp:
        W1, b1, W2, b2, w3 = (jnp.asarray(w) for w in weights(d))
        return lambda x: jnp.dot(w3, jnp.tanh(W2 @ jnp.tanh(W1 @ x + b1) + b2))
    return lambda x: jnp.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def timed(fn: Callable[[], Any], most: int = 7) -> tuple[float, Any]:
    """many_variables' median timing, after one untimed run."""
    return many_variables.timed(fn, most=most, warm=True)


def points(name: str, n: int) -> np.ndarray:
    _, d = CASES[name]
    return np.random.default_rng(1).uniform(-1.0, 1.0, (n, d))


def ours(name: str, n: int) -> dict[str, Any]:
    f, d = CASES[name]
    batch = points(name, n)
    columns = [np.ascontiguousarray(batch[:, k]) for k in range(d)]
    row: dict[str, Any] = {}

    def fresh() -> tuple[sad.Tape, list[sad.Term], sad.Term]:
        tape = sad.Tape()
        xs = [tape.var(f"x{i}", float(batch[0, i])) for i in range(d)]
        return tape, xs, f(xs)

    tape, xs, u = fresh()
    size = len(dependencies(tape, [u.index]))
    row["u"] = size
    with tape.trial() as trace:
        total = u.diff(xs[0], 2)
        for x in xs[1:]:
            total = total + u.diff(x, 2)
    row["hessian_trace"] = trace.appended
    for what, build in (("laplacian", lambda u, xs: sad.laplacian(u, xs)),
                        ("nested", lambda u, xs: sad.biharmonic(u, xs, method="nested")),
                        ("direct", lambda u, xs: sad.biharmonic(u, xs, method="direct")),
                        ("biharmonic", lambda u, xs: sad.biharmonic(u, xs))):
        tape_, xs_, u_ = fresh()
        start = len(tape_)
        if what == "direct":  # it pairs Hessians: past DIRECT_BUDGET × the nested count, stop it
            tape_.max_nodes = start + DIRECT_BUDGET * max(row["nested"]["appended"], size)
        t0 = time.perf_counter()
        try:
            term = build(u_, xs_)
        except sad.LimitError:
            row[what] = {"appended": None, "budget": tape_.max_nodes - start, "build": time.perf_counter() - t0}
            continue
        entry = {"appended": len(tape_) - start, "graph": len(dependencies(tape_, [term.index])),
                 "build": time.perf_counter() - t0}
        if what in ("laplacian", "biharmonic"):
            compile_s, compiled = timed(lambda: sad.lambdify(xs_, term), most=1)
            entry["compile"] = compile_s
            entry["eval"] = timed(lambda: compiled(*columns))[0]
            entry["value0"] = float(compiled(*[c[:1] for c in columns])[0])
        row[what] = entry
    return row


def jax_peer(name: str, n: int) -> dict[str, Any] | None:
    try:
        import jax
        import jax.numpy as jnp
        from jax.experimental import jet
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    _, d = CASES[name]
    f = jax_version(name)
    batch = jnp.asarray(points(name, n))
    eye = jnp.eye(d)

    def trace_hessian(x: Any) -> Any:
        return jnp.trace(jax.hessian(f)(x))

    def hvp_loop(x: Any) -> Any:
        hvp = lambda e: jax.jvp(jax.grad(f), (x,), (e,))[1]  # noqa: E731
        return jnp.sum(jax.vmap(lambda e: jnp.dot(e, hvp(e)))(eye))

    def jets(x: Any) -> Any:
        second = lambda e: jet.jet(f, (x,), ((e, jnp.zeros_like(e)),))[1][1]  # noqa: E731
        return jnp.sum(jax.vmap(second)(eye))

    row: dict[str, Any] = {}
    for what, lap in (("trace_hessian", trace_hessian), ("hvp_loop", hvp_loop), ("jet", jets)):
        compiled = jax.jit(jax.vmap(lap))
        t0 = time.perf_counter()
        try:
            compiled(batch).block_until_ready()
        except (KeyError, NotImplementedError) as error:  # jet has no rule for a primitive (reduce_prod)
            row[what] = {"missing": f"{type(error).__name__}: {error}"}
            continue
        row[what] = {"compile": time.perf_counter() - t0,
                     "eval": timed(lambda: compiled(batch).block_until_ready())[0],
                     "value0": float(compiled(batch[:1])[0])}
    def biharmonic(x: Any) -> Any:  # Σ eᵢᵀ∇²(Δu)eᵢ: HVPs of the Laplacian, not its d⁴ Hessian tensor
        hvp = lambda e: jax.jvp(jax.grad(trace_hessian), (x,), (e,))[1]  # noqa: E731
        return jnp.sum(jax.vmap(lambda e: jnp.dot(e, hvp(e)))(eye))

    if d <= JAX_BIHARMONIC_MAX_D:
        compiled = jax.jit(jax.vmap(biharmonic))
        t0 = time.perf_counter()
        compiled(batch).block_until_ready()
        row["biharmonic"] = {"compile": time.perf_counter() - t0,
                             "eval": timed(lambda: compiled(batch).block_until_ready())[0],
                             "value0": float(compiled(batch[:1])[0])}
    return row


def table(results: dict[str, Any]) -> str:
    lines = ["| case | u nodes | Δu appended (÷u) | Δu graph (÷u) | Σ diff(xᵢ, 2) (÷u) | Δu build, compile | "
             "Δu on the points | JAX trace∘hessian | JAX HVP loop | JAX jet | ours ÷ fastest JAX |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for name, row in results.items():
        o, j = row["ours"], row["jax"]
        u, lap = o["u"], o["laplacian"]
        cells = [name, str(u), f"{lap['appended']} ({lap['appended'] / u:.2f}×)", f"{lap['graph']} ({lap['graph'] / u:.2f}×)",
                 f"{o['hessian_trace']} ({o['hessian_trace'] / u:.1f}×)",
                 f"{lap['build'] * 1e3:.0f} ms, {lap['compile'] * 1e3:.0f} ms", f"{lap['eval'] * 1e3:.2f} ms"]
        if j:
            times = [j[k].get("eval") for k in ("trace_hessian", "hvp_loop", "jet")]
            cells += ["no rule" if t is None else f"{t * 1e3:.2f} ms" for t in times]
            cells.append(f"{lap['eval'] / min(t for t in times if t is not None):.2f}")
        else:
            cells += ["–"] * 4
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "| case | Δ²u nested: appended (÷u) | direct: appended (÷u) | chosen (auto) | Δ²u on the points | "
              "JAX HVP loop over trace∘hessian | ours ÷ JAX |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for name, row in results.items():
        o, j = row["ours"], row["jax"]
        u, bih = o["u"], o["biharmonic"]
        jax_time = j.get("biharmonic", {}).get("eval") if j else None
        direct = o["direct"]["appended"]
        cells = [name, f"{o['nested']['appended']} ({o['nested']['appended'] / u:.2f}×)",
                 f"> {o['direct']['budget']} (stopped)" if direct is None else f"{direct} ({direct / u:.2f}×)",
                 f"{bih['appended']} ({bih['appended'] / u:.2f}×)", f"{bih['eval'] * 1e3:.2f} ms",
                 "–" if jax_time is None else f"{jax_time * 1e3:.2f} ms",
                 "–" if jax_time is None else f"{bih['eval'] / jax_time:.2f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def pinn_step(n: int = 1_000) -> dict[str, Any]:
    """One training step of examples/pinn_poisson.py's network (loss and gradient, n collocation
    and n // 4 boundary points): ours (``value_and_grad`` of a loss calling ``laplacian``) — the
    first call (trace, build, compile) and later calls (median) — against ``jax.jit`` of
    ``jax.value_and_grad`` with the trace of ``jax.hessian`` inside (compiled first)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
    import pinn_poisson as pinn

    rng = np.random.default_rng(0)
    inside, boundary = rng.random((n, 2)), rng.random((n // 4, 2)).round()
    f = pinn.source(inside)
    params = pinn.initial()
    step = sad.value_and_grad(pinn.loss)
    start = time.perf_counter()
    ours_value, _ = step(params, inside, boundary, f)
    first = time.perf_counter() - start
    later, _ = timed(lambda: step(params, inside, boundary, f))
    row: dict[str, Any] = {"points": n, "first": first, "step": later, "jax": None}
    try:
        import jax
    except ImportError:
        return row
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy

    def net(x: Any, p: Any) -> Any:
        return p["v"] @ jnp.tanh(p["W"] @ x + p["b"]) + p["c"]

    def loss(p: Any) -> Any:
        lap = jax.vmap(lambda x: jnp.trace(jax.hessian(net)(x, p)))(inside)
        edge = jax.vmap(net, in_axes=(0, None))(boundary, p)
        return jnp.mean((lap + f) ** 2) + pinn.WEIGHT * jnp.mean(edge**2)

    jstep = jax.jit(jax.value_and_grad(loss))
    jax.block_until_ready(jstep(params))
    row["jax"], found = timed(lambda: jax.block_until_ready(jstep(params)))
    row["agree"] = abs(float(found[0]) - ours_value) <= 1e-9 * abs(ours_value)
    return row


def pinn_table(row: dict[str, Any]) -> str:
    jax_time = "–" if row["jax"] is None else f"{row['jax'] * 1e3:.2f} ms"
    ratio = "–" if row["jax"] is None else f"{row['step'] / row['jax']:.2f}"
    return ("| PINN training step (2-16-1 tanh, Poisson) | points | first step (trace, build, compile) | step | "
            "JAX jit(value_and_grad) with trace∘hessian | ours ÷ JAX |\n| --- | ---: | ---: | ---: | ---: | ---: |\n"
            f"| pinn_poisson | {row['points']} | {row['first']:.2f} s | {row['step'] * 1e3:.2f} ms | {jax_time} | "
            f"{ratio} |\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="gauss_sin-4 and rosenbrock-100 on 10³ points, no JAX")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--pinn", action="store_true", help="only the PINN training step (10³ collocation points)")
    args = parser.parse_args()
    if args.pinn or not args.quick:
        row = pinn_step()
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "pinn.json").write_text(json.dumps(row, indent=2))
        print(pinn_table(row), flush=True)
        if args.pinn:
            return
    names = ["gauss_sin-4", "rosenbrock-100"] if args.quick else list(CASES)
    n = 1_000 if args.quick else POINTS
    results: dict[str, Any] = {}
    for name in names:
        row = {"ours": ours(name, n), "jax": None if args.quick else jax_peer(name, n)}
        results[name] = row
        o = row["ours"]
        print(f"{name}: u {o['u']} nodes; Δu appends {o['laplacian']['appended']} "
              f"({o['laplacian']['appended'] / o['u']:.2f}×), Δ²u {o['biharmonic']['appended']}", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "operators.json").write_text(json.dumps(results, indent=2))
    text = table(results)
    (args.out / "operators.md").write_text(text)
    print(text)
    print(f"wrote {args.out / 'operators.json'}, operators.md")


if __name__ == "__main__":
    main()
