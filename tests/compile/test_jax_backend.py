"""The JAX backend on the CPU, in float64, against the NumPy backend: every built-in function
and F1–F5's derivatives under ``jax.jit`` and ``jax.vmap``, and ``jax.grad`` of our n-th
derivative program against our own (n+1)-th, strong zeros included."""

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import subgraph_ad as sad
from subgraph_ad import Tape, lambdify
from subgraph_ad.compile.backends import jax as jax_backend
from subgraph_ad.compile.backends.c import NotLowerable
from subgraph_ad.compile.program import build_program
from subgraph_ad.functions import FUNCTIONS
from subgraph_ad import benchmark_functions as bench

from conftest import Cube, Softplus

TINY = np.finfo(float).tiny
EPS = np.finfo(float).eps
#: Domain edges and IEEE specials, normal numbers only: XLA flushes subnormal inputs to zero
#: (log(5e-324) is -inf there), which is JAX's arithmetic, not the program's.
EDGES = np.array([math.nan, math.inf, -math.inf, 0.0, -0.0, 1e-300, 1.0, -1.0, 1 - 2**-53, 1 + 2**-52, 0.5, -0.5,
                  2.0, -2.0, 27.0, -30.0, 709.78, 710.0, -710.0, math.pi / 2, 1e16, 1e300, -1e300])


@pytest.fixture(autouse=True, scope="module")
def x64():
    """float64 in JAX for this module only (the flag is global)."""
    previous = jax.config.read("jax_enable_x64")
    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", previous)


def near(got: np.ndarray, ref: np.ndarray, rtol: float) -> bool:
    """nan and inf where NumPy has them, within rtol of the largest finite value elsewhere."""
    got = np.asarray(got)
    finite = np.isfinite(ref)
    same = np.array_equal(got[~finite], ref[~finite], equal_nan=True)
    return same and np.abs(got[finite] - ref[finite]).max(initial=0.0) <= rtol * np.abs(ref[finite]).max(initial=0.0)


def variables(tape: sad.Tape) -> list[sad.Term]:
    return [sad.Term(tape, i) for i, node in enumerate(tape.nodes) if node.op == "var"]


def _cancellation(name: str, args: tuple) -> np.ndarray:
    """The size of the terms that cancel where a result is near 0: logaddexp's max(a, b) +
    log1p(…) (XLA's logaddexp2 has no shortcut for a = b: −4.8e-17 for 0 at (−1, −1)), and
    log Γ next to its zeros at 1 and 2, a difference of terms of size 1 (XLA's gammaln: 8.9e-16
    at 1 − 2⁻⁵³, where mpmath has 6.4e-17 and SciPy 2.2e-16); none elsewhere."""
    if name in ("logaddexp", "logaddexp2"):
        return np.maximum(np.abs(args[0]), np.abs(args[1])) + 1.0
    return np.full(args[0].shape, 1.0 if name == "lgamma" else 0.0)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_every_builtin_function_matches_numpy_under_jit_and_vmap(name):
    """Pointwise within 1e-12 relative (XLA's sinh and cosh are the farthest: 5.5e-14 at 30),
    absolute TINY for subnormal results, which XLA flushes to zero, and 8 ulps of the terms
    that cancel (``_cancellation``)."""
    fn, tape = FUNCTIONS[name], Tape()
    if fn.arity == 1:
        ins = [tape.var("x")]
        args = (EDGES,)
    else:
        ins = [tape.var("x"), tape.var("y")]
        args = tuple(a.ravel() for a in np.meshgrid(EDGES, EDGES))
    z = fn(*ins)
    run = jax_backend.function(build_program(tape, ins, [z]))
    ref = lambdify(ins, z, backend="numpy")(*args)
    for got in (jax.jit(run)(*args)[0], jax.vmap(run)(*args)[0]):
        got = np.asarray(got)
        with np.errstate(invalid="ignore"):
            tolerance = 1e-12 * np.abs(ref) + TINY + 8 * EPS * _cancellation(name, args)
            ok = np.where(np.isnan(ref), np.isnan(got), (got == ref) | (np.abs(got - ref) <= tolerance))
        assert ok.all(), [(tuple(a[i] for a in args), got[i], ref[i]) for i in np.nonzero(~ok)[0][:5]]


