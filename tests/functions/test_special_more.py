"""The special functions SciPy provides (gamma, lgamma, digamma, polygamma, erfinv, sinc) and the
stable log-sum-exp family (logaddexp, logaddexp2, softplus, logsumexp), against SymPy's
derivatives evaluated to 30 digits and mpmath's values, written here independently of the
library's own SymPy forms; sinc's derivatives at 0 against its Maclaurin coefficients."""

import math

import mpmath
import numpy as np
import pytest
import sympy

import subgraph_ad as sad

X = sympy.Symbol("x", real=True)

#: name -> (our function of a Term, the same function written in SymPy, points x)
UNARY = {
    "gamma": (lambda u: sad.gamma(u), sympy.gamma, (0.4, 1.3)),
    "lgamma": (lambda u: sad.lgamma(u), sympy.loggamma, (0.4, 1.3)),
    "digamma": (lambda u: sad.digamma(u), sympy.digamma, (0.4, 1.3)),
    "polygamma2": (lambda u: sad.polygamma(2, u), lambda a: sympy.polygamma(2, a), (0.4, 1.3)),
    "erfinv": (lambda u: sad.erfinv(u), sympy.erfinv, (0.1, 0.6)),
    "softplus": (lambda u: sad.softplus(u), lambda a: sympy.log(1 + sympy.exp(a)), (0.4, 1.3)),
    "sinc": (lambda u: sad.sinc(u), lambda a: sympy.sin(sympy.pi * a) / (sympy.pi * a), (0.4, 1.3)),
}
BINARY = {
    "logaddexp": (sad.logaddexp, lambda a, b: sympy.log(sympy.exp(a) + sympy.exp(b))),
    "logaddexp2": (sad.logaddexp2, lambda a, b: sympy.log(2**a + 2**b) / sympy.log(2)),
}


def inner(x):
    """A non-linear argument in (0.1, 1.2) for x in [0.1, 1.3]: exercises the chain rule and the
    Taylor recurrences, not only the local derivative."""
    return 0.3 * x + x * x / 5 + 0.05


def reference(expr, x0, order):
    return float(sympy.diff(expr, X, order).evalf(30, subs={X: sympy.Float(x0, 30)}))


@pytest.mark.parametrize("method", ["graph", "taylor"])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_derivatives_agree_with_sympy(name, method):
    ours, theirs, points = UNARY[name]
    tape = sad.Tape()
    x = tape.var("x", points[0])
    f = ours(inner(x))
    expr = theirs(inner(X))
    for x0 in points:
        assert f.eval({x: x0}) == pytest.approx(reference(expr, x0, 0), rel=1e-13)
        for order in range(1, 5):
            got = f.diff(x, order, method=method).eval({x: x0})
            assert got == pytest.approx(reference(expr, x0, order), rel=1e-10, abs=1e-12), (name, x0, order)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_partials_agree_with_sympy(name):
    ours, theirs = BINARY[name]
    Y = sympy.Symbol("y", real=True)
    tape = sad.Tape()
    x, y = tape.var("x", 0.7), tape.var("y", -0.4)
    f = ours(x * x + 0.3, 2 * y - x)
    expr = theirs(X * X + 0.3, 2 * Y - X)
    at = {X: sympy.Float(0.7, 30), Y: sympy.Float(-0.4, 30)}
    for args in ((x,), (y,), (x, y), (x, x, y), (y, y, y)):
        sym = [X if a is x else Y for a in args]
        want = float(sympy.diff(expr, *sym).evalf(30, subs=at))
        assert f.diff(*args).eval() == pytest.approx(want, rel=1e-12, abs=1e-14), (name, args)


def test_values_against_mpmath_including_where_naive_formulas_overflow():
    for v in (-3.7, -0.5, 0.5, 2.5, 7.25):
        if v > 0:
            assert sad.lgamma(v) == pytest.approx(float(mpmath.loggamma(v)), rel=1e-14)
        assert sad.gamma(v) == pytest.approx(float(mpmath.gamma(v)), rel=1e-14)
        assert sad.digamma(v) == pytest.approx(float(mpmath.digamma(v)), rel=1e-13)
        assert sad.polygamma(3, v) == pytest.approx(float(mpmath.polygamma(3, v)), rel=1e-12)
    for p in (-0.99, -0.3, 0.0, 0.42, 0.999):
        assert sad.erf(sad.erfinv(p)) == pytest.approx(p, rel=1e-14, abs=1e-16)
    # exp(1000) overflows; the stable forms do not
    assert sad.logaddexp(1000.0, 999.0) == pytest.approx(float(mpmath.log(mpmath.exp(1000) + mpmath.exp(999))), rel=1e-15)
    assert sad.logaddexp2(1000.0, 1000.0) == 1001.0
    assert sad.softplus(800.0) == 800.0 and sad.softplus(-800.0) == pytest.approx(math.exp(-800.0), rel=1e-14)
    tape = sad.Tape()
    x = tape.var("x", 700.0)
    assert sad.softplus(x).gen_graph(x).eval() == 1.0  # σ(700), not inf/inf


