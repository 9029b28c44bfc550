"""Array nodes against their scalar twins and against JAX.

The twin of an array expression is its expansion (``Term.expand``): the same expression on scalar
nodes, built and differentiated by the scalar engines that the rest of the suite checks against
SymPy and mpmath. Every array rule (value, forward, reverse, second order) must agree with it to
1e-12 on a seeded corpus that uses every built-in function, broadcasting, repeated operands
(a − a, a·a, f(a, a)), conditions, reductions, slices, reshapes and scalar Terms mixed in; the
networks are checked against JAX in float64 too.
"""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import subgraph_ad as sad
from subgraph_ad.core.arrays import ShapeError
from subgraph_ad.functions import FUNCTIONS

jax = pytest.importorskip("jax")
jnp = jax.numpy

TOL = 1e-12


def _values(term):
    """An expansion's values: an array of each element's value (the scalar twin's)."""
    part = term.expand()
    if isinstance(part, np.ndarray):
        return np.vectorize(lambda t: t.eval(), otypes=[float])(part)
    return part.eval()


def _close(a, b, tol=TOL):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    assert a.shape == b.shape or b.shape == () or a.shape == ()
    scale = np.maximum(1.0, np.abs(b))
    assert np.all((np.abs(a - b) <= tol * scale) | (np.isnan(a) & np.isnan(b))), (a, b)


def _domain(fn):
    """An input interval where fn and its first two derivatives are finite (the corpus feeds each
    function values inside it)."""
    for low, high in ((0.2, 0.7), (1.3, 1.8), (-0.7, -0.2)):
        probe = np.linspace(low, high, 5)
        args = (probe,) * fn.arity
        with np.errstate(all="ignore"):
            if np.all(np.isfinite(fn.f(*args))):
                return low, high
    raise AssertionError(f"no domain found for {fn.name}")


UNARY = sorted(n for n, f in FUNCTIONS.items() if f.arity == 1)
BINARY = sorted(n for n, f in FUNCTIONS.items() if f.arity == 2)


def _squash(t, low, high):
    """t (any real array) mapped into (low, high) by a smooth function: inputs of a function stay
    in its domain whatever the weights are."""
    return low + (high - low) * sad.sigmoid(t)


def _corpus_case(seed):
    """A random expression over array vars W (m×n), x (n), b (m) and a scalar var s: a layer,
    elementwise functions on it (one unary and one binary built-in, the binary one also with a
    repeated operand), a condition, a slice, a reshape, a reduction, mixed with s."""
    rng = np.random.default_rng(seed)
    m, n = int(rng.integers(1, 5)), int(rng.integers(1, 5))
    tape = sad.Tape()
    W = tape.array("W", rng.normal(size=(m, n)) * 0.7)
    x = tape.array("x", rng.normal(size=n))
    b = tape.array("b", rng.normal(size=m))
    s = tape.var("s", float(rng.uniform(0.3, 0.9)))
    table = rng.normal(size=(m, n))
    f = FUNCTIONS[UNARY[seed % len(UNARY)]]
    g = FUNCTIONS[BINARY[seed % len(BINARY)]]
    h = W @ x + b * s
    h = h + (table * W).sum(axis=1) - (x - x).sum() + (h * h)[::-1] * 0.1  # repeated operands
    fin = f(_squash(h, *_domain(f)))
    gin = _squash(h * s, *_domain(g))
    mixed = g(gin, _squash(b, *_domain(g))) + g(gin, gin)
    cond = sad.where(h > 0.1, fin, mixed)
    outer = (cond.reshape(m, 1) * x.reshape(1, n)).T
    u = outer.sum() + fin.mean() * s + mixed[-1] + (W.T @ cond).sum()
    return tape, u, (W, x, b, s)