@pytest.mark.parametrize("name", sorted(bench.BENCHMARKS))
def test_benchmark_derivatives_to_order_12_match_numpy_under_jit_and_vmap(name):
    tape, f, x = bench.BENCHMARKS[name]()
    ds = [f] + [f.diff(x, n) for n in range(1, 13)]
    vs = variables(tape)
    run = jax_backend.function(build_program(tape, vs, ds))
    grid = np.linspace(-3.0, 3.0, 121) + (2.0 if name == "F5" else 0.0)
    args = [grid if v.index == x.index else 0.7 for v in vs]
    axes = [0 if v.index == x.index else None for v in vs]
    refs = lambdify(vs, ds, backend="numpy")(*args)
    for results in (jax.jit(run)(*args), jax.jit(jax.vmap(run, in_axes=axes))(*args)):
        for n, (got, ref) in enumerate(zip(results, refs)):
            assert got.dtype == jnp.float64 and near(got, ref, 1e-12), (name, n)


@pytest.mark.parametrize("name", sorted(bench.BENCHMARKS))
def test_grad_of_our_nth_derivative_is_our_next_one(name):
    """jax.grad differentiates the graph of d^n f/dx^n once more (jit∘vmap∘grad over the grid);
    the (n+1)-th derivative we build, run on NumPy, is the oracle, to 1e-12 of its scale."""
    tape, f, x = bench.BENCHMARKS[name]()
    vs = variables(tape)
    k = next(i for i, v in enumerate(vs) if v.index == x.index)
    grid = np.linspace(-2.0, 2.0, 41) + (2.5 if name == "F5" else 0.0)
    point = [grid if i == k else 0.7 for i in range(len(vs))]
    for n in range(0, 6):
        run = jax_backend.function(build_program(tape, vs, [f.diff(x, n) if n else f]))
        grad = jax.grad(lambda *a: run(*a)[0], argnums=k)
        got = jax.jit(jax.vmap(grad, in_axes=[0 if i == k else None for i in range(len(vs))]))(*point)
        ref = lambdify(vs, f.diff(x, n + 1), backend="numpy")(*point)
        assert near(got, np.broadcast_to(ref, grid.shape), 1e-12), (name, n)


def test_a_mixed_partial_by_grad_in_the_other_var():
    tape, f, w1 = bench.f5()
    w2 = next(v for v in variables(tape) if v.name == "w2")
    run = jax_backend.function(build_program(tape, [w1, w2], [f.diff(w1, 2)]))
    points = np.linspace(1.5, 4.0, 11)
    got = jax.vmap(jax.grad(lambda a, b: run(a, b)[0], argnums=1), in_axes=(0, None))(points, 0.7)
    assert near(got, lambdify([w1, w2], f.diff(w1, 2, w2))(points, 0.7), 1e-12)


def test_jax_derivatives_are_ours_at_the_points_where_conventions_differ():
    """|x|′ at 0 is sign(0) = 0 (JAX's own abs says 1), and x ** b at x = 0 has 0 for every
    derivative in b (xlogy's strong zero: JAX's own xlogy rule gives 0·log(0) = nan)."""
    tape = Tape()
    x = tape.var("x")
    absolute = jax_backend.function(build_program(tape, [x], [sad.abs(x)]))
    points = np.array([-1.5, 0.0, 2.0])
    got = jax.vmap(jax.grad(lambda v: absolute(v)[0]))(points)
    assert np.array_equal(got, lambdify([x], sad.abs(x).diff(x))(points)) and got.tolist() == [-1.0, 0.0, 1.0]
    a, b = tape.var("a"), tape.var("b")
    power = a**b
    first = jax_backend.function(build_program(tape, [a, b], [power.diff(b)]))
    bases, exponents = np.array([0.0, 0.0, 2.0, 0.5]), np.array([1.5, 3.0, 1.5, -0.5])
    got = jax.vmap(jax.grad(lambda p, q: first(p, q)[0], argnums=1))(bases, exponents)
    ref = lambdify([a, b], power.diff(b, 2))(bases, exponents)
    assert np.allclose(got, ref, rtol=1e-14, atol=0) and got[0] == 0.0 and got[1] == 0.0
    assert np.allclose(ref[2:], np.log(bases[2:]) ** 2 * bases[2:] ** exponents[2:], rtol=1e-14)


