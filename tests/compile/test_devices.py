"""``lambdify(backend="jax")`` and ``lambdify(backend="cuda")``, and ``backend=`` on every entry
that compiles (the traced transforms, the operators, ``Sparse.compile``, ``hutchinson_trace``)
with the package default (``config``) when a call names none.

The oracle is closed form: dⁿ/dxⁿ exp(−x²/2) = (−1)ⁿ Heₙ(x) exp(−x²/2) (Hermite polynomials,
``numpy.polynomial.hermite_e``), the Rosenbrock gradient and Hessian written out, and a
Laplacian by hand. CUDA runs either without CuPy (the NumPy fallback) or with the stand-in
CuPy of ``test_cuda_backend`` whose kernels are the CUDA source compiled by the C++ compiler."""

import math
import pickle
import sys
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from numpy.polynomial import hermite_e

import subgraph_ad as sad
from subgraph_ad.compile import config
from test_cuda_backend import fake_cupy, needs_cxx

POINTS = np.linspace(-2.0, 2.0, 9)


@pytest.fixture(autouse=True)
def _x64_and_defaults(monkeypatch):
    """float64 in JAX (the flag is global, so restored), no default backend set, no cache."""
    previous = jax.config.read("jax_enable_x64")
    jax.config.update("jax_enable_x64", True)
    monkeypatch.delenv("SUBGRAPH_AD_BACKEND", raising=False)
    monkeypatch.setattr(config, "backend", None)
    monkeypatch.setenv("SUBGRAPH_AD_CACHE", "off")
    yield
    jax.config.update("jax_enable_x64", previous)


def gaussian_derivative(n: int, x: np.ndarray) -> np.ndarray:
    """dⁿ/dxⁿ exp(−x²/2) = (−1)ⁿ Heₙ(x) exp(−x²/2)."""
    return (-1) ** n * hermite_e.hermeval(x, [0] * n + [1]) * np.exp(-x * x / 2)


def gaussian(n: int):
    tape = sad.Tape()
    x = tape.var("x")
    return x, sad.exp(-x**2 / 2).diff(x, n)


