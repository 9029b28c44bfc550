"""gen_graph and diff: arithmetic rules to order 4 and mixed partials against SymPy, sharing,
structural zeros, transactions, argument errors and a 100,000-node chain."""

import math

import numpy as np
import pytest
import sympy

import subgraph_ad as sad
from subgraph_ad import Tape, cos, exp, log, sin, sqrt, tanh
from conftest import close, sympy_value

X, Y = sympy.symbols("x y")

# (our expression builder, the same expression written in SymPy)
ARITHMETIC = {
    "add": (lambda x, y: x + y * x, X + Y * X),
    "sub": (lambda x, y: x - y * x, X - Y * X),
    "mul": (lambda x, y: x * x * y, X * X * Y),
    "div": (lambda x, y: y / x, Y / X),
    "neg": (lambda x, y: -(x * y), -(X * Y)),
    "pow_int": (lambda x, y: x**3 * y, X**3 * Y),
    "pow_half": (lambda x, y: x**0.5 * y, sympy.sqrt(X) * Y),
    "pow_neg": (lambda x, y: x**-1 + y, 1 / X + Y),
    "pow_base": (lambda x, y: 2**x * y, 2**X * Y),
    "pow_general": (lambda x, y: x**y, X**Y),
    "rsub_rdiv": (lambda x, y: 1 / (3 - x * y), 1 / (3 - X * Y)),
    "composite": (lambda x, y: sin(x) * exp(cos(x)) / (1 + x**2) + log(y * x),
                  sympy.sin(X) * sympy.exp(sympy.cos(X)) / (1 + X**2) + sympy.log(Y * X)),
}
POINTS = [(0.3, 1.7), (0.8, 0.6), (1.6, 1.1)]


@pytest.mark.parametrize("name", sorted(ARITHMETIC))
@pytest.mark.parametrize("order", [1, 2, 3, 4])
def test_arithmetic_derivatives_match_sympy(name, order):
    build, reference = ARITHMETIC[name]
    tape = Tape()
    x, y = tape.var("x"), tape.var("y")
    d = build(x, y).diff(x, order)
    expected = sympy.diff(reference, X, order)
    for px, py in POINTS:
        assert close(d.eval({x: px, y: py}), sympy_value(expected, x=px, y=py))


@pytest.mark.parametrize("name", sorted(ARITHMETIC))
@pytest.mark.parametrize("args", [(1, 1), (2, 1), (1, 2), (2, 2)])
def test_mixed_partials_match_sympy(name, args):
    build, reference = ARITHMETIC[name]
    tape = Tape()
    x, y = tape.var("x"), tape.var("y")
    nx, ny = args
    d = build(x, y).diff(x, nx, y, ny)
    expected = sympy.diff(reference, X, nx, Y, ny)
    for px, py in POINTS:
        assert close(d.eval({x: px, y: py}), sympy_value(expected, x=px, y=py))


def test_mixed_partials_commute_to_the_same_value():
    tape = Tape()
    x, y = tape.var("x", 0.7), tape.var("y", 1.3)
    f = exp(x * y) * sin(x + y**2)
    assert close(f.diff(x, y).eval(), f.diff(y, x).eval(), 1e-13)
    assert close(f.diff(x, 2, y).eval(), f.diff(y, x, x).eval(), 1e-13)


def test_seed_values_agree_across_all_modes():
    tape = Tape()
    x, y = tape.var("x", 0.5), tape.var("y", 4.2)
    z = x * y + sin(x)
    g = z.grad()
    assert z.eval() == pytest.approx(2.579425538604203, rel=1e-15)
    for dzdx in (z.derive(x), g[x], g.wrt(x), z.gen_graph(x).eval()):
        assert dzdx == pytest.approx(5.077582561890373, rel=1e-15)
    for dzdy in (z.derive(y), g[y], z.gen_graph(y).eval()):
        assert dzdy == pytest.approx(0.5, rel=1e-15)


def test_seed_jacobian():
    tape = Tape()
    x1, x2 = tape.var("x1", 1.0), tape.var("x2", 2.0)
    outputs = [x1 + x2 + log(x1), x1 / x2 + (x1 - x2) ** 2]
    expected = [[2.0, 1.0], [-1.5, 1.75]]
    for row, f in zip(expected, outputs):
        assert [f.gen_graph(v).eval() for v in (x1, x2)] == pytest.approx(row, rel=1e-15)
        assert [f.derive(v) for v in (x1, x2)] == pytest.approx(row, rel=1e-15)
        g = f.grad()
        assert [g[x1], g[x2]] == pytest.approx(row, rel=1e-15)


def test_second_gen_graph_of_the_same_thing_adds_no_nodes():
    tape = Tape()
    x, y = tape.var("x", 0.5), tape.var("y", 4.2)
    z = x * y + sin(x)
    d1 = z.gen_graph(x)
    n = len(tape)
    assert z.gen_graph(x).index == d1.index and len(tape) == n
    tape.deriv_cache.clear()  # interning alone also gives the same nodes
    assert z.gen_graph(x).index == d1.index and len(tape) == n


def _appended(f, wrt, orders):
    base = len(f.tape)
    d = f
    for _ in range(orders):
        d = d.gen_graph(wrt)
    return len(f.tape) - base


def _gaussian():
    tape = Tape()
    x = tape.var("x", 0.5)
    return exp(-x**2 / 2), x


def _f3():
    tape = Tape()
    x = tape.var("x", 0.5)
    return sin(x) * exp(cos(x)) / (1 + x**2), x


def _f4():
    tape = Tape()
    x = tape.var("x", 0.5)
    return tanh(tanh(tanh(x))), x


def _f5():
    tape = Tape()
    w1, w2 = tape.var("w1", 0.5), tape.var("w2", 0.7)
    return w2 * log(w1) + sqrt(w2 * log(w1)), w1