def test_numbers_broadcast_outputs_follow_the_inputs_shape_and_ints_become_floats():
    tape = Tape()
    x, y = tape.var("x"), tape.var("y")
    run = jax.jit(jax_backend.function(build_program(tape, [x, y], [x * y + sad.sin(x), y, tape.const(2.5)])))
    value, same, constant = run(jnp.array([0.0, 1.0, 2.0]), 2)
    assert value.dtype == jnp.float64 and np.allclose(value, [0.0, 2 + math.sin(1.0), 4 + math.sin(2.0)], rtol=1e-15)
    assert same.tolist() == [2.0] * 3 and constant.tolist() == [2.5] * 3


def test_the_powers_numpy_computes_otherwise_are_spelled_as_it_does():
    tape = Tape()
    x = tape.var("x")
    outs = [x**2, x ** -1.0, x**0.5, x**3]
    text, _ = jax_backend.source(build_program(tape, [x], outs))
    assert "v0 * v0" in text and "1.0 / v0" in text and "_jnp.sqrt(v0)" in text and "_jnp.power(v0, 3.0)" in text
    points = np.array([-math.inf, -0.0, 7.7, -2.0])
    got = jax.jit(jax_backend.function(build_program(tape, [x], outs)))(points)
    with np.errstate(all="ignore"):
        for value, e in zip(got, (2.0, -1.0, 0.5)):
            assert np.array_equal(np.asarray(value), np.power(points, e), equal_nan=True)
    assert np.signbit(got[2][1])  # sqrt(-0) = -0, as NumPy's x ** 0.5


def test_a_function_without_a_spelling_runs_its_f_where_jax_can_trace_it():
    tape = Tape()
    x = tape.var("x")
    z = Cube()(sad.sin(x))  # f = v ** 3 works on tracers
    run = jax_backend.function(build_program(tape, [x], [z]))
    points = np.linspace(-2, 2, 9)
    assert near(jax.jit(run)(points)[0], np.sin(points) ** 3, 1e-15)
    got = jax.vmap(jax.grad(lambda v: run(v)[0]))(points)
    assert near(got, lambdify([x], z.diff(x))(points), 1e-14)


def test_a_function_whose_f_needs_numpy_is_not_lowerable_and_says_why():
    tape = Tape()
    x = tape.var("x")
    with pytest.raises(NotLowerable, match="'softplus' has no spelling, and its f does not work on JAX arrays"):
        jax_backend.function(build_program(tape, [x], [Softplus()(x)]))


