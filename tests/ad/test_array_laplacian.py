"""The Laplacian over array nodes (``ad/operators/array_laplacian.py``): networks written with
array nodes against the same networks written with scalar Terms through the scalar pass, and
against JAX's trace of ``jax.hessian`` in float64."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest

import subgraph_ad as sad
from conftest import jax_float64
from subgraph_ad.core import Term
from subgraph_ad.core import array_build as build

jax = pytest.importorskip("jax")
jnp = jax.numpy


_float64 = jax_float64


def _erf_jax(v: Any) -> Any:
    return jax.scipy.special.erf(v)


#: Activations: (ours, on Terms of any shape; JAX's).
ACTIVATIONS: dict[str, tuple[Callable[[Any], Any], Callable[[Any], Any]]] = {
    "tanh": (sad.tanh, jnp.tanh),
    "sigmoid": (sad.sigmoid, jax.nn.sigmoid),
    "sin": (sad.sin, jnp.sin),
    "softplus": (sad.softplus, jax.nn.softplus),
    "cos": (sad.cos, jnp.cos),
    "erf": (sad.erf, _erf_jax),
    "atan": (sad.atan, jnp.arctan),
    "asinh": (sad.asinh, jnp.arcsinh),
    "swish": (lambda h: h * sad.sigmoid(h), lambda h: h * jax.nn.sigmoid(h)),
    "square": (lambda h: h ** 2, lambda h: h ** 2),
    "exp": (lambda h: sad.exp(h / 4), lambda h: jnp.exp(h / 4)),
    "expm1": (lambda h: sad.expm1(h / 4), lambda h: jnp.expm1(h / 4)),
    "sinh": (lambda h: sad.sinh(h / 2), lambda h: jnp.sinh(h / 2)),
    "cosh": (lambda h: sad.cosh(h / 2), lambda h: jnp.cosh(h / 2)),
    "erfc": (sad.erfc, jax.scipy.special.erfc),
    "log1p": (lambda h: sad.log1p(h * h), lambda h: jnp.log1p(h * h)),
    "sqrt": (lambda h: sad.sqrt(1 + h * h), lambda h: jnp.sqrt(1 + h * h)),
    "tan": (lambda h: sad.tan(sad.tanh(h)), lambda h: jnp.tan(jnp.tanh(h))),
    "logaddexp": (lambda h: sad.logaddexp(h, h * h), lambda h: jnp.logaddexp(h, h * h)),
}


def _network(rng: np.random.Generator, d: int, widths: list[int]) -> tuple[list[tuple[np.ndarray, np.ndarray]], np.ndarray]:
    sizes = [d] + widths
    layers = [(rng.normal(size=(m, n)) / np.sqrt(n), rng.normal(size=m) * 0.5) for n, m in zip(sizes, sizes[1:])]
    return layers, rng.normal(size=sizes[-1])


def _forward(x: Any, layers: list, out: np.ndarray, acts: list[Callable[[Any], Any]]) -> Any:
    h = x
    for (W, b), act in zip(layers, acts):
        h = act(W @ h + b)
    return out @ h


def _scalar_twin(point: np.ndarray, layers: list, out: np.ndarray, acts: list[Callable[[Any], Any]]) -> float:
    """The network with scalar vars and Python loops over scalar Terms: today's scalar pass."""
    tape = sad.Tape()
    xs = [tape.var(f"s{k}", float(v)) for k, v in enumerate(point)]
    h: list[Any] = xs
    for (W, b), act in zip(layers, acts):
        h = [act(sum((float(W[i, j]) * h[j] for j in range(len(h))), float(b[i]))) for i in range(W.shape[0])]
    u = sum((float(out[i]) * h[i] for i in range(len(h))), tape.const(0.0))
    lap = sad.laplacian(u, xs)
    assert not tape.var_shapes  # the twin is scalar throughout
    return float(lap.eval())


