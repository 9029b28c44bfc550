"""Symbolic reverse mode (``grad_graph``), directional derivatives and the matrices built on
them (``jacobian``, ``hessian``, ``hvp``, ``hutchinson_trace``), against SymPy, closed forms and
forward ``gen_graph``."""

import math

import numpy as np
import pytest
import sympy

import subgraph_ad as sad
from conftest import OutputTanh, close, sympy_value
from subgraph_ad import Tape

FUNCS = [sad.exp, sad.sin, sad.tanh, sad.atan, sad.sigmoid, lambda a: sad.log(1 + a * a),
         lambda a: sad.sqrt(2 + sad.cos(a)), lambda a: sad.atan2(a, 1.5)]
OPS = [lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b, lambda a, b: a / (2 + b * b),
       lambda a, b: a ** 2 * b, lambda a, b: sad.hypot(a, b)]


def random_expression(rng, xs, size=10):
    """A random expression tree over the vars (bottom-up, no recursion)."""
    pool = list(xs)
    for _ in range(size):
        if rng.random() < 0.4:
            pool.append(FUNCS[rng.integers(len(FUNCS))](pool[rng.integers(len(pool))]))
        else:
            a, b = pool[rng.integers(len(pool))], pool[rng.integers(len(pool))]
            pool.append(OPS[rng.integers(len(OPS))](a, b))
    return pool[-1] * pool[-2] + pool[-1]


@pytest.mark.parametrize("seed", range(120))
def test_one_backward_sweep_equals_the_forward_partials(seed):
    """A corpus of 120 random expressions in 2-4 vars: every partial from one grad_graph sweep
    equals the forward gen_graph partial (two independent rule tables), at two points."""
    rng = np.random.default_rng(seed)
    tape = sad.Tape()
    xs = [tape.var(f"x{k}", float(rng.uniform(0.2, 0.9))) for k in range(2 + seed % 3)]
    z = random_expression(rng, xs)
    gradient = z.grad_graph(xs)
    for point in (None, {x: float(rng.uniform(-0.8, 0.8)) for x in xs}):
        for g, x in zip(gradient, xs):
            # the same derivative by two different sums of rounded terms
            assert close(g.eval(point), z.gen_graph(x).eval(point), 1e-10), (seed, x.name)


def test_the_tutorial_seed_and_the_adjoints_of_intermediates():
    tape = sad.Tape()
    x, y = tape.var("x", 0.5), tape.var("y", 4.2)
    a, b = x * y, sad.sin(x)
    z = a + b
    gx, gy = z.grad_graph([x, y])
    assert gx.eval() == pytest.approx(5.077582561890373, rel=1e-15) and gy.eval() == 0.5
    assert z.grad_graph(x).index == gx.index  # one var -> one Term, shared with the list's
    g = z.grad()
    assert (g[x], g["y"], g[a], g[b], g[tape.const(7.0)]) == (pytest.approx(5.077582561890373), 0.5, 1.0, 1.0, 0.0)
    assert dict(g) == {x: g[x], y: 0.5} and len(g) == 2 and list(g) == [x, y]


def test_a_var_the_output_does_not_depend_on_gets_the_tapes_zero_and_nothing_is_built():
    tape = sad.Tape()
    x, y, w = tape.var("x", 0.5), tape.var("y", 1.0), tape.var("w", 2.0)
    z = sad.exp(x) * y
    start = len(tape)
    gw = z.grad_graph([w])[0]
    assert gw.index == tape.zero.index and len(tape) <= start + 1


def test_the_gradient_differentiates_again_and_matches_sympy():
    tape = sad.Tape()
    x, y = tape.var("x", 0.3), tape.var("y", 0.8)
    z = sad.atan(x * y) + sad.erf(x - y) * sad.cosh(y)
    X, Y = sympy.symbols("x y")
    Z = z.to_sympy()
    gx, gy = z.grad_graph([x, y])
    at = {X: sympy.Float(0.3, 30), Y: sympy.Float(0.8, 30)}
    assert close(gx.eval(), float(sympy.diff(Z, X).evalf(30, subs=at)), 1e-13)
    assert close(gy.gen_graph(x).eval(), float(sympy.diff(Z, X, Y).evalf(30, subs=at)), 1e-12)
    assert close(gx.grad_graph(x).eval(), float(sympy.diff(Z, X, 2).evalf(30, subs=at)), 1e-12)


def test_grad_graph_errors_say_what_was_given_and_leave_the_tape():
    tape = sad.Tape()
    x = tape.var("x", 0.5)
    z = sad.sin(x) * x
    n = len(tape)
    with pytest.raises(TypeError, match="grad_graph takes a var or a non-empty list of vars, got int 3"):
        z.grad_graph(3)
    with pytest.raises(ValueError, match="must be a var"):
        z.grad_graph([x, z])
    other = sad.Tape().var("x")
    with pytest.raises(ValueError, match="belongs to another tape"):
        z.grad_graph([other])
    assert len(tape) == n