@pytest.mark.parametrize("seed", range(len(UNARY) + len(BINARY)))
def test_array_rules_equal_their_scalar_twins(seed):
    tape, u, (W, x, b, s) = _corpus_case(seed)
    _close(u.eval(), _values(u))
    twin = u.expand()
    elements = {v: v.expand() for v in (W, x, b)}
    # reverse: the gradient of every var, array and scalar, against the twin's
    grads = u.grad_graph([W, x, b, s])
    for v, g in zip((W, x, b), grads):
        flat = [e for e in elements[v].ravel()]
        expected = np.array([d.eval() for d in twin.grad_graph(flat)]).reshape(v.shape)
        _close(g.eval() if g.shape else np.broadcast_to(g.eval(), v.shape), expected)
    _close(grads[3].eval(), twin.grad_graph(s).eval())
    # forward in the scalar var, twice (array nodes again, then their derivative)
    d1 = u.gen_graph(s)
    _close(d1.eval(), twin.gen_graph(s).eval())
    _close(d1.gen_graph(s).eval(), twin.gen_graph(s).gen_graph(s).eval())
    # a Hessian-vector product: the gradient in x, differentiated along a direction in W
    direction = np.random.default_rng(seed).normal(size=W.shape)
    hv = sad.ad.forward.directional([grads[1]], {W: direction})[0]
    tw = [twin.grad_graph(e) for e in elements[x].ravel()]
    seeds = {e: float(c) for e, c in zip(elements[W].ravel(), direction.ravel())}
    expected = np.array([sad.ad.forward.directional([t], seeds)[0].eval() for t in tw])
    _close(hv.eval() if hv.shape else np.broadcast_to(hv.eval(), x.shape), expected)


@pytest.mark.parametrize("width,depth,seed", [(1, 1, 0), (5, 2, 1), (16, 3, 2), (8, 2, 3)])
def test_a_network_and_its_derivatives_match_jax(width, depth, seed):
    jax.config.update("jax_enable_x64", True)
    rng = np.random.default_rng(seed)
    d = 3
    shapes = [(width, d)] + [(width, width)] * (depth - 1) + [(1, width)]
    weights = [rng.normal(size=s) / np.sqrt(s[1]) for s in shapes]
    biases = [rng.normal(size=s[0]) for s in shapes]
    batch = rng.normal(size=(7, d))
    target = rng.normal(size=7)

    tape = sad.Tape()
    Ws = [tape.array(f"W{k}", w) for k, w in enumerate(weights)]
    X = tape.array("X", batch)
    h = X.T
    for k, (w, c) in enumerate(zip(Ws, biases)):
        h = w @ h + c.reshape(-1, 1)
        h = sad.tanh(h) if k < depth else h
    loss = ((h[0] - target) ** 2).mean()

    def jloss(ws, X):
        h = X.T
        for k, (w, c) in enumerate(zip(ws, biases)):
            h = w @ h + c.reshape(-1, 1)
            h = jnp.tanh(h) if k < depth else h
        return jnp.mean((h[0] - target) ** 2)

    _close(loss.eval(), jloss(weights, batch))
    grads = loss.grad_graph(Ws + [X])
    expected = jax.grad(jloss, argnums=(0, 1))(weights, batch)
    for g, e in zip(grads, list(expected[0]) + [expected[1]]):
        _close(g.eval(), np.asarray(e))
    directions = [rng.normal(size=w.shape) for w in weights]
    hvp = sad.ad.forward.directional(grads[:-1], dict(zip(Ws, directions)))
    _, jhvp = jax.jvp(lambda ws: jax.grad(jloss)(ws, batch), (weights,), (directions,))
    for g, e in zip(hvp, jhvp):
        _close(g.eval(), np.asarray(e))
    assert len(tape) < 60 * depth + 100  # O(layers) nodes, not width² · d


def test_a_batch_of_points_evaluates_like_each_point():
    tape = sad.Tape()
    W = tape.array("W", np.arange(6.0).reshape(2, 3) / 7)
    x = tape.array("x", np.zeros(3))
    u = (sad.sin(W @ x) * (W @ x)).sum() + x[1] * x[2]
    points = np.random.default_rng(0).normal(size=(5, 3))
    batch = u.eval({x: points})
    each = [u.eval({x: p}) for p in points]
    _close(batch, np.array(each))
    g = u.grad_graph(x)
    _close(g.eval({x: points}), np.array([g.eval({x: p}) for p in points]))


