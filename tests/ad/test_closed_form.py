"""Closed forms of the n-th derivative alone (the last step of ``diff``): values against SymPy,
sizes against SymPy's own cse form and against the recurrence, the cases where the expansion
gives up or the form is refused for accuracy at a probe point, and the monomial encoding."""

import math

import mpmath
import numpy as np
import pytest
import sympy

import subgraph_ad as sad

from subgraph_ad import Tape, cos, exp, log, sin, sqrt, tanh, taylor_graph
from subgraph_ad.ad import closed_form as horner
from subgraph_ad.ad import diff as diff_module
from subgraph_ad.ad.closed_form import WIDTH, Expansion
from subgraph_ad.core import dependencies
from subgraph_ad.ad.diff import diff
from subgraph_ad.benchmark_functions import BENCHMARKS  # F1–F5
from conftest import OutputTanh, close, sympy_value


CASES = {  # closed forms of every shape: polynomial, Laurent (1/x^k), products of functions
    "x^3*exp(2x)": lambda x, y: x**3 * exp(2 * x),
    "log(x)": lambda x, y: log(x),
    "sqrt(x)": lambda x, y: sqrt(x),
    "(1+x)^6 + x*y": lambda x, y: (1 + x) ** 6 + x * y,
    "exp(-x^2/2)*sin(y)": lambda x, y: exp(-x * x / 2) * sin(y),
    "1/(x*x)": lambda x, y: 1 / (x * x),
    "sin(x)*cos(x)": lambda x, y: sin(x) * cos(x),
    "y*log(x)+sqrt(y*log(x))": lambda x, y: y * log(x) + sqrt(y * log(x)),
    "tanh(x)^2": lambda x, y: tanh(x) ** 2,
}
POINTS = [(1.15, 0.7), (1.9, 2.2)]


def _ops(tape, root):
    """Operations evaluating root takes (vars and constants are not operations): SymPy's count_ops
    after cse counts the same thing."""
    return sum(tape.nodes[i].op not in ("var", "const") for i in dependencies(tape, [root]))


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("n", [2, 5, 9])
def test_nth_derivative_alone_matches_sympy(name, n):
    tape = Tape()
    x, y = tape.var("x", 1.0), tape.var("y", 1.0)
    f = CASES[name](x, y)
    d = diff(f, x, n, method="taylor")
    expected = sympy.diff(f.to_sympy(), sympy.Symbol("x"), n)
    for px, py in POINTS:
        assert close(d.eval({x: px, y: py}), sympy_value(expected, x=px, y=py), rtol=1e-11), (name, n, px)


@pytest.mark.parametrize("name", ["F1", "F5"])
def test_closed_forms_are_smaller_than_sympys_cse_form_and_the_recurrence(name):
    # SymPy simplifies the 10th derivative of F1/F5 to a closed form; ours must need fewer
    # operations than that form after cse (counted here, in the same run), and than Taylor
    # mode's recurrence for the same order.
    tape, f, x = BENCHMARKS[name]()
    d = diff(f, x, 10, method="taylor")
    others = {sympy.Symbol(v.name): v.value for v in tape.vars.values() if v != x}
    expr = sympy.diff(f.to_sympy(), sympy.Symbol(x.name), 10).subs(others)
    replacements, reduced = sympy.cse(expr)
    sympy_ops = sum(sympy.count_ops(e) for _, e in replacements) + sympy.count_ops(reduced[0])
    tape2, f2, x2 = BENCHMARKS[name]()
    recurrence = taylor_graph(f2, x2, 10)[-1]
    assert _ops(tape, d.index) < sympy_ops
    assert 2 * _ops(tape, d.index) < _ops(tape2, recurrence.index)
    point = {x: 1.3}
    assert close(d.eval(point), recurrence.eval({x2: 1.3}), rtol=1e-12)


def test_the_gaussian_closed_form_is_a_polynomial_in_horner_form():
    tape = Tape()
    x = tape.var("x", 0.5)
    d = exp(-x**2 / 2).diff(x, 6, method="taylor")
    X = sympy.Symbol("x")
    assert d.to_sympy() == (((X**2 - 15) * X**2 + 45) * X**2 - 15) * sympy.exp(-X**2 / 2)


