"""Benchmark on an NVIDIA GPU: our CUDA backend against JAX on the same device.

The cases (the points are struct-of-arrays, one array per input; a var that is one number for
every point, like F2's y, is passed as that number):

- F1–F5 (subgraph_ad/benchmark_functions.py), the n-th derivative alone, n = 4, 8, 10, 20, on 10⁷ and 10⁸
  points. JAX: our program run by JAX (``jit``), JAX's Taylor mode ``jet`` (``jit``), and nested
  ``grad`` (``jit∘vmap``; only to n = 4 by default: at n = 8 XLA needs 20 s and more to compile
  F3 and F4, whose nested graphs triple per order).
- S's Hessian-vector product, S = Σ sin(x_i x_{i+1}) + exp(Σ x_i²) in 50 vars, on 10⁶ points.
  JAX: ``jit∘vmap`` of ``jvp∘grad``.
- The Laplacians of two tanh MLPs (4-16-16-1 and 8-32-32-1, fixed seeded weights) in their
  inputs, on 10⁶ points; ours forward over reverse, Σ ∂(∂u/∂x_i)/∂x_i. JAX: ``jit∘vmap`` of the
  trace of ``jax.hessian``.
- R1000's gradient (Rosenbrock, 1,000 vars) on 10⁶ points: 2,000 arrays, so our program runs
  as several kernels (``cuda.split``). JAX: ``jit∘vmap∘grad``.

JAX's functions are written as JAX users write them (array slicing, matrix products), not
unrolled. For every case: the median time; its ratio to the copy floor (the time a
device-to-device copy, measured here, takes to move the bytes the program must read and write:
the least any kernel can take) and to an FMA kernel's rate (one fused multiply-add per step and
point, measured here: the arithmetic floor); and a check on up to 2,000 points of every output:
ours within 1e-13 of the CPU NumPy backend (of the output's largest value there: a derivative's
pointwise relative error is unbounded near its zeros), and how far each JAX peer is from it.
Exits 1 when one of ours fails the check.

It installs what it needs (``cupy-cuda12x``, ``jax[cuda12]``) with pip when missing, unless
``--no-install``. ``--dry-run`` runs it all on the CPU at tiny sizes, the NumPy backend standing
in for ours and JAX on the CPU: the graphs, programs, peers, checks and tables, without a GPU.

    python benchmarks/gpu.py [--dry-run] [--no-install] [--max-nested N] [--out DIR]

Writes DIR/gpu.json and DIR/gpu.md (default benchmarks/results).
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # JAX and CuPy share the GPU's memory

import numpy as np

import subgraph_ad as sad
from subgraph_ad.benchmark_functions import BENCHMARKS, SAD, rosenbrock, s_function, written_with
from subgraph_ad.compile.backends import cuda
from subgraph_ad.compile.backends import jax as jax_backend
from subgraph_ad.compile.program import build_program

RESULTS = Path(__file__).resolve().parent / "results"
ORDERS = (4, 8, 10, 20)
#: Points: (F1–F5 sizes, the many-variable cases' size) on the GPU, and for --dry-run.
SIZES = {"gpu": ((10**7, 10**8), 10**6), "dry": ((1_000, 3_000), 200)}
CHECK_POINTS = 2_000
RTOL = 1e-13
MLPS = "4-16-16,8-32-32"


# -- set-up -----------------------------------------------------------------------------------------
def ensure_packages() -> None:
    """pip install CuPy for CUDA 12 and JAX with CUDA where missing (a bare GPU machine)."""
    if importlib.util.find_spec("cupy") is None:
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "cupy-cuda12x"], check=True)
    probe = "import jax; assert jax.devices('gpu')"
    if subprocess.run([sys.executable, "-c", probe], capture_output=True).returncode != 0:
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "jax[cuda12]"], check=True)


@dataclass
class Device:
    """Where ours runs: the GPU (CuPy and our CUDA backend), or for --dry-run the CPU (NumPy
    and our NumPy backend), with the copy and FMA rates measured there."""

    name: str
    xp: Any
    sync: Callable[[], None]
    compile: Callable[[sad.Tape, list[sad.Term], list[sad.Term]], Callable[..., tuple[Any, ...]]]
    to_host: Callable[[Any], np.ndarray]
    copy_rate: float = 0.0  # bytes per second, read and written
    fma_rate: float = 0.0  # fused multiply-adds per second
    parts: Callable[[sad.Tape, list[sad.Term], list[sad.Term]], int] = lambda tape, ins, outs: 1


FMA_SOURCE = r"""extern "C" __global__ void fma_rate(const long long n, double* __restrict__ out, const double a, const double b) {
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)blockDim.x * gridDim.x) {
        double x0 = i * 1e-9, x1 = x0 + 1.0, x2 = x0 + 2.0, x3 = x0 + 3.0;
        #pragma unroll 16
        for (int k = 0; k < 256; k++) {
            x0 = fma(x0, a, b); x1 = fma(x1, a, b); x2 = fma(x2, a, b); x3 = fma(x3, a, b);
        }
        out[i] = x0 + x1 + x2 + x3;
    }
}
"""


def gpu_device() -> Device:
    import cupy

    def ours(tape: sad.Tape, ins: list[sad.Term], outs: list[sad.Term]) -> Callable[..., tuple[Any, ...]]:
        return cuda.function(build_program(tape, ins, outs))

    sync = cupy.cuda.Device().synchronize
    device = Device(cupy.cuda.runtime.getDeviceProperties(0)["name"].decode(), cupy, sync, ours, cupy.asnumpy,
                    parts=lambda tape, ins, outs: len(cuda.split(build_program(tape, ins, outs))))
    device.copy_rate, device.fma_rate = _gpu_rates(cupy, sync)
    cupy.get_default_memory_pool().free_all_blocks()
    return device


def _gpu_rates(cupy: Any, sync: Callable[[], None]) -> tuple[float, float]:
    """The copy rate (bytes per second, read and written) and the FMA rate (per second) of the GPU,
    measured on arrays that are freed when this returns."""
    a = cupy.random.random(10**8)
    b = cupy.empty_like(a)
    copy_seconds, _ = timed(lambda: cupy.copyto(b, a), sync)
    kernel = cupy.RawKernel(FMA_SOURCE, "fma_rate")
    n = 10**7
    fma_seconds, _ = timed(lambda: kernel((-(-n // 256),), (256,), (np.int64(n), b, np.float64(0.999), np.float64(1e-3))),
                           sync)
    return 2 * a.nbytes / copy_seconds, n * 256 * 4 / fma_seconds


def cpu_device() -> Device:
    """--dry-run: the NumPy backend, NumPy's copy rate, and no FMA kernel (rate 0: ratio n/a)."""

    def ours(tape: sad.Tape, ins: list[sad.Term], outs: list[sad.Term]) -> Callable[..., tuple[Any, ...]]:
        return sad.lambdify(ins, outs, backend="numpy")

    device = Device(f"CPU ({platform.processor() or platform.machine()}), NumPy backend", np, lambda: None, ours,
                    np.asarray)
    a = np.random.default_rng(0).random(10**6)
    b = np.empty_like(a)
    seconds, _ = timed(lambda: np.copyto(b, a), device.sync)
    device.copy_rate = 2 * a.nbytes / seconds
    return device