def test_printing_pictures_and_sympy():
    import sympy

    tape = sad.Tape()
    W = tape.array("W", np.eye(2))
    x = tape.array("x", [1.0, 2.0])
    h = W @ sad.tanh(x)
    assert str(h) == "W @ tanh(x)"
    assert str(h.sum()) == "(W @ tanh(x)).sum()"
    assert str(W.T[0]) == "W.T[0]"
    m = h.to_sympy()
    w = sympy.Matrix(2, 2, sympy.symbols("W_0_0 W_0_1 W_1_0 W_1_1"))
    expected = w * sympy.Matrix([sympy.tanh(sympy.Symbol("x_0")), sympy.tanh(sympy.Symbol("x_1"))])
    assert sympy.simplify(m - expected) == sympy.zeros(2, 1)
    dot = h.to_dot()
    assert "matmul [2]" in dot and "W [2×2]" in dot and "tanh [2]" in dot


def test_a_constant_table_is_one_node_by_content():
    tape = sad.Tape()
    x = tape.array("x", [1.0, 2.0])
    a = x * np.array([3.0, 4.0])
    b = x * np.array([3.0, 4.0])
    assert a.index == b.index
    assert (np.array([[1.0, 2.0]]) @ np.array([3.0, 4.0]) + x).op == "map"  # constants fold to a table


def test_copies_and_pickles_keep_array_vars():
    tape = sad.Tape()
    W = tape.array("W", np.ones((2, 2)))
    u = (W @ W).sum()
    for other in (copy.copy(tape), copy.deepcopy(tape), pickle.loads(pickle.dumps(tape))):
        twin = other[u.index]
        assert twin.eval() == 8.0 and other.vars["W"].shape == (2, 2)


def _unchanged(tape, make, error, *words):
    before = (list(tape.nodes), dict(tape.var_shapes))
    with pytest.raises(error) as found:
        make()
    assert (list(tape.nodes), dict(tape.var_shapes)) == before
    for word in words:
        assert word in str(found.value)


def test_bad_input_is_refused_by_name_and_leaves_the_tape():
    tape = sad.Tape()
    W = tape.array("W", np.ones((2, 3)))
    x = tape.array("x", np.ones(2))
    s = tape.var("s", 1.0)
    _unchanged(tape, lambda: W @ x, ShapeError, "(2, 3)", "(2,)", "matmul")
    _unchanged(tape, lambda: W + x, ShapeError, "(2, 3)", "(2,)", "add")
    t = sad.tanh(W)
    _unchanged(tape, lambda: t * x, ShapeError, "mul")
    _unchanged(tape, lambda: W.sum(axis=2), np.exceptions.AxisError, "axis 2")
    _unchanged(tape, lambda: W[5], IndexError, "5")
    _unchanged(tape, lambda: W.reshape(4), ShapeError, "(2, 3)")
    _unchanged(tape, lambda: tape.array("r", [[1.0], [2.0, 3.0]]), TypeError, "'r'")
    _unchanged(tape, lambda: W * np.array(["a", "b", "c"]), TypeError)
    _unchanged(tape, lambda: tape.array("W", [1.0]), ValueError, "already exists")
    total = W.sum()
    _unchanged(tape, lambda: total.gen_graph(W), TypeError, "direction")
    _unchanged(tape, lambda: W.grad_graph(s), TypeError, "shape (2, 3)")
    _unchanged(tape, lambda: s[0], TypeError, "scalar")
    other = sad.Tape()
    y = other.array("y", np.ones(3))
    _unchanged(tape, lambda: W @ y, ValueError, "different tapes")
    with pytest.raises(ValueError, match="shape"):
        W.set(np.ones(4))


def test_scalar_engines_read_the_expansion():
    """Taylor mode, diff by every method, the operators and numeric sweeps on a graph with array
    nodes: the same numbers as on the scalar twin."""
    tape = sad.Tape()
    x = tape.array("x", [0.3, -0.4])
    t = tape.var("t", 0.2)
    A = np.array([[1.0, 2.0], [0.5, -1.0]])
    u = (sad.tanh(A @ x * t) ** 2).sum()
    twin = u.expand()
    for method in ("graph", "taylor", "auto"):
        _close(u.diff(t, 4, method=method).eval(), twin.diff(t, 4, method="graph").eval())
    _close([d.eval() for d in sad.taylor_graph(u, t, 3)], [twin.diff(t, k).eval() for k in (1, 2, 3)])
    jax.config.update("jax_enable_x64", True)
    H = sad.derivative_tensor(u, x, 2)
    expected = jax.hessian(lambda x: jnp.sum(jnp.tanh(A @ x * 0.2) ** 2))(jnp.array([0.3, -0.4]))
    _close(np.array([[H[i, j].eval() for j in range(2)] for i in range(2)]), np.asarray(expected))
    g = u.grad()
    _close(g[x], np.asarray(jax.grad(lambda x: jnp.sum(jnp.tanh(A @ x * 0.2) ** 2))(jnp.array([0.3, -0.4]))))
    _close(u.derive(t), twin.gen_graph(t).eval())


