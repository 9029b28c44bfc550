"""The verification helpers: pass, fail and inconclusive are reported honestly, within a time
budget when one is given."""

import math
import multiprocessing
import re
import time

import numpy as np
import pytest
import sympy

import subgraph_ad as sad
from subgraph_ad import Tape, exp, sin, tanh
from subgraph_ad import budget, testing
from subgraph_ad.testing import (DerivativeMismatch, assert_matches_sympy, budgeted, check_against_sympy,
                                 compact_sympy, sympy_form)

from conftest import OutputTanh, PlainAtan2


def test_a_correct_derivative_passes_symbolically_and_numerically():
    tape = Tape()
    x = tape.var("x", 0.5)
    report = check_against_sympy(exp(-x**2 / 2), x, 3)
    assert report.status == "pass" and report.symbolic == "equal"
    assert len(report.points) == 5 and all(p.status == "pass" for p in report.points)
    assert str(report).startswith("pass: d³f/dx³ of exp(-x**2/2) (symbolic equal; points by sympy: 5 pass")


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
        assert all(np.isfinite(p.ours) and np.isnan(p.reference) for p in report.points)
        assert report.note == "SymPy cannot evaluate softplus: no to_sympy"
        assert report.summary.endswith("inconclusive); SymPy cannot evaluate softplus: no to_sympy")
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


# -- printing --------------------------------------------------------------------------------------
def test_a_report_prints_as_a_table_of_its_points_and_as_html():
    tape = Tape()
    x, y = tape.var("x"), tape.var("y")
    report = check_against_sympy(sin(x * y), x, y, points=3)
    lines = str(report).splitlines()
    assert lines[0] == report.summary and lines[1].split() == ["x", "y", "ours", "sympy", "status"]
    assert set(lines[2]) == {"-", " "} and len(lines) == 3 + 3
    for line, p in zip(lines[3:], report.points):
        cells = line.split()
        assert [float(c) for c in cells[:4]] == [p.point["x"], p.point["y"], p.ours, p.reference]
        # d²/dxdy sin(xy) = cos(xy) - xy sin(xy), the closed form
        xy = p.point["x"] * p.point["y"]
        assert float(cells[2]) == pytest.approx(math.cos(xy) - xy * math.sin(xy), rel=1e-14)
        assert cells[4] == "pass"
    page = report._repr_html_()
    assert page.startswith("<table><caption>pass: d²f/dxdy of sin(x*y)") and page.count("<tr>") == 1 + 3


# -- time budget -----------------------------------------------------------------------------------
def tanh_derivative(n: int, x: float) -> float:
    """d^n/dx^n tanh(x) = P_n(tanh x) with P_0 = u, P_(k+1) = (1 - u²) P_k'(u): exact integer
    polynomials, independent of SymPy's diff, mpmath.diff and our graphs."""
    u = sympy.Symbol("u")
    p = sympy.Poly(u, u)
    for _ in range(n):
        p = sympy.Poly(1 - u**2, u) * p.diff(u)
    return float(p.eval(sympy.Float(math.tanh(x), 40)))


def test_past_the_budget_mpmath_stands_in_for_sympy():
    """sympy.diff(tanh(x), x, 14) alone takes about 9 s; with a 1 s budget the check still ends,
    says why SymPy gave no verdict, and mpmath's 50-digit values agree with the closed form."""
    tape = Tape()
    x = tape.var("x")
    report = check_against_sympy(tanh(x), x, 14, timeout=1)
    assert report.symbolic == "inconclusive (SymPy took > 1 s)" and report.oracle == "mpmath"
    assert report.status == "pass" and report.counts["pass"] == 5
    assert report.note == "reference values by mpmath.diff at 50 digits"
    for p in report.points:
        assert p.reference == pytest.approx(tanh_derivative(14, p.point["x"]), rel=1e-13)
    assert "points by mpmath" in str(report) and "mpmath" in str(report).splitlines()[1]