def test_sinc_derivatives_at_zero_are_its_maclaurin_coefficients():
    """sinc(x) = Σ (−1)ᵐ (πx)²ᵐ/(2m+1)!, so sinc⁽²ᵐ⁾(0) = (−1)ᵐ π²ᵐ/(2m+1) and the odd ones are
    0: finite at every order, where (cos(πx) − sinc x)/x is 0/0."""
    tape = sad.Tape()
    x = tape.var("x", 0.0)
    f = sad.sinc(x)
    for order in range(1, 9):
        want = 0.0 if order % 2 else (-1) ** (order // 2) * math.pi ** order / (order + 1)
        for method in ("graph", "taylor"):
            assert f.diff(x, order, method=method).eval() == pytest.approx(want, rel=1e-13, abs=1e-13), order
    assert f.eval() == 1.0
    # near 0 the series and away from it Leibniz's rule: both continuous with SymPy's limit form
    expr = sympy.sin(sympy.pi * X) / (sympy.pi * X)
    for x0 in (1e-4, 0.3, 0.63, 0.64, 2.1, 9.7):
        for order in (1, 3, 6):
            assert f.diff(x, order).eval({x: x0}) == pytest.approx(reference(expr, x0, order), rel=1e-9, abs=1e-12)


def test_logsumexp_is_stable_and_its_gradient_is_the_softmax():
    a = np.array([1000.0, 1001.0, 999.5])
    want = float(mpmath.log(sum(mpmath.exp(mpmath.mpf(v)) for v in a)))
    assert sad.logsumexp(a) == pytest.approx(want, rel=1e-15)
    g = sad.grad(lambda v: sad.logsumexp(v))(a)
    softmax = np.exp(a - a.max()) / np.sum(np.exp(a - a.max()))
    np.testing.assert_allclose(g, softmax, rtol=1e-14)
    # the Hessian of logsumexp is diag(p) − p pᵀ
    H = sad.hessian(lambda v: sad.logsumexp(v))(a)
    np.testing.assert_allclose(H, np.diag(softmax) - np.outer(softmax, softmax), rtol=1e-12, atol=1e-15)
    # along an axis, as scipy.special.logsumexp
    scipy_special = pytest.importorskip("scipy.special")
    m = np.array([[0.5, -1.0, 2.0], [3.0, 0.25, -2.0]])
    np.testing.assert_allclose(sad.logsumexp(m, axis=1), scipy_special.logsumexp(m, axis=1), rtol=1e-15)
    jac = sad.jacobian(lambda v: sad.logsumexp(v, axis=0))(m)
    for j in range(3):
        col = np.exp(m[:, j] - scipy_special.logsumexp(m[:, j]))
        np.testing.assert_allclose(jac[j, :, j], col, rtol=1e-14)


def test_polygamma_takes_a_whole_order_and_is_not_differentiated_in_it():
    tape = sad.Tape()
    x = tape.var("x", 1.0)
    assert sad.polygamma(1, x).eval() == pytest.approx(math.pi ** 2 / 6, rel=1e-15)
    assert sad.polygamma(1, x).gen_graph(x).eval() == pytest.approx(float(mpmath.polygamma(2, 1)), rel=1e-14)
    for bad in (1.5, x, -1):
        with pytest.raises(TypeError, match="whole number"):
            sad.polygamma(bad, x)


@pytest.mark.parametrize("build, expr", [
    (lambda x: sad.gamma(x) + sad.lgamma(x), sympy.gamma(X) + sympy.loggamma(X)),
    (lambda x: sad.digamma(x) * sad.polygamma(2, x), sympy.polygamma(0, X) * sympy.polygamma(2, X)),
    (lambda x: sad.erfinv(x / 3), sympy.erfinv(X / 3)),
    (lambda x: sad.sinc(x), sympy.sinc(sympy.pi * X)),
    (lambda x: sad.logaddexp(x, 2 * x), sympy.log(sympy.exp(X) + sympy.exp(2 * X))),
])
def test_sympy_both_ways(build, expr):
    tape = sad.Tape()
    x = tape.var("x", 0.7)
    t = build(x)
    there = t.to_sympy().subs(sympy.Symbol("x"), X)
    assert float(there.evalf(30, subs={X: 0.7})) == pytest.approx(float(expr.evalf(30, subs={X: 0.7})), rel=1e-14)
    back = sad.Tape().from_sympy(expr.subs(X, sympy.Symbol("x")))
    assert back.eval({"x": 0.7}) == pytest.approx(t.eval(), rel=1e-14)


def test_the_parser_knows_them_by_name():
    t = sad.parse("gamma(x) + lgamma(x) + digamma(x) + erfinv(x / 4) + sinc(x) + logaddexp(x, 1) + logaddexp2(x, 1)")
    x = t.tape.vars["x"]
    want = (math.gamma(1.5) + math.lgamma(1.5) + float(mpmath.digamma(1.5)) + float(mpmath.erfinv(0.375))
            + math.sin(math.pi * 1.5) / (math.pi * 1.5) + math.log(math.exp(1.5) + math.e) + math.log2(2 ** 1.5 + 2))
    assert t.eval({x: 1.5}) == pytest.approx(want, rel=1e-14)
