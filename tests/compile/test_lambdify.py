"""lambdify: both backends against eval (itself checked against SymPy elsewhere), register reuse,
IEEE values, argument errors, the Numba fallback, pickling and Dask on a local cluster."""

import math
import pickle
import sys
import warnings

import numpy as np
import pytest

import subgraph_ad as sad
from subgraph_ad import Tape, exp, lambdify, log, sigmoid, sin, sqrt, tan, tanh
from subgraph_ad.benchmark_functions import BENCHMARKS  # F1–F5
from subgraph_ad.compile.backends.numpy import block_source
from subgraph_ad.compile.lambdify import BackendWarning
from subgraph_ad.compile.program import build_program

from conftest import Softplus

BACKENDS = ["numpy", "numba"]


def _close(a, b):
    # same operations in a different association order: a few ulps per node, far below 1e-9
    return np.allclose(a, b, rtol=1e-9, atol=1e-12, equal_nan=True)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(BENCHMARKS))
def test_benchmark_derivatives_match_eval(name, backend):
    tape, f, x = BENCHMARKS[name]()
    ds = sad.taylor_graph(f, x, 8)
    others = [v for v in tape.vars.values() if v != x]
    points = np.linspace(-2, 2, 40_001)  # several blocks, and a ragged last one
    g = lambdify([x] + others, [f] + ds, backend=backend, block=4096)
    assert g.backend == backend
    values = g(points, *[v.value for v in others])
    assert isinstance(values, tuple) and len(values) == 9
    for term, value in zip([f] + ds, values):
        assert value.shape == points.shape
        assert _close(value, term.eval({x: points}))


@pytest.mark.parametrize("backend", BACKENDS)
def test_whole_powers_of_closed_forms_match_numpy(backend):
    # closed forms raise to whole powers, negative ones too (w1**-10 in F5's); Numba writes them
    # as int powers (multiplications), which must agree with NumPy's power and keep 0 -> inf
    tape = Tape()
    x = tape.var("x")
    z = x**-10 + x**3 * 2 + x**0.5 + x**-1
    xs = np.array([0.0, 0.3, 1.0, 1.7, 2.9])
    with np.errstate(all="ignore"):
        expected = xs**-10.0 + xs**3.0 * 2 + np.sqrt(xs) + 1 / xs
    assert np.allclose(lambdify([x], z, backend=backend)(xs), expected, rtol=1e-13, equal_nan=True)


