"""Chains of elementwise nodes of an array program run as one Numba kernel
(``compile/array_kernels.py``): the values are NumPy's code's (to the few ulp glibc's vector
functions differ by), inf and nan included; inputs are never written; batches whose axes
broadcast, small arrays and a machine without Numba run the members' NumPy code; a loss's
Hessian-vector product equals JAX's. The random corpus of ``test_array_reuse.py`` and the
network Laplacian of ``test_array_fusion.py`` run grouped too (every built-in, a − a, f(a, a),
conditions, views)."""

import numpy as np
import pytest

import subgraph_ad as sad
from subgraph_ad.compile import array_kernels
from subgraph_ad.compile.arrays import ArrayCompiled

jax = pytest.importorskip("jax")  # in the dev extra: present in make test
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy


def _program(f) -> ArrayCompiled:
    found = [c for c in f.cache.entries.values()]
    return found[0][0]


def layer(x, y):
    """Seven elementwise nodes after a product: tanh, sech², their products, a sum."""
    z = x * y
    t = np.tanh(z)
    return t * (1 - 2 * t) + np.exp(-z * z) / (1 + x * x) - np.sqrt(np.abs(y) + 1)


def test_a_chain_is_one_kernel_with_numpys_values_and_ieee_specials():
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(200, 100)), rng.normal(size=(200, 100))
    x[0, :4] = [np.inf, -np.inf, np.nan, 0.0]
    y[0, :4] = [0.0, 2.0, 1.0, np.inf]
    kept = x.copy(), y.copy()
    f = sad.jit(layer)
    found = f(x, y)
    source = _program(f)._point[2]
    assert ".fits(" in source  # one kernel for the chain
    with np.errstate(all="ignore"):
        expected = layer(x, y)
    np.testing.assert_allclose(found, expected, rtol=1e-13, atol=1e-15)  # nan where NumPy has nan, inf as inf
    np.testing.assert_array_equal(x, kept[0])
    np.testing.assert_array_equal(y, kept[1])


def test_small_arrays_broadcasting_batches_and_no_numba_run_numpys_code(monkeypatch):
    rng = np.random.default_rng(2)
    f = sad.jit(layer)
    small = rng.normal(size=(3, 4)), rng.normal(size=(3, 4))
    np.testing.assert_allclose(f(*small), layer(*small), rtol=1e-15)  # under SMALLEST: NumPy's code
    g = sad.vmap(sad.jit(layer), in_axes=(0, None))
    xs, y = rng.normal(size=(6, 100, 40)), rng.normal(size=(100, 40))  # y without the batch: NumPy's code
    np.testing.assert_allclose(g(xs, y), np.stack([layer(x, y) for x in xs]), rtol=1e-13)
    monkeypatch.setattr(array_kernels.importlib.util, "find_spec", lambda name: None)  # no Numba here
    h = sad.jit(lambda x, y: layer(x, y) + 0.0)
    x, y = rng.normal(size=(200, 100)), rng.normal(size=(200, 100))
    np.testing.assert_allclose(h(x, y), layer(x, y), rtol=1e-15)
    assert ".fits(" not in _program(h)._point[2]


def test_the_corpus_forms_groups(monkeypatch):
    """The random corpus grouped (as ``test_array_reuse.py`` runs it: kernels on arrays of any
    size) is not NumPy's code under another name: most seeds make groups."""
    from test_array_reuse import SEEDS, random_function

    monkeypatch.setattr(array_kernels, "SMALLEST", 1)

    rng = np.random.default_rng(0)
    A, B, c = rng.uniform(-1, 1, (3, 4)), rng.uniform(-1, 1, (3, 4)), rng.uniform(-1, 1, 4)
    grouped = 0
    for seed in SEEDS:
        f = sad.jit(random_function(seed))
        f(A, B, c)
        grouped += ".fits(" in _program(f)._point[2]
    assert grouped >= len(SEEDS) // 2


def test_a_loss_hvp_with_kernels_equals_jax():
    rng = np.random.default_rng(5)
    p = {"w1": rng.normal(size=(10, 128)) / 3, "w2": rng.normal(size=(128, 128)) / 11, "w3": rng.normal(size=(128, 1))}
    v = {k: rng.normal(size=a.shape) for k, a in p.items()}
    x, y = rng.normal(size=(256, 10)), rng.normal(size=(256, 1))

    def loss(q, xp=np):
        h = xp.tanh(xp.tanh(x @ q["w1"]) @ q["w2"])
        return xp.mean((h @ q["w3"] - y) ** 2)

    found = sad.hvp(loss, p, v)
    expected = jax.jvp(jax.grad(lambda q: loss(q, jnp)), (p,), (v,))[1]
    for k in p:
        np.testing.assert_allclose(found[k], np.asarray(expected[k]), rtol=1e-11, atol=1e-13)


def test_a_kernel_llvm_refuses_warns_once_and_the_numpy_code_runs(monkeypatch):
    from subgraph_ad.compile.backends import numba as numba_backend
    from subgraph_ad.compile.lambdify import BackendWarning

    def refuse(*args, **kwargs):
        raise RuntimeError("LLVM said no")

    monkeypatch.setattr(numba_backend, "kernel", refuse)
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=(200, 100)), rng.normal(size=(200, 100))
    f = sad.jit(lambda x, y: layer(x, y) * 1.0)
    with pytest.warns(BackendWarning, match="LLVM said no"):
        found = f(x, y)
    np.testing.assert_allclose(found, layer(x, y), rtol=1e-15)
    np.testing.assert_allclose(f(x, y), layer(x, y), rtol=1e-15)  # no second warning: NumPy's code kept
