"""Every built-in function against SymPy (30 digits) on composite arguments in its domain:
derivatives to order 6 by gen_graph passes and in Taylor mode, to order 12 by ``diff``; numeric
forward and reverse modes against the derivative subgraph; both compiled backends against
``eval``; the parser and the renderer."""

import math
from pathlib import Path
import warnings

import mpmath
import numpy as np
import pytest
import sympy

import subgraph_ad as sad
from subgraph_ad.compile.lambdify import BackendWarning
from conftest import close

X = sympy.Symbol("x", real=True)  # real: |x| and sign(x) differentiate to sign(x), 0
#: name -> (function, inner argument as a function of x, points x where the argument is inside
#: the function's domain and away from its singularities)
UNARY = {
    "asin": (sad.asin, lambda x: 0.2 + 0.3 * x, (0.4, 0.9)),
    "acos": (sad.acos, lambda x: 0.2 + 0.3 * x, (0.4, 0.9)),
    "atan": (sad.atan, lambda x: 0.2 + 0.7 * x, (0.4, 0.9)),
    "sinh": (sad.sinh, lambda x: 0.2 + 0.7 * x, (0.4, 0.9)),
    "cosh": (sad.cosh, lambda x: 0.2 + 0.7 * x, (0.4, 0.9)),
    "asinh": (sad.asinh, lambda x: 0.2 + 0.7 * x, (0.4, 0.9)),
    "acosh": (sad.acosh, lambda x: 1.5 + 0.3 * x, (0.4, 0.9)),
    "atanh": (sad.atanh, lambda x: 0.2 + 0.3 * x, (0.4, 0.9)),
    "erf": (sad.erf, lambda x: 0.2 + 0.7 * x, (0.4, 0.9)),
    "erfc": (sad.erfc, lambda x: 0.2 + 0.7 * x, (0.4, 0.9)),
    "log1p": (sad.log1p, lambda x: 0.2 + 0.7 * x, (0.4, 0.9)),
    "expm1": (sad.expm1, lambda x: 0.2 + 0.7 * x, (0.4, 0.9)),
    "log2": (sad.log2, lambda x: 0.2 + 0.7 * x, (0.4, 0.9)),
    "log10": (sad.log10, lambda x: 0.2 + 0.7 * x, (0.4, 0.9)),
    "cbrt": (sad.cbrt, lambda x: 0.2 + 0.7 * x, (0.4, 0.9)),
    "abs": (sad.abs, lambda x: x - 0.5, (0.2, 0.9)),  # one point each side of 0
    "sign": (sad.sign, lambda x: x - 0.5, (0.2, 0.9)),
    "sec": (sad.sec, lambda x: 0.2 + 0.7 * x, (0.4, 0.9)),
    "csc": (sad.csc, lambda x: 0.2 + 0.7 * x, (0.4, 0.9)),
    "cot": (sad.cot, lambda x: 0.2 + 0.7 * x, (0.4, 0.9)),
}
BINARY = {
    "atan2": (sad.atan2, (0.4, 0.9)),
    "hypot": (sad.hypot, (0.4, 0.9)),
    "pow": (sad.pow, (0.4, 0.9)),
}


def _unary(name, nonlinear=False):
    fn, inner, points = UNARY[name]
    tape = sad.Tape()
    x = tape.var("x", points[0])
    u = inner(x) + (x * x / 5 if nonlinear else 0)  # a non-linear argument exercises the recurrences
    return tape, x, fn(u), points


def _binary(name):
    fn, points = BINARY[name]
    tape = sad.Tape()
    x = tape.var("x", points[0])
    return tape, x, fn(0.3 + 0.6 * x + x * x / 5, 1.1 - 0.4 * x), points


def sympy_value(expr, x):
    """The 30-digit value of a SymPy expression in the real symbol x."""
    return float(expr.evalf(30, subs={X: sympy.Float(x, 30)}))


def _case(name, nonlinear=False):
    return _binary(name) if name in BINARY else _unary(name, nonlinear)


ALL = sorted(UNARY) + sorted(BINARY)