def no_cupy(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # import cupy raises ImportError


def rosenbrock(w):
    return np.sum(100 * (w[1:] - w[:-1] ** 2) ** 2 + (1 - w[:-1]) ** 2)


def rosenbrock_gradient(w: np.ndarray) -> np.ndarray:
    g = np.zeros_like(w)
    g[:-1] = -400 * w[:-1] * (w[1:] - w[:-1] ** 2) - 2 * (1 - w[:-1])
    g[1:] += 200 * (w[1:] - w[:-1] ** 2)
    return g


def rosenbrock_hessian(w: np.ndarray) -> np.ndarray:
    n = len(w)
    h = np.zeros((n, n))
    for i in range(n - 1):
        h[i, i] += 1200 * w[i] ** 2 - 400 * w[i + 1] + 2
        h[i, i + 1] = h[i + 1, i] = -400 * w[i]
        h[i + 1, i + 1] += 200
    return h


# -- JAX ----------------------------------------------------------------------------------------
def test_jax_returns_jax_arrays_and_composes_with_jit_vmap_and_grad():
    """The 4th derivative under jit and vmap is He₄'s closed form; jax.grad of it is the 5th."""
    x, d4 = gaussian(4)
    f = sad.lambdify([x], d4, backend="jax")
    assert f.backend == "jax" and isinstance(f(POINTS), jax.Array)
    assert np.allclose(jax.jit(f)(POINTS), gaussian_derivative(4, POINTS), rtol=1e-13, atol=1e-15)
    d5 = jax.jit(jax.vmap(jax.grad(f)))(jnp.asarray(POINTS))
    assert np.allclose(d5, gaussian_derivative(5, POINTS), rtol=1e-13, atol=1e-14)


def test_jax_takes_several_outputs_and_pickles():
    tape = sad.Tape()
    x, y = tape.var("x"), tape.var("y")
    f = sad.lambdify([x, y], [x * y, sad.sin(x)], backend="jax")
    again = pickle.loads(pickle.dumps(f))
    for g in (f, again):
        product, sine = g(POINTS, 3.0)
        assert np.array_equal(product, POINTS * 3.0) and np.allclose(sine, np.sin(POINTS), rtol=1e-15)
    with pytest.raises(TypeError, match=r"expected 2 arguments \(x, y\), got 1"):
        f(POINTS)


def test_without_jax_the_jax_backend_says_what_to_install(monkeypatch):
    """Nothing can stand in for a function of JAX arrays, so it raises rather than falls back."""
    monkeypatch.setitem(sys.modules, "jax", None)
    monkeypatch.setitem(sys.modules, "jax.numpy", None)
    from subgraph_ad.compile.backends import jax as jax_backend

    jax_backend._own.cache_clear()
    x, d4 = gaussian(4)
    try:
        with pytest.raises(ImportError, match=r"JAX is not installed.*pip install jax"):
            sad.lambdify([x], d4, backend="jax")
    finally:
        jax_backend._own.cache_clear()


# -- CUDA ---------------------------------------------------------------------------------------
def test_cuda_without_cupy_warns_once_and_runs_numpy(monkeypatch):
    no_cupy(monkeypatch)
    x, d6 = gaussian(6)
    f = sad.lambdify([x], d6, backend="cuda")
    assert f.backend == "cuda"  # nothing is compiled before the first call
    with pytest.warns(sad.BackendWarning, match="backend='cuda'.*CuPy is not installed.*using the NumPy backend"):
        first = f(POINTS)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        second = f(POINTS[:3])
    assert f.backend == "numpy" and isinstance(first, np.ndarray)
    assert np.allclose(first, gaussian_derivative(6, POINTS), rtol=1e-13, atol=1e-14)
    assert np.allclose(second, gaussian_derivative(6, POINTS[:3]), rtol=1e-13, atol=1e-14)


@needs_cxx
@pytest.mark.parametrize("dtype, rtol", [("float64", 1e-13), ("float32", 1e-5)])
def test_cuda_with_cupy_runs_the_fused_kernel(monkeypatch, dtype, rtol):
    """With (stand-in) CuPy the kernel runs and returns arrays of the dtype; float32 keeps a few
    float ulps (2^-23 ≈ 1.2e-7) per operation, 1e-5 of the largest value at the 6th derivative."""
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy())
    x, d6 = gaussian(6)
    f = sad.lambdify([x], [d6, x], backend="cuda", dtype=dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got, same = f(POINTS)
    assert f.backend == "cuda" and got.dtype == np.dtype(dtype)
    scale = np.abs(gaussian_derivative(6, POINTS)).max()
    assert np.abs(got - gaussian_derivative(6, POINTS)).max() <= rtol * scale
    assert np.array_equal(same, POINTS.astype(dtype))


def test_a_dtype_is_for_cuda_and_a_backend_is_one_of_four():
    x, d2 = gaussian(2)
    with pytest.raises(ValueError, match="dtype='float32' is for backend 'cuda'; backend 'numpy' computes in float64"):
        sad.lambdify([x], d2, dtype="float32")
    with pytest.raises(ValueError, match="dtype must be one of .*'float64', 'float32'.* got 'float16'"):
        sad.lambdify([x], d2, backend="cuda", dtype="float16")
    with pytest.raises(ValueError, match="backend must be 'numpy' or 'numba' or 'jax' or 'cuda', got 'gpu'"):
        sad.lambdify([x], d2, backend="gpu")


def test_a_cuda_function_pickles_and_falls_back_where_it_lands(monkeypatch):
    no_cupy(monkeypatch)
    x, d3 = gaussian(3)
    f = pickle.loads(pickle.dumps(sad.lambdify([x], d3, backend="cuda")))
    with pytest.warns(sad.BackendWarning):
        assert np.allclose(f(POINTS), gaussian_derivative(3, POINTS), rtol=1e-13, atol=1e-14)


# -- backend= on every entry that compiles, and the package default ------------------------------
@pytest.mark.parametrize("backend", ["jax", "cuda"])
def test_traced_transforms_take_a_backend_and_return_numpy(monkeypatch, backend):
    no_cupy(monkeypatch)
    w = np.array([0.3, -0.5, 1.2, 0.8])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sad.BackendWarning)  # CUDA without CuPy: NumPy instead
        gradient = sad.grad(rosenbrock, backend=backend)(w)
        value, again = sad.value_and_grad(rosenbrock, backend=backend)(w)
        hessian = sad.hessian(rosenbrock, backend=backend)(w)
        jacobian = sad.jacobian(lambda v: v * v, backend=backend)(w)
        d5 = sad.derivative(lambda t: sad.exp(-t * t / 2), 5, backend=backend)(POINTS)
    for got in (gradient, again, hessian, jacobian, d5):
        assert type(got) is np.ndarray
    assert np.allclose(gradient, rosenbrock_gradient(w), rtol=1e-13) and np.array_equal(gradient, again)
    assert value == pytest.approx(rosenbrock(w), rel=1e-15)
    assert np.allclose(hessian, rosenbrock_hessian(w), rtol=1e-13)
    assert np.array_equal(jacobian, np.diag(2 * w))
    assert np.allclose(d5, gaussian_derivative(5, POINTS), rtol=1e-13, atol=1e-14)


