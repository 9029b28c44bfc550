"""The operators of traced Python functions (subgraph_ad/operators.py): evaluated on batches of
points in one compiled call, against SymPy at those points, and Hutchinson's stochastic
Laplacian against its known variance."""

import math

import numpy as np
import pytest
import sympy

import subgraph_ad as sad
from subgraph_ad.compile import lambdify as lambdify_module


def u_fn(x):
    """A function of an array x, written as NumPy code."""
    return np.exp(-np.sum(x**2) / 4) * np.sin(x[0] + 2 * x[1]) + x[-1] ** 3 * x[0]


def u_sympy(symbols):
    return sympy.exp(-sum(s**2 for s in symbols) / 4) * sympy.sin(symbols[0] + 2 * symbols[1]) + symbols[-1] ** 3 * symbols[0]


def sympy_at(expr, symbols, points):
    f = sympy.lambdify(symbols, expr, "mpmath")
    return np.array([float(f(*p)) for p in points])


def reference(d, operator, points):
    symbols = sympy.symbols(f"x0:{d}", real=True)
    U = u_sympy(symbols)
    lap = sum(sympy.diff(U, s, 2) for s in symbols)
    expr = lap if operator == "laplacian" else sum(sympy.diff(lap, s, 2) for s in symbols)
    return sympy_at(expr, symbols, points)


@pytest.mark.parametrize("d", [2, 3, 5])
def test_laplacian_and_biharmonic_of_a_function_on_a_batch_match_sympy(d, monkeypatch):
    """Δu and Δ²u on 200 points of shape (200, d) equal SymPy's at every point; the function is
    traced once and the compiled program runs once per batch (no loop over points)."""
    traced = []

    def u(x):
        traced.append(1)
        return u_fn(x)

    points = np.random.default_rng(d).uniform(-1, 1, (200, d))
    lap = sad.laplacian(u)
    calls = []
    original = lambdify_module.Compiled.__call__
    monkeypatch.setattr(lambdify_module.Compiled, "__call__", lambda self, *a: calls.append(1) or original(self, *a))
    values = lap(points)
    assert values.shape == (200,) and len(traced) == 1 and len(calls) == 1
    np.testing.assert_allclose(values, reference(d, "laplacian", points), rtol=1e-10, atol=1e-12)
    lap(points[:7])
    assert len(traced) == 1 and len(calls) == 2  # compiled once per dimension
    bih = sad.biharmonic(u_fn)(points[:40])
    np.testing.assert_allclose(bih, reference(d, "biharmonic", points[:40]), rtol=1e-10, atol=1e-10)


def test_points_of_any_leading_shape_and_one_point():
    """(d,) gives a float; (..., d) gives an array of the leading shape."""
    points = np.random.default_rng(0).uniform(-1, 1, (2, 3, 4))
    lap = sad.laplacian(u_fn)
    grid = lap(points)
    assert grid.shape == (2, 3)
    one = lap(points[1, 2])
    assert isinstance(one, float) and one == pytest.approx(grid[1, 2], rel=1e-14)
    assert one == pytest.approx(reference(4, "laplacian", points[1, 2][None])[0], rel=1e-10)


def test_weighted_laplacian_of_a_function():
    """Σ aᵢⱼ ∂ᵢⱼu with a dense symmetric A equals SymPy's sum at each point."""
    d = 3
    A = np.array([[1.0, 0.5, 0.0], [0.5, 2.0, -1.0], [0.0, -1.0, 0.5]])
    points = np.random.default_rng(1).uniform(-1, 1, (30, d))
    symbols = sympy.symbols(f"x0:{d}", real=True)
    U = u_sympy(symbols)
    expr = sum(sympy.nsimplify(A[i, j]) * sympy.diff(U, symbols[i], symbols[j]) for i in range(d) for j in range(d))
    np.testing.assert_allclose(sad.laplacian(u_fn, weights=A)(points), sympy_at(expr, symbols, points),
                               rtol=1e-10, atol=1e-12)


def test_derivative_tensor_of_a_function_is_dense_and_symmetric():
    """The third-order tensor on points: shape (n, d, d, d), symmetric under every permutation
    of the indices, and SymPy's third derivatives at each point."""
    d = 3
    points = np.random.default_rng(2).uniform(-1, 1, (5, d))
    T = sad.derivative_tensor(u_fn, 3)(points)
    assert T.shape == (5, d, d, d)
    assert np.array_equal(T, np.transpose(T, (0, 2, 1, 3))) and np.array_equal(T, np.transpose(T, (0, 3, 2, 1)))
    symbols = sympy.symbols(f"x0:{d}", real=True)
    U = u_sympy(symbols)
    for index in [(0, 0, 0), (0, 1, 2), (1, 1, 2), (2, 2, 2)]:
        expected = sympy_at(sympy.diff(U, *(symbols[i] for i in index)), symbols, points)
        np.testing.assert_allclose(T[(slice(None),) + index], expected, rtol=1e-10, atol=1e-12)
    assert sad.derivative_tensor(u_fn, k=1)(points[0]).shape == (d,)