@pytest.mark.parametrize("name", ["F3", "F4"])
def test_where_the_expansion_cannot_pay_the_recurrence_stays(name, monkeypatch):
    # sums of products of sin, cos, exp, 1/(1+x^2) (F3) and of three nested tanh (F4) expand to
    # more terms than the recurrence has nodes: the n-th derivative is the recurrence's, node
    # for node, and nothing the attempt built is left on the tape
    tape, f, x = BENCHMARKS[name]()
    d = diff(f, x, 10, method="taylor")
    monkeypatch.setattr(diff_module, "horner", lambda tape, root, mark, wrt: root)
    tape2, f2, x2 = BENCHMARKS[name]()
    recurrence = diff(f2, x2, 10, method="taylor")
    assert tape.nodes == tape2.nodes and d.index == recurrence.index


def test_an_ill_conditioned_closed_form_is_not_kept(monkeypatch):
    # otanh^(9) is a polynomial in otanh(x) of 6 terms (far fewer nodes than the recurrence), but
    # its terms reach 10^7 where its value is 10^4: evaluated near x = 1.9 it would lose 4 digits
    otanh = OutputTanh()
    tape = Tape()
    x = tape.var("x", 0.5)
    d = diff(otanh(x) ** 2, x, 9, method="taylor")
    monkeypatch.setattr(horner, "AGREE", 1.0)  # any agreement at all
    tape2 = Tape()
    x2 = tape2.var("x", 0.5)
    closed = diff(otanh(x2) ** 2, x2, 9, method="taylor")
    assert len(tape2) < len(tape)
    X = sympy.Symbol("x")
    exact = sympy_value(sympy.diff(sympy.tanh(X) ** 2, X, 9), x=1.9)
    assert abs(d.eval({x: 1.9}) - exact) < 1e-12 * abs(exact)
    assert abs(closed.eval({x2: 1.9}) - exact) > 1e-11 * abs(exact)  # what the check prevents


def test_every_appended_node_is_needed_and_announced_once():
    for name in sorted(CASES):
        tape = Tape()
        x, y = tape.var("x", 1.0), tape.var("y", 1.0)
        f = CASES[name](x, y)
        start, seen = len(tape), []
        d = diff(f, x, 7, method="taylor", callback=seen.append)
        needed = [i for i in dependencies(tape, [d.index]) if i >= start]
        assert needed == list(range(start, len(tape))), name
        assert [t.index for t in seen] == list(range(start, len(tape))), name
        for i in range(start, len(tape)):  # renumbered nodes are still interned
            assert tape.intern(tape.nodes[i]) == i


def test_huge_powers_stay_exact():
    # x ** (64·64·64·64) = x ** 2**24: past the expansion's degree bound, so it stays an atom;
    # (x ** 64) ** 64 is expanded to one monomial x ** 4096
    tape = Tape()
    x = tape.var("x", 1.0)
    for f, e in (((x**64) ** 64, 4096), ((((x**64) ** 64) ** 64) ** 64, 2**24)):
        d = diff(f * x, x, 2, method="taylor")  # (e + 1)·e·x**(e − 1)
        assert d.eval() == (e + 1) * e


def test_monomials_decode_with_negative_and_large_exponents():
    expansion = Expansion(Tape(), 10)
    expansion.atoms = [5, 9, 2]
    r = 1 << WIDTH
    assert expansion.monomial(3 - 7 * r + r * r) == ((2, 1), (5, 3), (9, -7))
    assert expansion.monomial(-(2**20) * r * r) == ((2, -(2**20)),)
    assert expansion.monomial(0) == ()


