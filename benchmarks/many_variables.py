"""Benchmark, many variables: gradient, Hessian and Hessian-vector product of R_N (Rosenbrock,
N = 10, 100, 1,000), S (Σ sin(x_i x_{i+1}) + exp(Σ x_i²), 50 vars) and M (a 2-layer tanh
network's squared loss over its 97 weights, 8 samples in R⁴, 16 hidden units).

Each tool gets the code its own documentation writes (FORMS): ours, CasADi SX and SymEngine,
whose graphs are graphs of scalars, the Python loop over x[i]; JAX and PyTorch the array code
(slicing, sum, matmul: ``rosenbrock_array``, ``s_array``, ``network_array``), whose programs do
not grow with N.

Graphs: nodes appended (gradient by one grad_graph sweep, Hessian forward over reverse, HVP with
v as vars) and the size of the graph the results need, f's part included — the measure of
CasADi SX's ``Function.n_nodes`` (gradient, hessian, jtimes), measured in the same run; and the
operations of SymEngine's cse form of the gradient.

Programs (gradient, Hessian, HVP): build time, compile time on the NumPy and Numba backends
(``lambdify`` and its first calls, one point and batch, as code is generated on first use;
a Numba fallback to NumPy is shown as "→NumPy") and JAX's (its first calls, one point and batch), and evaluation on one point and on a batch (10⁴ points;
the Hessian on 10³, as the dense peers hold n² numbers per point; one point on both backends,
Numba running a program of 1,500 steps or more natively). Our Hessian is the sparse
one (its structural nonzeros, one per symmetric pair); JAX (``jit(grad)``, ``jit(hessian)``,
``jit(jvp∘grad)``, ``vmap`` for batches, on JAX arrays made once) and PyTorch (``torch.func``,
eager) build dense ones; R1000's dense batch (10⁹ numbers) is not run. Every time is a median (of up to 7 runs — a call under 1 ms timed
in batches of about 1 ms, as timeit's autorange — and over --rounds whole measurements, taken one
after another so that the shared machine's slow minutes spread over all tools); the ratios are
ours ÷ JAX. Writes results/many_variables.json and many_variables.md.

    python benchmarks/many_variables.py [--quick] [--rounds 1] [--out DIR]
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Any, Callable

import numpy as np

import subgraph_ad as sad
from subgraph_ad.benchmark_functions import HIDDEN, SAD, network_data
from subgraph_ad.benchmark_functions import MANY_VARIABLES as CASES  # name: (the scalar loop, number of variables)
from subgraph_ad.compile.lambdify import BackendWarning
from subgraph_ad.core import dependencies

from run import median_of  # the script's folder is on sys.path when it runs

RESULTS = Path(__file__).resolve().parent / "results"
POINTS = 10_000
HESSIAN_POINTS = 1_000
#: A call shorter than this is timed this long at a time (``timed``).
BATCH_SECONDS = 1e-3
#: Above this many variables the dense peers' Hessian batch is not run (n² numbers per point).
DENSE_BATCH_MAX = 100


def rosenbrock_array(x: Any, xp: Any) -> Any:
    """Rosenbrock as a JAX or PyTorch user writes it (xp: jax.numpy, torch or numpy): one
    slice expression, a program of the same size for every N."""
    return xp.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def s_array(x: Any, xp: Any) -> Any:
    return xp.sum(xp.sin(x[:-1] * x[1:])) + xp.exp(xp.sum(x * x))


def network_array(w: Any, xp: Any) -> Any:
    """``network`` with matrices: W1 = w[0:64] as 16 rows of 4, b1 = w[64:80], W2 = w[80:96],
    b2 = w[96] (the same layout as the loop's w[4h + j], w[64 + h], w[80 + h], w[96])."""
    inputs, targets = network_data()
    w1 = w[:4 * HIDDEN].reshape(HIDDEN, 4)
    b1, w2, b2 = w[4 * HIDDEN:5 * HIDDEN], w[5 * HIDDEN:6 * HIDDEN], w[6 * HIDDEN]
    hidden = xp.tanh(xp.asarray(inputs) @ w1.T + b1)
    return xp.sum((hidden @ w2 + b2 - xp.asarray(targets)) ** 2)


#: name: the same function as array code, what JAX and PyTorch are given
ARRAY_CODE: dict[str, Callable[[Any, Any], Any]] = {
    "R10": rosenbrock_array, "R100": rosenbrock_array, "R1000": rosenbrock_array, "S": s_array, "M": network_array,
}
def peer_function(name: str, xp: Any) -> Callable[[Any], Any]:
    """The function JAX (xp = jax.numpy) or PyTorch (xp = torch) is given for case ``name``."""
    return lambda x: ARRAY_CODE[name](x, xp)


#: The code each tool is given, as the tables say it.
FORMS = {"ours": "scalar loop over x[i] (Terms)",
         "ours, array code": "array code (NumPy: slicing, sum, matmul) traced as array nodes: sad.grad, sad.hessian, "
                             "sad.hvp, sad.vmap", "casadi": "scalar loop over x[i] (SX)",
         "symengine": "scalar loop over x[i] (symbols)", "jax": "array code (jax.numpy: slicing, sum, matmul)",
         "torch": "array code (torch: slicing, sum, matmul)"}
PROGRAMS = ("gradient", "hessian", "hvp")


def timed(fn: Callable[[], Any], budget: float = 0.5, most: int = 7, warm: bool = False) -> tuple[float, Any]:
    """The median time of one call over up to ``most`` runs (at least one, more while under
    ``budget`` seconds in all), garbage collector paused as in timeit; ``warm``: after one
    untimed run, and a call under a millisecond is timed in batches of about a millisecond
    (as timeit's autorange), so that a call of microseconds is not one clock reading."""
    times: list[float] = []
    result = fn() if warm else None
    number = 1
    if warm:
        start = time.perf_counter()
        fn()
        once = time.perf_counter() - start
        number = max(1, int(BATCH_SECONDS / max(once, 1e-9)))
    while len(times) < most and (not times or sum(times) * number < budget):
        gc.disable()
        t0 = time.perf_counter()
        for _ in range(number):
            result = fn()
        times.append((time.perf_counter() - t0) / number)
        gc.enable()
    return statistics.median(times), result


def inputs(name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The point, the direction v and the batches (10⁴ points, and 10³ for Hessians) near it."""
    _, n = CASES[name]
    rng = np.random.default_rng(1)
    point = rng.uniform(-0.5, 0.5, n)
    v = rng.standard_normal(n)
    batch = point[:, None] + 0.01 * rng.standard_normal((n, POINTS))
    return point, v, batch, batch[:, :HESSIAN_POINTS]


def _build(what: str, tape: sad.Tape, xs: list[sad.Term], z: sad.Term) -> tuple[list[sad.Term], list[sad.Term], Any]:
    """The Terms of one program, its inputs, and (Hessian) the sparse matrix."""
    if what == "gradient":
        return list(z.grad_graph(xs)), xs, None
    if what == "hessian":
        sparse = sad.hessian(z, xs, sparse=True)
        return list(sparse.terms), xs, sparse
    vs = [tape.var(f"v{i}") for i in range(len(xs))]
    return sad.hvp(z, xs, vs), xs + vs, None


def _compiled(backend: str, sparse: Any, ins: list[sad.Term], terms: list[sad.Term], one: list[Any],
              many: list[Any]) -> tuple[float, str, Any]:
    """Compile time — ``lambdify`` and its first calls on one point and on the batch, as code is
    generated on first use (JAX's compile column is its first calls too) — "→NumPy" when Numba
    fell back (without Numba, or a function it cannot compile), and the compiled function."""
    def first() -> Any:
        compiled = sparse.compile(ins, backend, cache=False) if sparse else sad.lambdify(ins, terms, backend, cache=False)
        compiled(*one)
        compiled.values(*many) if sparse else compiled(*many)
        return compiled

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BackendWarning)
        seconds, compiled = timed(first, most=1)
    return seconds, "" if (compiled.compiled if sparse else compiled).backend == backend else "→NumPy", compiled


def ours(name: str) -> dict[str, Any]:
    f, n = CASES[name]
    point, v, batch, hessian_batch = inputs(name)

    def fresh() -> tuple[sad.Tape, list[sad.Term], sad.Term]:
        tape = sad.Tape()
        xs = [tape.var(f"x{i}", float(point[i])) for i in range(n)]
        return tape, xs, f(xs, SAD)

    tape, xs, z = fresh()
    row: dict[str, Any] = {"f": len(tape)}
    for what in PROGRAMS:
        def run() -> tuple[int, int, Any]:
            tape, xs, z = fresh()
            start = len(tape)
            terms, ins, sparse = _build(what, tape, xs, z)
            return (len(tape) - start - (len(ins) - len(xs)), len(dependencies(tape, [t.index for t in terms])),
                    (terms, ins, sparse))
        build, (appended, graph, (terms, ins, sparse)) = timed(run, budget=1.0, most=3)
        one = [*point, *v] if what == "hvp" else list(point)
        many = [*batch, *v] if what == "hvp" else list(hessian_batch if sparse else batch)
        numpy_compile, _, compiled = _compiled("numpy", sparse, ins, terms, one, many)
        numba_compile, numba_note, numba = _compiled("numba", sparse, ins, terms, one, many)
        on_batch = lambda c: timed(lambda: c.values(*many) if sparse else c(*many), warm=True)[0]  # noqa: E731
        row[what] = {"appended": appended, "graph": graph, "build": build, "compile_numpy": numpy_compile,
                     "compile_numba": numba_compile, "numba": numba_note,
                     "eval_1": timed(lambda: compiled(*one), warm=True)[0], "eval_batch": on_batch(compiled),
                     "eval_1_numba": None if numba_note else timed(lambda: numba(*one), warm=True)[0],
                     "eval_batch_numba": None if numba_note else on_batch(numba)}
        if sparse:
            row[what]["nonzeros"] = len(sparse.terms)
    return row


def ours_arrays(name: str) -> dict[str, Any]:
    """Ours given the array code JAX is given (``ARRAY_CODE`` on NumPy), traced as array nodes:
    ``sad.grad``, ``sad.hessian`` and ``sad.hvp`` at one point, under ``sad.vmap`` on the batch
    (one row per point, as JAX's), each checked against the scalar loop's program first; and
    the gradient and HVP with ``backend="numba"`` (the array graph expanded to scalars) at one
    point (one kernel call) and under ``sad.vmap`` on the batch (each column read in place)."""
    _, n = CASES[name]
    point, v, batch, hessian_batch = inputs(name)
    fun = peer_function(name, np)
    many, hessian_many = np.ascontiguousarray(batch.T), np.ascontiguousarray(hessian_batch.T)
    programs = {"gradient": (sad.grad(fun), many), "hessian": (sad.hessian(fun), hessian_many),
                "hvp": (lambda x: sad.hvp(fun, x, v), many)}
    tape = sad.Tape()
    xs = [tape.var(f"x{i}") for i in range(n)]
    z = CASES[name][0](xs, SAD)
    vs = [tape.var(f"v{i}") for i in range(n)]
    scalar = {"gradient": sad.lambdify(xs, list(z.grad_graph(xs))),
              "hvp": sad.lambdify(xs + vs, sad.hvp(z, xs, vs))}
    row: dict[str, Any] = {}
    for what, (g, points) in programs.items():
        one = g(point)
        if what in scalar:  # the same numbers as the scalar loop's program
            args = list(point) + (list(v) if what == "hvp" else [])
            np.testing.assert_allclose(one, scalar[what](*args), rtol=1e-10, atol=1e-12)
        batched = sad.vmap(g)
        dense_batch = what != "hessian" or n <= DENSE_BATCH_MAX  # n² numbers a point, as for the peers
        row[what] = {"eval_1": timed(lambda: g(point), warm=True)[0],
                     "eval_batch": timed(lambda: batched(points), budget=5.0, warm=True)[0] if dense_batch else None}
    on_numba = {"gradient": sad.grad(fun, backend="numba"), "hvp": lambda x: sad.hvp(fun, x, v, backend="numba")}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BackendWarning)
        for what, g in on_numba.items():
            np.testing.assert_allclose(g(point), programs[what][0](point), rtol=1e-10, atol=1e-12)
            row[what]["eval_1_numba"] = timed(lambda: g(point), warm=True)[0]
            batched = sad.vmap(g)
            np.testing.assert_allclose(batched(many), sad.vmap(programs[what][0])(many), rtol=1e-10, atol=1e-12)
            row[what]["eval_batch_numba"] = timed(lambda: batched(many), budget=5.0, warm=True)[0]
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


def symengine_peer(name: str) -> dict[str, Any] | None:
    """Operations in SymEngine's cse form of the gradient (differentiated symbolically)."""
    try:
        import symengine as se
    except ImportError:
        return None
    f, n = CASES[name]
    xs = list(se.symbols(f"x0:{n}"))
    z = f(xs, se)
    seconds, (replacements, reduced) = timed(lambda: se.cse([z.diff(x) for x in xs]), most=1)
    ops = sum(se.count_ops(e) for _, e in replacements) + sum(se.count_ops(e) for e in reduced)
    return {"gradient_cse_ops": int(ops), "gradient_build": seconds}


def jax_peer(name: str) -> dict[str, Any] | None:
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    n = CASES[name][1]
    fun = peer_function(name, jnp)
    # JAX arrays made once, as a JAX user holds them: a NumPy batch would be copied in every call
    point, v, batch, hessian_batch = (jnp.asarray(a) for a in inputs(name))
    programs = {"gradient": (jax.grad(fun), (point,), (batch.T,), (0,)),
                "hessian": (jax.hessian(fun), (point,), (hessian_batch.T,), (0,)),
                "hvp": (lambda x, v: jax.jvp(jax.grad(fun), (x,), (v,))[1], (point, v), (batch.T, v), (0, None))}
    row: dict[str, Any] = {}
    for what, (g, one, many, axes) in programs.items():
        single, batched = jax.jit(g), jax.jit(jax.vmap(g, in_axes=axes))
        dense_batch = what != "hessian" or n <= DENSE_BATCH_MAX
        compile_time, _ = timed(lambda: (single(*one).block_until_ready(),
                                         batched(*many).block_until_ready() if dense_batch else None), most=1)
        row[what] = {"compile": compile_time, "eval_1": timed(lambda: single(*one).block_until_ready(), warm=True)[0],
                     "eval_batch": timed(lambda: batched(*many).block_until_ready(), warm=True)[0] if dense_batch else None}
    return row


def torch_peer(name: str) -> dict[str, Any] | None:
    try:
        import torch
        from torch.func import grad, hessian, jvp, vmap
    except ImportError:
        return None
    torch.set_default_dtype(torch.float64)
    n = CASES[name][1]
    point, v, batch, hessian_batch = inputs(name)
    fun = peer_function(name, torch)
    t = torch.from_numpy
    programs = {"gradient": (grad(fun), (t(point),), (t(batch.T.copy()),), (0,)),
                "hessian": (hessian(fun), (t(point),), (t(hessian_batch.T.copy()),), (0,)),
                "hvp": (lambda x, w: jvp(grad(fun), (x,), (w,))[1], (t(point), t(v)), (t(batch.T.copy()), t(v)), (0, None))}
    row: dict[str, Any] = {}
    with torch.no_grad():
        for what, (g, one, many, axes) in programs.items():
            dense_batch = what != "hessian" or n <= DENSE_BATCH_MAX
            row[what] = {"eval_1": timed(lambda: g(*one), warm=True)[0],
                         "eval_batch": timed(lambda: vmap(g, in_dims=axes)(*many), warm=True)[0] if dense_batch else None}
    return row


def _ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.2f}×" if a and b else "–"


def _us(t: float | None) -> str:
    return f"{t * 1e6:,.0f}" if t else "–"


def _ms(t: float | None) -> str:
    return f"{t * 1e3:,.1f}" if t else "–"


def tables(results: dict[str, Any]) -> list[str]:
    forms = ["Code given to each tool: " + "; ".join(f"{tool} — {form}" for tool, form in FORMS.items())
             + ". JAX: jit(grad), jit(hessian), jit(jvp∘grad), jit(vmap(·)) on batches; PyTorch: torch.func, eager.", ""]
    graphs = ["| case | f nodes: ours / CasADi | gradient graph: ours / CasADi (appended ÷ f) | SymEngine cse gradient ops "
              "| Hessian graph: ours / CasADi (nonzeros) | HVP graph: ours / CasADi jtimes |", "|---|---|---|---|---|---|"]
    times = ["| case | program | build (ms) | compile: ours NumPy / ours Numba / JAX (s) "
             "| 1 point: ours NumPy / ours Numba / ours array code on NumPy / on Numba / JAX / PyTorch, µs (ours' best ÷ JAX) "
             "| batch: ours NumPy / ours Numba / ours array code on NumPy / on Numba / JAX / PyTorch, ms (each of ours "
             "÷ JAX) |", "|---|---|---|---|---|---|"]
    for name, row in results.items():
        o, c, s = row["ours"], row["casadi"] or {}, row["symengine"] or {}
        graphs.append(f"| {name} | {o['f']:,} / {c.get('f', '–')} "
                      f"| {o['gradient']['graph']:,} / {c.get('gradient', '–')} ({o['gradient']['appended'] / o['f']:.2f}) "
                      f"| {s.get('gradient_cse_ops', '–')} "
                      f"| {o['hessian']['graph']:,} / {c.get('hessian', '–')} ({o['hessian']['nonzeros']:,}) "
                      f"| {o['hvp']['graph']:,} / {c.get('hvp', '–')} |")
        for what in PROGRAMS:
            p, j, t = o[what], (row["jax"] or {}).get(what, {}), (row["torch"] or {}).get(what, {})
            a = row["arrays"][what]
            points = f"{HESSIAN_POINTS:,}" if what == "hessian" else f"{POINTS:,}"
            batch_ratios = ", ".join(_ratio(mine, j.get("eval_batch"))
                                     for mine in (p["eval_batch"], p["eval_batch_numba"], a["eval_batch"],
                                                  a.get("eval_batch_numba")) if mine)
            jax_compile = f"{j['compile']:.2f}" if j else "–"
            best = min(v for v in (p["eval_1"], p.get("eval_1_numba"), a["eval_1"], a.get("eval_1_numba")) if v)
            times.append(f"| {name} | {what} | {p['build'] * 1e3:,.1f} | {p['compile_numpy']:.2f} / {p['compile_numba']:.2f}{p['numba']} / {jax_compile} "
                         f"| {_us(p['eval_1'])} / {_us(p.get('eval_1_numba'))} / {_us(a['eval_1'])} / {_us(a.get('eval_1_numba'))} "
                         f"/ {_us(j.get('eval_1'))} "
                         f"/ {_us(t.get('eval_1'))} ({_ratio(best, j.get('eval_1'))}) "
                         f"| {points} points: {_ms(p['eval_batch'])} / {_ms(p['eval_batch_numba'])} / {_ms(a['eval_batch'])} "
                         f"/ {_ms(a.get('eval_batch_numba'))} "
                         f"/ {_ms(j.get('eval_batch'))} / {_ms(t.get('eval_batch'))} ({batch_ratios}) |")
    return forms + graphs + [""] + times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="R10, R100 and S only")
    parser.add_argument("--rounds", type=int, default=1, help="whole measurements, one after another (medians)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    names = ["R10", "R100", "S"] if args.quick else list(CASES)
    rounds: dict[str, list[Any]] = {name: [] for name in names}
    for r in range(args.rounds):
        for name in names:
            rounds[name].append({"ours": ours(name), "arrays": ours_arrays(name), "casadi": casadi_peer(name),
                                 "symengine": symengine_peer(name), "jax": jax_peer(name), "torch": torch_peer(name)})
            print(f"{name} measured (round {r + 1} of {args.rounds})", flush=True)
    results = {name: median_of(found) for name, found in rounds.items()}
    lines = tables(results)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "many_variables.json").write_text(json.dumps({"forms": FORMS, "rounds": args.rounds, "cases": results}, indent=1))
    (args.out / "many_variables.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
