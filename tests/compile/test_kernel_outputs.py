"""Where a Numba kernel writes its outputs and reads its numbers (``llvm_driver``, ``llvm_ir``).

A kernel stores each output straight into the caller's array for every block of whole
vectors, and into a row of its scratch (copied out afterwards) for a last block that ends
inside a vector or an output whose points are not next to each other (a column); a number
input is read as one double where it lies unless it is an output too, and an input that is a
column goes through a row of the block. These must never change a value: random many-output programs (every built-in, a − a,
f(a, a), conditions, a zero tangent) with the same value as two outputs, an input, a number
input and a constant among the outputs, on point counts around the vector width and the block
(``ROW``), in chunks of a few steps and of many, on one thread and two, equal the graph's own
values (``Term.eval``), and so does one point through the kernel, on one thread or many.
"""

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import subgraph_ad as sad
from subgraph_ad.compile import heap
from subgraph_ad.compile import lambdify as lambdify_module
from subgraph_ad.compile.backends import llvm_driver
from subgraph_ad.compile.program import build_program
from random_programs import BINARY, UNARY, grown

pytest.importorskip("llvmlite")  # numba is in the dev extra: always present in make test

SEEDS = range(8)
ROW = llvm_driver.ROW
SIZES = (1, 7, 8, 9, ROW - 1, ROW, ROW + 1, 4 * ROW + 3)


def random_outputs(seed: int):
    """x, y (a number when called), z and a random function f of them; the outputs: f, its
    gradient, f again, x, y, a constant and a product of two partials."""
    rng = np.random.default_rng(seed)
    tape = sad.Tape()
    xs = [tape.var(name, 0.1 + 0.2 * k) for k, name in enumerate("xyz")]
    pool = grown(list(xs) + [xs[0] * 0.0], (UNARY + BINARY)[seed::len(SEEDS)], rng)  # [.., a zero tangent, ..]
    f = sum(pool[-4:], pool[3])
    gradient = list(f.grad_graph(xs))
    return tape, xs, [f, *gradient, f, xs[0], xs[1], tape.const(2.5), gradient[0] * gradient[2]]


def test_the_seeds_apply_every_built_in():
    assert {n for s in SEEDS for n in (UNARY + BINARY)[s::len(SEEDS)]} == set(UNARY + BINARY)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("chunk", [3, 250])
