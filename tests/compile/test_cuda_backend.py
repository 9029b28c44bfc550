"""The CUDA backend without a GPU: its kernel source, its split of large programs, what it does
without CuPy or a GPU, and its whole call path run on the CPU.

For the last, a stand-in ``cupy`` module (NumPy arrays, and a ``RawKernel`` that compiles the
very CUDA source with the C++ compiler, one "thread" walking the grid-stride loop) runs
``cuda.function`` end to end: broadcasting, numbers read once, scratch arrays between parts,
float32. The values are checked against the NumPy backend, so what this proves is the source
and the plumbing; the CUDA math library's own ulps are measured by benchmarks/gpu.py on a GPU.
"""

import ctypes
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import types
from pathlib import Path

import numpy as np
import pytest

import subgraph_ad as sad
from subgraph_ad import Tape, lambdify
from subgraph_ad.compile.backends import c, cuda
from subgraph_ad.compile.program import build_program
from subgraph_ad import benchmark_functions as bench

from conftest import Softplus

ROOT = Path(__file__).resolve().parents[2]

#: What makes the CUDA source C++ for one CPU thread: blockIdx.x = threadIdx.x = 0 and
#: blockDim.x = gridDim.x = 1, so the grid-stride loop visits every point in turn. <math.h>'s
#: NAN and INFINITY are dropped so that the kernel's own definitions (__int_as_float) are used.
CPU_PRELUDE = """#include <math.h>
#include <string.h>
#undef INFINITY
#undef NAN
struct subgraph_ad_dim { unsigned x; };
static const subgraph_ad_dim blockIdx = {0}, threadIdx = {0}, blockDim = {1}, gridDim = {1};
static inline float __int_as_float(int i) { float f; memcpy(&f, &i, sizeof f); return f; }
#define __global__
"""


class CpuRawKernel:
    """``cupy.RawKernel`` on the CPU: the source compiled by c++ (no contraction into FMA, as
    NVRTC with ``--fmad=false``), called through ctypes."""

    compiled: list[tuple[str, tuple[str, ...]]] = []

    def __init__(self, source: str, name: str, options: tuple[str, ...] = ()) -> None:
        self.source, self.name, self.options, self.function = source, name, options, None

    def compile(self) -> None:
        folder = tempfile.mkdtemp(prefix="subgraph_ad_cuda_")
        try:
            path, library = os.path.join(folder, "kernel.cpp"), os.path.join(folder, "kernel.so")
            with open(path, "w") as file:
                file.write(CPU_PRELUDE + self.source)
            done = subprocess.run(["c++", "-O2", "-shared", "-fPIC", "-ffp-contract=off", "-o", library, path],
                                  capture_output=True, text=True)
            assert done.returncode == 0, done.stderr
            self.function = getattr(ctypes.CDLL(library), self.name)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        CpuRawKernel.compiled.append((self.name, self.options))

    def __call__(self, grid: tuple[int], block: tuple[int], args: tuple) -> None:
        n, *rest = args
        assert grid[0] * block[0] >= n  # every point has a thread
        assert all(a.dtype in (np.float64, np.float32) for a in rest)
        assert all(a.flags.c_contiguous for a in rest if isinstance(a, np.ndarray))
        kinds = {np.float64: ctypes.c_double, np.float32: ctypes.c_float}
        self.function.argtypes = [ctypes.c_longlong] + [ctypes.c_void_p if isinstance(a, np.ndarray) else kinds[type(a)]
                                                        for a in rest]
        self.function(int(n), *(a.ctypes.data if isinstance(a, np.ndarray) else a for a in rest))


def fake_cupy(devices: int | Exception = 1) -> types.ModuleType:
    """A ``cupy`` of NumPy arrays and CPU kernels; ``devices``: what getDeviceCount gives or raises."""
    module = types.ModuleType("cupy")
    module.ndarray = np.ndarray
    module.asarray, module.ascontiguousarray, module.empty = np.asarray, np.ascontiguousarray, np.empty
    module.broadcast_to = np.broadcast_to
    module.RawKernel = CpuRawKernel

    def count() -> int:
        if isinstance(devices, Exception):
            raise devices
        return devices

    module.cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(getDeviceCount=count))
    return module


def near(got: np.ndarray, ref: np.ndarray, rtol: float) -> bool:
    """nan and inf where NumPy has them, and within rtol of the largest finite value elsewhere
    (a derivative program's error is a few ulps of the scale its terms have)."""
    finite = np.isfinite(ref)
    same = np.array_equal(got[~finite], ref[~finite], equal_nan=True)
    return same and np.abs(got[finite] - ref[finite]).max(initial=0.0) <= rtol * np.abs(ref[finite]).max(initial=0.0)


