"""Transforms that compose: grad of grad, jacobian of grad, hessian blocks of pytrees, grad
through vmap, laplacian, biharmonic, derivative, hvp, jvp and vjp, jit, jacfwd/jacrev,
vmap(out_axes=), operators of several arguments — each checked against JAX itself (64-bit,
restored afterwards) to 1e-12; the errors a transform that cannot nest gives; and the PINN
example's training gradient against JAX's gradient of the same loss."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import subgraph_ad as sad

from conftest import same_tree

jax = pytest.importorskip("jax")
jnp = jax.numpy

TOL = dict(rtol=1e-12, atol=1e-12)

pytestmark = pytest.mark.usefixtures("x64")  # float64 in JAX (tests/conftest.py)


# -- scalar functions of one number ------------------------------------------------------------
SCALAR = {
    "poly": lambda npx, x: x**5 - 3 * x**2 + x,
    "trig": lambda npx, x: npx.sin(x) * npx.exp(-x * x) + npx.cos(3 * x),
    "log": lambda npx, x: npx.log(1 + x * x) * npx.tanh(x),
}


@pytest.mark.parametrize("name", SCALAR)
def test_grad_of_grad_to_the_fourth_order(name):
    f = SCALAR[name]
    ours, theirs = (lambda x: f(np, x)), (lambda x: f(jnp, x))
    for _ in range(4):
        ours, theirs = sad.grad(ours), jax.grad(theirs)
        np.testing.assert_allclose(ours(0.3), theirs(0.3), **TOL)


@pytest.mark.parametrize("name", SCALAR)
def test_grad_of_derivative_and_derivative_of_grad(name):
    f = SCALAR[name]
    want = jax.grad(jax.grad(jax.grad(lambda x: f(jnp, x))))(0.3)
    np.testing.assert_allclose(sad.grad(lambda x: sad.derivative(lambda y: f(np, y), 2)(x))(0.3), want, **TOL)
    np.testing.assert_allclose(sad.derivative(sad.grad(lambda y: f(np, y)), 2)(0.3), want, **TOL)


def _steps(transformed, *args):
    """The compiled program's steps after one call (what the benchmark's batch runs)."""
    transformed(*args)
    (compiled, _), = transformed.cache.entries.values()
    return compiled.program.steps


@pytest.mark.parametrize("name", SCALAR)
def test_nested_grad_compiles_no_more_steps_than_derivative(name):
    """By one number, grad is one forward pass, so grad(grad(f)) is derivative(f, 2)'s graph
    (reverse over reverse built 23 steps against 18 for exp(−t²/2)·sin 3t); the value is JAX's."""
    f = lambda x: SCALAR[name](np, x)  # noqa: E731
    nested, second = sad.grad(sad.grad(f)), sad.derivative(f, 2)
    assert len(_steps(nested, 0.3)) <= len(_steps(second, 0.3))
    want = jax.grad(jax.grad(lambda x: SCALAR[name](jnp, x)))(0.3)
    np.testing.assert_allclose(sad.vmap(nested)(np.array([0.3, 0.3])), [want, want], **TOL)


def test_minus_sine_beside_its_sine_is_one_negation():
    """cos″ = −cos and sin″ = −sin: the program reads the sine it has rather than calling
    sin again; the values are JAX's."""
    f = lambda t: np.exp(-t * t / 2) * np.sin(3 * t)  # noqa: E731
    calls = [step[3].name for step in _steps(sad.derivative(f, 2), 0.3) if step[1] == "fn"]
    assert sorted(calls) == ["cos", "exp", "sin"]
    t = np.linspace(-2, 2, 11)
    h = sad.derivative(lambda x: np.cos(x) * np.sin(x), 2)
    np.testing.assert_allclose(h(t), jax.vmap(jax.grad(jax.grad(lambda x: jnp.cos(x) * jnp.sin(x))))(t), **TOL)