@pytest.mark.parametrize("backend", BACKENDS)
def test_semantics_scalars_broadcasting_and_ieee(backend):
    tape = Tape()
    x, y = tape.var("x"), tape.var("y")
    z = log(x) + sqrt(x) + 1 / (x - 1) + x**y + sigmoid(-1000 * x) + tan(x) + tanh(y) + -sin(x) - exp(y)
    one = lambdify([x, y], z, backend=backend)
    assert isinstance(one(0.5, 2.0), float) and _close(one(0.5, 2.0), z.eval({x: 0.5, y: 2.0}))
    xs = np.array([[-1.0, 0.0], [1.0, 2.5]])
    out = one(xs, 3.0)
    assert out.shape == (2, 2)
    with np.errstate(all="ignore"):
        assert _close(out, z.eval({x: xs, y: 3.0}))
    both = lambdify([x, y], [z, y, tape.const(2.0)], backend=backend)
    values = both(np.array([0.5, 2.0]), 1.5)
    assert [v.shape for v in values] == [(2,)] * 3 and np.all(values[1] == 1.5) and np.all(values[2] == 2.0)
    assert both(0.5, 1.5)[1:] == (1.5, 2.0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_scalar_input_over_many_blocks_and_threads(backend):
    tape = Tape()
    x, y = tape.var("x"), tape.var("y")
    z = sin(x * y) / (1 + y * y) + exp(-x)
    ys = np.linspace(-3, 3, 50_001)  # 51 blocks of 1000 over the cores; x is one number
    serial = lambdify([x, y], z, backend=backend, block=1000, parallel=False)
    threaded = lambdify([x, y], z, backend=backend, block=1000)
    assert np.array_equal(serial(0.7, ys), threaded(0.7, ys))
    assert _close(threaded(0.7, ys), z.eval({x: 0.7, y: ys}))


@pytest.mark.parametrize("size", [1, 3, 7, 8, 9, 255, 256, 257, 1001, 20_003])
def test_numba_reads_inputs_where_they_lie_at_every_size(size):
    """The kernel reads arrays in place and numbers from a row written once a call: every
    size around a vector and a block, numbers and arrays mixed, outputs that are an input, a
    constant or one value twice, a read-only input — each NumPy's value of the same expression."""
    tape = Tape()
    x, y = tape.var("x"), tape.var("y")
    outputs = [sin(x) * y, x, y * 2.0, tape.const(3.0), x + y, x + y, exp(-x * y)]
    compiled = lambdify([x, y], outputs, backend="numba", cache=False)
    rng = np.random.default_rng(size)
    a, b = rng.uniform(-2, 2, size), rng.uniform(-2, 2, size)
    frozen = a.copy()
    frozen.flags.writeable = False  # lends no writable buffer: its address is read another way
    for args in ((a, b), (a, 0.5), (0.25, b), (frozen, b)):
        u, v = np.broadcast_arrays(*(np.asarray(w, dtype=float) for w in args))
        expected = [np.sin(u) * v, u, v * 2.0, np.full(u.shape, 3.0), u + v, u + v, np.exp(-u * v)]
        for found, want in zip(compiled(*args), expected):
            assert np.shape(found) == want.shape and _close(found, want)
        assert np.array_equal(compiled(*args)[1], u) and np.array_equal(compiled(*args)[2], v * 2.0)


def test_numba_with_thousands_of_inputs_numbers_and_arrays_mixed():
    """3,000 inputs, every third a number, over 1,001 points on every core: the kernel keeps
    each input's address for the block in its scratch; the values are NumPy's."""
    tape = Tape()
    xs = [tape.var(f"x{k}") for k in range(3000)]
    outputs = [xs[k] * xs[k + 1] - xs[k + 2] for k in range(0, 2997, 3)]
    compiled = lambdify(xs, outputs, backend="numba", cache=False)
    rng = np.random.default_rng(3)
    args = [float(rng.normal()) if k % 3 == 0 else rng.normal(size=1001) for k in range(3000)]
    for k, found in zip(range(0, 2997, 3), compiled(*args)):
        assert _close(found, np.broadcast_to(args[k] * args[k + 1] - args[k + 2], (1001,)))


def test_numba_kernels_of_different_sizes_take_turns_with_one_scratch():
    """A thread lends its scratch from call to call: a big program, a small one and the big one
    again, on serial and threaded calls, each equal to NumPy's values every time."""
    tape = Tape()
    xs = [tape.var(f"x{k}") for k in range(300)]
    big = lambdify(xs, [sin(xs[k]) * xs[k + 1] for k in range(299)], backend="numba", cache=False)
    small = lambdify(xs[:2], [xs[0] - xs[1]], backend="numba", cache=False)
    rng = np.random.default_rng(5)
    for size in (9, 2_000, 20_001, 9):
        args = list(rng.normal(size=(300, size)))
        for _ in range(2):
            found = big(*args)
            assert all(_close(found[k], np.sin(args[k]) * args[k + 1]) for k in (0, 150, 298))
            assert _close(small(*args[:2])[0], args[0] - args[1])


def test_numba_runs_one_point_of_a_large_program_natively_with_ieee_values():
    """A call on one point of a program past ``NATIVE_POINT`` steps runs on the Numba kernel
    (one vector per scratch row): NumPy's values, inf and nan where a point divides by zero
    or takes a root of a negative number, no exception and no warning; ``warn=True`` keeps
    the reporting path."""
    from subgraph_ad.compile.lambdify import NATIVE_POINT

    tape = Tape()
    xs = [tape.var(f"x{k}") for k in range(400)]
    outputs = [sin(xs[k]) * xs[k + 1] / xs[k + 2] + sqrt(xs[k + 3]) for k in range(396)]
    outputs += [log(xs[0]), tape.const(2.5), xs[7]]
    compiled = lambdify(xs, outputs, backend="numba", cache=False)
    assert len(compiled.program.steps) >= NATIVE_POINT
    rng = np.random.default_rng(6)
    point = list(rng.uniform(0.5, 2.0, 400))
    point[2], point[5] = 0.0, -1.0  # x₀·x₁/x₂ = inf, √x₅ = nan
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        found = compiled(*point)
    assert compiled.built == ("numba (point)",)
    x = np.array(point)
    with np.errstate(all="ignore"):
        expected = [np.sin(x[k]) * x[k + 1] / x[k + 2] + np.sqrt(x[k + 3]) for k in range(396)]
    expected += [np.log(x[0]), 2.5, x[7]]
    assert all(type(v) is float for v in found)
    assert _close(np.array(found), np.array(expected))
    assert found[0] == math.inf and math.isnan(found[2]) and found[-1] == point[7]
    with pytest.warns(RuntimeWarning):
        lambdify(xs, outputs, backend="numba", cache=False, warn=True)(*point)


GUARDED = """
import ctypes, mmap, sys
import numpy as np
from subgraph_ad import Tape, lambdify, sin
page = mmap.PAGESIZE
memory = mmap.mmap(-1, 2 * page)
start = ctypes.addressof(ctypes.c_char.from_buffer(memory))
assert ctypes.CDLL(None).mprotect(ctypes.c_void_p(start + page), ctypes.c_size_t(page), 0) == 0
tape = Tape(); x, y = tape.var("x"), tape.var("y")
compiled = lambdify([x, y], [sin(x) * y + x], backend="numba", cache=False)
for n in (1, 5, 9, 13, 259):  # the points end on the page's last byte: the next page is not readable
    ends = np.frombuffer(memory, dtype=np.float64, count=n, offset=page - 8 * n)
    ends[:] = np.linspace(-1, 1, n)
    found = compiled(ends, ends[::-1].copy())[0]
    assert np.allclose(found, np.sin(ends) * ends[::-1] + ends, rtol=1e-14, atol=1e-15)
print("read in bounds")
"""


def test_numba_never_reads_past_the_end_of_an_input():
    """An input whose last point is the last number before an unreadable page: the kernel's
    vectors stop at its end (the last block's points are copied where they end inside a
    vector), so the call returns rather than faulting. Run apart: a fault ends the process."""
    import subprocess

    found = subprocess.run([sys.executable, "-c", GUARDED], capture_output=True, text=True, timeout=120)
    assert found.returncode == 0 and "read in bounds" in found.stdout, found.stderr[-2000:]


def test_registers_are_reused_and_inputs_never_written():
    tape, f, x = BENCHMARKS["F4"]()
    ds = sad.taylor_graph(f, x, 10)
    program = build_program(tape, [x], ds)
    source, _, registers = block_source(program)
    assert registers < len(program.steps) / 3
    assert "out=v0" not in source
    points = np.linspace(-2, 2, 1000)
    before = points.copy()
    lambdify([x], ds)(points)
    assert np.array_equal(points, before)


def test_outputs_and_their_single_use_chains_need_no_register():
    tape, f, x = BENCHMARKS["F2"]()
    d10 = sad.taylor_graph(f, x, 10)[-1]  # -sin(x): sin straight into the output, negated there
    source, _, registers = block_source(build_program(tape, [x, tape.vars["y"]], [d10]))
    assert registers == 0
    assert "_np.sin(b0, out=o0)" in source and "_np.negative(o0, out=o0)" in source
    # an output read by a later step, one listed twice, and a chain through a squared value
    y = tape.vars["y"]
    s = sin(x)
    outs = [s, exp(s * s) + y, s, -(x * y)]
    g = lambdify([x, y], outs, block=7)
    xs, ys = np.linspace(-2, 2, 30), np.linspace(1, 3, 30)
    for term, value in zip(outs, g(xs, ys)):
        assert _close(value, term.eval({x: xs, y: ys}))


def test_generated_source_is_deterministic():
    sources = []
    for _ in range(2):
        tape, f, x = BENCHMARKS["F3"]()
        sources.append(lambdify([x], f.diff(x, 4)).block_source)
    assert sources[0] == sources[1]


class Opaque(Softplus):
    name = "opaque"

    def f(self, v):  # a Python object in the loop: Numba cannot compile this
        return np.asarray([complex(w, 0).real for w in np.atleast_1d(v)]).reshape(np.shape(v))


def test_user_unaryfn_in_both_backends():
    tape = Tape()
    x = tape.var("x")
    z = Softplus()(x * x) * exp(-x)
    points = np.linspace(-3, 3, 101)
    for backend in BACKENDS:
        assert _close(lambdify([x], z.diff(x, 3), backend=backend)(points), z.diff(x, 3).eval({x: points}))


def test_numba_falls_back_with_a_warning_when_it_cannot_compile():
    tape = Tape()
    x = tape.var("x")
    z = Opaque()(x) + 1
    g = lambdify([x], z, backend="numba")
    assert g.backend == "numba" and g.built == ()  # nothing compiled before a call needs it
    with pytest.warns(BackendWarning, match="could not compile"):
        values = g(np.array([1.0, 2.0]))
    assert g.backend == "numpy" and _close(values, [2.0, 3.0])
    assert g.built == ("numpy (array)",)


def test_numba_falls_back_with_a_warning_when_missing(monkeypatch):
    monkeypatch.setitem(sys.modules, "numba", None)  # import numba now raises ImportError
    tape = Tape()
    x = tape.var("x")
    g = lambdify([x], sin(x), backend="numba")
    assert g(0.0) == 0.0  # one point: Python floats, no backend involved
    with pytest.warns(BackendWarning, match="not installed"):
        values = g(np.array([0.0, 1.0]))
    assert g.backend == "numpy" and np.allclose(values, np.sin([0.0, 1.0]), rtol=1e-15)


def test_argument_errors():
    tape = Tape()
    x, y = tape.var("x"), tape.var("y")
    with pytest.raises(ValueError, match="backend"):
        lambdify([x], x * 2, backend="fortran")
    with pytest.raises(ValueError, match="not among the inputs"):
        lambdify([x], x * y)
    with pytest.raises(TypeError, match="expected 2 arguments"):
        lambdify([x, y], x * y)(1.0)
    with pytest.raises(ValueError, match="block"):
        lambdify([x], x * 2, block=0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_pickle_round_trip(backend):
    tape, f, x = BENCHMARKS["F1"]()
    g = lambdify([x], [f, f.diff(x, 5)], backend=backend)
    h = pickle.loads(pickle.dumps(g))
    points = np.linspace(-2, 2, 11)
    assert h.backend == backend
    assert all(np.array_equal(a, b) for a, b in zip(g(points), h(points)))


@pytest.fixture(scope="module")
def dask_client():
    distributed = pytest.importorskip("distributed")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           host="127.0.0.1", dashboard_address=None)
        client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


def test_dask_blockwise_on_a_local_cluster(dask_client):
    import dask.array as da

    tape, f, x = BENCHMARKS["F3"]()
    ds = sad.taylor_graph(f, x, 6)
    g1 = lambdify([x], ds[-1])
    g = lambdify([x], [f, ds[-1]])
    points = np.linspace(-2, 2, 100_000)
    lazy = da.from_array(points, chunks=25_000)
    direct = da.map_blocks(g1, lazy, dtype=float)  # the user's own map_blocks
    assert _close(dask_client.compute(direct).result(), ds[-1].eval({x: points}))
    value, derivative = g(lazy)  # a compiled function dispatches to map_blocks itself
    assert isinstance(derivative, da.Array) and derivative.shape == lazy.shape  # chunks: compile.cluster's
    value, derivative = dask_client.compute([value, derivative], sync=True)
    assert _close(value, f.eval({x: points})) and _close(derivative, ds[-1].eval({x: points}))


def test_dask_with_a_scalar_and_two_inputs(dask_client):
    import dask.array as da

    tape, f, x = BENCHMARKS["F5"]()
    w2 = tape.vars["w2"]
    g = lambdify([x, w2], f.diff(x, 4))
    points = np.linspace(1.1, 3, 1000)
    result = g(da.from_array(points, chunks=300), 0.7).compute()
    assert _close(result, f.diff(x, 4).eval({x: points, w2: 0.7}))


def test_numba_compiles_a_program_far_above_its_old_size_limit():
    """3,000 steps (the Numba backend once fell back to NumPy above 800) in chunks of 1,000:
    no warning, and the values of the recurrence z <- sin(z) + k/1000 run in NumPy."""
    tape = sad.Tape()
    x = tape.var("x", 0.3)
    z = x
    for k in range(1500):
        z = sad.sin(z) + k / 1000
    with warnings.catch_warnings():
        warnings.simplefilter("error", BackendWarning)
        g = sad.lambdify([x], z, backend="numba", cache=False)
        points = np.linspace(-3, 3, 1001)
        values = g(points)
    assert g.backend == "numba" and len(g.program.steps) == 2999  # + 0 folds away
    want = points.copy()
    for k in range(1500):
        want = np.sin(want) + k / 1000
    assert np.allclose(values, want, rtol=1e-12, atol=1e-12)


def test_one_point_runs_on_python_floats_and_falls_back_to_ieee_where_math_raises():
    """A point of numbers runs the Python-float code (math functions, operators); where that
    raises (1/0, log 0, sqrt of a negative, overflow, a real power of a negative base) the
    NumPy-scalar code gives the IEEE value. Either way it equals the array path on that point."""
    tape = Tape()
    x, y = tape.var("x"), tape.var("y")
    outputs = [1 / x, log(x), sqrt(x), exp(1000 * y), x**y, sad.acosh(y), sad.atanh(x), sad.atan2(x, y),
               sin(x) * tanh(y) - sad.erf(x), sad.cbrt(x) + sad.log1p(y), sad.abs(x) * sad.sign(y)]
    compiled = lambdify([x, y], outputs)
    assert compiled._pure is False  # abs and sign are NumPy-only: that code runs under errstate
    ieee = {(0.0, 2.0): [np.inf, -np.inf, 0.0, np.inf, 0.0, None, 0.0, 0.0, None, None, None],
            (-8.0, 1 / 3): [-0.125, np.nan, np.nan, None, np.nan, np.nan, np.nan, None, None, None, None],
            (1.0, -1.0): [1.0, 0.0, 1.0, 0.0, 1.0, np.nan, np.inf, None, None, None, None],
            (0.3, 0.7): [None] * len(outputs)}
    for (a, b), expected in ieee.items():
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no NumPy warning escapes either path
            one = compiled(a, b)
        arrays = compiled(np.array([a]), np.array([b]))
        for k, (value, array, want) in enumerate(zip(one, arrays, expected)):
            assert isinstance(value, float)
            assert np.allclose(value, array[0], rtol=1e-15, atol=0, equal_nan=True), (a, b, k)
            if want is not None:
                assert np.isclose(value, want, rtol=1e-15, equal_nan=True), (a, b, k, value)


def test_an_ordinary_point_never_touches_numpy_scalars(monkeypatch):
    tape = Tape()
    x, y = tape.var("x"), tape.var("y")
    # sin's second derivative is the node -sin: minus math.sin on this path
    compiled = lambdify([x, y], [exp(x) * sin(y) + x**2.5 / y, sad.atan(x) - sad.hypot(x, y), sin(y).diff(y, 2)])
    assert compiled._pure
    value = compiled(np.float64(0.7), 2)
    assert compiled.built == ("point",)  # the NumPy-scalar fallback was never needed, so never built
    assert np.allclose(value, [np.exp(0.7) * np.sin(2) + 0.7**2.5 / 2, np.arctan(0.7) - np.hypot(0.7, 2), -np.sin(2)],
                       rtol=1e-15)


class _Clip(sad.UnaryFn):
    """A user function written for NumPy values (``v.clip``), with no ``scalar``."""

    name = "clip0"

    def f(self, v):
        return v.clip(0.0)

    def grad(self, v):
        return (v > 0) * 1.0


def test_one_point_keeps_numpy_semantics_for_functions_math_lacks_and_for_square_roots():
    """A user f gets NumPy scalars on the one-point path, as on arrays; x**0.5 is NumPy's
    square root (nan at -inf, -0.0 at -0.0), not C's pow; cbrt agrees with the array path."""
    tape = Tape()
    x = tape.var("x")
    compiled = lambdify([x], [_Clip()(x) * 2, x**0.5, sad.cbrt(x)])
    for value in (-1.0, 0.3, -np.inf, -0.0, 1e-320, 27.0):
        one = compiled(value)
        arrays = compiled(np.array([value]))
        for a, b in zip(one, arrays):
            assert a == b[0] or (np.isnan(a) and np.isnan(b[0])), (value, one, arrays)
            assert np.signbit(a) == np.signbit(b[0]), (value, one, arrays)
    assert compiled(-1.0)[0] == 0.0 and np.isnan(compiled(-np.inf)[1])


def test_arguments_that_are_not_numbers_are_refused():
    tape = Tape()
    x = tape.var("x")
    compiled = lambdify([x], x * 2)
    for bad in (None, "1.5", [None, 1.0], {"a": 1}):
        with pytest.raises(TypeError, match="argument x must be a number or an array of numbers"):
            compiled(bad)
    assert compiled(True) == 2.0 and compiled(np.array([1, 2])).tolist() == [2.0, 4.0]
