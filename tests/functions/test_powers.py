"""Powers at the edges of their domain — bases 0, inf, negative, and a var base at 0 — through
every way of getting a value or a derivative: eval, derive, grad, grad_graph, diff (each method),
taylor_graph and lambdify (both backends). None may raise or warn; each must give the true value,
nan where the real function is undefined, and the limit where one exists. Oracles: the functions
themselves are constant (0 ** b = 0 for b > 0, inf ** b = 0 for b < 0) or closed forms
(log(a)^n·a^b), and SciPy's xlogy."""

import math
import warnings

import numpy as np
import pytest
import scipy.special

import subgraph_ad as sad
from subgraph_ad import Tape, taylor_graph
from subgraph_ad.functions import xlogy

ORDERS = (1, 2, 3, 5)


def _every_derivative(base: float, b: float) -> dict[str, list[float]]:
    """The derivatives of base ** x in x at x = b, orders ``ORDERS``, by every path, with any
    warning an error."""
    found: dict[str, list[float]] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for method in ("graph", "taylor", "auto"):
            tape = Tape()
            x = tape.var("x", b)
            found[method] = [(base**x).diff(x, n, method=method).eval() for n in ORDERS]
        tape = Tape()
        x = tape.var("x", b)
        z = base**x
        series = taylor_graph(z, x, max(ORDERS))
        found["taylor_graph"] = [series[n - 1].eval() for n in ORDERS]
        f = sad.lambdify([x], [z.diff(x, n) for n in ORDERS])
        found["lambdify"] = list(f(b))
        found["lambdify arrays"] = [float(v[0]) for v in f(np.array([b, b]))]
        first = [z.derive(x), z.grad()[x], z.grad_graph(x).eval()]
        found["first order (derive, grad, grad_graph)"] = first
    return found


def _same(got: float, want: float) -> bool:
    return (math.isnan(got) and math.isnan(want)) or got == want


@pytest.mark.parametrize("b", [0.5, 1.5, 2.0, 7.0])
def test_zero_to_a_positive_power_has_derivatives_zero(b):
    # 0 ** x = 0 for every x > 0: every derivative is 0 (it was nan, then an OverflowError
    # from order 3 in Taylor mode)
    for path, values in _every_derivative(0.0, b).items():
        assert all(v == 0.0 for v in values), (path, values)


@pytest.mark.parametrize("b", [1.5, -1.5, 2.0])
def test_infinity_to_a_power(b):
    # inf ** x is 0 for x < 0 (derivatives 0), inf for x > 0: log(c)^n·c^x -> inf as c -> inf
    want = 0.0 if b < 0 else math.inf
    for path, values in _every_derivative(math.inf, b).items():
        assert all(v == want for v in values), (path, values)


@pytest.mark.parametrize("b", [-1.5, 0.5, 2.0, 3.0])
def test_a_negative_base_has_no_real_derivative(b):
    # (-2) ** x is real only at whole x, isolated points: no derivative anywhere (nan), where
    # Taylor mode raised ValueError
    for path, values in _every_derivative(-2.0, b).items():
        assert all(math.isnan(v) for v in values), (path, values)


def test_numbers_from_a_derivative_of_zero_to_a_power():
    # derive and grad of the graph of d(0 ** x)/dx (an xlogy node) at x > 0: 0, as the graph's
    # own next order says; a tangent times log(0) would be nan
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tape = Tape()
        x = tape.var("x", 1.5)
        d = (0.0**x).diff(x)
        assert (d.derive(x), d.grad()[x], d.diff(x).eval()) == (0.0, 0.0, 0.0)


def test_zero_to_a_negative_power_gives_the_limits_of_its_derivatives():
    # 0 ** x = inf for x < 0, a pole: d^n/dx^n c^x = log(c)^n·c^x -> (-1)^n·inf as c -> 0+
    found = _every_derivative(0.0, -1.5)
    assert found.pop("first order (derive, grad, grad_graph)") == [-math.inf] * 3
    for path, values in found.items():
        assert values == [(-1.0) ** n * math.inf for n in ORDERS], (path, values)