def test_the_closed_form_is_evaluated_on_arrays():
    tape = Tape()
    x = tape.var("x", 0.0)
    d = exp(-x * x / 2).diff(x, 8)
    pts = np.linspace(-2.0, 2.0, 7)
    X = sympy.Symbol("x")
    expected = sympy.lambdify(X, sympy.diff(sympy.exp(-X * X / 2), X, 8))(pts)
    np.testing.assert_allclose(d.eval({x: pts}), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("text", ["1/(1+x**2)", "sqrt(1+x**2)", "log(1+x**2)", "exp(-x**2/2)*y"])
def test_the_form_diff_returns_does_not_depend_on_current_values(text):
    """The closed form is checked at fixed probe points, so the graph is the same wherever the
    vars stand (it used to flip between 14 and 20 nodes for 1/(1+x²) at n = 6)."""
    graphs = set()
    for value in (0.0, 0.5, 3.0, 20.0, -7.0):
        tape = Tape()
        x, y = tape.var("x", value), tape.var("y", -value)
        f = sad.parse(text, tape=tape)
        d = f.diff(x, 6)
        graphs.add(tuple(tape.nodes[d.index:]) + (len(tape),))
        assert close(d.eval({x: 0.8, y: 1.2}), sympy_value(sympy.diff(f.to_sympy(), sympy.Symbol("x"), 6), x=0.8, y=1.2))
    assert len(graphs) == 1


def _exact(expr, x: float) -> sympy.Float:
    """SymPy's value of an expression in x at a float point, with 40 digits."""
    return sympy.N(expr.subs(sympy.Symbol("x"), sympy.Rational(x)), 40)


def _exact_at(expr, points) -> list:
    """SymPy's expression evaluated by mpmath with 40 digits at each float point."""
    f = sympy.lambdify(sympy.Symbol("x"), expr, "mpmath")
    with mpmath.workdps(40):
        return [f(mpmath.mpf(float(p))) for p in points]


def test_legendre_closed_form_is_refused_where_it_cancels():
    # d^17/dx^17 (x^2 - 1)^17 = 17!·2^17·P17(x) (Rodrigues): exact integers at x = ±1, where the
    # Horner form lost 5.6e-12 to cancellation (its size at x = 4 hid it under the old probe)
    tape = Tape()
    x = tape.var("x", 1.0)
    d = ((x**2 - 1) ** 17).diff(x, 17)
    scale = math.factorial(17) * 2**17
    for point in (-1.0, -0.75, -0.5, 0.3, 0.5, 0.75, 1.0):
        exact = scale * sympy.legendre(17, sympy.Rational(point))  # exact rational
        assert abs(d.eval({x: point}) - exact) <= 1e-14 * abs(exact), point


def test_runge_twelfth_derivative_is_as_accurate_as_the_recurrence():
    # (1/(1+x^2))^(12) at x = 2: the closed form was 2.1e-13 off, Taylor mode 2.3e-15
    tape = Tape()
    x = tape.var("x", 2.0)
    d = (1 / (1 + x**2)).diff(x, 12)
    expr = sympy.diff(1 / (1 + sympy.Symbol("x") ** 2), sympy.Symbol("x"), 12)
    for point in (2.0, 2.1, 3.3, 4.0):
        exact = _exact(expr, point)
        assert abs(d.eval({x: point}) - exact) <= 1e-14 * abs(exact), point


ACCURACY_CASES = ["exp(-x**2/2)", "1/(1+x**2)", "log(1+x**2)", "sqrt(1+x**2)", "atan(x)", "(x**2-1)**9"]


@pytest.mark.parametrize("text", ACCURACY_CASES)
@pytest.mark.parametrize("n", [4, 7, 10])
def test_the_form_kept_is_within_1e13_of_the_recurrence_at_every_probe(text, n):
    # What the check promises, against SymPy at 40 digits: at every probe point the n-th
    # derivative diff returns is within 1e-13 (relative, at that point) of being as accurate as
    # the recurrence, whether it is the closed form or the recurrence itself
    tape = Tape()
    x = tape.var("x", 0.0)
    d = diff(sad.parse(text, tape=tape), x, n, method="taylor")
    recurrence = taylor_graph(sad.parse(text, tape=tape), x, n)[-1]
    expr = sympy.diff(sympy.sympify(text), sympy.Symbol("x"), n)
    ours, theirs = d.eval({x: horner.PROBES}), recurrence.eval({x: horner.PROBES})
    for point, a, b, exact in zip(horner.PROBES, ours, theirs, _exact_at(expr, horner.PROBES)):
        if exact != 0:
            assert abs(a - exact) <= 1.01 * abs(b - exact) + 1.01e-13 * abs(exact), (text, n, point)
