"""Jacobian blocks held by rows in the array Laplacian (``ad/operators/array_blocks.py``): per-row
(per-particle) networks, with every way a block ends — a sum over the rows, rows mixed by an
index, a pairwise term, a product on the left, a reshape, weights, another var — against the
scalar pass on the same function expanded to scalar nodes (1e-12) and JAX's trace of
``jax.hessian`` (1e-10); and the size of what the pass builds, which the dense block makes
P times larger."""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
import pytest

import subgraph_ad as sad
from conftest import jax_float64
from subgraph_ad.ad.operators.array_laplacian import scalar_twin
from subgraph_ad.core.arrays import shape_of

from test_array_laplacian import ACTIVATIONS, _close, _jax_laplacian

jax = pytest.importorskip("jax")
jnp = jax.numpy

#: How the rows meet at the end: (ours on a Term of shape (P, h) and the input x; JAX's).
READOUTS: dict[str, tuple[Callable[[Any, Any], Any], Callable[[Any, Any], Any]]] = {
    "sum over rows": (lambda h, x: h.sum(0).sum(), lambda h, x: h.sum(0).sum()),
    "sum of all at once": (lambda h, x: h.sum(), lambda h, x: h.sum()),
    "rows times their sine": (lambda h, x: (h * sad.sin(h)).sum(), lambda h, x: (h * jnp.sin(h)).sum()),
    "transposed twice": (lambda h, x: (h.T.T ** 2).sum(0).sum(), lambda h, x: (h.T.T ** 2).sum(0).sum()),
    "pairwise": (lambda h, x: sad.exp(-(h[:, None, 0] - h[None, :, 0]) ** 2).sum(),
                 lambda h, x: jnp.exp(-(h[:, None, 0] - h[None, :, 0]) ** 2).sum()),
    "a row indexed": (lambda h, x: sad.tanh(h[1]).sum() + h.sum(), lambda h, x: jnp.tanh(h[1]).sum() + h.sum()),
    "mixed on the left": (lambda h, x: sad.sin(np.linspace(-1, 1, h.shape[0]) @ h).sum(),
                          lambda h, x: jnp.sin(jnp.linspace(-1, 1, h.shape[0]) @ h).sum()),
    "pooled then dense": (lambda h, x: sad.tanh(np.ones((3, h.shape[1])) @ h.sum(0)).sum(),
                          lambda h, x: jnp.tanh(jnp.ones((3, h.shape[1])) @ h.sum(0)).sum()),
    "times the input's norm": (lambda h, x: h.sum() * (x * x).sum(), lambda h, x: h.sum() * (x * x).sum()),
    "flattened": (lambda h, x: sad.cos(h.reshape(-1)).sum(), lambda h, x: jnp.cos(h.reshape(-1)).sum()),
    # a condition exactly on its switch (h − h ≥ 0 holds with equality) and one beside it
    "where on and beside its switch": (
        lambda h, x: (sad.where(h - h >= 0, h * h, -h) + sad.where(h > 0.1, sad.sin(h), h)).sum(),
        lambda h, x: (jnp.where(h - h >= 0, h * h, -h) + jnp.where(h > 0.1, jnp.sin(h), h)).sum()),
    # repeated operands (h·h, h − h) and a term whose tangent is zero (no var reaches it)
    "repeated operands, a zero tangent": (
        lambda h, x: (h * h + (h - h) * sad.exp(h) + 0.0 * sad.tanh(h)).sum() + float(np.pi),
        lambda h, x: (h * h + (h - h) * jnp.exp(h) + 0.0 * jnp.tanh(h)).sum() + float(np.pi)),
}


def _corpus() -> list[tuple[int, int, int, list[int], list[str], str]]:
    """Seeded: P 2–6 rows of c 1–4 columns, depths 1–3, widths 1–12, every activation and every
    readout (conditions on and beside their switch, repeated operands and zero tangents among
    them)."""
    rng = np.random.default_rng(38)
    names, readouts = list(ACTIVATIONS), list(READOUTS)
    cases = []
    for k in range(max(len(names), len(readouts))):
        depth = int(rng.integers(1, 4))
        widths = [int(rng.integers(1, 13)) for _ in range(depth)]
        acts = [names[(k + j) % len(names)] for j in range(depth)]
        cases.append((k, int(rng.integers(2, 7)), int(rng.integers(1, 5)), widths, acts, readouts[k % len(readouts)]))
    return cases


