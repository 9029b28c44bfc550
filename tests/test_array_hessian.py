"""The Hessian of an array-written function in one array argument, where it holds a dense layer,
is the array pass's Jacobian block of the gradient (``trace.matrices._array_hessian``; for
``derivative_tensor(fn, k)`` on points, ``operators._tensor_block``, orders 2 to 4): one array node, not d²
scalar entries. Oracle: JAX's ``hessian`` of the same function written with
``jax.numpy``, on random tanh-family networks (widths 1–16, depths 1–3, every smooth elementwise
built-in JAX has, repeated operands, a ``where``), plain, batched by ``vmap`` and nested in
``grad``; and the size of the graph, which must not grow with d²."""

from __future__ import annotations

import numpy as np
import pytest

import subgraph_ad as sad
from subgraph_ad.trace.tracer import Traced
from subgraph_ad.trace.matrices import _array_hessian

jax = pytest.importorskip("jax")
jnp = jax.numpy

#: (ours, JAX's) elementwise functions; ``x * x`` and ``x - x * 0.5`` repeat an operand
ACTIVATIONS = [
    (np.tanh, jnp.tanh), (np.sin, jnp.sin), (sad.sigmoid, jax.nn.sigmoid), (sad.softplus, jax.nn.softplus),
    (lambda a: a * a, lambda a: a * a), (np.exp, jnp.exp), (sad.erf, jax.scipy.special.erf),
    (lambda a: np.where(a > 0.1, np.cos(a), a * a), lambda a: jnp.where(a > 0.1, jnp.cos(a), a * a)),
    (lambda a: np.log1p(a * a) - a * 0.5, lambda a: jnp.log1p(a * a) - a * 0.5),
]


def network(seed: int):
    rng = np.random.default_rng(seed)
    d, depth = int(rng.integers(1, 7)), int(rng.integers(1, 4))
    widths = [d] + [int(rng.integers(1, 17)) for _ in range(depth)]
    layers = [(rng.normal(size=(b, a)) / np.sqrt(a), rng.normal(size=b)) for a, b in zip(widths, widths[1:])]
    acts = [ACTIVATIONS[int(rng.integers(len(ACTIVATIONS)))] for _ in layers]
    head = rng.normal(size=widths[-1])

    def ours(x):
        for (W, b), (act, _) in zip(layers, acts):
            x = act(W @ x + b)
        return head @ x

    def theirs(x):
        for (W, b), (_, act) in zip(layers, acts):
            x = act(jnp.asarray(W) @ x + jnp.asarray(b))
        return jnp.asarray(head) @ x

    return d, ours, theirs


@pytest.mark.parametrize("seed", range(16))
def test_array_hessians_match_jax(seed, x64):
    d, ours, theirs = network(seed)
    x = np.random.default_rng(100 + seed).uniform(-1.0, 1.0, d)
    want = np.asarray(jax.hessian(theirs)(jnp.asarray(x)))
    assert np.allclose(sad.hessian(ours)(x), want, rtol=1e-10, atol=1e-12)
    batch = np.random.default_rng(200 + seed).uniform(-1.0, 1.0, (5, d))
    want = np.asarray(jax.vmap(jax.hessian(theirs))(jnp.asarray(batch)))
    assert np.allclose(sad.vmap(sad.hessian(ours))(batch), want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("seed", range(8))
def test_second_derivative_tensors_on_points_match_jax(seed, x64):
    # sad.derivative_tensor(fn, 2) of a dense fn takes the same block, on a batch of points
    d, ours, theirs = network(seed)
    batch = np.random.default_rng(300 + seed).uniform(-1.0, 1.0, (4, 3, d))
    want = np.asarray(jax.vmap(jax.vmap(jax.hessian(theirs)))(jnp.asarray(batch)))
    assert np.allclose(sad.derivative_tensor(ours, 2)(batch), want, rtol=1e-10, atol=1e-12)
    assert np.allclose(sad.derivative_tensor(ours, 2)(batch[0, 0]), want[0, 0], rtol=1e-10, atol=1e-12)


@pytest.mark.slow  # JAX's nested jacfwd compiles for seconds
@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("order", [3, 4])
def test_third_and_fourth_derivative_tensors_on_points_match_jax(seed, order, x64):
    """Orders 3 and 4 are the Jacobian block of the order below, taken again (``_tensor_block``)."""
    d, ours, theirs = network(seed)
    batch = np.random.default_rng(400 + seed).uniform(-1.0, 1.0, (3, d))
    tensor = jax.hessian(theirs)
    for _ in range(order - 2):
        tensor = jax.jacfwd(tensor)
    want = np.asarray(jax.vmap(tensor)(jnp.asarray(batch)))
    found = sad.derivative_tensor(ours, order)(batch)
    assert found.shape == (3,) + (d,) * order
    assert np.allclose(found, want, rtol=1e-9, atol=1e-11 * max(1.0, np.max(np.abs(want))))


def test_a_tensor_past_the_block_limit_takes_the_scalar_form(x64, monkeypatch):
    """Past ``BLOCK_ENTRIES`` the scalar tensor (each distinct entry once) gives the same values."""
    from subgraph_ad import operators

    d, ours, theirs = network(3)
    x = np.random.default_rng(9).uniform(-1.0, 1.0, d)
    want = np.asarray(jax.jacfwd(jax.hessian(theirs))(jnp.asarray(x)))
    monkeypatch.setattr(operators, "BLOCK_ENTRIES", d ** 3 - 1)
    assert np.allclose(sad.derivative_tensor(ours, 3)(x), want, rtol=1e-9, atol=1e-11 * max(1.0, np.max(np.abs(want))))


def test_nested_in_grad_matches_jax(x64):
    rng = np.random.default_rng(5)
    W, x = rng.normal(size=(6, 3)), rng.uniform(-1.0, 1.0, 3)

    def ours(s):
        return np.sum(sad.hessian(lambda y: np.sum(np.tanh(s * (W @ y))))(x) ** 2)

    def theirs(s):
        return jnp.sum(jax.hessian(lambda y: jnp.sum(jnp.tanh(s * (jnp.asarray(W) @ y))))(jnp.asarray(x)) ** 2)

    assert np.isclose(sad.grad(ours)(0.7), float(jax.grad(theirs)(0.7)), rtol=1e-10)


def test_the_hessian_is_one_array_node_whatever_d():
    rng = np.random.default_rng(1)
    sizes = []
    for d in (10, 300):
        W, b, v = rng.normal(size=(16, d)) / np.sqrt(d), rng.normal(size=16), rng.normal(size=16)
        trace = Traced(lambda x: v @ np.tanh(W @ x + b), [(d,)], "hessian", arrays=True)
        (h,), _ = _array_hessian(trace, 0, trace.scalar_output("hessian"))
        assert h.shape == (d, d)
        sizes.append(len(trace.tape))
    assert sizes[0] == sizes[1] < 200  # the scalar form at d = 300: 90,000 entries of 16 terms