def timed(fn: Callable[[], Any], sync: Callable[[], None], repeats: int = 5, budget: float = 2.0) -> tuple[float, Any]:
    """The median of up to ``repeats`` synchronised runs after one warm-up (which compiles)."""
    result = fn()
    sync()
    times: list[float] = []
    while len(times) < repeats and (not times or sum(times) < budget):
        t0 = time.perf_counter()
        result = fn()
        sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


# -- the cases --------------------------------------------------------------------------------------
@dataclass
class Case:
    """A program of ours and its JAX peers: ``ins`` take ``values`` (a host array of the points,
    or one number); each peer maps the stacked array inputs (k, N) to the outputs (m, N)."""

    name: str
    tape: sad.Tape
    ins: list[sad.Term]
    outs: list[sad.Term]
    values: list[Any]
    peers: dict[str, Callable[[Any], Any]] = field(default_factory=dict)


def _jax() -> tuple[Any, Any]:
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    return jax, jnp


def _program_peer(case: Case) -> Callable[[Any], Any]:
    """Our program as JAX code (jit), on the stacked array inputs."""
    jax, jnp = _jax()
    run = jax_backend.function(build_program(case.tape, case.ins, case.outs))
    arrays = [k for k, v in enumerate(case.values) if isinstance(v, np.ndarray)]

    def peer(stacked: Any) -> Any:
        args = list(case.values)
        for row, k in enumerate(arrays):
            args[k] = stacked[row]
        return jnp.stack(run(*args))

    return jax.jit(peer)