def _sympy_derivatives(f, n):
    out, d = [], f.to_sympy().subs(sympy.Symbol("x"), X)
    for _ in range(n):
        d = sympy.diff(d, X)
        out.append(d)
    return out


@pytest.mark.parametrize("name", ALL)
def test_gen_graph_and_taylor_mode_match_sympy_to_order_6(name):
    tape, x, f, points = _case(name, nonlinear=True)
    reference = _sympy_derivatives(f, 6)
    by_graph, d = [], f
    for _ in range(6):
        d = d.gen_graph(x)
        by_graph.append(d)
    by_taylor = sad.taylor_graph(f, x, 6)
    for p in points:
        for k in range(6):
            want = sympy_value(reference[k], x=p)
            # 1e-9 relative: both sides are sums of a few dozen rounded terms at order 6
            assert close(by_graph[k].eval({x: p}), want, 1e-9), (name, "graph", k + 1, p)
            assert close(by_taylor[k].eval({x: p}), want, 1e-9), (name, "taylor", k + 1, p)


@pytest.mark.parametrize("name", ALL)
def test_diff_matches_mpmath_to_order_12(name):
    """The 12th derivative against mpmath's numerical differentiation of f's SymPy form at 60
    digits (SymPy's own 12th derivative of x**y has a million operations: minutes to build)."""
    tape, x, f, points = _case(name)
    g = sympy.lambdify(X, f.to_sympy().subs(sympy.Symbol("x"), X), modules="mpmath")
    d = f.diff(x, 12)
    with mpmath.workdps(60):
        for p in points:
            reference = float(mpmath.diff(g, mpmath.mpf(p), 12))
            # order 12: values up to ~1e12 from sums of many terms; 1e-8 relative leaves 7 digits
            assert close(d.eval({x: p}), reference, 1e-8), (name, p)


@pytest.mark.parametrize("name", ALL)
def test_numeric_modes_agree_with_the_derivative_subgraph(name):
    tape, x, f, points = _case(name, nonlinear=True)
    d = f.gen_graph(x)
    for p in points:
        # the same derivative by two routes: rounding differs by a few ulps only
        assert f.derive(x, {x: p}) == pytest.approx(d.eval({x: p}), rel=1e-12, abs=1e-14)
        assert f.grad({x: p})[x] == pytest.approx(d.eval({x: p}), rel=1e-12, abs=1e-14)