def _rows_network(rng: np.random.Generator, c: int, widths: list[int]) -> list[tuple[np.ndarray, np.ndarray]]:
    sizes = [c] + widths
    return [(rng.normal(size=(n, m)) / np.sqrt(n), rng.normal(size=m) * 0.5) for n, m in zip(sizes, sizes[1:])]


def _per_row(r: Any, layers: list, acts: list[Callable[[Any], Any]]) -> Any:
    """Each row through the same layers: r @ W + b, then the activation."""
    h = r
    for (W, b), act in zip(layers, acts):
        h = act(h @ W + b)
    return h


@pytest.mark.parametrize("seed,rows,c,widths,acts,readout", _corpus())
def test_per_row_networks_match_the_scalar_pass_and_jax(seed: int, rows: int, c: int, widths: list[int],
                                                          acts: list[str], readout: str) -> None:
    rng = np.random.default_rng(seed)
    layers = _rows_network(rng, c, widths)
    points = rng.normal(size=(4, rows * c)) * 0.7
    ours, theirs = READOUTS[readout]
    tape = sad.Tape()
    x = tape.array("x", points[0])
    u = ours(_per_row(x.reshape(rows, c), layers, [ACTIVATIONS[a][0] for a in acts]), x)
    lap = sad.laplacian(u, x)
    assert tape.find_var("x_0") is None  # array nodes, not the expansion
    twin, flat = scalar_twin(u, [x])
    _close(lap.eval(), sad.laplacian(twin, flat).eval(), 1e-12)
    expected = _jax_laplacian(lambda v: theirs(_per_row(v.reshape(rows, c), layers, [ACTIVATIONS[a][1] for a in acts]),
                                               v), points)
    _close(lap.eval({x: points}), expected, 1e-10)


@pytest.mark.parametrize("reshaped", [True, False])
def test_a_per_row_network_keeps_its_blocks_p_times_smaller(reshaped: bool) -> None:
    """P = 16 rows of 3 through two width-8 layers: the second layer's Jacobian block is
    3 × 16 × 8, where the dense pass held 48 × 16 × 8 (one column per input, most of them
    zeros; the first layer's folds into a table); a 2-D var starts by rows as a reshaped one
    does."""
    rows, c, width = 16, 3, 8
    rng = np.random.default_rng(5)
    layers = _rows_network(rng, c, [width, width])
    point = rng.normal(size=(rows, c))
    tape = sad.Tape()
    x = tape.array("x", point.ravel() if reshaped else point)
    u = _per_row(x.reshape(rows, c) if reshaped else x, layers, [sad.tanh, sad.tanh]).sum()
    start = len(tape)
    lap = sad.laplacian(u, x)
    largest = max(math.prod(shape_of(tape, i)) for i in range(start, len(tape)) if tape.nodes[i].op != "table")
    assert largest == c * rows * width
    f = lambda v: _per_row(v.reshape(rows, c), layers, [jnp.tanh, jnp.tanh]).sum()  # noqa: E731
    with jax_float64():
        expected = float(jnp.trace(jax.hessian(f)(jnp.asarray(point.ravel()))))
    _close(lap.eval(), expected, 1e-12)


def test_weights_make_the_block_dense_and_stay_right() -> None:
    """Weights pair columns of different rows: the pass keeps no block, and matches JAX."""
    rows, c = 3, 2
    rng = np.random.default_rng(6)
    layers = _rows_network(rng, c, [5])
    A = rng.normal(size=(rows * c, rows * c))
    A = A + A.T
    points = rng.normal(size=(3, rows * c))
    tape = sad.Tape()
    x = tape.array("x", points[0])
    u = _per_row(x.reshape(rows, c), layers, [sad.tanh]).sum()
    found = sad.laplacian(u, x, weights=A)
    expected = _jax_laplacian(lambda v: _per_row(v.reshape(rows, c), layers, [jnp.tanh]).sum(), points, A)
    _close(found.eval({x: points}), expected, 1e-10)