def test_hessian_and_jacobian_by_array_vars_are_the_scalar_forms():
    """An array var among the inputs counts as its elements (C order), an array output as its
    elements' rows; the entries are the scalar form's, structural zeros included."""
    jax.config.update("jax_enable_x64", True)
    A = np.array([[1.0, 2.0, 0.0], [0.5, -1.0, 1.0]])
    tape = sad.Tape()
    x = tape.array("x", [0.3, 0.5, 0.7])
    s = tape.var("s", 0.2)
    u = (sad.tanh(A @ x) ** 2).sum() * s
    H = sad.hessian(u, [x, s])
    expected = jax.hessian(lambda z: (jnp.tanh(A @ z[:3]) ** 2).sum() * z[3])(jnp.array([0.3, 0.5, 0.7, 0.2]))
    _close(np.array([[H[i][j].eval() for j in range(4)] for i in range(4)]), np.asarray(expected))
    J = sad.jacobian([sad.tanh(A @ x)], [x])
    assert J.shape == (2, 3)
    expected = jax.jacobian(lambda z: jnp.tanh(A @ z))(jnp.array([0.3, 0.5, 0.7]))
    _close(np.array([[J[i][j].eval() for j in range(3)] for i in range(2)]), np.asarray(expected))
    sparse = sad.hessian((x * x).sum(), [x], sparse=True)
    assert sorted(zip(sparse.rows, sparse.cols)) == [(0, 0), (1, 1), (2, 2)]  # the diagonal, as with scalars


def test_constant_factors_and_signs_gather_as_on_scalars():
    """−(c·x) is (−c)·x, c·(d·x) is (cd)·x, x + x is 2·x, x ** 1 is x and x ** 0 ones: what a
    derivative writes (tanh″ = −2·tanh·sech², (x²)′ = 2·x¹) is one pass, not three; (c·x)·T is
    x·(cT) for a table T where c = ±2ⁿ makes that exact; each value is NumPy's on the same array."""
    tape = sad.Tape()
    v = np.array([0.5, -1.5, 2.0])
    x = tape.array("x", v)
    y = sad.sin(x)
    cases = {
        "neg of scaled": (-(3.0 * y), -3.0 * np.sin(v), 2),
        "scaled scaled": (2.0 * (0.5 * (4.0 * y)), 4.0 * np.sin(v), 2),
        "sum of itself, negated": (-((x * y) + (x * y)), -2.0 * v * np.sin(v), 3),
        "power one": (y ** 1.0, np.sin(v), 1),
        "power zero times": ((y ** 0.0) * x, v, 0),
        "minus one": (-1.0 * y, -np.sin(v), 2),
        "power of two by a table": ((-2.0 * y) * np.array([1.0, 3.0, 0.1]), -2.0 * np.sin(v) * [1.0, 3.0, 0.1], 2),
        "a table by a power of two": (np.array([1.0, 3.0, 0.1]) * (0.25 * y), 0.25 * np.sin(v) * [1.0, 3.0, 0.1], 2),
        "three by a table (inexact: kept)": ((3.0 * y) * np.array([1.0, 3.0, 0.1]), 3.0 * np.sin(v) * [1.0, 3.0, 0.1], 3),
    }
    for name, (term, value, nodes) in cases.items():
        built = [i for i in sad.core.dependencies(tape, [term.index]) if tape.nodes[i].op == "map"]
        assert len(built) == nodes, name
        np.testing.assert_allclose(term.eval(), value, rtol=1e-15, err_msg=name)
