"""NumPy's floating-point warnings: never from building a graph; from values only when asked.

Building evaluates numbers in a few places (folding constants, the closed form's probe points,
Taylor mode's scalars), and none of them may print a RuntimeWarning for a result that is right.
Values follow IEEE semantics — log(-1) is nan, 1/0 is inf — and are answers, not accidents, so
``eval``, ``derive``, ``grad`` and ``lambdify`` are silent unless called with ``warn=True``.
"""

import math
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import subgraph_ad as sad
from subgraph_ad import Tape, taylor_graph

#: Expressions in x and y whose builds meet overflow, 0·inf, log(0) or nan in constants, probes
#: or scalars (each one warned or raised before)
BUILDS = {
    "exp(exp(x) - 1)": lambda x, y: sad.exp(sad.exp(x) - 1),
    "exp(1000 x)": lambda x, y: sad.exp(1000 * x),
    "exp(x^2)·1e300": lambda x, y: sad.exp(x**2) * 1e300,
    "1e300·x^40 + 1e-300": lambda x, y: 1e300 * x**40 + 1e-300,
    "(1e200 x + 1)^3": lambda x, y: (1e200 * x + 1) ** 3,
    "1/(x - 1e-320)": lambda x, y: 1 / (x - 1e-320),
    "x^1e300": lambda x, y: x**1e300,
    "x^-3·1e-300": lambda x, y: x**-3 * 1e-300,
    "(exp(x)·1e308 + 1e308)^2": lambda x, y: (sad.exp(x) * 1e308 + 1e308) ** 2,
    "0^x": lambda x, y: 0.0**x,
    "(-2)^x": lambda x, y: (-2.0) ** x,
    "inf^x": lambda x, y: math.inf**x,
    "x^y": lambda x, y: x**y,
    "sqrt(x)·log(-x)": lambda x, y: sad.sqrt(x) * sad.log(-x),
    "asin + acosh + atanh": lambda x, y: sad.asin(x) + sad.acosh(x) + sad.atanh(x),
    "erf(1e10 x)": lambda x, y: sad.erf(x * 1e10),
    "atan2 + hypot": lambda x, y: sad.atan2(y, x) + sad.hypot(x, y),
}


@pytest.mark.parametrize("name", sorted(BUILDS))
def test_building_derivatives_never_warns_or_raises(name):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for n in (2, 3, 7, 12):
            for method in ("graph", "taylor", "auto"):
                tape = Tape()
                x, y = tape.var("x", 1.0), tape.var("y", 0.5)
                BUILDS[name](x, y).diff(x, n, method=method).eval()
        tape = Tape()
        x, y = tape.var("x", 1.0), tape.var("y", 0.5)
        z = BUILDS[name](x, y)
        taylor_graph(z, x, 12)
        z.diff(x, y).eval()
        z.grad_graph([x, y])
        sad.hessian(z, [x, y])


def test_the_reported_build_is_silent_and_right():
    # exp(exp(x) - 1) is the exponential generating function of the Bell numbers: its 7th
    # derivative at 0 is B_7 = 877; at x = 1 its value printed an overflow warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tape = Tape()
        x = tape.var("x", 1.0)
        d = sad.exp(sad.exp(x) - 1).diff(x, 7)
        assert d.eval({x: 0.0}) == pytest.approx(877.0, rel=1e-14)


# IEEE values with their NumPy warnings: what each call must give, silently by default.
POLICY_SCRIPT = textwrap.dedent("""
    import math, warnings
    import numpy as np
    import subgraph_ad as sad

    tape = sad.Tape(); x = tape.var("x", 1.0)
    # (term, point, value, derivative)
    cases = [(sad.log(x), -1.0, math.nan, -1.0), (1 / x, 0.0, math.inf, -math.inf),
             (sad.exp(x), 1000.0, math.inf, math.inf)]

    def same(got, want):
        return bool(np.all(np.isnan(got))) if math.isnan(want) else bool(np.all(got == want))

    def silent(call, want):
        assert same(call(), want), call()

    def warns(call):
        try:
            call()
        except RuntimeWarning:
            return
        raise AssertionError("no RuntimeWarning")

    for term, at, want, slope in cases:
        f = sad.lambdify([x], [term, term.diff(x)])
        silent(lambda: term.eval({x: at}), want)
        silent(lambda: f(at)[0], want)
        silent(lambda: f(np.full(3, at))[0], want)
        silent(lambda: f(at)[1], slope)
        silent(lambda: term.derive(x, {x: at}), slope)
        silent(lambda: term.grad({x: at})[x], slope)
        loud = sad.lambdify([x], term, warn=True)
        warns(lambda: term.eval({x: at}, warn=True))
        warns(lambda: loud(at))
        warns(lambda: loud(np.full(3, at)))
        warns(lambda: term.derive(x, {x: at}, warn=True))
        warns(lambda: term.grad({x: at}, warn=True))
    print("ok")
""")


def test_values_are_silent_by_default_and_warn_when_asked():
    # under -W error::RuntimeWarning any warning is an exception: the defaults must give the
    # IEEE values without one, warn=True must raise it
    result = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-c", POLICY_SCRIPT],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr[-2000:]


def test_numpys_own_setting_does_not_leak_into_values():
    # np.seterr(all="raise") elsewhere in a program must not turn a nan into an exception
    tape = Tape()
    x = tape.var("x", -1.0)
    old = np.seterr(all="raise")
    try:
        assert math.isnan(sad.log(x).eval())
        assert math.isnan(sad.lambdify([x], sad.log(x))(-1.0))
        assert sad.lambdify([x], 1 / x)(np.zeros(2)).tolist() == [math.inf, math.inf]
    finally:
        np.seterr(**old)