def function_case(name: str, n: int, size: int, max_nested: int) -> Case:
    jax, jnp = _jax()
    from jax.experimental.jet import jet

    tape, f, x = BENCHMARKS[name]()
    ins = [sad.Term(tape, i) for i, node in enumerate(tape.nodes) if node.op == "var"]
    rng = np.random.default_rng(n)
    low, high = (0.5, 3.0) if name == "F5" else (-3.0, 3.0)  # F5: log(w1) > 0 below the sqrt at w1 > 1
    values = [rng.uniform(low, high, size) if v.index == x.index else float(v.eval()) for v in ins]
    case = Case(f"{name} n={n}", tape, ins, [f.diff(x, n)], values)
    case.peers["JAX: our program"] = _program_peer(case)
    g = written_with(jnp, name)
    case.peers["JAX jet"] = jax.jit(
        lambda s: jet(g, (s[0],), ((jnp.ones_like(s[0]),) + (jnp.zeros_like(s[0]),) * (n - 1),))[1][n - 1][None])
    if n <= max_nested:
        nested = g
        for _ in range(n):
            nested = jax.grad(nested)
        case.peers["JAX nested grad"] = jax.jit(lambda s: jax.vmap(nested)(s[0])[None])
    return case


def hvp_case(size: int) -> Case:
    jax, jnp = _jax()
    tape = sad.Tape()
    xs = [tape.var(f"x{i}") for i in range(50)]
    vs = [tape.var(f"v{i}") for i in range(50)]
    z = s_function(xs, SAD)
    rng = np.random.default_rng(2)
    values = list(rng.uniform(-0.2, 0.2, (100, size)))
    case = Case("S HVP, 50 vars", tape, xs + vs, sad.hvp(z, xs, vs), values)

    def s(x: Any) -> Any:
        return jnp.sum(jnp.sin(x[:-1] * x[1:])) + jnp.exp(jnp.sum(x * x))

    hvp = jax.vmap(lambda x, v: jax.jvp(jax.grad(s), (x,), (v,))[1], in_axes=1, out_axes=1)
    case.peers["JAX jvp∘grad"] = jax.jit(lambda a: hvp(a[:50], a[50:]))
    return case


def mlp_case(widths: tuple[int, ...], size: int) -> Case:
    jax, jnp = _jax()
    d, h1, h2 = widths
    rng = np.random.default_rng(sum(widths))
    layers = [(rng.standard_normal((h1, d)) / math.sqrt(d), rng.standard_normal(h1) * 0.1),
              (rng.standard_normal((h2, h1)) / math.sqrt(h1), rng.standard_normal(h2) * 0.1),
              (rng.standard_normal((1, h2)) / math.sqrt(h2), rng.standard_normal(1) * 0.1)]
    tape = sad.Tape()
    xs = [tape.var(f"x{i}") for i in range(d)]
    h: list[Any] = xs
    for w, b in layers[:-1]:
        h = [sad.tanh(sum((float(w[j, i]) * h[i] for i in range(len(h))), float(b[j]))) for j in range(len(b))]
    w, b = layers[-1]
    u = sum((float(w[0, i]) * h[i] for i in range(len(h))), float(b[0]))
    gradient = u.grad_graph(xs)
    laplacian = sum((g.gen_graph(x) for g, x in zip(gradient[1:], xs[1:])), gradient[0].gen_graph(xs[0]))
    values = list(rng.uniform(-1.0, 1.0, (d, size)))
    case = Case(f"MLP {d}-{h1}-{h2}-1 Laplacian", tape, xs, [laplacian], values)
    params = [(jnp.asarray(w), jnp.asarray(b)) for w, b in layers]

    def net(x: Any) -> Any:
        for w, b in params[:-1]:
            x = jnp.tanh(w @ x + b)
        w, b = params[-1]
        return (w @ x + b)[0]

    trace = jax.vmap(lambda x: jnp.trace(jax.hessian(net)(x)), in_axes=1)
    case.peers["JAX trace∘hessian"] = jax.jit(lambda a: trace(a)[None])
    return case


