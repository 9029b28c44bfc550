"""The floating type a compiled function answers in, on every backend, against NumPy float64
and mpmath: a float64 call computes and returns float64 (on JAX too, whatever JAX's global x64
flag says, and without changing it); NumPy and Numba compute in float64 whatever they are given;
JAX computes float32 in float32 and stays usable under ``jax.jit``, ``jax.vmap`` and ``jax.grad``.

Each test runs with JAX's ``jax_enable_x64`` off, the default a new user meets."""

import math
import warnings

import jax
import jax.numpy as jnp
import mpmath
import numpy as np
import pytest

import subgraph_ad as sad

POINTS = [0.3, 1.7, -2.2, 5.0, 1e-3]


def build():
    """sin(x)·x³ + exp(−y²)·x and its derivative in x: elementary, power, and a second input."""
    tape = sad.Tape()
    x, y = tape.var("x"), tape.var("y")
    f = sad.sin(x) * x**3 + sad.exp(-y**2) * x
    return x, y, f, f.diff(x)


def truth(xs, ys):
    """f and ∂f/∂x by mpmath at 40 digits, rounded once to float64."""
    with mpmath.workdps(40):
        out = []
        for a, b in zip(xs, ys):
            a, b = mpmath.mpf(float(a)), mpmath.mpf(float(b))
            value = mpmath.sin(a) * a**3 + mpmath.exp(-b**2) * a
            slope = mpmath.cos(a) * a**3 + 3 * mpmath.sin(a) * a**2 + mpmath.exp(-b**2)
            out.append((float(value), float(slope)))
    return np.array(out).T


@pytest.fixture
def x64_off():
    """JAX as a new process has it (x64 off) for the test, and a check that the calls left it
    off; the process's own setting is restored after."""
    previous = jax.config.read("jax_enable_x64")
    jax.config.update("jax_enable_x64", False)
    yield
    flipped = jax.config.read("jax_enable_x64")
    jax.config.update("jax_enable_x64", previous)
    assert not flipped, "a call flipped JAX's global x64 flag"


def compiled(backend):
    x, y, f, df = build()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sad.BackendWarning)  # cuda without CuPy: NumPy (checked below)
        run = sad.lambdify([x, y], [f, df], backend=backend)
        run(0.5, 0.5)
    return run


@pytest.mark.parametrize("backend", ["numpy", "numba", "jax", "cuda"])
def test_float64_in_is_float64_out(backend, x64_off):
    run = compiled(backend)
    xs = np.array(POINTS)
    ys = np.linspace(-1.0, 1.0, len(POINTS))
    got = run(xs, ys)
    ref = truth(xs, ys)
    for value, expected in zip(got, ref):
        assert value.dtype == np.float64, (backend, value.dtype)
        assert np.allclose(np.asarray(value), expected, rtol=1e-14, atol=0), (backend, value, expected)


@pytest.mark.parametrize("backend", ["numpy", "numba", "jax", "cuda"])
def test_a_python_float_call_is_float64(backend, x64_off):
    run = compiled(backend)
    value, slope = run(1.7, 0.2)
    ref = truth([1.7], [0.2])
    assert np.asarray(value).dtype == np.float64 and np.asarray(slope).dtype == np.float64
    assert float(value) == pytest.approx(ref[0][0], rel=1e-14)
    assert float(slope) == pytest.approx(ref[1][0], rel=1e-14)


@pytest.mark.parametrize("backend", ["numpy", "numba", "cuda"])
def test_float32_in_is_computed_in_float64_on_numpy_and_numba(backend, x64_off):
    """NumPy and Numba (and CUDA's NumPy fallback) compute in float64: float32 points give the
    float64 values at those points, not float32 roundings of them."""
    run = compiled(backend)
    xs = np.array(POINTS, np.float32)
    ys = np.linspace(-1.0, 1.0, len(POINTS)).astype(np.float32)
    for value, expected in zip(run(xs, ys), truth(xs, ys)):
        assert value.dtype == np.float64
        assert np.allclose(value, expected, rtol=1e-14, atol=0)


def test_float32_in_stays_float32_on_jax(x64_off):
    run = compiled("jax")
    xs = np.array(POINTS, np.float32)
    ys = np.linspace(-1.0, 1.0, len(POINTS)).astype(np.float32)
    for value, expected in zip(run(jnp.asarray(xs), ys), truth(xs, ys)):
        assert value.dtype == np.float32
        # float32 arithmetic: a few ulps of float32 of the terms' size
        assert np.allclose(np.asarray(value, np.float64), expected, rtol=1e-5, atol=1e-6)


def test_cuda_answers_float64_by_default_and_warns_when_it_runs_numpy(x64_off):
    x, y, f, df = build()
    run = sad.lambdify([x, y], f, backend="cuda")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = sad.compile.devices.to_host(run(np.array(POINTS), 0.5))
    fell_back = [w for w in caught if issubclass(w.category, sad.BackendWarning)]
    assert (run.backend == "numpy") == bool(fell_back)  # no CuPy or no GPU: NumPy, and it says so
    assert value.dtype == np.float64
    assert np.allclose(value, truth(POINTS, [0.5] * len(POINTS))[0], rtol=1e-14, atol=0)


def test_jax_float64_call_composes_with_jit_vmap_grad(x64_off):
    """The x64 scope is the call's own: under a user's jit (x64 off) JAX's tracers are float32
    and so is the answer; with x64 on inside the user's scope, float64 throughout."""
    x, y, f, df = build()
    run = sad.lambdify([x, y], f, backend="jax")
    slope = sad.lambdify([x, y], df, backend="jax")
    xs, ys = np.array(POINTS), np.full(len(POINTS), 0.4)
    batched = jax.jit(jax.vmap(jax.grad(run, argnums=0)))(xs, ys)
    assert batched.dtype == np.float32
    assert np.allclose(np.asarray(batched, np.float64), truth(xs, ys)[1], rtol=1e-5, atol=1e-5)
    with jax.enable_x64(True):
        batched = jax.jit(jax.vmap(jax.grad(run, argnums=0)))(xs, ys)
        assert batched.dtype == np.float64
        assert np.allclose(np.asarray(batched), np.asarray(slope(xs, ys)), rtol=1e-14, atol=0)
    assert np.allclose(np.asarray(batched), truth(xs, ys)[1], rtol=1e-14, atol=0)


def test_jax_float64_call_after_the_flag_was_set_and_cleared(x64_off):
    """A float64 call in between leaves no trace: a later float32 JAX computation is float32."""
    run = compiled("jax")
    run(np.array(POINTS), 0.5)
    assert jnp.asarray(np.array([1.0])).dtype == np.float32  # JAX's own default is untouched
    assert math.isfinite(float(run(np.float32(1.0), np.float32(0.5))[0]))
    assert run(np.float32(1.0), np.float32(0.5))[0].dtype == np.float32