def test_inner_derivative_holds_closed_over_outer_values_fixed():
    # d/dx [ d/dy (x * y) at y = x ] = d/dx x = 1, not 2 (no perturbation confusion)
    assert sad.grad(lambda x: sad.grad(lambda y: x * y)(x))(0.7) == 1.0
    np.testing.assert_allclose(sad.grad(lambda x: x * sad.grad(lambda y: x * y**2)(x))(0.7),
                               jax.grad(lambda x: x * jax.grad(lambda y: x * y**2)(x))(0.7), **TOL)


# -- functions of arrays and pytrees -----------------------------------------------------------
def mlp(npx, p, x, scale=1.0):
    return scale * npx.sum(npx.tanh(p["W"] @ x + p["b"]) ** 2) + npx.sin(p["b"][0]) * x[1]


PARAMS = {"W": np.array([[0.3, -0.5, 0.2], [0.7, 0.1, -0.4]]), "b": np.array([0.1, -0.2])}
X = np.array([0.4, -0.3, 0.9])


def test_jacobian_of_grad_is_the_hessian_and_jacfwd_of_jacrev_too():
    def f(x):
        return mlp(np, PARAMS, x)
    def jf(x):
        return mlp(jnp, PARAMS, x)
    want = jax.hessian(jf)(X)
    for ours in (sad.jacobian(sad.grad(f)), sad.jacfwd(sad.jacrev(f)), sad.hessian(f)):
        np.testing.assert_allclose(ours(X), want, **TOL)
    np.testing.assert_allclose(sad.jacrev(sad.jacfwd(sad.grad(f)))(X), jax.jacrev(jax.jacfwd(jax.grad(jf)))(X), **TOL)


@pytest.mark.slow
def test_hessian_blocks_of_pytrees_and_argnums_tuples_with_kwargs():
    ours = sad.hessian(lambda p, x, scale: mlp(np, p, x, scale), argnums=(0, 1))(PARAMS, X, scale=2.0)
    theirs = jax.hessian(lambda p, x, scale: mlp(jnp, p, x, scale), argnums=(0, 1))(PARAMS, X, 2.0)
    same_tree(ours, theirs)
    same_tree(sad.hessian(lambda p: mlp(np, p, X))(PARAMS), jax.hessian(lambda p: mlp(jnp, p, X))(PARAMS))
    same_tree(sad.hessian(lambda a, b: a * a * b + np.sin(b), argnums=(0, 1))(2.0, 3.0),
              jax.hessian(lambda a, b: a * a * b + jnp.sin(b), argnums=(0, 1))(2.0, 3.0))


def test_jacobian_of_pytree_results():
    def f(npx):
        return lambda p: {"h": npx.tanh(p["W"] @ X), "s": npx.sum(p["b"] ** 3)}
    same_tree(sad.jacobian(f(np))(PARAMS), jax.jacobian(f(jnp))(PARAMS))


def test_grad_of_a_function_that_calls_vmap_jvp_vjp_hvp():
    pts = np.array([[0.1, 0.2, 0.3], [-0.4, 0.5, 0.6]])

    def ours(p):
        per = sad.vmap(lambda x: mlp(np, p, x))(pts)
        _, tangent = sad.jvp(lambda x: mlp(np, p, x), (X,), (np.ones(3),))
        _, back = sad.vjp(lambda x: np.tanh(p["W"] @ x), X)
        hv = sad.hvp(lambda x: mlp(np, p, x), X, np.array([1.0, 0.0, -1.0]))
        return np.sum(per**2) + tangent + np.sum(back(np.array([1.0, 2.0]))[0] ** 2) + np.sum(hv**2)

    def theirs(p):
        per = jax.vmap(lambda x: mlp(jnp, p, x))(pts)
        _, tangent = jax.jvp(lambda x: mlp(jnp, p, x), (X,), (jnp.ones(3),))
        _, back = jax.vjp(lambda x: jnp.tanh(p["W"] @ x), X)
        hv = jax.jvp(jax.grad(lambda x: mlp(jnp, p, x)), (X,), (jnp.array([1.0, 0.0, -1.0]),))[1]
        return jnp.sum(per**2) + tangent + jnp.sum(back(jnp.array([1.0, 2.0]))[0] ** 2) + jnp.sum(hv**2)

    same_tree(sad.grad(ours)(PARAMS), jax.grad(theirs)(PARAMS))