@pytest.mark.filterwarnings("error::subgraph_ad.compile.lambdify.BackendWarning")  # every built-in compiles
def test_outputs_written_in_place_or_through_a_row_give_the_graphs_values(seed, chunk):
    tape, xs, outputs = random_outputs(seed)
    compiled = sad.lambdify(xs, outputs, backend="numba", cache=False, chunk=chunk)
    rng = np.random.default_rng(50 + seed)
    for size in SIZES:
        x, z = rng.uniform(-0.9, 0.9, size), rng.uniform(-0.9, 0.9, size)
        y = float(rng.uniform(-0.9, 0.9))
        found = compiled(x, y, z)
        assert all(v.shape == (size,) for v in found)
        assert np.array_equal(found[len(outputs) - 4], x) and np.all(found[len(outputs) - 3] == y)
        assert np.all(found[len(outputs) - 2] == 2.5)
        for k in sorted({0, size // 2, size - 1}):
            values = {xs[0]: float(x[k]), xs[1]: y, xs[2]: float(z[k])}
            for got, term in zip(found, outputs):
                want = term.eval(values)
                assert got[k] == pytest.approx(want, rel=1e-12, abs=1e-12, nan_ok=True), (seed, size, term)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("chunk", [3, 250])
@pytest.mark.filterwarnings("error::subgraph_ad.compile.lambdify.BackendWarning")  # every built-in compiles
def test_columns_of_a_points_by_n_array_are_read_and_written_where_they_lie(seed, chunk):
    """Inputs that are columns of a (points × n) array (JAX's layout) go through the rows of
    each block on the way in, and ``stacked`` writes the outputs as the columns of one
    (points × outputs) array on the way out, beside a contiguous input and a number."""
    tape, xs, outputs = random_outputs(seed)
    compiled = sad.lambdify(xs, outputs, backend="numba", cache=False, chunk=chunk)
    assert compiled.strided
    rng = np.random.default_rng(90 + seed)
    for size in SIZES:
        batch = rng.uniform(-0.9, 0.9, (size, 5))
        kept = batch.copy()
        y = float(rng.uniform(-0.9, 0.9))
        for x, z in ((batch[:, 1], batch[:, 4]), (batch[:, 0], np.ascontiguousarray(batch[:, 2]))):
            found = compiled.stacked(x, y, z)
            assert found.shape == (size, len(outputs)) and found.flags.c_contiguous
            separate = compiled(x, y, z)
            for k in sorted({0, size // 2, size - 1}):
                values = {xs[0]: float(x[k]), xs[1]: y, xs[2]: float(z[k])}
                for j, term in enumerate(outputs):
                    want = term.eval(values)
                    assert found[k, j] == pytest.approx(want, rel=1e-12, abs=1e-12, nan_ok=True), (seed, size, term)
                    assert separate[j][k] == pytest.approx(want, rel=1e-12, abs=1e-12, nan_ok=True), (seed, size, term)
            assert np.array_equal(found[:, len(outputs) - 4], x) and np.all(found[:, len(outputs) - 2] == 2.5)
        assert np.array_equal(batch, kept)  # the inputs are read, never written


def test_stacked_takes_any_call_and_numpy_writes_into_columns_too():
    """``stacked`` on NumPy's kernels (ufuncs writing into the columns) and on calls outside the
    common batch (2-D, broadcast, one point) gives the outputs stacked along a last axis."""
    tape = sad.Tape()
    x, y = tape.var("x"), tape.var("y")
    terms = [sad.sin(x) * y, x - x, x]
    base = np.linspace(-1.0, 1.0, 12)
    for backend in ("numpy", "numba"):
        f = sad.lambdify([x, y], terms, backend=backend, cache=False)
        assert f.strided == (backend == "numba")
        for a, b in ((base, 0.5), (base.reshape(3, 4), base[:4]), (0.25, 0.5), (base[::-1], base[::2].repeat(2))):
            found = f.stacked(a, b)
            shape = np.broadcast_shapes(np.shape(a), np.shape(b))
            assert found.shape == shape + (3,)
            for j, term in enumerate(terms):
                want = np.vectorize(lambda p, q: term.eval({x: float(p), y: float(q)}))(*np.broadcast_arrays(a, b))
                assert np.allclose(found[..., j], want, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("one_block", [True, False])
@pytest.mark.filterwarnings("ignore::subgraph_ad.compile.lambdify.BackendWarning")
def test_outputs_are_separate_aligned_arrays_on_one_thread_or_two(one_block, monkeypatch):
    """Outputs are rows of one allocation, or (past ``heap.BLOCK`` bytes) one each."""
    if not one_block:
        monkeypatch.setattr(heap, "BLOCK", 0)
    tape, xs, outputs = random_outputs(0)
    rng = np.random.default_rng(3)
    x, z = rng.uniform(-0.9, 0.9, 10_001), rng.uniform(-0.9, 0.9, 10_001)
    one = sad.lambdify(xs, outputs, backend="numba", cache=False, parallel=False)(x, 0.4, z)
    two = sad.lambdify(xs, outputs, backend="numba", cache=False)(x, 0.4, z)
    for a, b in zip(one, two):
        assert np.array_equal(a, b, equal_nan=True)
    assert all(v.ctypes.data % 64 == 0 for v in two)  # whole-vector stores stay on cache lines
    assert len({id(v.base) for v in two}) == (1 if one_block else len(two))
    kept = two[1].copy()
    two[0][:] = -1.0  # an output is its own array: writing one leaves the others
    assert np.array_equal(two[1], kept, equal_nan=True)
    assert np.array_equal(x, rng.__class__(np.random.PCG64(3)).uniform(-0.9, 0.9, 10_001))  # inputs untouched


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.filterwarnings("error::subgraph_ad.compile.lambdify.BackendWarning")  # every built-in compiles
def test_one_point_on_the_kernel_gives_the_graphs_values(seed, monkeypatch):
    """One point through the kernel (forced for these small programs): numbers packed in and
    unpacked out of buffers made once per thread, a constant output set once and kept."""
    monkeypatch.setattr(lambdify_module, "NATIVE_POINT", 0)
    tape, xs, outputs = random_outputs(seed)
    compiled = sad.lambdify(xs, outputs, backend="numba", cache=False)
    rng = np.random.default_rng(70 + seed)
    for _ in range(3):
        point = [float(v) for v in rng.uniform(-0.9, 0.9, 3)]
        found = compiled(*point)
        assert all(type(v) is float for v in found)
        values = dict(zip(xs, point))
        for got, term in zip(found, outputs):
            assert got == pytest.approx(term.eval(values), rel=1e-12, abs=1e-12, nan_ok=True), (seed, term)
    assert compiled.built == ("numba (point)",)


def test_one_point_from_many_threads_at_once(monkeypatch):
    monkeypatch.setattr(lambdify_module, "NATIVE_POINT", 0)
    tape, xs, outputs = random_outputs(1)
    compiled = sad.lambdify(xs, outputs, backend="numba", cache=False)
    points = [[0.1 * k, -0.2 + 0.01 * k, 0.3] for k in range(64)]
    want = [compiled(*p) for p in points]
    with ThreadPoolExecutor(4) as pool:
        for _ in range(5):
            assert list(pool.map(lambda p: compiled(*p), points)) == want
    assert compiled.built == ("numba (point)",)


def test_which_one_point_path_a_program_takes():
    """The kernel from ``NATIVE_POINT`` steps plus ``NATIVE_POINT_PER_INPUT`` an input, the
    Python code below: each where it is the faster (measured: docs/performance.md)."""
    tape = sad.Tape()
    x, y = tape.var("x"), tape.var("y")
    small, large = x * y, x * y
    while True:
        large = sad.sin(large) * x + y
        if len(build_program(tape, [x, y], [large]).steps) >= lambdify_module.NATIVE_POINT + 2 * lambdify_module.NATIVE_POINT_PER_INPUT:
            break
    fast, slow = sad.lambdify([x, y], large, backend="numba"), sad.lambdify([x, y], small, backend="numba")
    assert fast(0.3, 0.4) == pytest.approx(large.eval({x: 0.3, y: 0.4}), rel=1e-13)
    assert slow(0.3, 0.4) == 0.3 * 0.4
    assert fast.built == ("numba (point)",) and slow.built == ("point",)


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_every_kind_of_batch_call_gives_the_graphs_values(backend):
    """Numbers and float64 vectors of one length (contiguous or strided) take a one-pass feed;
    anything else (int vectors, reversed views, 2-D batches, NumPy float32 numbers, lengths that
    differ) the general path, with its checks."""
    tape = sad.Tape()
    x, y = tape.var("x"), tape.var("y")
    terms = [sad.sin(x) * y, x - x + y / 3, x]
    f = sad.lambdify([x, y], terms, backend=backend, cache=False)
    base = np.linspace(-1.0, 1.0, 12)
    calls = [(base, 0.5), (base, base[::-1].copy()), (np.arange(12), 2), (base[::2], 0.5), (base, np.float32(0.25)),
             (base.reshape(3, 4), base.reshape(3, 4) + 1), (base, np.float64(1.5)), (base.reshape(3, 4), base[:4]),
             (base[::-1], 0.5), (np.stack([base, base]).T[:, 1], base)]
    for a, b in calls:
        found = f(a, b)
        shape = np.broadcast_shapes(np.shape(a), np.shape(b))
        for got, term in zip(found, terms):
            want = np.vectorize(lambda p, q: term.eval({x: float(p), y: float(q)}))(*np.broadcast_arrays(a, b))
            assert got.shape == shape and got.dtype == np.float64
            assert np.allclose(got, want, rtol=1e-13, atol=1e-15)
    with pytest.raises(ValueError, match=r"\(12,\).*\(5,\)"):
        f(base, np.ones(5))
    with pytest.raises(TypeError, match="argument y must be a number or an array of numbers"):
        f(base, "2")
