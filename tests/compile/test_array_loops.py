"""Chains of elementwise arithmetic in the code for one point run as native loops
(``compile/array_loops.py``): their values are the members' NumPy code's to the bit — broadcast
rows, columns and single numbers, constants, outer products, inf, nan and division by zero
included — on a random corpus of array programs (every built-in, a − a, f(a, a), conditions,
views: their values, gradients and HVPs), a network's HVP and JAX's; an operand that is not a
C-contiguous float64 array of its shape, ``warn=True`` and a loop LLVM refuses run the NumPy
code; no call loses or leaks a reference."""

import gc
import math
import sys
import threading

import numpy as np
import pytest

import subgraph_ad as sad
from subgraph_ad.compile import array_loops
from subgraph_ad.compile.lambdify import BackendWarning
from test_array_reuse import SEEDS, inputs, random_function, same

jax = pytest.importorskip("jax")  # in the dev extra: present in make test
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy

LOOP = " is _miss:"  # how the code runs a loop


def _source(f) -> str:
    (program, _), = f.cache.entries.values()
    return program._point[2]


def _without_loops(monkeypatch):
    monkeypatch.setattr(array_loops, "loops", lambda *args: {})


def _every_chain(monkeypatch):
    monkeypatch.setattr(array_loops, "CALL", -math.inf)  # every chain a loop, however small


def _counted(monkeypatch) -> list[bool]:
    """Per call of any loop made from now on: whether it took its operands."""
    took: list[bool] = []
    made = array_loops._builtin

    def counting(ir):
        native, code = made(ir)

        def run(*values):
            found = native(*values)
            took.append(found is not values[-1])
            return found

        return run, code

    monkeypatch.setattr(array_loops, "_builtin", counting)
    return took


def bias_layer(x, w, b, c):
    """A product, a bias row, a column scale, constants, a division: one loop after the product."""
    z = x @ w + b
    return (z * c - 2.0 * z) / (1.0 + z * z) + 0.5


def _layer_inputs(rng):
    return rng.normal(size=(16, 5)), rng.normal(size=(5, 8)), rng.normal(size=8), rng.normal(size=(16, 1))


def test_the_platform_runs_loops():
    assert array_loops.available()  # (CPython with the GIL, llvmlite: what make test installs)


def test_where_loops_cannot_run_the_code_is_numpys(monkeypatch):
    """No llvmlite, another object layout, or no GIL (``available`` false): no loop written."""
    rng = np.random.default_rng(11)
    x, w, b, c = _layer_inputs(rng)
    monkeypatch.setattr(array_loops, "available", lambda: False)
    f = sad.jit(bias_layer)
    np.testing.assert_array_equal(f(x, w, b, c), bias_layer(x, w, b, c))
    assert LOOP not in _source(f)


def test_a_bias_layer_runs_as_one_loop_with_numpys_values_to_the_bit(monkeypatch):
    rng = np.random.default_rng(1)
    x, w, b, c = _layer_inputs(rng)
    b[:3] = [np.inf, -np.inf, np.nan]
    c[0] = 0.0
    kept = [a.copy() for a in (x, w, b, c)]
    took = _counted(monkeypatch)
    f = sad.jit(bias_layer)
    found = f(x, w, b, c)
    assert _source(f).count(LOOP) == 1 and took == [True]
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(found, bias_layer(x, w, b, c))  # NumPy running f: bit for bit, nan as nan
    for a, want in zip((x, w, b, c), kept):
        np.testing.assert_array_equal(a, want)
    _without_loops(monkeypatch)
    g = sad.jit(bias_layer)
    np.testing.assert_array_equal(g(x, w, b, c), found)
    assert LOOP not in _source(g)


@pytest.mark.parametrize("shape, operand", [((6, 5), (5,)), ((6, 5), (1, 5)), ((6, 5), (6, 1)), ((6, 5), (1, 1)),
                                            ((6, 5), (1,)), ((7,), (7,)), ((7,), (1,)), ((1, 9), (9,)), ((9, 1), (9, 1)),
                                            ((6, 5), ())])