def test_operators_sparse_and_hutchinson_take_a_backend():
    """u = Σ xᵢ² sin(x₀): Δu = 2d·sin x₀ + 4x₀ cos x₀ − |x|² sin x₀, by JAX's backend."""
    def u(x):
        return np.sum(x**2) * sad.sin(x[0])

    points = np.array([[0.5, 1.0, -1.0], [0.2, 2.0, 1.0]])
    x0, r2 = points[:, 0], np.sum(points**2, axis=1)
    exact = 6 * np.sin(x0) + 4 * x0 * np.cos(x0) - r2 * np.sin(x0)
    assert np.allclose(sad.laplacian(u, backend="jax")(points), exact, rtol=1e-13)
    tape = sad.Tape()
    ws = [tape.var(f"w{i}", v) for i, v in enumerate([0.3, -0.5, 1.2])]
    loss = sum(100 * (ws[i + 1] - ws[i] ** 2) ** 2 + (1 - ws[i]) ** 2 for i in range(2))
    matrix = sad.hessian(loss, ws, sparse=True).compile(ws, backend="jax")
    assert np.allclose(matrix.dense(0.3, -0.5, 1.2), rosenbrock_hessian(np.array([0.3, -0.5, 1.2])), rtol=1e-13)
    h = rosenbrock_hessian(np.array([0.3, -0.5, 1.2]))
    # Rademacher probes: Var(vᵀHv) = 2 Σ_{i≠j} Hᵢⱼ² = 4 Σ_{i<j} Hᵢⱼ²; the seeded estimate within 3σ
    sigma = 2 * math.sqrt(np.sum(np.triu(h, 1) ** 2) / 4000)
    estimate = sad.hutchinson_trace(loss, ws, samples=4000, backend="jax")
    assert 0 < abs(estimate - np.trace(h)) <= 3 * sigma


def test_the_package_default_reaches_the_traced_transforms(monkeypatch):
    """config.backend = "jax": sad.grad compiles a JAX function, with no backend= of its own."""
    import subgraph_ad.trace.compiled as compiled

    made = []

    def recording(*args, **kwargs):
        made.append(sad.lambdify(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(compiled, "lambdify", recording)
    monkeypatch.setattr(config, "backend", "jax")
    w = np.array([0.3, -0.5, 1.2])
    assert np.allclose(sad.grad(rosenbrock)(w), rosenbrock_gradient(w), rtol=1e-13)
    assert [f.backend for f in made] == ["jax"]


@pytest.mark.parametrize("backend", ["numpy", "jax", "cuda"])
def test_a_repr_names_a_few_inputs_and_counts_the_rest(backend):
    """A 2,210-input gradient's repr was 20 KB: now the first five inputs and the count."""
    tape = sad.Tape()
    ws = [tape.var(f"w{i}") for i in range(2210)]
    loss = sum(w * w for w in ws[:3])
    text = repr(sad.lambdify(ws, loss, backend=backend))
    assert text == f"<lambdify (w0, w1, w2, w3, w4, … 2210 inputs in all) -> 1 output(s), 5 steps, backend {backend}>"
    assert repr(sad.lambdify(ws[:2], ws[0] * ws[1], backend=backend)).startswith("<lambdify (w0, w1) -> 1 output(s)")
