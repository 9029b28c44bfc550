"""Array programs write some pairs of nodes as one statement (``compile/array_fusion.py``) and
run a large batch in chunks shared out over the cores (``ArrayCompiled``); both compute what
``Term.eval`` computes (the array ops' own values, no generated code), at one point and on
batches, and a network's Laplacian through them equals JAX's."""

import numpy as np
import pytest

import subgraph_ad as sad
from subgraph_ad.compile import array_kernels
from subgraph_ad.compile import arrays as arrays_module
from subgraph_ad.compile.arrays import ArrayCompiled


def scaled_product(rng):
    """(v ⊙ T) @ W with T (3 × 5), W (5 × 4): v scales T's columns; v is read again after."""
    tape = sad.Tape()
    x = tape.array("x", rng.normal(size=2))
    A = rng.normal(size=(5, 2))
    v = sad.tanh(np.asarray(A) @ x)  # (5,): a vector from the input
    T, W = rng.normal(size=(3, 5)), rng.normal(size=(5, 4))
    J = (v * T) @ W
    out = [np.sum(J * J) + np.sum(v), J]
    return tape, x, out


def test_a_scaled_constant_times_a_constant_is_one_product_with_their_values():
    rng = np.random.default_rng(0)
    tape, x, out = scaled_product(rng)
    f = sad.lambdify([x], out)
    assert isinstance(f, ArrayCompiled)
    assert "_C" in f.block_source  # written as v @ C
    for point in (rng.normal(size=2), np.array([0.0, 0.0])):
        total, J = f(point)
        assert total == pytest.approx(out[0].eval({x: point}), rel=1e-13)
        np.testing.assert_allclose(J, out[1].eval({x: point}), rtol=1e-13, atol=1e-15)
    points = rng.normal(size=(7, 2))
    total, J = f(points)
    for k in range(7):
        assert total[k] == pytest.approx(out[0].eval({x: points[k]}), rel=1e-13)
        np.testing.assert_allclose(J[k], out[1].eval({x: points[k]}), rtol=1e-13, atol=1e-15)


def test_a_product_read_twice_or_a_vector_table_is_not_fused_and_still_right():
    rng = np.random.default_rng(1)
    tape = sad.Tape()
    x = tape.array("x", rng.normal(size=3))
    T, W = rng.normal(size=(2, 3)), rng.normal(size=(3, 3))
    scaled = sad.sin(x) * T  # read by the product and by the sum below: made once, kept
    row = sad.cos(x) * rng.normal(size=3)  # a vector times a vector table: nothing to fuse
    out = [np.sum(scaled @ W) + np.sum(scaled), row @ W]
    f = sad.lambdify([x], out)
    assert "_C" not in f.block_source
    points = rng.normal(size=(4, 3))
    total, last = f(points)
    for k in range(4):
        assert total[k] == pytest.approx(out[0].eval({x: points[k]}), rel=1e-13)
        np.testing.assert_allclose(last[k], out[1].eval({x: points[k]}), rtol=1e-13)


@pytest.mark.parametrize("parallel", [True, False])
def test_a_batch_in_chunks_equals_the_batch_whole(monkeypatch, parallel):
    """Chunks of a few points (``CHUNK_BYTES`` made tiny): inputs batched along the first axis
    are cut, one with a size-1 first batch axis and one with no batch axes go whole to every
    chunk; outputs of every shape are put back in order."""
    rng = np.random.default_rng(2)
    tape, x, out = scaled_product(rng)
    s = tape.var("s", 0.5)
    outs = [out[0] * s, out[1], sad.exp(s) + 0 * out[0]]
    f = sad.lambdify([x, s], outs, parallel=parallel)
    points, scales = rng.normal(size=(23, 6, 2)), rng.normal(size=(1, 6))
    whole = f(points, scales)
    monkeypatch.setattr(arrays_module, "CHUNK_BYTES", 8 * f.widest * 3)  # 3 points a chunk
    chunked = f(points, scales)
    for a, b in zip(whole, chunked):
        np.testing.assert_array_equal(a, b)
    for i in (0, 11, 22):
        for j in (0, 5):
            point = {x: points[i, j], s: scales[0, j]}
            assert chunked[0][i, j] == pytest.approx(outs[0].eval(point), rel=1e-13)
            np.testing.assert_allclose(chunked[1][i, j], outs[1].eval(point), rtol=1e-13)
            assert chunked[2][i, j] == pytest.approx(np.exp(scales[0, j]), rel=1e-15)
    unbatched = f(points, 0.25)  # s a number: whole to every chunk
    assert unbatched[0].shape == (23, 6)
    assert unbatched[0][4, 2] == pytest.approx(outs[0].eval({x: points[4, 2], s: 0.25}), rel=1e-13)