def test_every_way_an_operand_broadcasts_reads_numpys_elements(shape, operand, monkeypatch):
    _every_chain(monkeypatch)
    rng = np.random.default_rng(2)
    a, d = rng.normal(size=shape), rng.normal(size=operand)

    def f(a, d):
        return (a + d) * a - d / 3.0

    took = _counted(monkeypatch)
    jitted = sad.jit(f)
    found = jitted(a, d)
    assert LOOP in _source(jitted) and took and all(took)
    np.testing.assert_array_equal(found, f(a, d))


def test_numbers_made_inside_the_program_and_given_as_floats_are_read_where_they_lie(monkeypatch):
    _every_chain(monkeypatch)
    rng = np.random.default_rng(7)
    a = rng.normal(size=(5, 4))

    def f(a, s):
        m = np.mean(a)  # a number the program makes (a NumPy scalar or a 0-d array)
        return (a - m) * s + a / (m * s)

    took = _counted(monkeypatch)
    jitted = sad.jit(f)
    for s in (0.5, np.float64(-2.0), np.array(3.0)):
        np.testing.assert_array_equal(jitted(a, s), f(a, float(s)))
    assert took and all(took)


def test_an_outer_product_joins_the_loop_and_keeps_blass_value(monkeypatch):
    rng = np.random.default_rng(8)
    u, v, z = rng.normal(size=(40, 1)), rng.normal(size=(1, 30)), rng.normal(size=(40, 30))

    def f(u, v, z):
        return (u @ v) * z + u @ (2.0 * v)

    jitted = sad.jit(f)
    found = jitted(u, v, z)
    source = _source(jitted)
    assert source.count(LOOP) == 1 and source.count("_np.dot") == 2  # both products inside (in its NumPy code)
    np.testing.assert_array_equal(found, f(u, v, z))


def test_an_operand_that_is_not_contiguous_runs_the_numpy_code(monkeypatch):
    _every_chain(monkeypatch)
    took = _counted(monkeypatch)
    rng = np.random.default_rng(3)
    a, d = rng.normal(size=(6, 5)), rng.normal(size=5)

    def f(a, d):
        return (a + d) * a - d

    jitted = sad.jit(f)
    np.testing.assert_array_equal(jitted(a, d), f(a, d))
    assert took == [True]
    wide = rng.normal(size=(6, 10))[:, ::2]  # a strided argument
    np.testing.assert_array_equal(jitted(wide, d), f(wide, d))
    flipped = np.asfortranarray(a)
    np.testing.assert_array_equal(jitted(flipped, d[::-1]), f(flipped, d[::-1]))
    assert took == [True, False, False]  # neither took the loop
    np.testing.assert_array_equal(jitted(a, d), f(a, d))
    assert took[-1]


def test_a_loop_writes_into_an_operand_that_dies_at_it(monkeypatch):
    """The bias layer's product dies at its loop: the loop writes its output there (no new
    array), NumPy's values to the bit, the arguments untouched. A dying operand that is not
    C-contiguous (tanh of a Fortran-ordered argument keeps its order) is refused before anything
    is written: NumPy's code, NumPy's values."""
    rng = np.random.default_rng(4)
    x, w, b, c = _layer_inputs(rng)
    kept = [a.copy() for a in (x, w, b, c)]
    took = _counted(monkeypatch)
    f = sad.jit(bias_layer)
    found = f(x, w, b, c)
    source = _source(f)
    assert source.count(LOOP) == 1 and "_np.empty" not in source and took == [True]
    np.testing.assert_array_equal(found, bias_layer(x, w, b, c))
    for a, want in zip((x, w, b, c), kept):
        np.testing.assert_array_equal(a, want)

    _every_chain(monkeypatch)

    def g(a, d):
        return np.tanh(a) * 2.0 + d

    a, d = rng.normal(size=(6, 5)), rng.normal(size=5)
    jitted = sad.jit(g)
    np.testing.assert_array_equal(jitted(a, d), g(a, d))
    assert "_np.empty" not in _source(jitted) and took[-1]
    flipped, before = np.asfortranarray(a), np.asfortranarray(a).copy()
    np.testing.assert_array_equal(jitted(flipped, d), g(flipped, d))
    assert not took[-1]
    np.testing.assert_array_equal(flipped, before)