def slow_sympy(*args):
    """Stands in for the SymPy step: never finishes within a test's budget."""
    time.sleep(60)
    yield


@pytest.fixture
def slow(monkeypatch):
    """SymPy that always runs over (the forked worker inherits the patched module)."""
    monkeypatch.setattr(testing, "_sympy_side", slow_sympy)


def test_mpmath_stand_in_still_fails_a_wrong_rule_and_passes_mixed_partials(slow):
    tape = Tape()
    x, y = tape.var("x"), tape.var("y")
    wrong = check_against_sympy(WrongSin()(x), x, timeout=0.5)
    assert wrong.oracle == "mpmath" and wrong.status == "fail"
    for p in wrong.points:  # the reference is the true cos, ours the wrong sin
        assert p.reference == pytest.approx(math.cos(p.point["x"]), rel=1e-14)
    mixed = check_against_sympy(sin(x * y) * exp(y), x, 2, y, timeout=0.5)
    assert mixed.oracle == "mpmath" and mixed.status == "pass"
    for p in mixed.points:  # d³/dx²dy of sin(xy) e^y, by hand
        a, b = p.point["x"], p.point["y"]
        truth = math.exp(b) * (-2 * b * math.sin(a * b) - b * b * a * math.cos(a * b) - b * b * math.sin(a * b))
        assert p.reference == pytest.approx(truth, rel=1e-12)
    unknown = check_against_sympy(Softplus()(x * x), x, timeout=0.5)
    assert unknown.status == "inconclusive" and "SymPy cannot evaluate softplus: no to_sympy" in unknown.note


def test_values_sympy_finished_are_kept_when_only_simplify_runs_over(monkeypatch):
    monkeypatch.setattr(sympy, "simplify", lambda expr: time.sleep(60))
    tape = Tape()
    x = tape.var("x")
    report = check_against_sympy(exp(-x**2 / 2), x, 2, timeout=2)
    assert report.oracle == "sympy" and report.symbolic == "inconclusive (SymPy took > 2 s)"
    for p in report.points:
        t = p.point["x"]
        assert p.reference == pytest.approx((t * t - 1) * math.exp(-t * t / 2), rel=1e-14)
    assert report.status == "pass"


def partial_then_hang(n):
    yield "ready"
    time.sleep(n)
    yield "never"


def failing():
    raise ValueError("a message from the worker")
    yield


def test_budgeted_kills_the_worker_and_keeps_what_it_yielded():
    start = time.monotonic()
    assert budgeted(partial_then_hang, (60,), timeout=0.5) == (["ready"], False)
    assert time.monotonic() - start < 20  # the budget is the feature: 0.5 s, with a wide margin
    assert multiprocessing.active_children() == []  # killed and reaped
    assert budgeted(partial_then_hang, (0,), timeout=None) == (["ready", "never"], True)
    with pytest.raises(ValueError, match="a message from the worker"):
        budgeted(failing, (), timeout=10)


def test_the_spawn_start_method_works_too(monkeypatch):
    """Where there is no fork (Windows) the worker is spawned, and the terms are pickled to it."""
    monkeypatch.setattr(budget, "START_METHOD", "spawn")
    tape = Tape()
    x = tape.var("x")
    report = check_against_sympy(exp(-x**2 / 2), x, 2, timeout=60)
    assert report.status == "pass" and report.symbolic == "equal" and report.oracle == "sympy"


@pytest.mark.parametrize("bad", [0, -1.0, "5", True, float("nan")])
def test_a_bad_timeout_is_refused(bad):
    tape = Tape()
    x = tape.var("x")
    with pytest.raises(ValueError, match=f"timeout must be a positive number of seconds or None, got {bad!r}"):
        check_against_sympy(x * x, x, timeout=bad)


# -- compact SymPy form ------------------------------------------------------------------------------
def rebuild(text: str) -> sympy.Expr:
    """Substitute the numbered temporaries back into the last line."""
    *temporaries, result = text.splitlines()
    names: dict[str, sympy.Expr] = {}
    for line in temporaries:
        name, value = line.split(" = ")
        names[name] = sympy.sympify(value, locals=dict(names))
    return sympy.sympify(result, locals=names)


