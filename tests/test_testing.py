"""The verification helpers: pass, fail and inconclusive are reported honestly."""

import numpy as np
import pytest

import subgraph_ad as sad
from subgraph_ad import Tape, exp, sin
from subgraph_ad.testing import DerivativeMismatch, assert_matches_sympy, check_against_sympy


def test_a_correct_derivative_passes_symbolically_and_numerically():
    tape = Tape()
    x = tape.var("x", 0.5)
    report = check_against_sympy(exp(-x**2 / 2), x, 3)
    assert report.status == "pass" and report.symbolic == "equal"
    assert len(report.points) == 5 and all(p.status == "pass" for p in report.points)
    assert "pass" in str(report) and "dxdxdx" in str(report)


def test_a_given_derivative_is_checked_as_built():
    tape = Tape()
    x = tape.var("x", 0.5)
    f = exp(-x**2 / 2)
    d3 = f.diff(x, 3)
    length = len(tape)
    assert check_against_sympy(f, x, 3, derivative=d3).status == "pass" and len(tape) == length
    report = check_against_sympy(f, x, 3, derivative=f.diff(x, 2))  # the wrong order: caught
    assert report.status == "fail"


def test_mixed_partials_pass():
    tape = Tape()
    x, y = tape.var("x"), tape.var("y")
    assert assert_matches_sympy(sin(x * y) * exp(y), x, 2, y).status == "pass"


class WrongSin(sad.UnaryFn):
    """A deliberately wrong rule: claims d sin = sin."""

    name = "wrongsin"

    def f(self, v):
        return np.sin(v)

    def grad(self, v):
        return np.sin(v)

    def gen_graph(self, input, output, derived):
        return output * derived

    def to_sympy(self, arg):
        import sympy

        return sympy.sin(arg)


def test_a_wrong_rule_fails():
    tape = Tape()
    x = tape.var("x")
    report = check_against_sympy(WrongSin()(x), x)
    assert report.status == "fail"
    with pytest.raises(DerivativeMismatch, match="fail"):
        assert_matches_sympy(WrongSin()(x), x)


def test_nan_on_both_sides_everywhere_is_inconclusive_not_pass():
    tape = Tape()
    x = tape.var("x")
    f = sad.log(-x - 1) * sad.log(-x - 1) * x  # real only for x < -1; points are in [0.2, 1.8]
    report = check_against_sympy(f, x, 2)
    assert report.symbolic != "equal" or report.status == "pass"
    if report.symbolic != "equal":
        assert report.status == "inconclusive"
        with pytest.raises(DerivativeMismatch, match="inconclusive"):
            assert_matches_sympy(f, x, 2)


def test_reports_are_reproducible():
    tape = Tape()
    x = tape.var("x")
    a = check_against_sympy(sin(x) ** 3, x, 2, seed=7)
    b = check_against_sympy(sin(x) ** 3, x, 2, seed=7)
    assert [p.point for p in a.points] == [p.point for p in b.points]


class Softplus(sad.UnaryFn):
    """A correct user function without to_sympy: SymPy knows it only as an undefined function."""

    name = "softplus"

    def f(self, v):
        return np.logaddexp(0.0, v)

    def grad(self, v):
        return 1 / (1 + np.exp(-v))

    def fdiff(self, input, output):
        return sad.sigmoid(input)


def test_a_function_sympy_cannot_evaluate_is_inconclusive_not_fail():
    tape = Tape()
    x = tape.var("x")
    f = Softplus()(x * x)
    for order in (1, 2):
        report = check_against_sympy(f, x, order)
        assert report.status == "inconclusive" and report.symbolic != "equal"
        assert report.counts == {"pass": 0, "fail": 0, "inconclusive": 5}
        assert all(np.isfinite(p.ours) and np.isnan(p.sympy) for p in report.points)
        assert report.note == "SymPy cannot evaluate softplus: no to_sympy"
        assert "(SymPy cannot evaluate softplus: no to_sympy)" in str(report)
    with pytest.raises(DerivativeMismatch, match="inconclusive.*softplus: no to_sympy"):
        assert_matches_sympy(f, x)


def test_where_the_unknown_function_drops_out_the_points_are_compared():
    tape = Tape()
    x, y = tape.var("x"), tape.var("y")
    report = check_against_sympy(Softplus()(y) + sin(x) * x, x, 2)  # d²/dx² has no softplus
    assert report.status == "pass" and report.counts["pass"] == 5 and report.note == ""


def test_a_wrong_rule_is_still_a_fail_next_to_an_unknown_function():
    tape = Tape()
    x, y = tape.var("x"), tape.var("y")
    report = check_against_sympy(Softplus()(y) + WrongSin()(x), x)
    assert report.status == "fail"