def test_a_loop_call_keeps_every_reference_count(monkeypatch):
    _every_chain(monkeypatch)
    rng = np.random.default_rng(9)
    a, d = rng.normal(size=(6, 5)), rng.normal(size=5)
    jitted = sad.jit(lambda a, d: (a + d) * a - d)
    jitted(a, d)
    loop = next(v for k, v in _globals(jitted).items() if k.startswith("_L") and not k.endswith("_code"))
    assert type(loop).__name__ == "builtin_function_or_method"
    out, wide = np.empty((6, 5)), rng.normal(size=(6, 10))[:, ::2]
    counts = [sys.getrefcount(v) for v in (out, a, d, array_loops.MISS, wide)]
    for _ in range(1000):
        assert loop(out, a, d, array_loops.MISS) is out
        assert loop(out, wide, d, array_loops.MISS) is array_loops.MISS
    assert [sys.getrefcount(v) for v in (out, a, d, array_loops.MISS, wide)] == counts
    np.testing.assert_array_equal(out, (a + d) * a - d)
    for given in ((), (out,), (out, a, d), (out, a, d, array_loops.MISS, wide)):  # another count: nothing read
        assert loop(*given) is loop.__self__
    np.testing.assert_array_equal(out, (a + d) * a - d)


def _globals(jitted):
    (program, _), = jitted.cache.entries.values()
    return program._point[0].__globals__


def test_a_loop_outlives_nothing_it_needs(monkeypatch):
    """Programs dropped and collected, their machine code with them; new ones still run."""
    _every_chain(monkeypatch)
    rng = np.random.default_rng(10)
    a, d = rng.normal(size=(6, 5)), rng.normal(size=5)
    for k in range(20):
        jitted = sad.jit(lambda a, d, k=k: (a + d) * a - d * k)
        np.testing.assert_array_equal(jitted(a, d), (a + d) * a - d * k)
        del jitted
        gc.collect()


def test_warn_and_a_loop_llvm_refuses_run_the_numpy_code(monkeypatch):
    rng = np.random.default_rng(4)
    x, w, b, c = _layer_inputs(rng)
    t = sad.Tape()
    X, W, B, C = (t.array(n, v) for n, v in zip("xwbc", (x, w, b, c)))
    z = bias_layer(X, W, B, C)
    warned = sad.lambdify([X, W, B, C], [z], "numpy", warn=True)
    assert LOOP not in warned._point[2]  # NumPy reports what a loop would not
    np.testing.assert_array_equal(warned(x, w, b, c)[0], bias_layer(x, w, b, c))
    monkeypatch.setattr(array_loops, "_ir", lambda *args: "this is not IR")
    refused = sad.jit(lambda x, w, b, c: bias_layer(x, w, b, c) * 1.0)
    with pytest.warns(BackendWarning, match="did not compile"):
        found = refused(x, w, b, c)
    np.testing.assert_array_equal(found, bias_layer(x, w, b, c) * 1.0)
    np.testing.assert_array_equal(refused(x, w, b, c), found)  # and from then on, without a warning


@pytest.mark.parametrize("seed", SEEDS)
def test_random_array_programs_their_gradients_and_hvps_equal_the_numpy_code_to_the_bit(seed, monkeypatch):
    """Every chain a loop (``CALL`` below any cost), against the same programs without loops."""
    rng = np.random.default_rng(200 + seed)
    A, B, c = inputs(rng)
    V = rng.normal(size=A.shape)
    f = random_function(seed)

    def run():
        jitted, grad = sad.jit(f), sad.grad(lambda A, B, c: f(A, B, c)[0])
        hvp = sad.hvp(lambda A: f(A, B, c)[0], A, V)
        return [*jitted(A, B, c), grad(A, B, c), hvp], _source(jitted) + _source(grad)

    with monkeypatch.context() as m:
        _every_chain(m)
        took = _counted(m)
        looped, source = run()
    assert source.count(LOOP) >= 2 and any(took)  # (a reversed view among its operands: NumPy's code)
    same(tuple(looped[:-2]), f(A, B, c))  # the values against NumPy running f
    _without_loops(monkeypatch)
    plain, source = run()
    assert LOOP not in source
    for a, b in zip(looped, plain):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("beside", [0.0, 1e-9, -1e-9])