def test_the_compact_form_is_short_and_means_the_derivative():
    tape = Tape()
    x = tape.var("x")
    d = OutputTanh()(x).diff(x, 10)
    text, cut = compact_sympy(d, max_chars=None)
    assert not cut and re.match(r"t0 = ", text) and len(text) < 2000
    flat = len(str(d.to_sympy()))
    assert flat > 10 * len(text)  # the flat form repeats shared parts (16 times longer here)
    rebuilt = rebuild(text)
    X = sympy.Symbol("x")
    for at in (0.3, 1.1):
        assert float(rebuilt.subs(X, at)) == pytest.approx(tanh_derivative(10, at), rel=1e-12)


def test_the_compact_form_is_cut_with_a_note_and_keeps_the_result():
    tape = Tape()
    x = tape.var("x")
    d = OutputTanh()(x).diff(x, 12)
    full, _ = compact_sympy(d, max_chars=None)
    text, cut = compact_sympy(d, max_chars=300)
    assert cut and len(text) <= 300 + 40
    lines = text.splitlines()
    assert lines[0] == full.splitlines()[0] and re.fullmatch(r"… \d+ more temporaries", lines[-2])
    assert full.splitlines()[-1].startswith(lines[-1].removesuffix(" …"))


def test_temporaries_do_not_clash_with_variable_names():
    tape = Tape()
    t0, t1 = tape.var("t0"), tape.var("t1")
    text, _ = compact_sympy(tanh(t0 * t1).diff(t0, 3), max_chars=None)
    assert re.match(r"tmp0 = ", text) and "t0" in text
    assert rebuild(text).equals(sympy.diff(sympy.tanh(sympy.Symbol("t0") * sympy.Symbol("t1")), sympy.Symbol("t0"), 3))


def test_sympy_form_within_a_budget():
    tape = Tape()
    x = tape.var("x")
    assert sympy_form(sin(x).diff(x, 2), timeout=30) == ("-sin(x)", False)
    with pytest.raises(ValueError, match="max_chars must be a positive number of characters or None, got 0"):
        compact_sympy(sin(x), max_chars=0)


# -- small values, cancellation and exact differences (issue "No silent wrong answers", 4 and 8) ----
def test_a_wrong_derivative_of_small_values_fails():
    """Twice the truth is a fail at any size: exp(-200x)' is below 1e-17 on [0.2, 1.8], and a
    tolerance that is absolute below 1 passed it everywhere."""
    tape = Tape()
    x = tape.var("x")
    f = exp(-200 * x)
    report = check_against_sympy(f, x, derivative=2 * f.diff(x))
    assert report.status == "fail" and report.counts["fail"] == 5
    for p in report.points:  # the reference is the closed form -200 exp(-200 x)
        assert p.reference == pytest.approx(-200 * math.exp(-200 * p.point["x"]), rel=1e-14)
    right = check_against_sympy(f, x)
    assert right.status == "pass" and right.counts["pass"] == 5
    for p in right.points:
        assert p.ours == pytest.approx(-200 * math.exp(-200 * p.point["x"]), rel=1e-14)


class TinyExp(sad.UnaryFn):
    """1e-9 exp(v), with a local derivative of twice the truth (``wrong``) or the truth."""

    name = "tinyexp"

    def __init__(self, wrong: bool = True) -> None:
        self.wrong = wrong

    def f(self, v):
        return 1e-9 * np.exp(v)

    def grad(self, v):
        return 1e-9 * np.exp(v)

    def fdiff(self, input, output):
        return 2 * output if self.wrong else output

    def to_sympy(self, arg):
        return sympy.exp(arg) / 10**9


