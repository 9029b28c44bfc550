"""Traced Python functions against hand-written derivatives, placeholders, and checkpointed
reverse mode against the plain chain rule and the schedule's theoretical counts."""

import math

import numpy as np
import pytest

import subgraph_ad as sad
from subgraph_ad.checkpoint import split


def rosen(x):
    return np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def rosen_grad(x):
    g = np.zeros_like(x)
    g[:-1] += -400 * x[:-1] * (x[1:] - x[:-1] ** 2) - 2 * (1 - x[:-1])
    g[1:] += 200 * (x[1:] - x[:-1] ** 2)
    return g


def rosen_hessian(x):
    n = len(x)
    h = np.zeros((n, n))
    for i in range(n - 1):
        h[i, i] += 1200 * x[i] ** 2 - 400 * x[i + 1] + 2
        h[i + 1, i + 1] += 200
        h[i, i + 1] = h[i + 1, i] = -400 * x[i]
    return h


def test_gradient_and_hessian_of_numpy_array_code():
    x0 = np.array([0.5, 1.2, -0.3, 0.8, 1.1])
    np.testing.assert_allclose(sad.grad(rosen)(x0), rosen_grad(x0), rtol=1e-13)
    np.testing.assert_allclose(sad.hessian(rosen)(x0), rosen_hessian(x0), rtol=1e-13)
    g = sad.grad(rosen)
    x1 = np.linspace(-1, 1, 5)
    np.testing.assert_allclose(g(x1), rosen_grad(x1), rtol=1e-13)  # same signature: cached
    assert len(g.cache) == 1
    np.testing.assert_allclose(g(np.ones(3)), [0.0, 0.0, 0.0])  # a new signature, traced again
    assert len(g.cache) == 2


def test_gradients_of_scalar_arguments_and_argnums():
    def f(x, y):
        return x * y + sad.sin(x)

    assert sad.grad(f)(0.5, 4.2) == pytest.approx(4.2 + math.cos(0.5), rel=1e-15)
    assert sad.grad(f, argnums=1)(0.5, 4.2) == 0.5
    gx, gy = sad.grad(f, argnums=(0, 1))(0.5, 4.2)
    assert (gx, gy) == (pytest.approx(4.2 + math.cos(0.5)), 0.5)


def test_the_nth_derivative_elementwise_on_points():
    d4 = sad.derivative(lambda x: sad.exp(-x**2 / 2), 4)
    points = np.linspace(-2, 2, 9)
    hermite = (points**4 - 6 * points**2 + 3) * np.exp(-points**2 / 2)  # He_4 times the Gaussian
    np.testing.assert_allclose(d4(points), hermite, rtol=1e-12, atol=1e-15)
    assert d4(0.0) == pytest.approx(3.0)


def test_bad_input_to_traced_functions():
    with pytest.raises(TypeError, match="grad\\(\\) takes a Python function to trace, got int 3"):
        sad.grad(3)
    with pytest.raises(ValueError, match="argnums 2 is out of range for a function called with 2"):
        sad.grad(lambda x, y: x * y, argnums=2)(1.0, 2.0)
    with pytest.raises(TypeError, match="argnums must be an int or a non-empty tuple of ints"):
        sad.grad(lambda x: x, argnums="0")(1.0)
    with pytest.raises(TypeError, match="grad needs a function returning one number"):
        sad.grad(lambda x: [x, x])(1.0)

    def branchy(x):
        return x if x > 0 else -x

    with pytest.raises(TypeError, match="tracing 'branchy' failed"):
        sad.grad(branchy)(1.0)
    with pytest.raises(ValueError, match="the order n must be an int >= 0, got -1"):
        sad.derivative(np.sin, -1)


def test_placeholders_must_be_fed():
    tape = sad.Tape()
    x = tape.var("x", 2.0)
    p, q = tape.placeholder("p"), tape.placeholder("q")
    z = x * p + q
    with pytest.raises(sad.UnfedPlaceholder, match="unfed placeholders 'p', 'q'"):
        z.eval()
    with pytest.raises(sad.UnfedPlaceholder, match="'p'"):
        z.grad({q: 1.0})
    assert z.eval({p: 3.0, q: 1.0}) == 7.0 and z.derive(x, {"p": 3.0, "q": 0.0}) == 3.0
    assert (x * x).eval() == 4.0  # a graph that does not need them evaluates
    assert sad.lambdify([x, p, q], z)(2.0, 3.0, 1.0) == 7.0
    p.set(5.0)
    assert z.eval({q: 0.0}) == 10.0


