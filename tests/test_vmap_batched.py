"""vmap inside a trace over data is lowered to array nodes over the batch (``trace.batched``)
instead of one copy of the graph per point: the gradient of a loss summed over points.

Oracles: the same Python function evaluated on floats point by point (the value), central
differences of that plain sum in the parameters (the gradient: h = 1e-6 leaves a truncation
error of order h²·f‴ and a rounding error of order 1e-16/h, both far below the 1e-6 relative
tolerance), and JAX for the physics-informed loss. The random functions hold repeated operands
(a − a, f(a, a)), conditions (``np.where``), parameters that a term does not read (zero
tangents) and every built-in function."""

from __future__ import annotations

import numpy as np
import pytest

import subgraph_ad as sad
from subgraph_ad.ad.reverse import grad_graph
from subgraph_ad.pytrees import flatten
from subgraph_ad.trace.tracer import Traced
from random_programs import ARITHMETIC, UNARY, arithmetic, function, inside

#: the functions of two arguments that are not conditions
BINARY = ["atan2", "hypot", "logaddexp", "logaddexp2", "fmax", "fmin", "maximum", "minimum", "fmod", "mod", "pow"]
POINTS = np.random.default_rng(7).uniform(-1.0, 1.0, (40, 2))


def random_function(seed: int, names: list[str]):
    """f(x, p) for a point x of shape (2,) and parameters p of shape (3,), drawn by ``seed``,
    applying each of ``names`` once among random arithmetic and conditions."""
    rng = np.random.default_rng(seed)
    plan = []
    for name in names:
        plan.append(("fn", name, int(rng.integers(6)), int(rng.integers(6))))
        kind = ["add", "sub", "mul", "div", "where", "same"][int(rng.integers(6))]
        plan.append((kind, None, int(rng.integers(7)), int(rng.integers(7))))

    def f(x, p):
        pool = [x[0], x[1], p[0], p[1], x[0] * p[2], x[0]]  # x[0] twice; p[2] only in a product
        for kind, name, i, j in plan:
            a, b = pool[i % len(pool)], pool[j % len(pool)]
            if kind == "fn":
                pool.append(function(name, a, b))
            elif kind in ARITHMETIC:
                pool.append(arithmetic(kind, a, b if kind != "sub" or i % 2 else a))  # a − a too
            else:  # a function of one operand twice
                pool.append(sad.FUNCTIONS["hypot"](a, a) + sad.FUNCTIONS["atan2"](inside(a), inside(a)))
        return pool[-1] + 0.5 * pool[-2]

    return f


def plain_loss(f, p: np.ndarray) -> float:
    return float(sum(f(x, p) for x in POINTS))


def central(f, p: np.ndarray, h: float = 1e-6) -> np.ndarray:
    out = np.zeros_like(p)
    for k in range(p.size):
        e = np.zeros_like(p)
        e[k] = h
        out[k] = (plain_loss(f, p + e) - plain_loss(f, p - e)) / (2 * h)
    return out


GROUPS = [UNARY[k:k + 6] for k in range(0, len(UNARY), 6)] + [BINARY[:6], BINARY[6:]]


@pytest.mark.parametrize("names", GROUPS, ids=lambda names: "-".join(names))
@pytest.mark.parametrize("data", ["closed over", "traced"])
def test_grad_of_a_vmapped_loss_matches_the_plain_sum(names, data):
    f = random_function(len(names) + sum(map(len, names)), names)
    p = np.array([0.3, -0.7, 1.1])
    if data == "closed over":
        value, grad = sad.value_and_grad(lambda q: np.sum(sad.vmap(lambda x: f(x, q))(POINTS)))(p)
    else:  # the points an argument of the trace: an array var, its columns sliced from it
        value, grad = sad.value_and_grad(lambda q, pts: np.sum(sad.vmap(lambda x: f(x, q))(pts)))(p, POINTS)
    assert np.isclose(value, plain_loss(f, p), rtol=1e-12, atol=1e-12)
    want = central(f, p)
    assert np.allclose(grad, want, rtol=1e-6, atol=1e-6 * max(1.0, float(np.max(np.abs(want))))), (grad, want)


def network(x, p):
    return p["v"] @ np.tanh(p["W"] @ x + p["b"])


def test_the_build_does_not_grow_with_the_points():
    # one array node per template node: the gradient's graph of a loss over the Laplacian at
    # 10 points is as large as at 1,000 (unrolled, it grew with every point: 10⁶ nodes)
    rng = np.random.default_rng(3)
    params = {"W": rng.normal(size=(8, 2)), "b": rng.normal(size=8), "v": rng.normal(size=8)}
    laplacian = sad.laplacian(network, argnums=0)

    def size(n: int) -> int:
        pts = rng.uniform(-1.0, 1.0, (n, 2))
        trace = Traced(lambda p: np.mean(laplacian(pts, p) ** 2), [flatten(params)[1]], "grad", arrays=True)
        grad_graph(trace.scalar_output("grad"), [v for k in range(len(trace.vars)) for v in trace.vars_of(k)])
        return len(trace.tape)

    assert size(1000) == size(10) < 5000


def test_a_vmapped_loss_over_traced_values_still_unrolls():
    # the batch holds traced values (a function of the parameters): no data to lower, one copy
    # per point as before, and the same numbers as the plain sum
    def loss(q):
        pts = np.stack([q[:2] * k for k in (0.5, 1.0, 1.5)])
        return np.sum(sad.vmap(lambda x: np.sin(x[0]) * x[1] + q[2] * x[0])(pts))

    q = np.array([0.4, -0.2, 0.9])
    value, grad = sad.value_and_grad(loss)(q)
    plain = lambda r: sum(np.sin(r[0] * k) * r[1] * k + r[2] * r[0] * k for k in (0.5, 1.0, 1.5))  # noqa: E731
    h = 1e-6
    want = [(plain(q + h * e) - plain(q - h * e)) / (2 * h) for e in np.eye(3)]
    assert np.isclose(value, plain(q), rtol=1e-12)
    assert np.allclose(grad, want, rtol=1e-7, atol=1e-9)


def test_a_switch_at_the_points_and_pairwise_differences():
    # a where whose switch falls exactly on some points (x₀ = 0.5: the else branch is taken) and
    # beside it, and the pairwise kernel Σᵢⱼ exp(−(xᵢ − xⱼ)²) with its zero diagonal (x − x)
    pts = np.array([[0.5, 0.2], [0.5, -0.7], [0.5 + 1e-9, 0.3], [0.5 - 1e-9, 0.9], [-0.3, 0.4], [0.8, 0.1]])

    def f(x, p):
        kernel = np.sum(np.exp(-p[2] * (x[:, None] - x[None, :]) ** 2))
        return np.where(x[0] > 0.5, p[0] * np.sin(x[1]), p[1] * x[0] ** 2) + kernel

    p = np.array([1.3, -0.6, 0.9])
    value, grad = sad.value_and_grad(lambda q, s: np.sum(sad.vmap(lambda x: f(x, q))(s)))(p, pts)

    def plain(q):
        total = 0.0
        for x0, x1 in pts:
            branch = q[0] * np.sin(x1) if x0 > 0.5 else q[1] * x0**2
            total += branch + sum(np.exp(-q[2] * (a - b) ** 2) for a in (x0, x1) for b in (x0, x1))
        return total

    want = [(plain(p + 1e-6 * e) - plain(p - 1e-6 * e)) / 2e-6 for e in np.eye(3)]  # smooth in q
    assert np.isclose(value, plain(p), rtol=1e-13)
    assert np.allclose(grad, want, rtol=1e-7, atol=1e-8)
