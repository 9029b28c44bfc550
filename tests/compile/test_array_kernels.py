"""At one point an array program takes the faster of two NumPy kernels that compute the same
numbers (``compile/array_code.py``): an outer product by ``dot`` (not broadcasting, not ``@``),
a matrix summed along one axis by a product with ones, and a transposed matrix that products
read on their right as one contiguous copy. The oracle is NumPy on the same arrays, inf and nan
included."""

import numpy as np
import pytest

import subgraph_ad as sad
from subgraph_ad.compile.arrays import ArrayCompiled
from subgraph_ad.trace.transforms import _hvp_transform  # the transform sad.hvp made for a function


def test_outer_products_sums_and_right_transposes_take_the_fast_kernels_and_numpys_values():
    rng = np.random.default_rng(5)
    values = {"a": rng.normal(size=(40, 1)), "b": rng.normal(size=(1, 24)), "M": rng.normal(size=(40, 24)),
              "W": rng.normal(size=(30, 24))}
    values["a"][3, 0], values["b"][0, 5], values["M"][2, 3], values["M"][7, 1] = np.inf, 0.0, np.nan, -np.inf
    tape = sad.Tape()
    a, b, M, W = (tape.array(name, value) for name, value in values.items())
    outs = [a @ b, np.sum(sad.sin(M), axis=0), np.sum(sad.cos(M), axis=1), np.sum(M * M, axis=0),
            M @ W.T, sad.tanh(M) @ W.T, W.T]
    f = sad.lambdify([a, b, M, W], outs)
    assert isinstance(f, ArrayCompiled)
    source = f._point[2]
    assert "_np.dot(" in source and source.count("_ones(") == 2  # the sum of a product stays one einsum
    assert source.count("ascontiguousarray") == 1  # one copy of W.T serves both products; the output W.T is a view
    A, B, m, w = values.values()
    with np.errstate(all="ignore"):
        expected = [A @ B, np.sin(m).sum(0), np.cos(m).sum(1), (m * m).sum(0), m @ w.T, np.tanh(m) @ w.T, w.T]
        found = f(A, B, m, w)
    for got, want in zip(found, expected):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)
    assert np.isnan(found[0][3, 5]) and np.isinf(found[0][3, 0])  # inf · 0 and inf · x, as NumPy's
    for k, value in enumerate(values.values()):  # the copy is of W.T, never written back into W
        np.testing.assert_array_equal(value, [A, B, m, w][k])


def test_the_network_hvp_reads_each_transposed_weight_once_as_a_copy():
    """The 10 → 64 → 64 → 1 loss's Hessian-vector product multiplies by W₂ᵀ and V₂ᵀ on the
    right of 128-row matrices: each is copied once; the values equal the product by the view."""
    rng = np.random.default_rng(2)
    p = {"w1": rng.normal(size=(10, 64)) / 3, "w2": rng.normal(size=(64, 64)) / 8, "w3": rng.normal(size=(64, 1)) / 8}
    v = {k: rng.normal(size=a.shape) for k, a in p.items()}
    x, y = rng.normal(size=(128, 10)), rng.normal(size=(128, 1))

    def loss(q):
        h = np.tanh(np.tanh(x @ q["w1"]) @ q["w2"])
        return np.mean((h @ q["w3"] - y) ** 2)

    found = sad.hvp(loss, p, v)
    source = next(iter(_hvp_transform(loss, None).cache.entries.values()))[0]._point[2]
    assert source.count("ascontiguousarray") >= 2
    jax = pytest.importorskip("jax")  # jax is in the dev extra: always present in make test
    jax.config.update("jax_enable_x64", True)

    def jax_loss(q):
        h = jax.numpy.tanh(jax.numpy.tanh(x @ q["w1"]) @ q["w2"])
        return jax.numpy.mean((h @ q["w3"] - y) ** 2)

    expected = jax.jvp(jax.grad(jax_loss), (p,), (v,))[1]
    for k in p:
        np.testing.assert_allclose(found[k], np.asarray(expected[k]), rtol=1e-12, atol=1e-15)
