"""``np.where`` on a traced array beside NumPy arrays (a condition, a branch) is one selection
node of the array's shape, as NumPy's value is: it went elementwise over an object array whose
every element was the whole traced array — wrong values and wrong shapes, silently. ``np.select``
is nested selections, the first condition that holds winning. Checked against NumPy running f,
and gradients against central differences, on both backends and under vmap."""

import numpy as np
import pytest

import subgraph_ad as sad

rng = np.random.default_rng(0)
A, B, C = rng.uniform(0.0, 1.0, (3, 4)), rng.uniform(0.0, 1.0, (3, 4)), rng.uniform(0.0, 1.0, 4)

CASES = {
    "a NumPy condition's side": lambda X: np.where(B > X, np.cos(B), X * X),
    "a NumPy branch": lambda X: np.where(X < B, np.cos(X), B),
    "a row that broadcasts": lambda X: np.where(X > 0.5, X, C),
    "a condition of its own, a number": lambda X: np.where(C > 0.5, X, 0.0),
    "a fixed mask": lambda X: np.where(A > 0.5, X, B),
    "the same array twice": lambda X: np.where(X > B, X, X * 2.0),
    "np.select of traced conditions": lambda X: np.select([X > B, X < C], [X, B * 2.0], default=0.5),
    "np.select of NumPy conditions": lambda X: np.select([B > 0.5, C > 0.3], [np.sin(X), X * X], default=X),
}


def central(f, x, h=1e-6):
    """Central differences of Σ f(x)²: error O(h²) ≈ 1e-12 here, rounding ~1e-10."""
    out = np.zeros_like(x)
    for where in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[where] += h
        down[where] -= h
        out[where] = (np.sum(f(up) ** 2) - np.sum(f(down) ** 2)) / (2 * h)
    return out


@pytest.mark.parametrize("backend", ["numpy", "numba"])
@pytest.mark.parametrize("name", list(CASES))
def test_where_beside_numpy_arrays_is_numpys_selection(name, backend):
    f = CASES[name]
    found = sad.jit(f, backend=backend)(A)
    assert np.shape(found) == np.shape(f(A))
    np.testing.assert_allclose(found, f(A), rtol=1e-15, atol=0)
    gradient = sad.grad(lambda X: np.sum(f(X) ** 2), backend=backend)(A)
    np.testing.assert_allclose(gradient, central(f, A), rtol=1e-6, atol=1e-8)
    batch = rng.uniform(0.0, 1.0, (5, 3, 4))
    np.testing.assert_allclose(sad.vmap(sad.jit(f, backend=backend))(batch), np.stack([f(x) for x in batch]),
                               rtol=1e-15, atol=0)


def test_select_on_scalar_terms_and_a_choice_per_condition():
    tape = sad.Tape()
    x = tape.var("x", 0.3)
    chosen = np.select([x > 0.5, x > 0.1], [x * 2.0, x * 3.0], default=x)
    assert chosen.eval() == np.select([0.3 > 0.5, 0.3 > 0.1], [0.3 * 2.0, 0.3 * 3.0], default=0.3)  # the first that holds
    assert chosen.gen_graph(x).eval() == 3.0
    with pytest.raises(ValueError, match="one choice per condition.*1 condition.*2 choice"):
        sad.jit(lambda X: np.select([X > 0.5], [X, B]))(A)