@pytest.mark.parametrize("make, limit", [(_gaussian, 70), (_f3, 353), (_f4, 846), (_f5, 307)],
                         ids=["gaussian", "F3", "F4", "F5"])
def test_ten_orders_of_gen_graph_stay_small(make, limit):
    f, x = make()
    assert _appended(f, x, 10) <= limit


def test_sharing_keeps_growth_polynomial_not_exponential():
    sizes = [_appended(*_f4(), n) for n in range(4, 12)]
    ratios = [b / a for a, b in zip(sizes, sizes[1:])]
    assert ratios[-1] < 1.5  # exponential growth would keep a constant ratio of 2 or more
    assert ratios == sorted(ratios, reverse=True)


def test_hundred_orders_of_sin_stay_linear():
    tape = Tape()
    x = tape.var("x", 0.3)
    f = sin(2 * x)
    assert _appended(f, x, 100) <= 2 * 100 + 10
    assert close(f.diff(x, 100).eval(), 2.0**100 * np.sin(0.6), 1e-12)


def test_structural_zero_returns_the_tapes_zero_and_appends_nothing_else():
    tape = Tape()
    x, y = tape.var("x", 0.5), tape.var("y", 2.0)
    zero = tape.zero
    f = sin(y) * exp(y)
    n = len(tape)
    d = f.gen_graph(x)
    assert d.index == zero.index and len(tape) == n
    assert (x * 3).diff(x, 2).index == zero.index


def test_structural_zero_never_multiplies_through_a_singularity():
    tape = Tape()
    x, y = tape.var("x", 0.0), tape.var("y", 2.0)
    f = y * log(x)  # log(0) = -inf, but d/dy does not touch d(log x)
    assert f.gen_graph(y).eval() == -np.inf
    assert f.gen_graph(x).gen_graph(y).eval() == np.inf  # 1/x at 0


def test_derivative_order_tags():
    tape = Tape()
    x = tape.var("x", 0.5)
    f = exp(-x * x)
    d2 = f.diff(x, 2, method="graph")
    assert tape.orders[f.index] == 0 and tape.orders[d2.index] == 2


def test_callback_sees_every_appended_node_in_order():
    tape = Tape()
    x = tape.var("x", 0.5)
    f = exp(sin(x) * x)
    seen = []
    start = len(tape)
    f.gen_graph(x, callback=seen.append)
    assert [t.index for t in seen] == list(range(start, len(tape)))
    assert all(t.tape is tape for t in seen)


@pytest.mark.parametrize(
    "wrt, error, message",
    [
        ("x", TypeError, "wrt must be a var Term of this tape, got str 'x'"),
        (3.0, TypeError, "got float 3.0"),
    ],
)
def test_wrt_must_be_a_var_term(wrt, error, message):
    tape = Tape()
    x = tape.var("x")
    with pytest.raises(error, match=message):
        sin(x).gen_graph(wrt)


def test_wrt_from_another_tape_or_not_a_var():
    tape = Tape()
    x = tape.var("x")
    other = Tape().var("x")
    with pytest.raises(ValueError, match="belongs to another tape"):
        sin(x).gen_graph(other)
    with pytest.raises(ValueError, match="must be a var"):
        sin(x).gen_graph(x * 2)


def test_keyboard_interrupt_during_gen_graph_restores_the_tape():
    tape = Tape()
    x = tape.var("x", 0.5)
    f = tanh(tanh(x)) * exp(x)
    before, intern, cache = list(tape.nodes), dict(tape._intern), dict(tape.deriv_cache)
    calls = []

    def interrupt(term):
        calls.append(term)
        if len(calls) == 5:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        f.diff(x, 3, callback=interrupt)
    assert tape.nodes == before and tape._intern == intern and tape.deriv_cache == cache
    # and the tape still works exactly as before
    assert close(f.diff(x, 3).eval(), f.diff(x, 3).eval())
    expected = sympy.diff(sympy.tanh(sympy.tanh(X)) * sympy.exp(X), X, 3)
    assert close(f.diff(x, 3).eval(), sympy_value(expected, x=0.5))


@pytest.mark.slow
def test_a_100000_node_chain_differentiates_evaluates_and_grads():
    tape = Tape()
    x = tape.var("x", 0.1)
    z = x
    for _ in range(50_000):
        z = z + 1e-5 * sin(z)  # two nodes per step; d z/dx stays near 1
    assert len(tape) > 100_000
    # closed form for the derivative: the product of (1 + 1e-5 cos(z_k)) along the chain
    derivative, zk = 1.0, 0.1
    for _ in range(50_000):
        derivative *= 1 + 1e-5 * np.cos(zk)
        zk = zk + 1e-5 * np.sin(zk)
    d = z.gen_graph(x)
    assert close(z.eval(), zk, 1e-12)
    assert close(d.eval(), derivative, 1e-10)
    assert close(z.derive(x), derivative, 1e-10)
    assert close(z.grad()[x], derivative, 1e-10)


def test_a_direction_that_fails_leaves_no_constants_behind():
    """Numeric tangents become constants inside the transaction: a bad component later in the
    direction (or an interrupt) leaves the tape as it was."""
    tape = sad.Tape()
    x, y = tape.var("x", 1.0), tape.var("y", 2.0)
    f = x * y + sad.sin(x)
    before = list(tape.nodes)
    with pytest.raises(TypeError, match="str 'a'"):
        f.gen_graph({x: 3.5, y: "a"})
    assert tape.nodes == before
    assert f.gen_graph({x: 3.5, y: 4.5}).eval() == pytest.approx(3.5 * (2.0 + math.cos(1.0)) + 4.5 * 1.0, rel=1e-15)
