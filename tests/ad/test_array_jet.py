"""Directional Taylor jets over array nodes (``ad/operators/array_jet.py``) against the scalar
Taylor engine on the same function written on scalar vars (SymPy-checked in its own tests), and
against ``jax.experimental.jet`` on networks; over random functions holding every built-in,
repeated operands (a − a, f(a, a)), conditions, constant arrays (zero tangents), matrix
products, slices and sums."""

import math

import numpy as np
import pytest

import subgraph_ad as sad
from subgraph_ad.ad.operators.array_jet import jet
from subgraph_ad.ad.taylor import taylor_graph as scalar_taylor_graph
from random_programs import ARITHMETIC, BINARY, UNARY, arithmetic, function

SEEDS = range(20)
ORDER = 4
KINDS = ["add", "sub", "same", "mul", "div", "where", "matmul", "sum", "reversed", "constant"]


def names_for(seed: int) -> list[str]:
    every = UNARY + BINARY
    return every[seed::len(SEEDS)]


def chosen(a, b):
    """where(a > b, cos a, b²): on an array Term one selection node; on an object array of
    scalar Terms one per element (NumPy would ask each comparison for a truth value)."""
    if isinstance(a, np.ndarray) and a.dtype == object:
        b = np.broadcast_to(b, a.shape)
        return np.array([sad.where(p > q, np.cos(p), q * q) for p, q in zip(a, b)], dtype=object)
    return sad.where(a > b, np.cos(a), b * b)


def random_function(seed: int):
    """f(x) of a vector x of 3 numbers: arrays (or object arrays of scalar Terms) alike."""
    rng = np.random.default_rng(seed)
    M, c = rng.normal(size=(3, 3)) / 2, rng.normal(size=3)
    plan = []
    for name in names_for(seed):
        plan.append(("fn", name, int(rng.integers(6)), int(rng.integers(6))))
        plan.append((KINDS[int(rng.integers(len(KINDS)))], None, int(rng.integers(6)), int(rng.integers(6))))

    def f(x):
        pool = [x, x * x, x, np.sin(x) + c, x * 0.0 + c]  # x twice; a constant array: no tangent
        for kind, name, i, j in plan:
            a, b = pool[i % len(pool)], pool[j % len(pool)]
            if kind == "fn":
                pool.append(function(name, a, a if i % 3 == 0 else b))  # f(a, a) too
            elif kind in ARITHMETIC:
                pool.append(arithmetic(kind, a, b, chosen))
            elif kind == "matmul":
                pool.append(M @ a)
            elif kind == "sum":
                pool.append(np.sum(a) * b)
            elif kind == "reversed":
                pool.append(a[::-1] * b)
            else:
                pool.append(c * a)
        return np.sum(pool[-1] * c) + np.sum(pool[-2])

    return f


def scalar_coefficients(f, x0, v0, order):
    """The Taylor coefficients of f(x0 + t·v0) by the scalar engine: f on an object array of
    scalar vars, the direction's components vars too."""
    tape = sad.Tape()
    xs = [tape.var(f"x{k}", float(a)) for k, a in enumerate(x0)]
    vs = [tape.var(f"v{k}", float(a)) for k, a in enumerate(v0)]
    u = f(np.array(xs, dtype=object))
    derivatives = scalar_taylor_graph(u, dict(zip(xs, vs)), order)
    return [float(d.eval()) / math.factorial(k) for k, d in enumerate(derivatives, 1)]


def test_the_seeds_apply_every_built_in():
    assert {n for seed in SEEDS for n in names_for(seed)} == set(UNARY + BINARY)


@pytest.mark.parametrize("seed", SEEDS)
def test_array_jets_equal_the_scalar_taylor_engine(seed):
    rng = np.random.default_rng(50 + seed)
    f = random_function(seed)
    x0, v0 = rng.uniform(-1, 1, 3), rng.normal(size=3)
    tape = sad.Tape()
    x, v = tape.array("x", x0), tape.array("v", v0)
    ys = jet(f(x), x, v, ORDER)
    found = [0.0 if y is None else float(y.eval()) for y in ys]
    expected = scalar_coefficients(f, x0, v0, ORDER)
    for k, (a, b) in enumerate(zip(found, expected), 1):
        assert a == pytest.approx(b, rel=1e-9, abs=1e-9), (seed, k)
    zero = tape.array("zero", np.zeros(3))  # a zero direction: every coefficient is zero
    assert all(y is None or float(y.eval()) == 0.0 for y in jet(f(x), x, zero, ORDER))