def test_values_of_edge_powers_are_numpys():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for base in (0.0, -2.0, math.inf, -math.inf):
            for b in (-1.5, 0.0, 2.0, 2.5):
                tape = Tape()
                x = tape.var("x", b)
                with np.errstate(all="ignore"):
                    want = np.power(base, b)
                assert _same((base**x).eval(), want), (base, b)


def test_a_var_base_at_zero():
    # x ** y at x = 0, y = 2.5: as a function of y it is 0 near 2.5, so d/dy is 0 at every
    # order; d/dx = y·x^(y-1) = 0; a positive x gives log(x)^n·x^y
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tape = Tape()
        x, y = tape.var("x", 0.0), tape.var("y", 2.5)
        z = x**y
        assert z.derive(y) == 0.0 and z.grad()[y] == 0.0 and z.grad()[x] == 0.0
        assert [d.eval() for d in z.grad_graph([x, y])] == [0.0, 0.0]
        for method in ("graph", "taylor", "auto"):
            assert [z.diff(y, n, method=method).eval() for n in ORDERS] == [0.0] * len(ORDERS), method
            for n in ORDERS:
                want = math.log(0.3) ** n * 0.3**2.5
                assert z.diff(y, n, method=method).eval({x: 0.3}) == pytest.approx(want, rel=1e-13), (method, n)


def test_a_positive_constant_base_is_unchanged():
    # 2 ** x: derivatives log(2)^n·2^x, and the graph is the plain product (no xlogy node)
    tape = Tape()
    x = tape.var("x", 1.5)
    z = 2.0**x
    for n in ORDERS:
        assert z.diff(x, n).eval() == pytest.approx(math.log(2.0) ** n * 2.0**1.5, rel=1e-14)
    assert all(node.op != "fn" for node in tape.nodes)


def test_xlogy_matches_scipy():
    p = np.array([0.0, 0.0, 0.0, 0.0, 2.0, -1.5, 0.0, 3.0, np.inf, 1.0])
    a = np.array([0.0, np.inf, -1.0, 2.0, 0.5, 0.0, np.nan, -1.0, 0.0, np.inf])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ours = xlogy(p, a)
        scalars = [xlogy(float(u), float(v)) for u, v in zip(p, a)]
    with np.errstate(all="ignore"):
        want = scipy.special.xlogy(p, a)
    np.testing.assert_array_equal(ours, want)
    np.testing.assert_array_equal(scalars, want)


def test_xlogy_derivatives_match_their_closed_forms():
    # d/dp p·log(a) = log(a), d/da = p/a, on a Term
    tape = Tape()
    p, a = tape.var("p", 1.7), tape.var("a", 0.6)
    z = xlogy(p * p, a)
    assert z.eval() == pytest.approx(1.7**2 * math.log(0.6), rel=1e-15)
    assert z.diff(p).eval() == pytest.approx(2 * 1.7 * math.log(0.6), rel=1e-15)
    assert z.diff(a, 2).eval() == pytest.approx(-(1.7**2) / 0.6**2, rel=1e-14)
    assert z.diff(p, a).eval() == pytest.approx(2 * 1.7 / 0.6, rel=1e-15)
    assert z.grad()[a] == pytest.approx(1.7**2 / 0.6, rel=1e-15)


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_lambdify_lowers_xlogy(backend):
    tape = Tape()
    x = tape.var("x", 1.0)
    y = tape.var("y", 1.0)
    f = sad.lambdify([x, y], (x**y).diff(y, 2), backend=backend)
    assert f.backend == backend  # compiled, no fallback
    xs = np.array([0.0, 0.0, 0.5, 2.0])
    ys = np.array([1.5, -1.0, 2.0, 3.0])
    with np.errstate(all="ignore"):
        want = np.where(xs == 0, np.where(ys > 0, 0.0, np.inf), np.log(xs) ** 2 * xs**ys)
    np.testing.assert_allclose(f(xs, ys), want, rtol=1e-14)
