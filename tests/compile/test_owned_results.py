"""A compiled array program's results are arrays of their own, as NumPy's results are: writing
into one changes neither the caller's arguments, nor the program's constants, nor another
output. (The NumPy backend once returned ``x`` itself for ``jit(lambda x: x)``, a view of it
for ``x[:3]``, one array for two equal outputs, and a constant gradient as a read-only view of
the program's table.) Checked on both backends, one point and a batch, against NumPy running f."""

import numpy as np
import pytest

import subgraph_ad as sad

BACKENDS = ["numpy", "numba"]

FUNCTIONS = {
    "itself": lambda x: x,
    "slice": lambda x: x[1:4],
    "reshape": lambda x: x.reshape(2, 3),
    "transpose": lambda x: x.reshape(2, 3).T,
    "element and slice": lambda x: (x[0], x[2:]),
    "broadcast": lambda x: np.broadcast_to(x[:3], (2, 3)),
    "twice": lambda x: (2 * x, 2 * x),
    "input twice": lambda x: (x, x[::-1], x),
    "a table": lambda x: (np.arange(3.0), x * 0.5),
}


def _leaves(result):
    return list(result) if isinstance(result, tuple) else [result]


def _written_apart(found, x, before):
    """Each array result, written into, leaves x and every other result as they were."""
    arrays = [r for r in _leaves(found) if isinstance(r, np.ndarray) and r.ndim]
    kept = [r.copy() for r in arrays]
    for k, r in enumerate(arrays):
        r[...] = -7.0
        np.testing.assert_array_equal(x, before)
        for j, other in enumerate(arrays):
            if j > k:
                np.testing.assert_array_equal(other, kept[j])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_jit_results_are_new_writable_arrays_at_one_point(name, backend):
    f = FUNCTIONS[name]
    x = np.linspace(-1.0, 2.0, 6)
    before = x.copy()
    jitted = sad.jit(f, backend=backend)
    for _ in range(2):  # the first call and the kept way
        found = jitted(x)
        for got, want in zip(_leaves(found), _leaves(f(before))):
            np.testing.assert_array_equal(got, want)
            assert not np.shares_memory(got, x)
            if isinstance(got, np.ndarray) and got.ndim:
                assert got.flags.writeable
        _written_apart(found, x, before)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", ["itself", "slice", "reshape", "twice", "input twice"])
def test_vmap_results_are_new_arrays(name, backend):
    f = FUNCTIONS[name]
    xs = np.random.default_rng(2).normal(size=(4, 6))
    before = xs.copy()
    found = sad.vmap(sad.jit(f, backend=backend))(xs)
    want = [np.stack([_leaves(f(row))[k] for row in before]) for k in range(len(_leaves(f(before[0]))))]
    for got, expected in zip(_leaves(found), want):
        np.testing.assert_array_equal(got, expected)
        assert not np.shares_memory(got, xs)
    _written_apart(found, xs, before)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_constant_gradient_is_writable_and_fresh_each_call(backend):
    weights = np.arange(5.0)
    grad = sad.grad(lambda x: np.sum(x * weights), backend=backend)
    x = np.ones(5)
    first = grad(x)
    np.testing.assert_array_equal(first, weights)  # d/dx Σ w·x = w
    first += 1.0  # as with any NumPy result
    np.testing.assert_array_equal(grad(x), weights)