@pytest.mark.parametrize("first", ["rows", "other"])
def test_a_block_beside_another_var_is_laid_out_at_its_columns(first: str) -> None:
    """A 2-D var by rows and a 1-D var, in either order (the block's columns at offset 0 or
    after the other's), meeting in a product and a sum: against JAX's Hessian of both."""
    rng = np.random.default_rng(7)
    (W, b), = _rows_network(rng, 3, [4])
    X0, y0 = rng.normal(size=(4, 3)), rng.normal(size=2)
    tape = sad.Tape()
    X, y = tape.array("X", X0), tape.array("y", y0)
    u = (sad.sin(X @ W + b).sum(0) * (y * y).sum()).sum() + sad.tanh(X).sum() * y[0]
    xs = [X, y] if first == "rows" else [y, X]
    lap = sad.laplacian(u, xs)

    def f(v: Any) -> Any:
        Xv, yv = (v[:12].reshape(4, 3), v[12:]) if first == "rows" else (v[2:].reshape(4, 3), v[:2])
        return (jnp.sin(Xv @ W + b).sum(0) * (yv * yv).sum()).sum() + jnp.tanh(Xv).sum() * yv[0]

    flat = np.concatenate([X0.ravel(), y0] if first == "rows" else [y0, X0.ravel()])
    with jax_float64():
        expected = float(jnp.trace(jax.hessian(f)(jnp.asarray(flat))))
    _close(lap.eval(), expected, 1e-12)


def test_the_hessian_of_a_per_row_function_of_a_matrix() -> None:
    """``sad.hessian`` of a function of a (P, c) array (the Jacobian block of its gradient,
    made dense at the end) against JAX's."""
    rng = np.random.default_rng(8)
    layers = _rows_network(rng, 3, [6, 4])
    point = rng.normal(size=(5, 3))
    found = sad.hessian(lambda X: _per_row(X, layers, [np.tanh, np.sin]).sum())(point)
    with jax_float64():
        expected = jax.hessian(lambda X: _per_row(X, layers, [jnp.tanh, jnp.sin]).sum())(jnp.asarray(point))
    _close(found, np.asarray(expected), 1e-12)


def test_a_traced_per_particle_laplacian_on_a_batch() -> None:
    """``sad.laplacian(fn)`` of a function that reshapes its point into particles, on a batch."""
    rng = np.random.default_rng(9)
    layers = _rows_network(rng, 3, [8, 8])
    points = rng.uniform(-1, 1, (20, 18))
    found = sad.laplacian(lambda v: _per_row(v.reshape(6, 3), layers, [np.tanh, np.tanh]).sum())(points)
    expected = _jax_laplacian(lambda v: _per_row(v.reshape(6, 3), layers, [jnp.tanh, jnp.tanh]).sum(), points)
    _close(found, expected, 1e-10)


def test_biharmonic_and_hessian_tensor_of_a_per_particle_function():
    """The biharmonic (the pass over its own result, whose blocks mix their rows' axis with the
    direction axis) and the order-2 derivative tensor on points, against JAX's Δ(Δu) and
    Hessian."""
    rng = np.random.default_rng(10)
    layers = _rows_network(rng, 3, [6])
    points = rng.uniform(-1, 1, (5, 12))
    u = lambda v: _per_row(v.reshape(4, 3), layers, [np.tanh]).sum()  # noqa: E731
    w = lambda v: _per_row(v.reshape(4, 3), layers, [jnp.tanh]).sum()  # noqa: E731
    with jax_float64():
        lap = lambda f: lambda v: jnp.trace(jax.hessian(f)(v))  # noqa: E731
        expected = np.asarray(jax.vmap(lap(lap(w)))(jnp.asarray(points)))
        hessians = np.asarray(jax.vmap(jax.hessian(w))(jnp.asarray(points)))
    _close(sad.biharmonic(u)(points), expected, 1e-10)
    _close(sad.derivative_tensor(u, 2)(points), hessians, 1e-12)
