"""Array programs that drop temporaries after their last reader, write elementwise results
into a dying operand (``compile/array_reuse.py``) and write sums (of products) as ``einsum``
compute what NumPy computes, never touch their
inputs, and never overwrite a value that a view, a later node or an output still reads.

The oracle is the same function run on plain NumPy arrays (and, for gradients, central
differences); the random functions hold repeated operands (a − a, f(a, a)), conditions, views
(transposes, reversed slices, reshapes), outputs that are intermediates, views or the same
array twice, and every built-in function."""

import numpy as np
import pytest

import subgraph_ad as sad
from subgraph_ad.compile import array_kernels
from subgraph_ad.compile.array_code import ufunc_chain
from subgraph_ad.compile.array_reuse import Reuse, float_valued
from subgraph_ad.compile.arrays import ArrayCompiled
from random_programs import ARITHMETIC, BINARY, UNARY, arithmetic, function

SEEDS = range(24)
KINDS = ["add", "sub", "same", "mul", "div", "where", "view", "reversed", "reshaped", "matmul", "mean", "rows",
         "squares"]


def names_for(seed: int) -> list[str]:
    """The built-ins seed ``seed`` applies: every one across the seeds."""
    every = UNARY + BINARY
    return every[seed::len(SEEDS)] + [every[(7 * seed + 3) % len(every)]]


def random_function(seed: int):
    """f(A, B, c) of two (3, 4) arrays and a (4,) vector, returning a number and three arrays."""
    rng = np.random.default_rng(seed)
    plan = []
    for name in names_for(seed):
        plan.append(("fn", name, int(rng.integers(8)), int(rng.integers(8))))
        plan.append((KINDS[int(rng.integers(len(KINDS)))], None, int(rng.integers(8)), int(rng.integers(8))))
    picks = [int(k) for k in rng.integers(0, 100, 3)]

    def f(A, B, c):
        pool = [A, B, A * c, A, B - B * 0.5]
        for kind, name, i, j in plan:
            a, b = pool[i % len(pool)], pool[j % len(pool)]
            if kind == "fn":
                pool.append(function(name, a, b))
            elif kind in ARITHMETIC:
                pool.append(arithmetic(kind, a, b))
            elif kind == "view":
                pool.append(a.T.T * c + a)
            elif kind == "reversed":
                pool.append(a[::-1] + np.tanh(b))
            elif kind == "reshaped":
                pool.append(np.reshape(np.reshape(a, (4, 3)), (3, 4)) * b)
            elif kind == "matmul":
                pool.append(a @ (b.T @ b) / 10.0)
            elif kind == "mean":
                pool.append(np.sum(a, axis=0) * b / 3.0)
            elif kind == "rows":  # a sum of a product: one einsum, the product never made
                pool.append(np.sum(a * b, axis=1)[:, None] * a)
            else:
                pool.append(np.sum(a * a, axis=0) + b)
        last = pool[-1]
        one, two = (pool[k % len(pool)] for k in picks[:2])
        return np.sum(last * last) + np.sum(one * c), one.T, two, two

    return f


def inputs(rng: np.random.Generator, batch: tuple[int, ...] = ()):
    return (rng.uniform(-1, 1, batch + (3, 4)), rng.uniform(-1, 1, batch + (3, 4)), rng.uniform(-1, 1, batch + (4,)))


def same(found, expected):
    for value, want in zip(found, expected):
        np.testing.assert_allclose(np.asarray(value), np.asarray(want), rtol=1e-12, atol=1e-12)


def test_the_seeds_apply_every_built_in():
    assert {n for seed in SEEDS for n in names_for(seed)} == set(UNARY + BINARY)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("grouped", [False, True])