def rosenbrock_case(size: int) -> Case:
    jax, jnp = _jax()
    tape = sad.Tape()
    xs = [tape.var(f"x{i}") for i in range(1000)]
    z = rosenbrock(xs)
    values = list(np.random.default_rng(3).uniform(-0.5, 0.5, (1000, size)))
    case = Case("R1000 gradient", tape, xs, list(z.grad_graph(xs)), values)

    def r(x: Any) -> Any:
        return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)

    case.peers["JAX grad"] = jax.jit(jax.vmap(jax.grad(r), in_axes=1, out_axes=1))
    return case


# -- measuring one case -----------------------------------------------------------------------------
def error(got: np.ndarray, ref: np.ndarray) -> float:
    """The largest difference over the largest finite value of the reference, per output (inf
    where nan or inf differ): a derivative program's error is a few ulps of its terms' scale."""
    worst = 0.0
    for g, r in zip(got, ref):
        finite = np.isfinite(r)
        if not np.array_equal(g[~finite], r[~finite], equal_nan=True):
            return math.inf
        scale = np.abs(r[finite]).max(initial=0.0)
        difference = np.abs(g[finite] - r[finite]).max(initial=0.0)
        worst = max(worst, difference / scale if scale else difference)
    return worst


def measure(case: Case, device: Device) -> dict[str, Any]:
    size = next(len(v) for v in case.values if isinstance(v, np.ndarray))
    sample = np.unique(np.random.default_rng(0).integers(0, size, min(CHECK_POINTS, size)))
    at = [v[sample] if isinstance(v, np.ndarray) else v for v in case.values]
    ref = np.array(sad.lambdify(case.ins, case.outs, backend="numpy")(*at), ndmin=2)
    ref = np.broadcast_to(ref, (len(case.outs), len(sample)))

    compile_s, seconds, got = _run_ours(case, device, size, sample)
    steps = len(build_program(case.tape, case.ins, case.outs).steps)
    arrays = sum(isinstance(v, np.ndarray) for v in case.values)
    moved = (arrays + len(case.outs)) * size * 8
    row: dict[str, Any] = {
        "case": case.name, "points": size, "steps": steps, "parts": device.parts(case.tape, case.ins, case.outs),
        "compile_s": compile_s, "ms": seconds * 1e3, "error": error(got, ref),
        "copy_floor": seconds / (moved / device.copy_rate),
        "fma_floor": seconds / (steps * size / device.fma_rate) if device.fma_rate else None,
        "peers": _run_peers(case, sample, ref, seconds),
    }
    gc.collect()
    if device.xp is not np:
        device.xp.get_default_memory_pool().free_all_blocks()
    return row


def _run_ours(case: Case, device: Device, size: int, sample: np.ndarray) -> tuple[float, float, np.ndarray]:
    """Compile seconds, run seconds and the outputs at ``sample`` of ours; the device's inputs and
    outputs are freed when this returns, before the peers run."""
    t0 = time.perf_counter()
    run = device.compile(case.tape, case.ins, case.outs)
    compile_s = time.perf_counter() - t0
    device_values = [device.xp.asarray(v) if isinstance(v, np.ndarray) else v for v in case.values]
    seconds, outs = timed(lambda: run(*device_values), device.sync)
    on_device = device.xp.asarray(sample)  # only the checked points come back to the host
    got = np.stack([device.to_host(device.xp.broadcast_to(o, (size,))[on_device]) for o in outs])
    return compile_s, seconds, got


def _run_peers(case: Case, sample: np.ndarray, ref: np.ndarray, ours_seconds: float) -> dict[str, Any]:
    """Each JAX peer's time and error, or why it failed; its inputs are freed when this returns."""
    jax, _ = _jax()
    stacked = jax.device_put(np.stack([v for v in case.values if isinstance(v, np.ndarray)]))
    peers: dict[str, Any] = {}
    for name, peer in case.peers.items():
        try:
            t0 = time.perf_counter()
            jax.block_until_ready(peer(stacked))
            first = time.perf_counter() - t0
            peer_seconds, result = timed(lambda: jax.block_until_ready(peer(stacked)), lambda: None)
        except Exception as failure:  # e.g. XLA out of memory: a result about the peer, not a crash
            peers[name] = {"failed": f"{type(failure).__name__}: {str(failure).splitlines()[0][:200]}"}
            continue
        peers[name] = {"ms": peer_seconds * 1e3, "compile_s": first - peer_seconds,
                       "error": error(np.asarray(result[:, sample]), ref), "ours_over_peer": ours_seconds / peer_seconds}
        del result  # the next peer's memory
    return peers