def rosenbrock(xs):
    return sum(100 * (xs[i + 1] - xs[i] ** 2) ** 2 + (1 - xs[i]) ** 2 for i in range(len(xs) - 1))


def test_rosenbrock_gradient_and_hessian_against_hand_derivatives():
    n = 12
    tape = sad.Tape()
    values = np.linspace(-0.9, 1.3, n)
    xs = [tape.var(f"x{i}", float(v)) for i, v in enumerate(values)]
    f = rosenbrock(xs)
    size = len(tape)
    gradient = f.grad_graph(xs)
    assert len(tape) - size <= 1.25 * size  # a gradient costs about one f
    v = values
    expected = np.zeros(n)
    expected[:-1] += -400 * v[:-1] * (v[1:] - v[:-1] ** 2) - 2 * (1 - v[:-1])
    expected[1:] += 200 * (v[1:] - v[:-1] ** 2)
    np.testing.assert_allclose([g.eval() for g in gradient], expected, rtol=1e-13)
    H = sad.hessian(f, xs)
    dense = np.array([[h.eval() for h in row] for row in H])
    hand = np.zeros((n, n))
    for i in range(n - 1):
        hand[i, i] += 1200 * v[i] ** 2 - 400 * v[i + 1] + 2
        hand[i + 1, i + 1] += 200
        hand[i, i + 1] = hand[i + 1, i] = -400 * v[i]
    np.testing.assert_allclose(dense, hand, rtol=1e-13)
    zero = tape.zero
    assert sum(h != zero for row in H for h in row) == 3 * n - 2  # the structural nonzeros
    assert all(H[i][j] is H[j][i] for i in range(n) for j in range(n))
    sparse = sad.hessian(f, xs, sparse=True)
    assert len(sparse.terms) == 3 * n - 2 and sparse.shape == (n, n)
    matrix = sparse.compile(xs)(*values)
    np.testing.assert_allclose(matrix.toarray(), hand, rtol=1e-13)


def test_jacobian_of_the_static_graph_example_both_ways():
    """f(x) = (x1 + x2 + log x1, x1/x2 + (x1 - x2)²) at (1, 2): [[2, 1], [-1.5, 1.75]]."""
    tape = sad.Tape()
    x1, x2 = tape.var("x1", 1.0), tape.var("x2", 2.0)
    f1, f2 = x1 + x2 + sad.log(x1), x1 / x2 + (x1 - x2) ** 2
    J = sad.jacobian([f1, f2], [x1, x2])  # as many outputs as inputs: forward passes
    assert [[t.eval() for t in row] for row in J] == [[2.0, 1.0], [-1.5, 1.75]]
    row = sad.jacobian([f2], [x1, x2])  # fewer outputs: one reverse sweep
    assert [t.eval() for t in row[0]] == [-1.5, 1.75]
    assert row[0][0].index == J[1][0].index  # the same derivative, shared


def test_hvp_equals_sympy_hessian_times_v_without_building_h():
    n = 30
    tape = sad.Tape()
    values = np.cos(np.arange(n))
    xs = [tape.var(f"x{i}", float(values[i])) for i in range(n)]
    f = rosenbrock(xs)
    v = np.sin(np.arange(n) + 1.0)
    start = len(tape)
    hv = sad.hvp(f, xs, list(v))
    appended = len(tape) - start
    symbols = sympy.symbols(f"x0:{n}")
    F = sum(100 * (symbols[i + 1] - symbols[i] ** 2) ** 2 + (1 - symbols[i]) ** 2 for i in range(n - 1))
    H = sympy.hessian(F, symbols).subs(dict(zip(symbols, values)))
    expected = np.array(H * sympy.Matrix(v), dtype=float).ravel()
    np.testing.assert_allclose([t.eval() for t in hv], expected, rtol=1e-12, atol=1e-9)
    assert appended <= 2.5 * start  # the gradient and one directional sweep over it


def _s_function(n):
    """S = Σ sin(x_i x_{i+1}) + exp(Σ x_i²): a dense Hessian."""
    tape = sad.Tape()
    xs = [tape.var(f"x{i}", 0.1 * i - 1.0) for i in range(n)]
    squares = xs[0] * xs[0]
    for x in xs[1:]:
        squares = squares + x * x
    return tape, xs, sum(sad.sin(xs[i] * xs[i + 1]) for i in range(n - 1)) + sad.exp(squares)


def test_hvp_of_a_dense_hessian_costs_far_less_than_the_hessian():
    tape, xs, f = _s_function(20)
    start = len(tape)
    hv = sad.hvp(f, xs, [1.0] * len(xs))
    hvp_nodes = len(tape) - start
    other, ys, g = _s_function(20)
    start = len(other)
    H = sad.hessian(g, ys)
    assert hvp_nodes * 1.5 < len(other) - start  # O(n) against O(n²)
    rows = np.array([[h.eval() for h in row] for row in H])
    np.testing.assert_allclose([t.eval() for t in hv], rows.sum(axis=1), rtol=1e-12)