def u(npx, x, t, p):
    return npx.sin(p[0] * x[0]) * npx.cos(p[1] * x[1]) * npx.exp(-t) + p[0] * x[0] ** 3 * x[1]


def jax_laplacian(fn):
    return lambda x, *rest: jnp.trace(jax.hessian(fn)(x, *rest))


PTS = np.array([[0.1, 0.2], [0.5, -0.3], [0.9, 0.4]])
P0 = np.array([1.3, 0.7])


def test_operators_of_several_arguments_batched_or_not():
    ours = sad.laplacian(lambda x, t, p: u(np, x, t, p), argnums=0)
    theirs = jax_laplacian(lambda x, t, p: u(jnp, x, t, p))
    np.testing.assert_allclose(ours(PTS, 0.3, P0), jax.vmap(theirs, in_axes=(0, None, None))(PTS, 0.3, P0), **TOL)
    ts = np.array([0.1, 0.2, 0.3])
    np.testing.assert_allclose(sad.vmap(ours, in_axes=(0, 0, None))(PTS, ts, P0),
                               jax.vmap(theirs, in_axes=(0, 0, None))(PTS, ts, P0), **TOL)
    # the heat residual u_t - Δu as a one-liner, at every point with its own time
    heat = sad.vmap(lambda x, t, p: sad.grad(lambda s: u(np, x, s, p))(t) - ours(x, t, p), in_axes=(0, 0, None))
    jheat = jax.vmap(lambda x, t, p: jax.grad(lambda s: u(jnp, x, s, p))(t) - theirs(x, t, p), in_axes=(0, 0, None))
    np.testing.assert_allclose(heat(PTS, ts, P0), jheat(PTS, ts, P0), **TOL)


@pytest.mark.slow
def test_grad_through_laplacian_biharmonic_and_derivative_tensor():
    lap = sad.laplacian(lambda x, p: u(np, x, 0.2, p), argnums=0)
    bih = sad.biharmonic(lambda x, p: u(np, x, 0.2, p), argnums=0)
    ten = sad.derivative_tensor(lambda x, p: u(np, x, 0.2, p), 2, argnums=0)
    def jfn(x, p):
        return u(jnp, x, 0.2, p)
    jlap = jax_laplacian(jfn)
    def jbih(x, p):
        return jnp.trace(jax.hessian(lambda y: jlap(y, p))(x))
    same_tree(sad.grad(lambda p: np.sum(lap(PTS, p) ** 2))(P0),
              jax.grad(lambda p: jnp.sum(jax.vmap(jlap, in_axes=(0, None))(PTS, p) ** 2))(P0))
    same_tree(sad.grad(lambda p: np.sum(bih(PTS, p)))(P0),
              jax.grad(lambda p: jnp.sum(jax.vmap(jbih, in_axes=(0, None))(PTS, p)))(P0))
    same_tree(sad.grad(lambda p: np.sum(ten(PTS, p) * np.arange(4.0).reshape(2, 2)))(P0),
              jax.grad(lambda p: jnp.sum(jax.vmap(jax.hessian(jfn), in_axes=(0, None))(PTS, p)
                                         * jnp.arange(4.0).reshape(2, 2)))(P0))


def test_laplacian_of_a_closure_over_traced_parameters():
    def loss(p):
        return np.sum(sad.laplacian(lambda x: u(np, x, 0.0, p))(PTS))
    def jloss(p):
        return jnp.sum(jax.vmap(jax_laplacian(lambda x: u(jnp, x, 0.0, p)))(PTS))
    same_tree(sad.value_and_grad(loss)(P0), jax.value_and_grad(jloss)(P0))


