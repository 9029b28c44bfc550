"""Orders far past any graph's size: a derivative whose graph is small is built in memory
proportional to the answer, and a build that cannot be stops with LimitError, the tape unchanged,
before the machine runs out.

The memory cases run in a fresh interpreter whose address space is capped (``RLIMIT_AS``) a
little above what it holds on starting: a build that held memory proportional to the order would
meet MemoryError there.
"""

from __future__ import annotations

import math
import re
import statistics
import warnings

import mpmath
import pytest

import subgraph_ad as sad
from subgraph_ad import Tape

from capped import run


def test_sin_of_order_100_000_on_a_default_tape_in_bounded_memory():
    """sin⁽ⁿ⁾(x) = sin(x + n·π/2): with the default budget (ten million nodes, some 4 GB) and a
    300 MB cap, n = 100,000 and 100,003 each come back as a graph of a few nodes, in every
    method that can (auto, graph) and in ``derivatives``."""
    out = run("""
        tape = sad.Tape(); x = tape.var("x", 0.0)
        cap(300)
        f = sad.sin(x)
        found = {}
        for n in (100_000, 100_003):
            d = f.diff(x, n)
            g = f.diff(x, n, method="graph")
            found[n] = {"same": d.index == g.index, "values": [d.eval({x: at}) for at in (-2.5, 0.3, 1.7)]}
        steps = sad.derivatives(f, x, 100_000)
        report(found=found, tape=len(tape), steps=len(steps), last=steps[-1].term.index,
               new=sum(len(s.appended) for s in steps))
    """)
    for n, got in out["found"].items():
        n = int(n)
        assert got["same"]
        for at, value in zip((-2.5, 0.3, 1.7), got["values"]):
            with mpmath.workdps(40):  # the closed form, its n·π/2 to 40 digits
                want = mpmath.sin(mpmath.mpf(at) + n * mpmath.pi / 2)
            assert abs(value - want) <= 1e-15
    assert out["tape"] <= 6  # x, sin, cos, −sin, −cos and the constant 1 at most
    assert out["steps"] == 100_000 and out["new"] <= 4


def test_cycles_of_other_periods_close_in_bounded_memory():
    """e^{−x} and cosh x come back after two orders, e^x after one, a polynomial ends in 0: at
    order 100,000, on default tapes under a 300 MB cap, each in auto and graph mode appends no
    more than the derivatives up to its cycle."""
    out = run("""
        cap(300)
        found = []
        for name in ("exp(-x)", "cosh(x)", "exp(x)", "x**3 + x"):
            for method in ("auto", "graph"):
                tape = sad.Tape(); x = tape.var("x", 0.4)
                f = eval(name, {"x": x, "exp": sad.exp, "cosh": sad.cosh})
                before = len(tape)
                d = f.diff(x, 100_000, method=method)
                found.append([name, method, d.eval(), len(tape) - before])
        report(found=found)
    """)
    want = {"exp(-x)": math.exp(-0.4), "cosh(x)": math.cosh(0.4), "exp(x)": math.exp(0.4), "x**3 + x": 0.0}
    for name, method, value, appended in out["found"]:
        assert value == pytest.approx(want[name], rel=1e-15, abs=0), (name, method)
        assert appended <= 10, (name, method)


def test_a_build_past_the_budget_stops_with_limit_error_in_bounded_memory():
    """e^x·sin x does not close on itself: its order 100,000 in Taylor mode plans ~5·10⁹
    products. With 100,000 nodes of budget (40 MB) it must stop with LimitError under a 600 MB
    cap, every table of the tape as it was, and the tape must still work."""
    out = run("""
        tape = sad.Tape(max_nodes=100_000); x = tape.var("x", 0.4)
        f = sad.exp(x) * sad.sin(x)
        before = snapshot(tape)
        cap(600)
        found = {}
        for method in ("auto", "taylor"):
            try:
                f.diff(x, 100_000, method=method)
                found[method] = None
            except sad.LimitError as error:
                found[method] = [str(error), snapshot(tape) == before]
        report(found=found, d3=f.diff(x, 3).eval())
    """)
    for method, got in out["found"].items():
        assert got is not None, method
        message, unchanged = got
        assert "max_nodes=100000" in message and unchanged
    # (e^x sin x)''' = 2e^x(cos x − sin x)
    assert out["d3"] == pytest.approx(2 * math.exp(0.4) * (math.cos(0.4) - math.sin(0.4)), rel=1e-14)


def exp_cos(a: int, b: int, n: int, at: float) -> mpmath.mpf:
    """dⁿ/dxⁿ e^{ax}·cos(bx) = Re((a + bi)ⁿ·e^{(a+bi)x}), at 50 digits."""
    with mpmath.workdps(50):
        z = mpmath.mpc(a, b)
        return mpmath.re(z**n * mpmath.exp(z * mpmath.mpf(at)))


@pytest.mark.parametrize("a, b, n", [(2, 3, 100), (1, 1, 100), (2, 3, 300), (-1, 2, 60)])
def test_a_well_conditioned_high_order_comes_back_with_its_digits(a, b, n):
    """Taylor mode's sums lose n/2 bits on e^{ax}·cos bx (2.3e-2 at n = 100); the default
    ``diff`` returns its exact expansion instead, two terms whose integer coefficients are
    rounded once: within 1e-12 of the truth at every point, and no warning."""
    tape = Tape()
    x = tape.var("x", 0.4)
    f = sad.exp(a * x) * sad.cos(b * x)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sad.AccuracyWarning)
        d = f.diff(x, n)
    for at in (-3.1, -0.7, 0.4, 1.3, 2.9):
        want = exp_cos(a, b, n, at)
        assert abs(d.eval({x: at}) - want) <= 1e-12 * abs(want), at
    assert len(tape) <= 20  # x, the two functions, their arguments and the form's few nodes


def test_where_no_exact_form_is_built_the_warning_stays_with_a_fair_estimate():
    """Every order at once (``derivatives``, ``taylor_graph``) is still Taylor mode's, and warns:
    its estimate is within a factor 10 of the error measured against the exact values, at a
    typical point as the estimate says (the median of five: at x = 1.3, near a zero of the 100th
    derivative, the relative error is ten times the others')."""
    tape = Tape()
    x = tape.var("x", 0.4)
    f = sad.exp(2 * x) * sad.cos(3 * x)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        d = sad.taylor_graph(f, x, 100)[-1]
    (warning,) = [w for w in caught if issubclass(w.category, sad.AccuracyWarning)]
    estimate = float(re.search(r"estimated relative error ([0-9.e+-]+)", str(warning.message)).group(1))
    actual = statistics.median(abs(d.eval({x: at}) - exp_cos(2, 3, 100, at)) / abs(exp_cos(2, 3, 100, at))
                               for at in (-3.1, -0.7, 0.4, 1.3, 2.9))
    assert actual / 10 <= estimate <= actual * 10