def test_a_user_function_whose_derivative_is_twice_the_truth_fails_on_values_of_size_1e_9():
    tape = Tape()
    x = tape.var("x")
    wrong = check_against_sympy(TinyExp(wrong=True)(x), x)
    assert wrong.status == "fail" and wrong.counts["fail"] == 5
    for p in wrong.points:
        assert p.reference == pytest.approx(1e-9 * math.exp(p.point["x"]), rel=1e-14)
        assert p.ours == pytest.approx(2e-9 * math.exp(p.point["x"]), rel=1e-14)
    assert check_against_sympy(TinyExp(wrong=False)(x), x).status == "pass"


def test_an_exact_nonzero_difference_is_a_fail_even_below_the_tolerance():
    """ours - SymPy's that simplifies to a nonzero number is wrong everywhere, however small."""
    tape = Tape()
    x = tape.var("x")
    f = exp(-x**2 / 2)
    tiny = 1 / tape.const(2**40)  # an exact constant (a Python float 2.0**-40 would be a SymPy Float)
    report = check_against_sympy(f, x, derivative=f.diff(x) + tiny)
    assert report.counts["pass"] == 5  # 9e-13 is below the relative tolerance at every point
    assert report.status == "fail" and report.symbolic == "different"
    assert "ours - SymPy's = 1/1099511627776" in report.note
    with pytest.raises(DerivativeMismatch, match="fail"):
        assert_matches_sympy(f, x, derivative=f.diff(x) + tiny)


def test_cancellation_is_judged_by_the_rounding_bound_of_the_terms():
    """Near x = 1/512 the 4th derivative of atan2(x, x²) is a sum of terms far larger than it:
    a right graph is off by about 1e-5 relative in float64 (and by more than 1e-7 absolute), which
    passes because it is within float64's rounding bound of SymPy's form there, while 1 % off
    still fails. Where the reference is exactly 0, the graph's own form gives the bound."""
    tape = Tape()
    x = tape.var("x")
    f = sad.atan2(x, x * x)
    for method in ("graph", "taylor"):
        d4 = f.diff(x, 4, method=method)
        report = check_against_sympy(f, x, 4, derivative=d4, low=1 / 600, high=1 / 400)
        assert report.status == "pass", report
        assert any(abs(p.ours - p.reference) > 1e-7 * max(1.0, abs(p.reference)) for p in report.points)
        assert "within float64's rounding bound" in report.note
        for p in report.points:  # the reference is mpmath's 50-digit derivative of atan2(x, x²)
            import mpmath
            with mpmath.workdps(50):
                truth = mpmath.diff(lambda t: mpmath.atan2(t, t * t), mpmath.mpf(p.point["x"]), 4)
            assert p.reference == pytest.approx(float(truth), rel=1e-14)
        assert check_against_sympy(f, x, 4, derivative=d4 * (1 + 1 / 64), low=1 / 600, high=1 / 400).status == "fail"
    g = (x + 1) ** 2 - x**2 - 2 * x  # g' is 0; its graph 2(x + 1) - 2x - 2 rounds to a few ulps of 4
    report = check_against_sympy(g, x, points=20)
    assert report.status == "pass" and report.counts["pass"] == 20
    assert any(p.ours != 0 for p in report.points) and all(p.reference == 0 for p in report.points)
    assert check_against_sympy(g, x, derivative=g.diff(x) + 1e-12 * x, points=20).status == "fail"


def test_a_user_function_without_to_sympy_on_a_sum_is_inconclusive_at_every_order():
    """SymPy writes d/dx softplus(x + y) as Subs(Derivative(softplus(ξ), ξ), ξ, x + y), whose
    evalf recursed without end (RecursionError); it cannot be evaluated, so it is inconclusive."""
    tape = Tape()
    x, y = tape.var("x"), tape.var("y")
    f = Softplus()(x + y)
    for wrt in ((x,), (x, 2), (x, 3), (x, y), (x, 2, y)):
        report = check_against_sympy(f, *wrt, points=3)
        assert report.status == "inconclusive" and report.counts["inconclusive"] == 3, report
        assert report.note == "SymPy cannot evaluate softplus: no to_sympy"
        for p in report.points:  # ours is right: softplus' = sigmoid, and d/dx = d/dy here
            s = 1 / (1 + math.exp(-(p.point["x"] + p.point["y"])))
            assert p.ours == pytest.approx({1: s, 2: s * (1 - s), 3: s * (1 - s) * (1 - 2 * s)}[len(report.wrt)],
                                           rel=1e-13)
    timed = check_against_sympy(f, x, 2, timeout=30)
    assert timed.status == "inconclusive" and timed.note == "SymPy cannot evaluate softplus: no to_sympy"