def test_random_array_programs_equal_numpy_and_leave_their_inputs_alone(seed, grouped, monkeypatch):
    """``grouped``: chains of elementwise nodes run as one Numba kernel even on these small
    arrays (``array_kernels``); else NumPy's code always."""
    monkeypatch.setattr(array_kernels, "SMALLEST", 1 if grouped else 1 << 62)
    rng = np.random.default_rng(100 + seed)
    f = random_function(seed)
    jitted = sad.jit(f)
    A, B, c = inputs(rng)
    kept = [a.copy() for a in (A, B, c)]
    same(jitted(A, B, c), f(A, B, c))
    same(jitted(A, B, c), f(A, B, c))  # a second call: nothing the first wrote is read again
    for a, b in zip((A, B, c), kept):
        np.testing.assert_array_equal(a, b)
    As = rng.uniform(-1, 1, (5, 3, 4))
    batched = sad.vmap(jitted, in_axes=(0, None, None))(As, B, c)
    for k in range(5):
        same([v[k] for v in batched], f(As[k], B, c))
    gradient = sad.grad(lambda A, B, c: f(A, B, c)[0], argnums=(0, 2))(A, B, c)
    for wrt, g in zip((0, 2), gradient):
        h, args = 1e-6, [A, B, c]
        for where in np.ndindex(args[wrt].shape):
            up, down = [a.copy() for a in args], [a.copy() for a in args]
            up[wrt][where] += h
            down[wrt][where] -= h
            central = (f(*up)[0] - f(*down)[0]) / (2 * h)
            assert g[where] == pytest.approx(central, rel=1e-5, abs=1e-6), (seed, wrt, where)
    for a, b in zip((A, B, c), kept):
        np.testing.assert_array_equal(a, b)


def test_batches_that_broadcast_to_more_than_either_operand_are_not_written_into():
    """Two operands with batch axes (5, 1) and (1, 6): their sum has batch (5, 6), so neither
    can hold it; the shape check as the code runs makes a new array instead."""
    rng = np.random.default_rng(3)
    tape = sad.Tape()
    A, B = tape.array("A", rng.normal(size=(3, 4))), tape.array("B", rng.normal(size=(3, 4)))
    u, v = sad.sin(A) * 2.0, sad.cos(B) * 3.0  # fresh temporaries, each dying at their sum
    outs = [np.sum(sad.exp(u + v)), u * 0 + v.T.T]
    f = sad.lambdify([A, B], outs)
    assert isinstance(f, ArrayCompiled) and "_into(" in f.block_source
    Ab, Bb = rng.normal(size=(5, 1, 3, 4)), rng.normal(size=(1, 6, 3, 4))
    kept = Ab.copy(), Bb.copy()
    total, rest = f(Ab, Bb)
    assert total.shape == (5, 6) and rest.shape == (5, 6, 3, 4)
    for i in range(5):
        for j in range(6):
            point = {A: Ab[i, 0], B: Bb[0, j]}
            assert total[i, j] == pytest.approx(outs[0].eval(point), rel=1e-13)
            np.testing.assert_allclose(rest[i, j], outs[1].eval(point), rtol=1e-13)
    np.testing.assert_array_equal(Ab, kept[0])
    np.testing.assert_array_equal(Bb, kept[1])