needs_cxx = pytest.mark.skipif(shutil.which("c++") is None, reason="no C++ compiler (c++) on this machine")


def _f1() -> tuple[sad.Tape, sad.Term, list[sad.Term]]:
    tape, f, x = bench.f1()
    return tape, x, [f, f.diff(x, 4)]


# -- without CuPy, or without a GPU ---------------------------------------------------------------
def test_without_cupy_it_is_unavailable_and_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # import cupy raises ImportError
    tape, x, ds = _f1()
    assert cuda.available() is False
    with pytest.raises(ImportError, match=r"CuPy is not installed .*pip install cupy-cuda12x"):
        cuda.function(build_program(tape, [x], ds))


@pytest.mark.parametrize("devices, message", [(0, r"finds no CUDA GPU \(0 devices\)"),
                                              (RuntimeError("no CUDA driver"), r"finds no CUDA GPU \(RuntimeError: no CUDA driver\)")])
def test_with_cupy_but_no_gpu_it_is_unavailable_and_says_so(monkeypatch, devices, message):
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy(devices))
    tape, x, ds = _f1()
    assert cuda.available() is False
    with pytest.raises(ImportError, match=message):
        cuda.function(build_program(tape, [x], ds))


def test_a_function_without_a_spelling_is_refused_on_any_machine(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)
    tape = Tape()
    x = tape.var("x")
    with pytest.raises(c.NotLowerable, match="'softplus' has no spelling"):
        cuda.function(build_program(tape, [x], [Softplus()(x)]))


def test_bad_dtypes_and_limits_are_refused():
    tape, x, ds = _f1()
    program = build_program(tape, [x], ds)
    with pytest.raises(ValueError, match=r"dtype must be one of \('float64', 'float32'\), got 'float16'"):
        cuda.function(program, dtype="float16")
    with pytest.raises(ValueError, match="max_steps and max_arrays must be positive ints, got 0"):
        cuda.split(program, max_steps=0)


# -- the kernel source ------------------------------------------------------------------------------
def test_the_kernel_is_the_c_body_in_a_grid_stride_loop_with_ieee_options():
    tape, x, ds = _f1()
    program = build_program(tape, [x], ds)
    source = cuda.kernel_source(program, (False,), "float64", "k")
    assert 'extern "C" __global__ void k(const long long n, const double* __restrict__ p0, ' \
           "double* __restrict__ q0, double* __restrict__ q1)" in source
    assert "\n".join(f"        {line}" for line in c.c_body(program).splitlines()) in source
    assert "const double in0 = p0[i];" in source and "q1[i] = out1;" in source
    assert "i += (long long)blockDim.x * gridDim.x" in source
    assert "--fmad=false" in cuda.OPTIONS and "--ftz=false" in cuda.OPTIONS
    assert not any("fast" in option for option in cuda.OPTIONS)


def test_a_number_is_passed_by_value():
    tape = Tape()
    x, y = tape.var("x"), tape.var("y")
    source = cuda.kernel_source(build_program(tape, [x, y], [x * y + sad.sin(x)]), (False, True))
    assert "const long long n, const double* __restrict__ p0, const double in1, double* __restrict__ q0" in source
    assert "const double in0 = p0[i];" in source and "p1" not in source


def test_float32_kernels_compute_in_float():
    tape, x, ds = _f1()
    source = cuda.kernel_source(build_program(tape, [x], ds), (False,), "float32")
    assert "double" not in source and "expf(" in source and "const float* __restrict__ p0" in source
    assert "(-0.5f)" in source


# -- splitting large programs ----------------------------------------------------------------------
def _s(n: int) -> tuple[sad.Tape, list[sad.Term], sad.Term]:
    tape = Tape()
    xs = [tape.var(f"x{i}") for i in range(n)]
    squares = xs[0] * xs[0]
    for v in xs[1:]:
        squares = squares + v * v
    return tape, xs, sum((sad.sin(xs[i] * xs[i + 1]) for i in range(n - 1)), sad.exp(squares))


def test_a_program_that_fits_is_one_part_and_its_own_program():
    tape, x, ds = _f1()
    program = build_program(tape, [x], ds)
    part, = cuda.split(program)
    assert part.program == program and part.reads == (("in", 0),) and part.writes == (("out", 0), ("out", 1))