# -- Hutchinson --------------------------------------------------------------------------------------------
def hessian_at(point):
    d = len(point)
    symbols = sympy.symbols(f"x0:{d}", real=True)
    H = sympy.hessian(u_sympy(symbols), symbols)
    return np.array(H.subs(dict(zip(symbols, point))).evalf(30), dtype=float)


def test_stochastic_laplacian_is_within_its_standard_error():
    """Hutchinson with S Rademacher probes: each vᵀHv is unbiased for tr(H) with variance
    2·Σ_{i≠j} H_ij² (the diagonal of vvᵀ is 1 exactly), so the mean of S has standard error
    σ = sqrt(2·Σ_{i≠j} H_ij² / S). With the seed fixed the estimate is deterministic; the
    bound 4σ holds with probability ≥ 15/16 by Chebyshev whatever the distribution (about
    1 − 6e-5 by the central limit), so a failure is a bias, not bad luck."""
    samples = 400
    point = np.array([0.3, -0.4, 0.8, 0.1, -0.6])
    H = hessian_at(point)
    exact = float(np.trace(H))
    sigma = math.sqrt(2 * (np.sum(H**2) - np.sum(np.diag(H) ** 2)) / samples)
    estimate = sad.laplacian(u_fn, samples=samples, seed=7)(point)
    assert abs(estimate - exact) <= 4 * sigma, (estimate, exact, sigma)
    assert sigma > 1e-3  # the test is not vacuous: this Hessian has off-diagonal mass
    again = sad.laplacian(u_fn, samples=samples, seed=7)(np.stack([point, point]))
    assert np.all(again == estimate)  # the same probes at every point, the same seed


def test_stochastic_laplacian_is_exact_for_a_diagonal_hessian():
    """A separable function has a diagonal Hessian: every probe gives tr(H) exactly."""
    def separable(x):
        return np.sum(np.sin(x) * x**2)

    points = np.random.default_rng(3).uniform(-1, 1, (50, 6))
    exact = sad.laplacian(separable)(points)
    estimate = sad.laplacian(separable, samples=3, seed=0)(points)
    np.testing.assert_allclose(estimate, exact, rtol=1e-13, atol=1e-13)


def test_stochastic_laplacian_of_a_term_at_the_current_values():
    """On a Term: a float at the vars' current values, the tape left as it was."""
    tape = sad.Tape()
    point = [0.3, -0.4, 0.8, 0.1, -0.6]
    xs = [tape.var(f"x{i}", v) for i, v in enumerate(point)]
    u = u_fn(np.array(xs, dtype=object))
    size = len(tape)
    H = hessian_at(np.array(point))
    estimate = sad.laplacian(u, xs, samples=400, seed=7)
    assert len(tape) == size and not any(name.startswith("probe") for name in tape.vars)
    assert estimate == pytest.approx(sad.laplacian(u_fn, samples=400, seed=7)(np.array(point)), rel=1e-12)
    assert abs(estimate - np.trace(H)) <= 4 * math.sqrt(2 * (np.sum(H**2) - np.sum(np.diag(H) ** 2)) / 400)


# -- bad input ---------------------------------------------------------------------------------------------
def test_bad_input_to_the_function_forms():
    lap = sad.laplacian(u_fn)
    with pytest.raises(TypeError, match="complex"):
        lap(np.array([1.0 + 2j, 0.5]))
    with pytest.raises(ValueError, match=r"shape \(d,\)"):
        lap(3.0)
    with pytest.raises(TypeError, match="or a Python function to trace"):
        sad.laplacian(42)
    with pytest.raises(TypeError, match="xs is for a Term"):
        sad.laplacian(u_fn, [1, 2])
    with pytest.raises(ValueError, match="samples must be an int >= 1"):
        sad.laplacian(u_fn, samples=0)
    with pytest.raises(TypeError, match="seed must be an int"):
        sad.laplacian(u_fn, samples=3, seed="a")
    with pytest.raises(ValueError, match="with weights"):
        sad.laplacian(u_fn, weights=np.eye(2), samples=3)
    with pytest.raises(ValueError, match="from 1 to 4"):
        sad.derivative_tensor(u_fn, 5)
    with pytest.raises(ValueError, match="symmetric"):
        sad.laplacian(u_fn, weights=[[1, 2], [0, 1]])(np.ones(2))
    with pytest.raises(TypeError, match="needs the vars xs"):
        sad.laplacian(sad.Tape().var("x"))
    with pytest.raises(TypeError, match="one number"):
        sad.laplacian(lambda x: x)(np.ones(2))