@pytest.mark.parametrize("grouped", [False, True])
def test_a_network_laplacian_through_fusion_and_chunks_equals_jax(monkeypatch, grouped):
    """``grouped``: its elementwise chains as Numba loops (``array_kernels``) on every chunk."""
    monkeypatch.setattr(array_kernels, "SMALLEST", 1 if grouped else 1 << 62)
    jax = pytest.importorskip("jax")  # in the dev extra: present in make test
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    rng = np.random.default_rng(3)
    d, width = 3, 6
    W1, b1, W2, b2, w3 = (rng.normal(size=(width, d)), rng.normal(size=width), rng.normal(size=(width, width)),
                          rng.normal(size=width), rng.normal(size=width))
    monkeypatch.setattr(arrays_module, "CHUNK_BYTES", 8 * width * d * 16)  # chunks of 16 points
    lap = sad.laplacian(lambda x: w3 @ np.tanh(W2 @ np.tanh(W1 @ x + b1) + b2))
    points = rng.uniform(-1, 1, (100, d))
    found = lap(points)
    u = lambda x: w3 @ jnp.tanh(W2 @ jnp.tanh(W1 @ x + b1) + b2)  # noqa: E731
    expected = jax.vmap(lambda x: jnp.trace(jax.hessian(u)(x)))(points)
    np.testing.assert_allclose(found, np.asarray(expected), rtol=1e-11, atol=1e-12)


def test_a_gradient_gathered_from_element_reads_is_one_array_with_each_adjoint_added_in():
    """Reading a weight matrix element by element (twice for some: their adjoints add up), the
    gradient in it is zeros and one in-place addition per read, not a placed array and a sum
    each; it equals the closed form."""
    rng = np.random.default_rng(4)
    W, x = rng.normal(size=(3, 2)), rng.normal(size=2)

    def loss(W):
        total = 0.0
        for i in range(3):
            total = total + np.tanh(W[i, 0] * x[0] + W[i, 1] * x[1]) ** 2
        return total + W[0, 0] * W[2, 1]  # W[0, 0] and W[2, 1] read again

    grad = sad.grad(loss)
    found = grad(W)
    program = next(iter(grad.cache.entries.values()))[0]
    source = program._point[2] if hasattr(program, "_point") else ""
    assert "_np.zeros" in source and source.count("] += ") >= 6
    h = np.tanh(W @ x)
    expected = 2 * (h * (1 - h * h))[:, None] * x[None, :]
    expected[0, 0] += W[2, 1]
    expected[2, 1] += W[0, 0]
    np.testing.assert_allclose(found, expected, rtol=1e-13, atol=1e-15)


def test_overlapping_slices_add_their_adjoints_where_they_meet():
    """x[1:] and x[:-1] overlap: their placed adjoints must add, not overwrite."""
    rng = np.random.default_rng(5)
    x = rng.normal(size=6)
    grad = sad.grad(lambda x: np.sum(np.sin(x[1:]) * x[:-1]) + np.sum(x[:3] ** 2))
    found = grad(x)
    source = next(iter(grad.cache.entries.values()))[0]._point[2]
    assert "] += " in source
    expected = np.zeros(6)
    expected[1:] += np.cos(x[1:]) * x[:-1]
    expected[:-1] += np.sin(x[1:])
    expected[:3] += 2 * x[:3]
    np.testing.assert_allclose(found, expected, rtol=1e-13, atol=1e-15)


def _point_source(grad):
    return next(iter(grad.cache.entries.values()))[0]._point[2]


@pytest.mark.parametrize("order", [(0, 1, 2), (2, 0, 1), (1, 2, 0)])
def test_slices_that_tile_a_flat_vector_give_their_adjoints_end_to_end(order):
    """A flat parameter vector read as three slices that tile it end to end (read in any order,
    one reshaped, one sliced again): its gradient is one concatenation of the adjoints, and
    equals the closed form."""
    rng = np.random.default_rng(6)
    p, x = rng.normal(size=10), rng.normal(size=2)
    cuts = [(0, 4), (4, 6), (6, 10)]

    def loss(p):
        parts = {k: p[cuts[k][0]:cuts[k][1]] for k in order}  # read in this order
        h = np.tanh(parts[0].reshape(2, 2) @ x + parts[1])
        return np.sum(h * parts[2][:2]) + np.sum(parts[2][2:] ** 3)

    grad = sad.grad(loss)
    found = grad(p)
    source = _point_source(grad)
    assert "_np.concatenate" in source and "] += " not in source
    w, b, c = p[:4].reshape(2, 2), p[4:6], p[6:]
    h = np.tanh(w @ x + b)
    dz = c[:2] * (1 - h * h)
    expected = np.concatenate([np.outer(dz, x).ravel(), dz, h, 3 * c[2:] ** 2])
    np.testing.assert_allclose(found, expected, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("case", ["gap", "twice"])
def test_slices_that_leave_a_gap_or_meet_add_their_adjoints_into_zeros(case):
    """A parameter no slice reads gets 0; where two slices meet their adjoints add: zeros with
    each added in, not a concatenation."""
    p = np.random.default_rng(7).normal(size=8)
    if case == "gap":  # p[4] read by none
        grad = sad.grad(lambda p: np.sum(p[:4] ** 2) + np.sum(np.sin(p[5:])))
        expected = np.concatenate([2 * p[:4], [0.0], np.cos(p[5:])])
    else:  # p[3:5] read by both
        grad = sad.grad(lambda p: np.sum(p[:5] ** 2) + np.sum(np.sin(p[3:])))
        expected = np.concatenate([2 * p[:5], [0.0] * 3]) + np.concatenate([[0.0] * 3, np.cos(p[3:])])
    found = grad(p)
    assert "_np.concatenate" not in _point_source(grad)
    np.testing.assert_allclose(found, expected, rtol=1e-13, atol=1e-15)