def test_a_large_program_splits_within_the_limits_and_hands_each_value_on_once():
    tape, xs, z = _s(8)
    outs = list(z.grad_graph(xs)) + [xs[3], tape.const(2.0), z]
    program = build_program(tape, xs, outs)
    parts = cuda.split(program, max_steps=7, max_arrays=9)
    assert len(parts) > 5
    assert sum(len(p.program.steps) for p in parts) == len(program.steps)
    written: set = set()
    for part in parts:
        assert len(part.program.steps) <= 7 and len(part.reads) + len(part.writes) <= 9
        assert all(r in written for r in part.reads if r[0] == "t")  # read only after written
        new = {w for w in part.writes if w[0] == "t"}
        assert not new & written
        written |= new | {("t", v) for kind, v in part.program.outputs if kind == "t"}
    targets = sorted(k for part in parts for kind, k in part.writes if kind == "out")
    assert targets == list(range(len(outs)))  # every output written exactly once


def test_a_split_program_computes_each_output_near_what_it_reads():
    """Tape order is the forward pass, then the backward one: split there, R40's gradient
    would hand its forward values on through 95 scratch arrays in 14 kernels. Each output's
    cone computed just before it keeps the values local: 6 kernels, 20 scratch arrays."""
    tape = Tape()
    xs = [tape.var(f"x{i}") for i in range(40)]
    z = sum(100 * (xs[i + 1] - xs[i] ** 2) ** 2 + (1 - xs[i]) ** 2 for i in range(39))
    program = build_program(tape, xs, list(z.grad_graph(xs)))
    parts = cuda.split(program, max_steps=10**6, max_arrays=24)
    scratch = sum(1 for part in parts for kind, _ in part.writes if kind == "t")
    assert len(parts) <= 6 and scratch <= 20


def test_scratch_arrays_are_dropped_after_their_last_reader():
    """A long program holds only the values still to be read: fewer scratch arrays alive at
    once than it makes, and none once it is done."""
    import weakref

    tape, xs, z = _s(8)
    program = build_program(tape, xs, list(z.grad_graph(xs)))
    parts = cuda.split(program, max_steps=7, max_arrays=9)
    made: list = []
    peak = [0]

    def scratch() -> np.ndarray:
        array = np.empty(1)
        made.append(weakref.ref(array))
        return array

    def launch(p: int, reads, writes) -> None:
        peak[0] = max(peak[0], sum(r() is not None for r in made))

    outputs = [np.empty(1) for _ in program.outputs]
    cuda.schedule(parts, [np.empty(1)] * len(xs), outputs, scratch, launch)
    assert len(made) > 2 * peak[0] > 0 and all(r() is None for r in made)


# -- the whole call path, on the CPU ---------------------------------------------------------------
@needs_cxx
@pytest.mark.parametrize("name", sorted(bench.BENCHMARKS))
def test_the_kernels_run_on_the_cpu_give_numpys_values(monkeypatch, name):
    """F1–F5 and derivatives 1..10 through ``cuda.function`` with the stand-in CuPy: NumPy
    inputs broadcast ((5, 1) with (1, 3)), the other var as one number (a kernel of its own,
    reading it once); values within 1e-13 of each derivative's largest value, as the C tests."""
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy())
    tape, f, x = bench.BENCHMARKS[name]()
    ds = [f] + [f.diff(x, n) for n in range(1, 11)]
    variables = [sad.Term(tape, i) for i, node in enumerate(tape.nodes) if node.op == "var"]
    run = cuda.function(build_program(tape, variables, ds))
    column = np.linspace(-2.0, 2.0, 5)[:, None] + (2.5 if name == "F5" else 0.0)
    args = [column if v.index == x.index else 0.7 for v in variables]
    if len(variables) == 2:  # the other var as a row, broadcast against the column
        both = [column if v.index == x.index else np.array([[0.3, 0.7, 1.1]]) for v in variables]
        for got, ref in zip(run(*both), lambdify(variables, ds, backend="numpy")(*both)):
            assert got.shape == (5, 3) and near(got, ref, 1e-13)
    results = run(*args)
    for got, ref in zip(results, lambdify(variables, ds, backend="numpy")(*args)):
        assert got.shape == (5, 1) and got.dtype == np.float64
        assert near(got, ref, 1e-13)