def test_jit_vmap_out_axes_and_float32():
    def f(npx):
        return lambda x: {"a": npx.sin(x) * x[0], "b": (npx.sum(x), x**2)}
    same_tree(sad.jit(f(np))(X), jax.jit(f(jnp))(X))
    m = np.arange(6.0).reshape(3, 2)
    same_tree(sad.vmap(lambda r: np.outer(r, r), out_axes=2)(m), jax.vmap(lambda r: jnp.outer(r, r), out_axes=2)(m))
    same_tree(sad.vmap(lambda r: (r * 2, np.sum(r)), out_axes=(1, 0))(m),
              jax.vmap(lambda r: (r * 2, jnp.sum(r)), out_axes=(1, 0))(m))
    same_tree(sad.grad(lambda x: np.sum(sad.jit(lambda y: np.sin(y) * y)(x)))(X),
              jax.grad(lambda x: jnp.sum(jnp.sin(x) * x))(X))
    x32 = X.astype(np.float32)
    assert sad.grad(lambda x: np.sum(x**3))(x32).dtype == np.float32
    assert sad.jit(lambda x: np.sum(x))(x32).dtype == np.float32
    assert sad.grad(lambda x: np.sum(x**3))(X).dtype == np.float64


def test_jit_reads_a_closed_over_array_at_every_call_nested_too():
    data = np.array([1.0, 2.0, 3.0])
    f = sad.jit(lambda w: np.sum(w * data))
    g = sad.grad(lambda w: sad.laplacian(lambda x: np.sum(x**2 * w * data[:2]))(np.zeros(2)))
    assert f(np.ones(3)) == 6.0 and g(1.0) == 6.0  # Δ Σ xᵢ² w dᵢ = 2 w (d₀ + d₁), its w-derivative 2 (d₀ + d₁)
    data[:] = 10.0
    assert f(np.ones(3)) == 30.0 and g(1.0) == 40.0


# -- errors -------------------------------------------------------------------------------------
def test_a_transform_that_cannot_nest_says_so_and_names_itself():
    with pytest.raises(TypeError, match=r"laplacian\(fn, samples=\.\.\.\) cannot nest inside another transform"):
        sad.grad(lambda p: sad.laplacian(lambda x: np.sum(x**2) * p, samples=4)(np.zeros(2)))(1.0)
    with pytest.raises(TypeError, match="sparse=True cannot nest inside another transform"):
        sad.grad(lambda x: np.sum(sad.jacobian(lambda y: y * x, sparse=True)(np.ones(2))))(1.0)


def test_terms_of_two_traces_are_named_by_where_they_came_from():
    kept = []
    sad.grad(lambda x: kept.append(x) or x)(1.0)
    with pytest.raises(ValueError, match=r"inside the trace of grad of 'outer' on Terms from the trace of grad of '<lambda>'"):
        def outer(y):
            return sad.grad(lambda z: z * y)(kept[0])
        sad.grad(outer)(2.0)


# -- the PINN example ---------------------------------------------------------------------------
def _example():
    path = Path(__file__).parent.parent / "examples" / "pinn_poisson.py"
    spec = importlib.util.spec_from_file_location("pinn_poisson", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_pinn_training_gradient_matches_jax():
    pinn = _example()
    inside, boundary = pinn.points()
    f = pinn.source(inside)
    params = pinn.initial(seed=3)

    def jnet(x, p):
        return p["v"] @ jnp.tanh(p["W"] @ x + p["b"]) + p["c"]

    def jloss(p):
        lap = jax.vmap(lambda x: jnp.trace(jax.hessian(jnet)(x, p)))(inside)
        edge = jax.vmap(jnet, in_axes=(0, None))(boundary, p)
        return jnp.mean((lap + f) ** 2) + pinn.WEIGHT * jnp.mean(edge**2)

    same_tree(sad.value_and_grad(pinn.loss)(params, inside, boundary, f), jax.value_and_grad(jloss)(params))