def _jax_laplacian(f: Callable[[Any], Any], points: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    with _float64():
        hess = jax.jit(jax.vmap(jax.hessian(f)))(jnp.asarray(points))  # compiled: far faster than eager
        found = jnp.trace(hess, axis1=-2, axis2=-1) if weights is None else jnp.einsum("ij,nij->n", weights, hess)
        return np.asarray(found)


def _close(found: Any, expected: Any, tol: float) -> None:
    found, expected = np.asarray(found, dtype=float), np.asarray(expected, dtype=float)
    scale = np.maximum(1.0, np.abs(expected))
    assert np.all(np.abs(found - expected) <= tol * scale), (found, expected)


def _corpus() -> list[tuple[int, int, list[int], list[str]]]:
    """Seeded random networks: d 1–6, depths 1–4, widths 1–64, every activation at least once."""
    rng = np.random.default_rng(36)
    names = list(ACTIVATIONS)
    cases = []
    for k in range(24):
        d = int(rng.integers(1, 7))
        depth = int(rng.integers(1, 5))
        widths = [int(rng.integers(1, 65 if j == 0 else 17)) for j in range(depth)]  # one layer up to 64 wide
        acts = [names[(k + j) % len(names)] for j in range(depth)]
        cases.append((k, d, widths, acts))
    return cases


@pytest.mark.parametrize("seed,d,widths,acts", _corpus())
def test_networks_match_the_scalar_pass_and_jax(seed: int, d: int, widths: list[int], acts: list[str]) -> None:
    rng = np.random.default_rng(seed)
    layers, out = _network(rng, d, widths)
    points = rng.normal(size=(5, d))
    tape = sad.Tape()
    x = tape.array("x", points[0])
    u = _forward(x, layers, out, [ACTIVATIONS[a][0] for a in acts])
    lap = sad.laplacian(u, x)
    assert tape.find_var("x_0") is None  # array nodes, not the expansion
    _close(lap.eval(), _scalar_twin(points[0], layers, out, [ACTIVATIONS[a][0] for a in acts]), 1e-12)
    expected = _jax_laplacian(lambda v: _forward(v, layers, out, [ACTIVATIONS[a][1] for a in acts]), points)
    _close(lap.eval({x: points}), expected, 1e-10)


def test_weighted_laplacian_by_the_same_pass() -> None:
    rng = np.random.default_rng(1)
    d = 4
    layers, out = _network(rng, d, [7, 5])
    A = rng.normal(size=(d, d))
    A = A + A.T
    points = rng.normal(size=(6, d))
    tape = sad.Tape()
    x = tape.array("x", points[0])
    u = _forward(x, layers, out, [sad.tanh, sad.sin])
    found = sad.laplacian(u, x, weights=A)
    assert tape.find_var("x_0") is None
    expected = _jax_laplacian(lambda v: _forward(v, layers, out, [jnp.tanh, jnp.sin]), points, A)
    _close(found.eval({x: points}), expected, 1e-10)


MIX = np.array([[0.5, -1.0], [2.0, 0.25], [-0.75, 1.5], [1.0, 1.0]])


def _ops_jax(v: Any) -> Any:
    X = v.reshape(2, 3)
    Z = jnp.tanh(X @ X.T)
    prod = X[0] * X[1] / (1.0 + X[1] ** 2)
    joined = jnp.concatenate([prod, v[1:3]])
    stacked = jnp.stack([prod, jnp.sin(prod)])
    spread = jnp.broadcast_to(v[:3], (2, 3)) * X
    scalar = jnp.sin(v[0]) * Z.sum() + v[2] ** 3
    mixed = jnp.asarray(MIX) @ jnp.sin(X) + jnp.arange(1.0, 3.0) @ X
    return (Z.sum(0) ** 2).sum() + (joined ** 2).sum() + jnp.cos(stacked).sum() + \
        (spread.T @ jnp.arange(2.0)).sum() + scalar + jnp.exp(0.3 * v).sum() + (mixed ** 2).sum()


def _ops_ours(x: Term) -> Term:
    tape = x.tape
    X = x.reshape(2, 3)
    Z = sad.tanh(X @ X.T)
    prod = X[0] * X[1] / (1.0 + X[1] ** 2)
    joined = Term(tape, build.concat(tape, [prod.index, x[1:3].index]))
    stacked = Term(tape, build.stack(tape, [prod.index, sad.sin(prod).index]))
    spread = Term(tape, build.broadcast_to(tape, x[:3].index, (2, 3))) * X
    scalar = sad.sin(x[0]) * Z.sum() + x[2] ** 3
    mixed = MIX @ sad.sin(X) + np.arange(1.0, 3.0) @ X  # a constant matrix and vector times a moving matrix
    return (Z.sum(0) ** 2).sum() + (joined ** 2).sum() + sad.cos(stacked).sum() + \
        (spread.T @ np.arange(2.0)).sum() + scalar + sad.exp(0.3 * x).sum() + (mixed ** 2).sum()


def test_every_array_op_against_jax() -> None:
    """reshape, transpose, index, matmul of two moving operands, products and quotients of
    moving arrays, concatenate, stack, broadcast, sums over an axis and scalar nodes among them."""
    rng = np.random.default_rng(2)
    points = rng.normal(size=(4, 6))
    tape = sad.Tape()
    x = tape.array("x", points[0])
    u = _ops_ours(x)
    ops = {tape.nodes[i].op for i in range(len(tape))}
    assert {"reshape", "transpose", "index", "matmul", "concat", "stack", "broadcast", "sum", "map"} <= ops
    lap = sad.laplacian(u, x)
    assert tape.find_var("x_0") is None
    _close(lap.eval({x: points}), _jax_laplacian(_ops_jax, points), 1e-10)


def test_every_array_op_with_weights_against_jax() -> None:
    """The weighted pairing Jₖᵀ A Jₗ in every rule that pairs: elementwise ops of moving arrays
    and the product of two moving matrices."""
    rng = np.random.default_rng(3)
    points = rng.normal(size=(3, 6))
    A = rng.normal(size=(6, 6))
    A = A + A.T
    tape = sad.Tape()
    x = tape.array("x", points[0])
    lap = sad.laplacian(_ops_ours(x), x, weights=A)
    assert tape.find_var("x_0") is None
    _close(lap.eval({x: points}), _jax_laplacian(_ops_jax, points, A), 1e-10)


def test_the_laplacian_of_a_gradient_reads_place_nodes() -> None:
    """Δ|∇f|² where ∇f is an array grad_graph (place and broadcast nodes from the reverse rules)."""
    rng = np.random.default_rng(3)
    W = rng.normal(size=(5, 3))
    points = rng.normal(size=(4, 3))
    tape = sad.Tape()
    x = tape.array("x", points[0])
    f = (sad.tanh(W @ x) ** 2).sum() + x[1] * x[2]
    g = f.grad_graph(x)
    u = (g * g).sum()
    assert "place" in {tape.nodes[i].op for i in range(len(tape))}
    lap = sad.laplacian(u, x)

    def f_jax(v: Any) -> Any:
        return (jnp.tanh(W @ v) ** 2).sum() + v[1] * v[2]

    _close(lap.eval({x: points}), _jax_laplacian(lambda v: (jax.grad(f_jax)(v) ** 2).sum(), points), 1e-10)


def test_scalar_and_array_vars_together() -> None:
    """xs a list of a scalar var and an array var: d = 1 + 3 columns."""
    rng = np.random.default_rng(4)
    W = rng.normal(size=(4, 3))
    points = rng.normal(size=(5, 4))
    tape = sad.Tape()
    t = tape.var("t", points[0, 0])
    x = tape.array("x", points[0, 1:])
    u = (sad.sin(W @ x + t) * t).sum() + sad.exp(t * x[0])
    lap = sad.laplacian(u, [t, x])

    def f_jax(v: Any) -> Any:
        return (jnp.sin(W @ v[1:] + v[0]) * v[0]).sum() + jnp.exp(v[0] * v[1])

    _close(lap.eval({t: points[:, 0], x: points[:, 1:]}), _jax_laplacian(f_jax, points), 1e-10)


def test_some_vars_only() -> None:
    """The Laplacian in x alone, another array var (W) held fixed."""
    rng = np.random.default_rng(5)
    W0 = rng.normal(size=(3, 2))
    point = rng.normal(size=2)
    tape = sad.Tape()
    x = tape.array("x", point)
    W = tape.array("W", W0)
    lap = sad.laplacian(sad.tanh(W @ x).sum(), x)
    _close(lap.eval(), _jax_laplacian(lambda v: jnp.tanh(W0 @ v).sum(), point[None])[0], 1e-12)


def test_weights_that_are_terms_fall_back_to_scalar_nodes() -> None:
    """A weight that is a Term has no array rule: u is expanded and the scalar pass runs."""
    rng = np.random.default_rng(6)
    W = rng.normal(size=(3, 2))
    point = rng.normal(size=2)
    tape = sad.Tape()
    x = tape.array("x", point)
    c = tape.var("c", 0.7)
    found = sad.laplacian(sad.sin(W @ x).sum(), x, weights=[[c, 0.5], [0.5, 1.0]])
    assert tape.find_var("x_0") is not None  # the expansion
    A = np.array([[0.7, 0.5], [0.5, 1.0]])
    _close(found.eval(), _jax_laplacian(lambda v: jnp.sin(W @ v).sum(), point[None], A)[0], 1e-12)


@pytest.mark.parametrize("d", [4, 16])
def test_a_wide_network_is_a_few_nodes_per_layer(d: int) -> None:
    """Width 32, two layers: the pass appends O(layers) nodes, not O(width²·d)."""
    rng = np.random.default_rng(7)
    layers, out = _network(rng, d, [32, 32])
    tape = sad.Tape()
    x = tape.array("x", rng.normal(size=d))
    u = _forward(x, layers, out, [sad.tanh, sad.tanh])
    before = len(tape)
    lap = sad.laplacian(u, x)
    assert len(tape) - before < 200
    points = rng.normal(size=(3, d))
    _close(lap.eval({x: points}), _jax_laplacian(lambda v: _forward(v, layers, out, [jnp.tanh, jnp.tanh]), points),
           1e-10)


def test_an_array_u_is_refused_and_the_tape_is_unchanged() -> None:
    tape = sad.Tape()
    x = tape.array("x", [1.0, 2.0])
    h = sad.tanh(x)
    before = len(tape)
    with pytest.raises(TypeError, match="scalar Term"):
        sad.laplacian(h, x)
    assert len(tape) == before


@pytest.mark.parametrize("method", ["auto", "direct"])
def test_biharmonic_of_a_network(method: str) -> None:
    """Δ²u: the array pass on its own result ("auto"), or the scalar expansion ("direct"),
    against JAX's Laplacian of its Laplacian."""
    rng = np.random.default_rng(8)
    d = 3
    layers, out = _network(rng, d, [6, 4])
    points = rng.normal(size=(3, d))
    tape = sad.Tape()
    x = tape.array("x", points[0])
    u = _forward(x, layers, out, [sad.tanh, sad.sigmoid])
    found = sad.biharmonic(u, x, method=method)
    assert (tape.find_var("x_0") is None) == (method == "auto")

    def lap_jax(v: Any) -> Any:
        return jnp.trace(jax.hessian(lambda w: _forward(w, layers, out, [jnp.tanh, jax.nn.sigmoid]))(v))

    _close(found.eval({x: points}), _jax_laplacian(lap_jax, points), 1e-10)