# -- report -----------------------------------------------------------------------------------------
def _ms(value: float) -> str:
    return f"{value:.3g}"


def table(rows: list[dict[str, Any]], device: Device) -> str:
    lines = [f"Device: {device.name}; copy {device.copy_rate / 1e9:.0f} GB/s"
             + (f", FMA {device.fma_rate / 1e9:.0f} G/s (float64)" if device.fma_rate else ""), "",
             "| case | points | steps / kernels | ours (ms) | × copy floor | × FMA floor | ours: error vs CPU "
             "| JAX peers: time (ms), ours ÷ peer, error vs CPU |",
             "|---|---|---|---|---|---|---|---|"]
    for row in rows:
        peers = "; ".join(f"{name} failed ({p['failed']})" if "failed" in p else
                          f"{name} {_ms(p['ms'])}, {p['ours_over_peer']:.2g}×, {p['error']:.1e}"
                          for name, p in row["peers"].items())
        fma = f"{row['fma_floor']:.2g}" if row["fma_floor"] is not None else "n/a"
        lines.append(f"| {row['case']} | {row['points']:.0e} | {row['steps']} / {row['parts']} | {_ms(row['ms'])} "
                     f"| {row['copy_floor']:.2g} | {fma} | {row['error']:.1e} | {peers} |")
    return "\n".join(lines) + "\n"


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dry-run", action="store_true",
                        help="tiny sizes on the CPU: the NumPy backend for ours, JAX on the CPU (no GPU needed)")
    parser.add_argument("--no-install", action="store_true", help="do not pip install cupy-cuda12x / jax[cuda12]")
    parser.add_argument("--max-nested", type=int, default=4, help="highest order for JAX's nested grad (default 4)")
    parser.add_argument("--functions", default=",".join(BENCHMARKS), help="which of F1–F5 (default all)")
    parser.add_argument("--orders", default=",".join(map(str, ORDERS)), help="orders n (default 4,8,10,20)")
    parser.add_argument("--mlps", default=MLPS, help=f"the MLPs' widths d-h1-h2 (default {MLPS})")
    parser.add_argument("--out", type=Path, default=RESULTS, help="where gpu.json and gpu.md go")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    if not args.dry_run and not args.no_install:
        ensure_packages()
    device = cpu_device() if args.dry_run else gpu_device()
    (sizes, wide) = SIZES["dry" if args.dry_run else "gpu"]
    cases: list[Callable[[], Case]] = []
    for name in args.functions.split(","):
        for n in map(int, args.orders.split(",")):
            cases += [lambda name=name, n=n, size=size: function_case(name, n, size, args.max_nested) for size in sizes]
    cases.append(lambda: hvp_case(wide))
    mlps = [tuple(map(int, widths.split("-"))) for widths in args.mlps.split(",")]
    if any(len(widths) != 3 for widths in mlps):
        raise SystemExit(f"--mlps takes widths d-h1-h2 separated by commas, got {args.mlps!r}")
    cases += [lambda widths=widths: mlp_case(widths, wide) for widths in mlps]
    cases.append(lambda: rosenbrock_case(wide))
    rows = []
    for make in cases:
        row = measure(make(), device)
        rows.append(row)
        status = "ok" if row["error"] <= RTOL else "FAIL"
        print(f"{row['case']:>28} {row['points']:>9.0e}: {_ms(row['ms']):>8} ms  ×{row['copy_floor']:.2g} copy  "
              f"error {row['error']:.1e} {status}  "
              + "  ".join(f"{k}: {_ms(p['ms'])} ms" if "ms" in p else f"{k}: failed" for k, p in row["peers"].items()),
              flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "gpu.json").write_text(json.dumps({"device": device.name, "copy_rate": device.copy_rate,
                                                   "fma_rate": device.fma_rate, "rtol": RTOL, "rows": rows},
                                                  indent=1))
    (args.out / "gpu.md").write_text(table(rows, device))
    print(table(rows, device))
    failed = [row["case"] for row in rows if not row["error"] <= RTOL]
    print(f"gpu.json, gpu.md in {args.out}; " + (f"FAILED the {RTOL:g} check: {failed}" if failed else
                                                 f"every result of ours within {RTOL:g} of the CPU NumPy backend"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
