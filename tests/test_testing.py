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