@needs_cxx
def test_a_split_program_gives_the_unsplit_kernels_bits(monkeypatch):
    """Scratch arrays hand values on exactly (doubles through memory), so the split program's
    results are the one kernel's bit for bit, and NumPy's to a few ulps."""
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy())
    tape, xs, z = _s(6)
    outs = list(z.grad_graph(xs)) + [xs[2], tape.const(-0.0), z, z]
    program = build_program(tape, xs, outs)
    points = [np.linspace(-0.5, 0.5, 7) * (i + 1) for i in range(6)]
    points[4] = np.array(0.25)  # one var as one number (a 0-d array: on the device, read back once)
    whole = cuda.function(program)(*points)
    parts = cuda.split(program, max_steps=15, max_arrays=12)
    assert len(parts) > 3
    split = cuda.function(program, max_steps=15, max_arrays=12)(*points)
    for a, b, ref in zip(split, whole, lambdify(xs, outs, backend="numpy")(*points)):
        assert np.array_equal(a.view(np.int64), b.view(np.int64))
        assert np.allclose(a, ref, rtol=4 * np.finfo(float).eps, atol=0)
    assert np.signbit(split[7]).all()
    assert all(options == cuda.OPTIONS for _, options in CpuRawKernel.compiled)


@needs_cxx
def test_float32_runs_in_float32_to_float_accuracy(monkeypatch):
    """float32 inputs and outputs, each value within 1e-5 of the float64 result relative to the
    largest: F1 and its 4th derivative lose a few float ulps (2^-23 ≈ 1.2e-7) per operation."""
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy())
    tape, x, ds = _f1()
    points = np.linspace(-3.0, 3.0, 61)
    got = cuda.function(build_program(tape, [x], ds), dtype="float32")(points)
    for value, ref in zip(got, lambdify([x], ds, backend="numpy")(points.astype(np.float32).astype(float))):
        assert value.dtype == np.float32
        assert near(value, ref, 1e-5)


@needs_cxx
def test_numbers_alone_give_zero_dimensional_arrays_and_bad_arguments_are_refused(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy())
    tape = Tape()
    x, y = tape.var("x"), tape.var("y")
    run = cuda.function(build_program(tape, [x, y], [x * y + sad.sin(x), tape.const(math.inf)]))
    value, infinity = run(0.5, 4.2)
    assert value.shape == () and value == pytest.approx(0.5 * 4.2 + math.sin(0.5), rel=1e-15)
    assert infinity == math.inf
    with pytest.raises(TypeError, match="expected 2 arguments, got 1"):
        run(0.5)
    with pytest.raises(TypeError, match="argument 1 must be a number or an array of numbers, got str 'a'"):
        run(0.5, "a")


# -- the GPU benchmark's CPU side ------------------------------------------------------------------
@pytest.mark.slow
def test_the_gpu_benchmark_runs_its_cpu_side_with_dry_run(tmp_path):
    """``benchmarks/gpu.py --dry-run``: every case built, run (the NumPy backend standing in for
    ours) and checked on the CPU, with JAX's jet, nested grad, jvp∘grad, Hessian trace and grad
    as peers: independent derivatives that must agree with ours to 1e-12 of each output's scale."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    script = str(ROOT / "benchmarks" / "gpu.py")
    shown = subprocess.run([sys.executable, script, "--help"], capture_output=True, text=True, env=env, timeout=120)
    assert shown.returncode == 0 and "--dry-run" in shown.stdout and "--no-install" in shown.stdout
    run = subprocess.run([sys.executable, script, "--dry-run", "--functions", "F1,F4", "--orders", "4,20",
                          "--mlps", "4-16-16", "--out", str(tmp_path)], capture_output=True, text=True, env=env,
                         timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    results = json.loads((tmp_path / "gpu.json").read_text())
    rows = results["rows"]
    assert [row["case"] for row in rows] == ["F1 n=4"] * 2 + ["F1 n=20"] * 2 + ["F4 n=4"] * 2 + ["F4 n=20"] * 2 + [
        "S HVP, 50 vars", "MLP 4-16-16-1 Laplacian", "R1000 gradient"]
    assert rows[0]["points"] == 1000 and rows[1]["points"] == 3000 and rows[-1]["points"] == 200
    for row in rows:
        assert row["error"] <= 1e-13 and row["ms"] > 0 and row["copy_floor"] > 0, row["case"]
        assert row["peers"] and all(peer["error"] <= 1e-12 for peer in row["peers"].values()), row["case"]
    assert "JAX nested grad" in rows[0]["peers"] and "JAX nested grad" not in rows[2]["peers"]  # n <= 4
    assert (tmp_path / "gpu.md").read_text().count("\n| ") == len(rows) + 1