@pytest.mark.parametrize("seed", range(6))
def test_traced_jets_of_networks_equal_jax_jet_on_batches(seed):
    jax = pytest.importorskip("jax")  # in the dev extra: present in make test
    from jax.experimental import jet as jax_jet

    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    rng = np.random.default_rng(seed)
    d, widths = 3, [int(w) for w in rng.integers(1, 9, size=1 + seed % 3)]
    shapes = list(zip([d] + widths, widths + [1]))
    Ws = [rng.normal(size=(o, i)) / np.sqrt(i) for i, o in shapes]
    bs = [rng.normal(size=o) for _, o in shapes]
    act = [(np.tanh, jnp.tanh), (np.sin, jnp.sin), (lambda a: sad.sigmoid(a), jax.nn.sigmoid),
           (np.exp, jnp.exp)][seed % 4]

    def u(x, ours=True):
        for W, b in zip(Ws[:-1], bs[:-1]):
            x = (act[0] if ours else act[1])(W @ x + b)
        return (Ws[-1] @ x + bs[-1])[0]

    order = 5
    points, directions = rng.uniform(-1, 1, (7, d)), rng.normal(size=(7, d))
    found = sad.taylor_graph(u, order)(points, directions)
    for p in range(7):
        _, series = jax_jet.jet(lambda x: u(x, False), (points[p],), ((directions[p],) + (jnp.zeros(d),) * (order - 1),))
        np.testing.assert_allclose(found[p], np.array(series), rtol=1e-10, atol=1e-10)


def test_a_jet_through_a_wide_layer_is_a_few_array_nodes():
    """A dense layer of width 200 costs the same few nodes per order as one of width 2."""
    def size(width):
        rng = np.random.default_rng(0)
        W1, w2 = rng.normal(size=(width, 3)), rng.normal(size=width)
        tape = sad.Tape()
        x, v = tape.array("x", np.zeros(3)), tape.array("v", np.ones(3))
        before = len(tape.nodes)
        jet(w2 @ np.tanh(W1 @ x), x, v, 6)
        return len(tape.nodes) - before

    assert size(200) == size(2) < 400


def test_hutchinsons_estimate_of_a_network_runs_the_array_jet_and_equals_jax_on_its_probes():
    """``laplacian(fn, samples=S)`` of an array-written network: the mean of vᵀ∇²u v over the
    seed's probes, by the order-2 jet over array nodes — equal to JAX's Hessian contracted with
    the same probes, and to the scalar program's estimate."""
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    from subgraph_ad.estimate import probes as _probes

    rng = np.random.default_rng(8)
    d, w = 5, 7
    W1, b1, w2 = rng.normal(size=(w, d)) / 2, rng.normal(size=w), rng.normal(size=w)
    points = rng.uniform(-1, 1, (9, d))
    estimate = sad.laplacian(lambda x: w2 @ np.tanh(W1 @ x + b1), samples=6, seed=3)
    found = estimate(points)
    assert estimate.jets is not None and len(estimate.jets) == 1 and len(estimate.cache) == 0  # the jet, no scalar program
    probes = _probes(d, 6, 3)
    hessians = np.asarray(jax.vmap(jax.hessian(lambda x: jnp.asarray(w2) @ jnp.tanh(jnp.asarray(W1) @ x + b1)))(points))
    expected = np.einsum("ks,nkl,ls->n", probes, hessians, probes) / 6
    np.testing.assert_allclose(found, expected, rtol=1e-12, atol=1e-12)
    scalar = sad.laplacian(lambda x: w2 @ np.tanh(W1 @ x + b1), samples=6, seed=3)
    scalar.jets = None  # as for a function the jet has no rule for
    np.testing.assert_allclose(scalar(points), found, rtol=1e-12, atol=1e-12)
    assert found.shape == (9,) and isinstance(estimate(points[0]), float)


@pytest.mark.parametrize("beside", [0.0, 1e-9, -1e-9])
def test_jets_at_and_beside_a_switch_and_through_a_pairwise_kernel_equal_jax(beside):
    """where(x > 0.3, sin x, x²) with a component on its switch and 1e-9 either side (the branch
    taken, no nan from the other), and Σᵢⱼ exp(−(xᵢ − xⱼ)²), whose differences are zero on the
    diagonal (x − x): against ``jax.experimental.jet``."""
    jax = pytest.importorskip("jax")
    from jax.experimental import jet as jax_jet

    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy

    def u(x, np_=np, where=sad.where):
        return np_.sum(where(x > 0.3, np_.sin(x), x * x)) + np_.sum(np_.exp(-(x[:, None] - x[None, :]) ** 2))

    x0 = np.array([0.3 + beside, -0.4, 0.9, 0.1])
    v = np.array([1.0, 0.5, -2.0, 0.25])
    found = sad.taylor_graph(u, 4)(x0, v)
    _, series = jax_jet.jet(lambda x: u(x, jnp, jnp.where), (x0,), ((v,) + (np.zeros(4),) * 3,))
    assert np.all(np.isfinite(found))
    np.testing.assert_allclose(found, np.array(series), rtol=1e-10, atol=1e-10)