def test_the_network_gradient_program_writes_in_place_and_drops_temporaries():
    """The pass is on where it pays: the 10 → 64 → 64 → 1 loss's gradient program overwrites
    dying operands and deletes the rest, and still equals JAX's gradient."""
    jax = pytest.importorskip("jax")  # jax is in the dev extra: always present in make test
    jax.config.update("jax_enable_x64", True)
    rng = np.random.default_rng(1)
    p = {"w1": rng.normal(size=(10, 64)) / 3, "b1": rng.normal(size=64), "w2": rng.normal(size=(64, 64)) / 8,
         "b2": rng.normal(size=64), "w3": rng.normal(size=(64, 1)) / 8}
    x, y = rng.normal(size=(128, 10)), rng.normal(size=(128, 1))

    def loss(p, x, y, np_=np):
        h = np_.tanh(np_.tanh(x @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"])
        return np_.mean((h @ p["w3"] - y) ** 2)

    grad = sad.grad(loss)
    found = grad(p, x, y)
    program = next(iter(grad.cache.entries.values()))[0]
    source = program._point[2]
    assert source.count("out=") >= 5 and source.count("del ") >= 5
    expected = jax.grad(lambda p: loss(p, x, y, jax.numpy))(p)
    for k in p:
        np.testing.assert_allclose(found[k], np.asarray(expected[k]), rtol=1e-12, atol=1e-14)


def test_a_comparison_is_not_float_valued_and_a_view_keeps_what_it_views_alive():
    """base's last direct reader is ``early``, but its transpose is read later (by ``late``):
    base is neither overwritten at ``early`` nor dropped before ``late``."""
    assert float_valued((np.sin, np.cos)) and not float_valued((np.less,))
    tape = sad.Tape()
    A = tape.array("A", np.arange(6.0).reshape(2, 3) / 7)
    base = sad.sin(A) * 2.0
    view = base.T
    early = base + 1.0
    late = view * 3.0
    out = late.T + early
    order = sad.core.dependencies(tape, [out.index])
    reuse = Reuse(tape, order, [out.index], ufunc_chain)
    assert reuse.last[base.index] >= order.index(late.index) > order.index(early.index)
    assert base.index in reuse.fresh and view.index not in reuse.fresh
    temps = {base.index, view.index}
    assert reuse.target(early.index, temps, {i: False for i in order}, "point") is None
    f = sad.lambdify([A], [out, base])
    np.testing.assert_allclose(f(A.value)[0], out.eval(), rtol=1e-15)
    np.testing.assert_allclose(f(A.value)[1], 2 * np.sin(A.value), rtol=1e-15)


def test_a_long_sum_of_a_product_keeps_numpys_sum_and_a_short_one_is_one_einsum():
    """Past ``SMALL_SUM`` numbers per result the product is made and summed pairwise by
    ``np.sum``; a short sum of a product is one ``einsum``. Both equal NumPy's."""
    from subgraph_ad.compile.array_code import SMALL_SUM

    rng = np.random.default_rng(11)
    x, y = rng.normal(size=4 * SMALL_SUM), rng.normal(size=4 * SMALL_SUM)
    long_dot = sad.jit(lambda x, y: np.sum(x * y))
    assert long_dot(x, y) == pytest.approx(float(np.sum(x * y)), rel=1e-13)
    assert "einsum" not in next(iter(long_dot.cache.entries.values()))[0]._point[2]
    M = rng.normal(size=(50, 3))
    rows = sad.jit(lambda M: np.sum(M * M, axis=1))
    np.testing.assert_allclose(rows(M), np.sum(M * M, axis=1), rtol=1e-14)
    assert "einsum" in next(iter(rows.cache.entries.values()))[0]._point[2]
    g = sad.grad(lambda x, y: np.sum(x * y) ** 2)(x, y)
    np.testing.assert_allclose(g, 2 * np.sum(x * y) * y, rtol=1e-12)


@pytest.mark.parametrize("beside", [0.0, 1e-9, -1e-9])
@pytest.mark.parametrize("grouped", [False, True])
def test_a_switch_and_a_pairwise_kernel_compile_to_numpys_values_and_jaxs_gradient(beside, grouped, monkeypatch):
    """where(x > 0.3, sin x, x²) on and beside its switch, and Σᵢⱼ exp(−(xᵢ − xⱼ)²) (x − x on the
    diagonal): the compiled value against NumPy, the gradient against ``jax.grad``; ``grouped``:
    elementwise chains as Numba loops (``array_kernels``) on these small arrays too."""
    monkeypatch.setattr(array_kernels, "SMALLEST", 1 if grouped else 1 << 62)
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy

    def u(x, np_=np):
        return np_.sum(np_.where(x > 0.3, np_.sin(x), x * x)) + np_.sum(np_.exp(-(x[:, None] - x[None, :]) ** 2))

    x = np.array([0.3 + beside, -0.4, 0.9, 0.1, 0.3 + beside])  # a repeated point too
    kept = x.copy()
    assert sad.jit(u)(x) == pytest.approx(float(u(x)), rel=1e-14)
    np.testing.assert_allclose(sad.grad(u)(x), np.asarray(jax.grad(lambda y: u(y, jnp))(x)), rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(x, kept)