@pytest.mark.parametrize("backend", ["numpy", "numba"])
@pytest.mark.parametrize("name", ALL)
def test_both_backends_agree_with_eval(name, backend):
    tape, x, f, points = _case(name, nonlinear=True)
    d3 = f.diff(x, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", BackendWarning)  # the function's own lowering compiles
        compiled = sad.lambdify([x], [f, d3], backend=backend)
    grid = np.linspace(*points, 7)
    values, derivatives = compiled(grid)
    for p, v, dv in zip(grid, values, derivatives):
        assert v == pytest.approx(f.eval({x: p}), rel=1e-13)
        assert dv == pytest.approx(d3.eval({x: p}), rel=1e-12)
    assert compiled(points[0])[0] == pytest.approx(f.eval({x: points[0]}), rel=1e-13)


@pytest.mark.parametrize("name", ALL)
def test_the_parser_knows_it_and_the_graph_shows_its_name(name):
    tape = sad.Tape()
    tape.var("x", 0.6)
    text = f"{name}(x, 2)" if name in BINARY else f"{name}(x)"
    t = sad.parse(text, tape=tape)
    fn = BINARY[name][0] if name in BINARY else UNARY[name][0]
    assert t.eval() == pytest.approx(fn(0.6, 2.0) if name in BINARY else fn(0.6), rel=1e-15, nan_ok=True)
    if name != "pow":  # pow(x, 2) is the power operation itself
        assert f'label="{name}"' in t.to_dot()


def test_values_on_numbers_follow_numpy_and_math():
    assert sad.asin(0.5) == pytest.approx(math.pi / 6)
    assert sad.erf(0.5) == pytest.approx(math.erf(0.5), rel=1e-15)
    assert sad.erfc(3.0) == pytest.approx(math.erfc(3.0), rel=1e-14)
    assert sad.cbrt(-8.0) == pytest.approx(-2.0)
    assert sad.log2(8.0) == pytest.approx(3.0) and sad.log10(1000.0) == pytest.approx(3.0)
    assert sad.atan2(1.0, -1.0) == pytest.approx(3 * math.pi / 4)
    assert sad.hypot(3.0, 4.0) == 5.0 and sad.pow(2.0, 10.0) == 1024.0
    assert math.isnan(sad.asin(2.0)) and math.isnan(sad.acosh(0.5)) and sad.atanh(1.0) == math.inf
    np.testing.assert_allclose(sad.erf(np.array([-1.0, 0.0, 2.0])), [math.erf(-1.0), 0.0, math.erf(2.0)], rtol=1e-15)


def test_abs_and_sign_at_zero_follow_sympy():
    """d|u|/du at u = 0 is sign(0) = 0, SymPy's choice; sign's derivative is a structural zero."""
    tape = sad.Tape()
    x = tape.var("x", 0.0)
    assert sad.abs(x).gen_graph(x).eval() == 0.0 == float(sympy.sign(0))
    assert sad.sign(x).gen_graph(x).index == tape.zero.index
    assert sad.abs(x).diff(x, 2).index == tape.zero.index


def test_the_right_hand_partial_of_a_binary_function_on_its_own():
    """d/dy atan2(y, x) and d/dx: each partial alone (rustograd's BinaryFn differentiated the
    left operand twice)."""
    tape = sad.Tape()
    y, x = tape.var("y", 0.7), tape.var("x", -1.3)
    f = sad.atan2(y, x)
    assert f.gen_graph(x).eval() == pytest.approx(-0.7 / (0.7**2 + 1.3**2), rel=1e-15)
    assert f.gen_graph(y).eval() == pytest.approx(-1.3 / (0.7**2 + 1.3**2), rel=1e-15)
    assert f.diff(x, y).eval() == pytest.approx(f.diff(y, x).eval(), rel=1e-14)
    h = sad.hypot(y, x)
    assert h.gen_graph(x).eval() == pytest.approx(-1.3 / math.hypot(0.7, 1.3), rel=1e-15)
    g = f.grad()
    assert (g[y], g[x]) == pytest.approx((f.gen_graph(y).eval(), f.gen_graph(x).eval()), rel=1e-15)


def test_the_constants_e_and_pi():
    t = sad.parse("e^x + pi*x")
    x = t.tape.vars["x"]
    assert t.eval({x: 1.0}) == pytest.approx(math.e + math.pi)
    assert list(t.tape.vars) == ["x"]
    tape = sad.Tape()
    e = tape.var("e", 2.0)  # a var of that name takes precedence on its own tape
    assert sad.parse("e * 3", tape=tape).eval() == 6.0 and e.name == "e"


def _count_table():
    """The node counts docs/functions.md publishes: name -> the eight numbers of its row."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "functions.md").read_text()
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 5 and cells[0] and cells[1][:1].isdigit():
            numbers = [int(n) for cell in cells[1:] for n in cell.split(" / ")]
            rows[cells[0].removesuffix("(x, y)")] = numbers
    return rows


def test_the_published_node_counts_at_orders_10_and_20():
    rows = _count_table()
    assert set(rows) >= set(ALL) - {"pow"} | {"exp", "log", "sqrt", "sin", "cos", "tan", "tanh", "sigmoid"}
    for name, expected in rows.items():
        fn = sad.FUNCTIONS[name]
        counts = []
        for inner in ("x", "u"):
            for n in (10, 20):
                for how in ("taylor", "diff"):
                    tape = sad.Tape()
                    x, y = tape.var("x", 0.3), tape.var("y", 1.1)
                    arg = x if inner == "x" else 0.5 + x * x / 3
                    f = fn(arg, y) if fn.arity == 2 else fn(arg)
                    start = len(tape)
                    sad.taylor_graph(f, x, n) if how == "taylor" else f.diff(x, n)
                    counts.append(len(tape) - start)
        # the table's column order: x (n=10: all, alone; n=20: all, alone), then u likewise
        assert counts == [expected[i] for i in (0, 2, 1, 3, 4, 6, 5, 7)], name