def test_a_users_elementary_of_numpy_functions_lowers_by_their_names():
    softplus = sad.Elementary("softplus", 1, (functools.partial(np.logaddexp, 0.0),), lambda v: v,
                              "log1p(exp({0}))", lambda a: a)
    softsign = sad.Elementary("softsign", 1, (lambda v: v / (1.0 + abs(v)),), lambda v: v, "({0})", lambda a: a)
    scalar = sad.Elementary("scalar", 1, (lambda v: math.fabs(v),), lambda v: v, "({0})", lambda a: a)

    class Spelled(sad.UnaryFn):
        def __init__(self, step):
            self.name, self.spelling = step.name, (step,)

    tape = Tape()
    x = tape.var("x")
    text, _ = jax_backend.source(build_program(tape, [x], [Spelled(softplus)(x)]))
    assert "_jnp.logaddexp(0.0, v0)" in text
    points = np.array([-800.0, -1.0, 0.0, 3.0, 40.0])
    got = jax_backend.function(build_program(tape, [x], [Spelled(softplus)(x)]))(points)[0]
    assert np.allclose(got, np.logaddexp(0.0, points), rtol=1e-15, atol=0)
    # one plain array function (not NumPy's) runs as it is where it works on JAX tracers
    got = jax_backend.function(build_program(tape, [x], [Spelled(softsign)(x)]))(points)[0]
    assert np.allclose(got, points / (1.0 + np.abs(points)), rtol=1e-15, atol=0)
    with pytest.raises(NotLowerable, match="the elementary 'scalar''s array function does not work on JAX arrays"):
        jax_backend.function(build_program(tape, [x], [Spelled(scalar)(x)]))


def test_comparisons_are_floats_one_and_zero_as_on_numpy():
    """A comparison is 1.0 or 0.0 in the arguments' floating type (NumPy writes it into a float
    buffer), never a boolean array, so it adds and multiplies as the NumPy backend's does."""
    tape = Tape()
    x, y = tape.var("x"), tape.var("y")
    names = ["less", "less_equal", "greater", "greater_equal", "equal", "not_equal"]
    ops = [lambda p, q: p < q, lambda p, q: p <= q, lambda p, q: p > q, lambda p, q: p >= q, lambda p, q: p == q,
           lambda p, q: p != q]
    run = jax.jit(jax_backend.function(build_program(tape, [x, y], [FUNCTIONS[n](x, y) for n in names])))
    a, b = [1.0, 2.0, 3.0, math.nan, -0.0], [2.0, 2.0, 1.0, 1.0, 0.0]
    for dtype in (np.float64, np.float32):
        for name, op, got in zip(names, ops, run(np.array(a, dtype), np.array(b, dtype))):
            assert got.dtype == dtype, (name, got.dtype)
            assert got.tolist() == [1.0 if op(p, q) else 0.0 for p, q in zip(a, b)], name


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_grad_of_every_builtin_is_our_first_derivative(name):
    """jax.grad through each lowering (JAX's own rules for jax.scipy.special, jnp.where and the
    comparisons' floats) against our first derivative run on NumPy, in every argument, at points
    inside every domain and off every kink, to 1e-12 of its scale."""
    fn, tape = FUNCTIONS[name], Tape()
    ins = [tape.var("x"), tape.var("y")][: fn.arity]
    xs = np.array([0.3, 0.45, 0.7]) + (1.0 if name == "acosh" else 0.0)
    args = (xs, np.array([1.3, 2.2, 2.9]))[: fn.arity]
    z = fn(*ins)
    run = jax_backend.function(build_program(tape, ins, [z]))
    for k, v in enumerate(ins):
        got = jax.jit(jax.vmap(jax.grad(lambda *a: run(*a)[0], argnums=k)))(*args)
        ref = lambdify(ins, z.diff(v), backend="numpy")(*args)
        assert near(got, np.broadcast_to(ref, xs.shape), 1e-12), (name, k, got, ref)


def test_the_polygamma_family_lowers_to_jax_scipy_special():
    """lgamma's n-th derivative is ψ⁽ⁿ⁻¹⁾, a function whose f is SciPy's: on JAX each order is
    jax.scipy.special's, within 1e-12 of SciPy's off the poles."""
    tape = Tape()
    x = tape.var("x")
    outs = [sad.lgamma(x).diff(x, n) for n in range(1, 5)]
    points = np.array([-2.5, -0.5, 0.25, 1.0, 3.5, 27.0, 1e8])
    refs = lambdify([x], outs, backend="numpy")(points)
    for got, ref in zip(jax.jit(jax_backend.function(build_program(tape, [x], outs)))(points), refs):
        assert near(got, ref, 1e-12) and np.isfinite(ref).all()
