"""``taylor_graph`` by a var and by a direction {var: number or Term} are one engine: the same plan,
coefficients and exact mode above order 150, so a direction reaches any order a var does and a
unit direction builds no more nodes than its var. Values against mpmath's closed forms and SymPy."""

import mpmath
import pytest
import sympy

import subgraph_ad as sad
from subgraph_ad import Tape, exp, log, sin, sqrt, tanh
from subgraph_ad.benchmark_functions import BENCHMARKS, written_with  # F1–F5
from conftest import close


def relative(ours: float, expected: mpmath.mpf) -> float:
    """The relative error, however small the value (0.3²⁰⁰ is 1e-105): never absolute."""
    return float(abs((mpmath.mpf(ours) - expected) / expected))


def _along_sin_times_y(a: float, b: float, n: int, x: float, y: float) -> mpmath.mpf:
    """dⁿ/dsⁿ sin(x + a·s)·(y + b·s) at s = 0, by Leibniz: the second factor has two non-zero
    derivatives, and sin⁽ᵐ⁾(x) = sin(x + m·π/2). The floats a, b, x, y are taken exactly."""
    with mpmath.workdps(60):
        a, b, x, y = (mpmath.mpf(v) for v in (a, b, x, y))
        out = a**n * mpmath.sin(x + n * mpmath.pi / 2) * y
        if n:
            out += n * a**(n - 1) * b * mpmath.sin(x + (n - 1) * mpmath.pi / 2)
        return out


@pytest.mark.parametrize("direction", [(1.0, 0.0), (0.3, 0.7)])
def test_a_direction_reaches_order_200(direction):
    tape = Tape()
    x = tape.var("x", 0.7)
    y = tape.var("y", 1.3)
    a, b = direction
    ours = sad.taylor_graph(sin(x) * y, {x: a, y: b}, 200)
    for k in (1, 2, 3, 50, 150, 151, 171, 199, 200):
        expected = _along_sin_times_y(a, b, k, 0.7, 1.3)
        # the build rounds only its constant nodes (exact scalars above order 150): a few ulps
        assert relative(ours[k - 1].eval(), expected) <= 1e-12, (direction, k)


def _gauss_sin():
    tape = Tape()
    x = tape.var("x", 0.5)
    return tape, exp(-x**2 / 2) * sin(x), x


def _tanh_of_square():
    tape = Tape()
    x = tape.var("x", 0.5)
    return tape, tanh(x**2), x


def _sin():
    tape = Tape()
    x = tape.var("x", 0.5)
    return tape, sin(x), x


CASES = {**BENCHMARKS, "gauss_sin": _gauss_sin, "tanh_of_square": _tanh_of_square, "sin": _sin}


def _appended(make, by_direction: bool, n: int) -> int:
    tape, f, x = make()
    mark = len(tape)
    sad.taylor_graph(f, {x: 1.0} if by_direction else x, n)
    return len(tape) - mark


#: Each case in x alone with mpmath's functions, and a radius for ``cauchy``: about half the
#: distance from the point to its nearest singularity (F3: the pole of 1/(1+x²) at i; F4:
#: tanh(tanh(tanh x)) meets a pole where tanh(tanh x) = iπ/2, at x = i·atan(atan(π/2)) = 0.787i;
#: tanh(x²): x² = iπ/2; F5: sqrt(log w1)'s branch point at w1 = 1), or 10 for an entire function.
MPMATH = {
    **{name: (written_with(mpmath, name), radius)
       for name, radius in (("F1", 10.0), ("F2", 10.0), ("F3", 0.55), ("F4", 0.45), ("F5", 0.25))},
    "gauss_sin": (lambda x: mpmath.exp(-x**2 / 2) * mpmath.sin(x), 10.0),
    "tanh_of_square": (lambda x: mpmath.tanh(x**2), 0.45),
    "sin": (mpmath.sin, 10.0),
}