def test_without_sympy_s_form_the_graph_s_own_form_bounds_the_rounding(slow):
    """When SymPy runs over the budget mpmath gives the values; cancellation is then judged by
    the rounding bound of the graph's own form, and a wrong factor still fails."""
    tape = Tape()
    x = tape.var("x")
    f = PlainAtan2()(x, x * x)
    d4 = f.diff(x, 4)
    report = check_against_sympy(f, x, 4, derivative=d4, low=1 / 600, high=1 / 400, timeout=1)
    assert report.oracle == "mpmath" and report.status == "pass", report
    assert "within float64's rounding bound" in report.note
    assert any(abs(p.ours - p.reference) > 1e-7 * abs(p.reference) for p in report.points)
    wrong = check_against_sympy(f, x, 4, derivative=d4 * (1 + 1 / 64), low=1 / 600, high=1 / 400, timeout=1)
    assert wrong.oracle == "mpmath" and wrong.status == "fail"


def test_a_rounding_bound_past_the_budget_leaves_the_point_failed(monkeypatch):
    monkeypatch.setattr(testing, "rounding_bound", lambda expr, point: time.sleep(60))
    tape = Tape()
    x = tape.var("x")
    f = sad.atan2(x, x * x)
    report = check_against_sympy(f, x, 4, low=1 / 600, high=1 / 400, timeout=2)
    assert report.status == "fail" and re.search(r"\d points? missed rtol with no rounding bound worked out \(> 2 s\)", report.note)


def test_the_rounding_bound_of_a_form():
    """Against a hand count: (x + 1)² - x² at x = 1e8 has terms of 1e16 for a value of 2e8 + 1."""
    x = sympy.Symbol("x")
    eps = np.finfo(float).eps
    assert testing.rounding_bound(x * x - 1, {"x": 3.0}) == pytest.approx(eps * (1 * 9 + 1 * (9 + 1)))
    bound = testing.rounding_bound((x + 1) ** 2 - x**2, {"x": 1e8})
    # x + 1: eps(1e8 + 1); its square: 2(x + 1) times that plus eps (x + 1)²; x²: eps x²; the difference: eps(sum)
    a, b = 1e8 + 1, 1e16
    assert bound == pytest.approx(eps * (2 * a * a + a * a + b + (a * a + b)), rel=1e-12)
    assert math.isnan(testing.rounding_bound(sympy.Function("g")(x), {"x": 1.0}))
    assert math.isnan(testing.rounding_bound(x, {}))


def test_a_point_outside_the_domain_is_inconclusive_not_an_error():
    """mpmath refuses erfinv of a number above 1 (a ValueError inside SymPy's evalf): such a
    point has no reference, so it is inconclusive, and the points inside the domain are still
    checked, against erfinv′(x) = √π/2 · exp(erfinv(x)²) by mpmath."""
    import mpmath
    tape = Tape()
    x = tape.var("x", 0.3)
    report = check_against_sympy(sad.erfinv(x), x, points=5)  # x in [0.2, 1.8]
    inside = [p for p in report.points if p.point["x"] < 1]
    assert 0 < len(inside) < 5 and report.status == "pass"
    assert all(p.status == "inconclusive" for p in report.points if p.point["x"] > 1)
    for p in inside:
        assert p.status == "pass"
        assert math.isclose(p.reference, float(mpmath.sqrt(mpmath.pi) / 2 * mpmath.exp(mpmath.erfinv(p.point["x"])**2)),
                            rel_tol=1e-14)