def test_a_switch_and_a_pairwise_kernel_with_every_chain_a_loop_equal_jaxs(beside, monkeypatch):
    """where(x > 0.3, sin x, x²) on and beside its switch and Σᵢⱼ exp(−(xᵢ − xⱼ)²) (x − x on the
    diagonal, x[:, None] − x[None, :]) with every chain a loop: the value against NumPy, the
    gradient and the HVP — along a v with zero components — against JAX's."""
    _every_chain(monkeypatch)
    took = _counted(monkeypatch)

    def u(x, np_=np):
        d = x[:, None] - x[None, :]
        return np_.sum(np_.where(x > 0.3, np_.sin(x), x * x)) + np_.sum(np_.exp(-(d * d)) * (1.0 + d - d))

    x = np.array([0.3 + beside, -0.4, 0.9, 0.1, 0.3 + beside, 0.05, -1.2, 0.6])
    v = np.array([1.0, 0.0, -2.0, 0.0, 0.5, 0.0, 1.0, 0.0])
    assert sad.jit(u)(x) == pytest.approx(float(u(x)), rel=1e-14)
    np.testing.assert_allclose(sad.grad(u)(x), np.asarray(jax.grad(lambda y: u(y, jnp))(x)), rtol=1e-12, atol=1e-14)
    want = jax.jvp(jax.grad(lambda y: u(y, jnp)), (x,), (v,))[1]
    np.testing.assert_allclose(sad.hvp(u, x, v), np.asarray(want), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(sad.hvp(u, x, np.zeros_like(x)), 0.0, atol=0.0)  # a zero tangent: zeros
    assert took and all(took)


def test_a_networks_hvp_runs_its_chains_as_loops_and_equals_jaxs(monkeypatch):
    rng = np.random.default_rng(5)
    p = {"w1": rng.normal(size=(10, 64)) / 3, "b1": rng.normal(size=64), "w2": rng.normal(size=(64, 64)) / 8,
         "b2": rng.normal(size=64), "w3": rng.normal(size=(64, 1)) / 8, "b3": rng.normal(size=1)}
    v = {k: rng.normal(size=a.shape) for k, a in p.items()}
    x, y = rng.normal(size=(128, 10)), rng.normal(size=(128, 1))

    def loss(q, np_=np):
        h = np_.tanh(x @ q["w1"] + q["b1"])
        h = np_.tanh(h @ q["w2"] + q["b2"])
        return np_.mean((h @ q["w3"] + q["b3"] - y) ** 2)

    found = sad.hvp(loss, p, v)
    from subgraph_ad.trace.transforms import _hvp_transform

    assert _source(_hvp_transform(loss, None)).count(LOOP) >= 6  # the bias additions and the chains
    want = jax.jvp(jax.grad(lambda q: loss(q, jnp)), (p,), (v,))[1]
    for k in p:
        np.testing.assert_allclose(found[k], np.asarray(want[k]), rtol=1e-11, atol=1e-12)
    _without_loops(monkeypatch)
    plain = sad.hvp(lambda q: loss(q), p, v)
    for k in p:
        np.testing.assert_array_equal(found[k], plain[k])


def test_threads_share_a_loop(monkeypatch):
    _every_chain(monkeypatch)
    rng = np.random.default_rng(6)
    points = [rng.normal(size=(32, 16)) for _ in range(4)]
    d = rng.normal(size=16)
    jitted = sad.jit(lambda a, d: (a - d) * (a + d) / 2.0)
    found = [None] * 4

    def work(k):
        for _ in range(50):
            found[k] = jitted(points[k], d)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k in range(4):
        np.testing.assert_array_equal(found[k], (points[k] - d) * (points[k] + d) / 2.0)