def test_hutchinson_estimate_is_within_its_variance_of_the_trace():
    tape = sad.Tape()
    xs = [tape.var(f"x{i}", float(v)) for i, v in enumerate(np.linspace(-1, 1, 8))]
    f = rosenbrock(xs) + sad.exp(xs[0] * xs[3])
    H = np.array([[h.eval() for h in row] for row in sad.hessian(f, xs)])
    trace = np.trace(H)
    # Rademacher: Var[vᵀHv] = 2 Σ_{i≠j} H_ij²; the mean of m samples has that over m
    sigma = math.sqrt(2 * (np.sum(H**2) - np.sum(np.diag(H) ** 2)) / 4000)
    n = len(tape)
    estimate = sad.hutchinson_trace(f, xs, samples=4000, seed=1)
    assert len(tape) == n and abs(estimate - trace) < 4 * sigma
    assert sad.hutchinson_trace(f, xs, samples=4000, seed=1) == estimate  # seeded
    with pytest.raises(ValueError, match="samples must be an int >= 1, got 0"):
        sad.hutchinson_trace(f, xs, samples=0)


def test_directional_gen_graph_and_numeric_modes():
    tape = sad.Tape()
    x, y = tape.var("x", 0.5), tape.var("y", 4.2)
    z, w = x * y + sad.sin(x), x / y
    d = z.gen_graph({x: 1.0, y: 2.0})
    assert d.eval() == pytest.approx(4.2 + math.cos(0.5) + 2 * 0.5, rel=1e-15)
    assert z.derive({x: 1.0, y: 2.0}) == pytest.approx(d.eval(), rel=1e-15)
    assert sad.jvp([z, w], {x: 1.0, y: 0.0}) == pytest.approx([4.2 + math.cos(0.5), 1 / 4.2], rel=1e-15)
    g = sad.vjp([z, w], [1.0, 2.0])
    assert g[y] == pytest.approx(0.5 + 2 * (-0.5 / 4.2**2), rel=1e-15)
    with pytest.raises(TypeError, match="values must be a dict of var values, got int 2"):
        z.derive(x, 2)
    with pytest.raises(ValueError, match="one cotangent per output"):
        sad.vjp([z, w], [1.0])


def _repeated(fn, n):
    tape = Tape()
    x = tape.var("x", 0.3)
    d = fn(fn(fn(x)))
    for _ in range(n):
        d = d.grad_graph(x)
    return tape, d


@pytest.mark.slow
@pytest.mark.parametrize("n", [3, 10])
def test_repeated_grad_graph_of_nested_tanh_is_no_larger_than_with_one_minus_tanh_squared(n):
    """tanh′ is sech² (exact in the tails); its adjoint joins tanh's, so repeated reverse passes
    close on tanh's nodes as the rule 1 − tanh² (``OutputTanh``) does, and the values are SymPy's."""
    tape, d = _repeated(sad.tanh, n)
    old, _ = _repeated(OutputTanh(), n)
    assert len(tape) <= len(old)
    X = sympy.Symbol("x")
    exact = sympy_value(sympy.diff(sympy.tanh(sympy.tanh(sympy.tanh(X))), X, n), x=0.3)
    assert abs(d.eval() - exact) < 1e-12 * abs(exact)


def test_a_slope_whose_function_is_not_on_the_tape_takes_its_own_partial():
    tape = Tape()
    x = tape.var("x", 0.7)
    for f, ref in ((sad.FUNCTIONS["sech2"](x), sympy.sech(sympy.Symbol("x")) ** 2),
                   (sad.FUNCTIONS["dsigmoid"](x), sympy.exp(-sympy.Symbol("x")) / (1 + sympy.exp(-sympy.Symbol("x"))) ** 2)):
        d2 = f.grad_graph(x).grad_graph(x)
        assert abs(d2.eval() - sympy_value(sympy.diff(ref, sympy.Symbol("x"), 2), x=0.7)) < 1e-13


_X = sympy.Symbol("x")
_SIGMOID = 1 / (1 + sympy.exp(-_X))


@pytest.mark.parametrize("name,reference,passes,nodes", [
    ("sigmoid", _SIGMOID, 4, 18), ("sigmoid", _SIGMOID, 6, 70),
    ("dsigmoid", _SIGMOID * (1 - _SIGMOID), 4, 32), ("softplus", sympy.log(1 + sympy.exp(_X)), 4, 11)])
def test_repeated_grad_graph_of_the_sigmoid_family_shares_the_slope_node(name, reference, passes, nodes):
    """σ′ runs through σ with the slope 1 − 2σ as a node of σ alone (``functions.slope``): each
    pass multiplies by it, so repeated reverse passes stay within the sizes of the rule
    σ′·(1 − 2σ) they replaced (18 nodes at 4 passes of σ, 70 at 6), with SymPy's values."""
    tape = Tape()
    x = tape.var("x", 0.3)
    d = sad.FUNCTIONS[name](x)
    start = len(tape)
    for _ in range(passes):
        d = d.grad_graph(x)
    assert len(tape) - start <= nodes
    exact = sympy_value(sympy.diff(reference, _X, passes), x=0.3)
    assert abs(d.eval() - exact) < 1e-13 * abs(exact)