def _schedule_calls(a, b):
    """Step calls of going back over [a, b) after the forward sweep, by the schedule's own
    recursion (the number in (a, b) with the most trailing zeros splits it)."""
    if b - a < 2:
        return 0
    m = split(a, b)
    return (m - a) + _schedule_calls(a, m) + _schedule_calls(m, b)


@pytest.mark.parametrize("n", [1, 2, 7, 64, 1000])
def test_checkpointed_gradient_equals_the_plain_chain_rule(n):
    result = sad.checkpointed_grad(lambda x: x + 0.01 * sad.sin(x), 0.3, n)  # Euler steps of x' = sin x
    x, slope = 0.3, 1.0
    for _ in range(n):
        slope *= 1 + 0.01 * math.cos(x)
        x = x + 0.01 * math.sin(x)
    value, derivative = result
    assert value == pytest.approx(x, rel=1e-14)
    assert derivative == pytest.approx(slope, rel=1e-11)
    assert result.step_calls == n + _schedule_calls(0, n)
    assert result.stored_states <= max(1, math.ceil(math.log2(max(n, 1))) + 1)
    if n == 64:
        assert result.step_calls == 64 + 32 * 6  # n + (n/2)·log2(n) for a power of two


def test_checkpointed_jacobian_of_a_vector_loop():
    a = np.array([[0.9, 0.1], [0.2, 0.7]])
    result = sad.checkpointed_grad(lambda v: a @ np.tanh(v), np.array([1.0, -2.0]), 50)
    x, jac = np.array([1.0, -2.0]), np.eye(2)
    for _ in range(50):
        jac = (a * (1 - np.tanh(x) ** 2)) @ jac
        x = a @ np.tanh(x)
    np.testing.assert_allclose(result.value, x, rtol=1e-13)
    np.testing.assert_allclose(result.derivative, jac, rtol=1e-10, atol=1e-300)


def test_split_has_the_most_trailing_zeros():
    for a in range(0, 40):
        for b in range(a + 2, 70):
            m = split(a, b)
            tz = (m & -m).bit_length()
            assert a < m < b and all(((k & -k).bit_length() <= tz) for k in range(a + 1, b) if k)


def test_matrix_transforms_refuse_empty_arguments():
    for transform in (sad.grad(lambda v: np.sum(v)), sad.jacobian(lambda v: v * 2, sparse=True)):
        with pytest.raises(ValueError, match=r"argument 0 is an empty array of shape \(0,\): there is nothing to differentiate"):
            transform(np.array([]))


def test_sad_functions_on_traced_arrays():
    """sad.sin, sad.sigmoid and sad.atan2 on a traced array argument, elementwise like NumPy's:
    the Hessian of Σ sin(v) + atan2(v0, v1) against its hand derivatives."""
    v = np.array([1.0, 1.0, 0.4])
    H = sad.hessian(lambda w: np.sum(sad.sin(w)) + sad.atan2(w[0], w[1]) + sad.sigmoid(w[2]), sparse=True)(v)
    s = 1 / (1 + np.exp(-v[2]))
    expected = np.diag(-np.sin(v)) + np.array([[-0.5, 0, 0], [0, 0.5, 0], [0, 0, s * (1 - s) * (1 - 2 * s)]])
    np.testing.assert_allclose(H.toarray(), expected, rtol=1e-14, atol=1e-15)


def test_a_single_leaf_round_trips_as_itself():
    """An argument that is one number or one array (the common call) is its own tree: its one
    shape, and the leaf handed back as it is."""
    from subgraph_ad.pytrees import flatten, leaf_shapes, unflatten

    for value in (2.5, np.arange(6.0).reshape(2, 3)):
        leaves, tree = flatten(value)
        assert leaf_shapes(tree) == [np.shape(value)] and unflatten(tree, leaves) is value


def test_pytrees_of_nested_containers_round_trip_and_differentiate():
    """A container nested 300 deep (dicts, lists, None, empty tuples) comes back as it was from
    flatten/unflatten, and its one leaf is differentiated through the nesting."""
    from subgraph_ad.pytrees import flatten, unflatten

    deep = 2.0
    for k in range(300):
        deep = [deep, None] if k % 2 else {"k": deep, "a": ()}
    leaves, tree = flatten(deep)
    assert leaves == [2.0] and unflatten(tree, leaves) == deep

    def f(t):
        for k in reversed(range(300)):
            t = t[0] if k % 2 else t["k"]
        return t ** 3

    g = sad.grad(f)(deep)
    for k in reversed(range(300)):
        assert (g[1] is None) if k % 2 else (g["a"] == ())
        g = g[0] if k % 2 else g["k"]
    assert g == 12.0  # 3·2²