def cauchy(f, at: float, orders, radius: float, points: int = 512) -> dict:
    """f⁽ⁿ⁾(at) = n!/(2πi)∮ f(z)/(z − at)ⁿ⁺¹ dz on the circle of ``radius`` about ``at``, by the
    trapezoidal rule at ``points`` points (mpmath, 230 digits), independent of any recurrence.
    The rule's error is of order (radius/R)^points relative, R the distance to the nearest
    singularity (below 1e-150 here); summing values up to max|f|·n!/(radiusⁿ·|f⁽ⁿ⁾|) times the
    result (at most 1e180 here: sin's 200th derivative) costs at most 180 of the digits."""
    with mpmath.workdps(230):
        samples = []
        for k in range(points):
            w = mpmath.expjpi(mpmath.mpf(2 * k) / points)
            samples.append((w, f(mpmath.mpf(at) + radius * w)))
        return {n: mpmath.re(mpmath.fsum(v / w**n for w, v in samples)) / points * mpmath.factorial(n) / radius**n
                for n in orders}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_a_unit_direction_reaches_order_200_with_no_more_nodes_than_its_var(name):
    """Both builds to order 200 (past the exact mode's threshold, and past a double's range for
    the functions with a singularity within 1.2 of the point: there the value is the overflow's
    inf, as the oracle's rounds), the direction's no larger, both of the oracle's values."""
    orders = (1, 2, 3, 50, 100, 150, 151, 171, 199, 200)
    appended, values = [], []
    for by_direction in (False, True):
        tape, f, x = CASES[name]()
        mark = len(tape)
        ours = sad.taylor_graph(f, {x: 1.0} if by_direction else x, 200)
        appended.append(len(tape) - mark)
        values.append([ours[k - 1].eval() for k in orders])
    assert appended[1] <= appended[0], (name, appended)
    function, radius = MPMATH[name]
    expected = cauchy(function, x.value, orders, radius)
    for way, got in zip(("var", "direction"), values):
        for k, ours in zip(orders, got):
            want = expected[k]
            if mpmath.isinf(float(want)):
                assert ours == float(want), (name, way, k, ours)
            else:
                assert relative(ours, want) <= 1e-11, (name, way, k, ours, float(want))


@pytest.mark.parametrize("n", [6, 12])
@pytest.mark.parametrize("name", sorted(CASES))
def test_a_unit_direction_builds_no_more_nodes_than_its_var(name, n):
    assert _appended(CASES[name], True, n) <= _appended(CASES[name], False, n)


@pytest.mark.parametrize("n", [6, 12])
@pytest.mark.parametrize("name", sorted(CASES))
def test_a_unit_direction_gives_its_vars_values(name, n):
    tape, f, x = CASES[name]()
    ours = sad.taylor_graph(f, {x: 1.0}, n)
    function, radius = MPMATH[name]
    expected = cauchy(function, x.value, (1, 2, 5, n), radius)
    for k, want in expected.items():
        assert relative(ours[k - 1].eval(), want) <= 1e-11, (name, k)


def _sympy_along(expr, direction, n):
    """dⁿ/dtⁿ expr(x + t·v) at t = 0, v's components SymPy expressions of the vars."""
    t = sympy.Symbol("t")
    moved = expr.subs({sympy.Symbol(name): sympy.Symbol(name) + t * v for name, v in direction.items()},
                      simultaneous=True)
    return sympy.diff(moved, t, n).subs(t, 0)


@pytest.mark.parametrize("build", [
    lambda x, y: sin(x * y) + exp(-x**2 / 2),
    lambda x, y: tanh(x**2) * log(y),
    lambda x, y: sqrt(x * y) / (1 + x**2),
    lambda x, y: (x * y) ** 3 - x / y,
])
def test_directions_with_numbers_and_terms_match_sympy(build):
    tape = Tape()
    x = tape.var("x", 0.6)
    y = tape.var("y", 1.7)
    f = build(x, y)
    X, Y = sympy.symbols("x y")
    point = {X: sympy.Rational(3, 5), Y: sympy.Rational(17, 10)}
    for direction, symbolic in [({x: 0.5, y: -2.0}, {"x": sympy.Rational(1, 2), "y": -2}),
                                ({x: y, y: 0.25}, {"x": Y, "y": sympy.Rational(1, 4)}),
                                ({x: x * y}, {"x": X * Y})]:
        ours = sad.taylor_graph(f, direction, 4)
        for k in range(1, 5):
            expected = _sympy_along(f.to_sympy(), symbolic, k).evalf(30, subs=point)
            assert close(ours[k - 1].eval(), float(expected), rtol=1e-10), (direction, k)


def test_a_term_component_reaches_the_exact_mode():
    """A Term component at order 200 (above the exact mode's threshold): sin(x) along {x: y} is
    yⁿ·sin(x + n·π/2)."""
    tape = Tape()
    x = tape.var("x", 0.7)
    y = tape.var("y", 1.1)
    ours = sad.taylor_graph(sin(x), {x: y}, 200)
    with mpmath.workdps(60):
        for k in (1, 151, 171, 200):
            expected = mpmath.mpf(1.1)**k * mpmath.sin(mpmath.mpf(0.7) + k * mpmath.pi / 2)
            assert relative(ours[k - 1].eval(), expected) <= 1e-12, k


def test_a_direction_is_measured_like_its_var():
    """exp(x)·sin(x) to order 100 loses digits (tests/ad/test_accuracy.py): along {x: 1.0} the
    same build carries the same estimate, and the warning names the direction's vars."""
    found = []
    for wrt in ("var", "direction"):
        tape = Tape()
        x = tape.var("x", 0.4)
        with pytest.warns(sad.AccuracyWarning) as caught:
            sad.taylor_graph(exp(x) * sin(x), x if wrt == "var" else {x: 1.0}, 100)
        found.append(str(caught[0].message))
    assert found[1].startswith("orders 1–100 along a direction in x by Taylor mode: estimated relative error")
    assert found[0].split(":", 1)[1] == found[1].split(":", 1)[1]
