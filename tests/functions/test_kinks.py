"""Kinks and selections: comparisons as condition Terms, where, maximum/minimum/fmax/fmin, relu,
clip, heaviside, floor/ceil/round/trunc and mod/fmod. Values against NumPy on floats;
derivatives away from kinks against SymPy's derivative of the piece the point is in (or central
differences), at kinks and ties against the conventions JAX implements (checked with JAX itself
where it is importable); where's untaken branch may be inf or nan without reaching a value or a
forward derivative at any order."""

import math

import numpy as np
import pytest
import sympy

import subgraph_ad as sad
from subgraph_ad.functions.kinks import is_condition

X = sympy.Symbol("x", real=True)


def tape_x(value):
    tape = sad.Tape()
    return tape, tape.var("x", value)


# -- comparisons -----------------------------------------------------------------------------------
@pytest.mark.parametrize("compare, reference", [
    (lambda a, b: a < b, lambda a, b: a < b), (lambda a, b: a <= b, lambda a, b: a <= b),
    (lambda a, b: a > b, lambda a, b: a > b), (lambda a, b: a >= b, lambda a, b: a >= b),
    (lambda a, b: a == b, lambda a, b: a == b), (lambda a, b: a != b, lambda a, b: a != b),
])
def test_comparisons_are_conditions_valued_one_or_zero_with_a_zero_derivative(compare, reference):
    tape, x = tape_x(0.0)
    for other in (0.5, 1, np.float64(-2.0), np.array(0.5)):
        for c in (compare(x, other), compare(other, x)):
            assert is_condition(c)
            assert c.gen_graph(x) == tape.zero  # a structural zero: nothing appended beyond the 0
        for v in (-2.0, 0.0, 0.5, 1.0, 3.0):
            assert compare(x, other).eval({x: v}) == float(reference(v, float(other)))
            assert compare(other, x).eval({x: v}) == float(reference(float(other), v))
    with pytest.raises(TypeError, match="no truth value"):
        bool(x < 1.0)
    with pytest.raises(TypeError, match="tracing .* failed: a Term has no truth value"):
        sad.grad(lambda v: v if v > 0 else -v)(1.0)


def test_term_equality_stays_node_identity():
    tape, x = tape_x(1.0)
    y = tape.var("y", 1.0)
    assert (x == x) is True and (x == y) is False and (x != y) is True
    assert {x: 1}[tape.find_var("x")] == 1 and x in [y, x]
    assert (x == 1.0).eval() == 1.0 and (x != 1.0).eval() == 0.0
    with pytest.raises(TypeError, match="a Term is real, so equality with a complex number is no condition"):
        x == 1.0 + 0j  # noqa: B015 - the comparison under test


def test_logical_operators_on_conditions():
    tape, x = tape_x(0.0)
    inside = (x > 0) & (x < 1)
    outside = ~inside
    either = (x < -1) | (x > 2)
    for v in (-2.0, -0.5, 0.0, 0.5, 1.0, 3.0):
        assert inside.eval({x: v}) == float(0 < v < 1)
        assert outside.eval({x: v}) == float(not 0 < v < 1)
        assert either.eval({x: v}) == float(v < -1 or v > 2)
        assert np.logical_xor(x > 0, x > 1).eval({x: v}) == float((v > 0) != (v > 1))


# -- where -----------------------------------------------------------------------------------------
def test_where_selects_values_elementwise_like_numpy():
    tape, x = tape_x(0.0)
    f = sad.where(x > 0, x * x, -x)
    for v in (-1.5, 0.0, 2.0):
        assert f.eval({x: v}) == np.where(v > 0, v * v, -v)
    a = np.stack([x, 2 * x, 3.0])  # a TermArray (np.array([...]) would be NumPy's plain object array)
    assert isinstance(a, sad.TermArray)
    for picked in (sad.where(a > 1.0, a, np.array([-1.0, -2.0, -3.0])), np.where(a > 1.0, a, [-1.0, -2.0, -3.0])):
        assert [t.eval({x: 0.8}) if isinstance(t, sad.Term) else t for t in picked] == [-1.0, 1.6, 3.0]
    assert sad.where(True, x, 1.0) is x and sad.where(np.array([1.0, 0.0]) > 0.5, 1.0, 2.0).tolist() == [1.0, 2.0]


@pytest.mark.parametrize("taken, untaken, point", [
    ("x**2 + 1", "log(x)", 0.0),          # -inf and 1/x = inf derivatives
    ("x**2 + 1", "log(x)", -1.0),         # nan
    ("exp(x)", "sqrt(x)", -4.0),          # nan, and 1/(2 sqrt) = nan
    ("3*x", "1/x", 0.0),                   # inf, -1/x² = -inf
    ("cos(x)", "sin(x)/x", 0.0),           # 0/0 at every order
])
def test_an_untaken_inf_or_nan_branch_never_reaches_a_value_or_a_forward_derivative(taken, untaken, point):
    """f = where(x > point, untaken, taken) at x = point: the taken branch's derivatives to order
    4, by gen_graph passes and by diff's graph method, and the traced derivative; SymPy's
    derivatives of the taken branch are the oracle."""
    tape, x = tape_x(point)
    expr = sympy.sympify(taken, locals={"x": X})
    f = sad.where(x > point, sad.parse(untaken, tape=tape), sad.parse(taken, tape=tape))
    assert f.eval() == pytest.approx(float(expr.subs(X, point)), rel=1e-15)
    d = f
    for order in range(1, 5):
        d = d.gen_graph(x)
        want = float(sympy.diff(expr, X, order).subs(X, point))
        assert d.eval() == pytest.approx(want, rel=1e-14, abs=1e-15), order
        assert f.diff(x, order, method="graph").eval() == pytest.approx(want, rel=1e-14, abs=1e-15), order
        traced = sad.derivative(lambda v: np.where(v > point, _numpy(untaken, v), _numpy(taken, v)), order)
        assert traced(point) == pytest.approx(want, rel=1e-14, abs=1e-15), order
    # and the branch that would be nan is not taken elsewhere: the other side is the other branch
    other = abs(point) + 0.5
    want = float(sympy.diff(sympy.sympify(untaken, locals={"x": X}), X).subs(X, other))
    assert f.gen_graph(x).eval({x: other}) == pytest.approx(want, rel=1e-14)


def _numpy(text, v):
    """A branch as NumPy code on the traced var v."""
    return {"x**2 + 1": lambda: v ** 2 + 1, "log(x)": lambda: np.log(v), "exp(x)": lambda: np.exp(v),
            "sqrt(x)": lambda: np.sqrt(v), "3*x": lambda: 3 * v, "1/x": lambda: 1 / v,
            "cos(x)": lambda: np.cos(v), "sin(x)/x": lambda: np.sin(v) / v}[text]()


# -- extrema, relu, clip, heaviside -------------------------------------------------------------
def central(f, v, h=1e-6):
    """Central difference: error h²·f‴/6 ≈ 1e-13 for the smooth pieces here, far below 1e-8."""
    return (f(v + h) - f(v - h)) / (2 * h)


@pytest.mark.parametrize("fn, numpy_fn", [(sad.maximum, np.maximum), (sad.minimum, np.minimum),
                                          (sad.fmax, np.fmax), (sad.fmin, np.fmin)])
def test_extrema_values_and_derivatives_away_from_ties(fn, numpy_fn):
    tape, x = tape_x(0.0)
    y = tape.var("y", 0.0)
    f = fn(sad.sin(x), y * y)
    for xv, yv in ((0.3, 0.2), (1.2, 0.5), (-0.7, 0.1)):
        at = {x: xv, y: yv}
        assert f.eval(at) == numpy_fn(math.sin(xv), yv * yv)
        assert f.gen_graph(x).eval(at) == pytest.approx(central(lambda v: numpy_fn(math.sin(v), yv * yv), xv), rel=1e-8)
        assert f.gen_graph(y).eval(at) == pytest.approx(central(lambda v: numpy_fn(math.sin(xv), v * v), yv), rel=1e-8, abs=1e-9)
    assert np.isnan(sad.maximum(x, y).eval({x: math.nan})) and sad.fmax(x, y).eval({x: math.nan, y: 2.0}) == 2.0


def test_conventions_at_ties_and_kinks():
    """JAX's: maximum/minimum split a tie ½/½; fmax/fmin give a tie (and a nan a) to b; relu′(0) = 0;
    clip = minimum(maximum(x, lo), hi), so ½ at a bound; heaviside′ = 0, and 1 in h0 at x = 0."""
    tape, x = tape_x(1.0)
    y = tape.var("y", 1.0)
    assert [sad.maximum(x, y).derive(v) for v in (x, y)] == [0.5, 0.5]
    assert [sad.minimum(x, y).derive(v) for v in (x, y)] == [0.5, 0.5]
    assert [sad.fmax(x, y).derive(v) for v in (x, y)] == [0.0, 1.0]
    assert [sad.fmin(x, y).derive(v) for v in (x, y)] == [0.0, 1.0]
    assert [sad.fmax(x, y).grad({x: math.nan})[v] for v in (x, y)] == [0.0, 1.0]
    assert sad.relu(x).derive(x, {x: 0.0}) == 0.0 and sad.relu(x).derive(x, {x: 1e-300}) == 1.0
    assert sad.clip(x, 0.0, 1.0).derive(x) == 0.5 and sad.clip(x, 0.0, 2.0).derive(x) == 1.0
    assert sad.clip(x, 0.0, 1.0).derive(x, {x: 3.0}) == 0.0
    h = tape.var("h", 0.5)
    assert sad.heaviside(x - 1.0, h).eval() == 0.5 and sad.heaviside(x - 1.0).gen_graph(x) == tape.zero
    assert sad.heaviside(x - 1.0, h).derive(h) == 1.0 and sad.heaviside(x, h).derive(h) == 0.0


def test_the_conventions_are_jaxs(x64):
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    cases = [
        (sad.maximum, jnp.maximum, (1.0, 1.0)), (sad.minimum, jnp.minimum, (1.0, 1.0)),
        (sad.fmax, jnp.fmax, (1.0, 1.0)), (sad.fmin, jnp.fmin, (2.0, 2.0)), (sad.fmax, jnp.fmax, (math.nan, 1.0)),
        (sad.maximum, jnp.maximum, (0.5, 2.0)), (sad.mod, jnp.mod, (-5.5, 2.0)), (sad.fmod, jnp.fmod, (-5.5, 2.0)),
        (sad.mod, jnp.mod, (4.0, 2.0)),
    ]
    for ours, theirs, point in cases:
        got = sad.grad(lambda a, b: ours(a, b), argnums=(0, 1))(*point)
        want = jax.grad(theirs, argnums=(0, 1))(*point)
        assert np.allclose(got, want, rtol=1e-15, atol=0), (ours, point, got, want)
    for ours, theirs in ((sad.relu, jax.nn.relu), (sad.floor, jnp.floor), (sad.round, jnp.round),
                         (lambda v: sad.clip(v, 0.0, 1.0), lambda v: jnp.clip(v, 0.0, 1.0))):
        for v in (-1.0, 0.0, 0.5, 1.0, 2.5):
            assert sad.grad(ours)(v) == float(jax.grad(theirs)(v)), (ours, v)


# -- rounding --------------------------------------------------------------------------------------
POINTS = np.array([-2.5, -1.5, -0.7, -0.5, -0.0, 0.0, 0.3, 0.5, 1.5, 2.5, 2.7, 1e16 + 2])


@pytest.mark.parametrize("fn, numpy_fn", [(sad.floor, np.floor), (sad.ceil, np.ceil), (sad.round, np.round),
                                          (sad.trunc, np.trunc)])
def test_rounding_values_are_numpys_and_the_derivative_is_a_structural_zero(fn, numpy_fn):
    tape, x = tape_x(0.0)
    f = fn(x)
    np.testing.assert_array_equal(f.eval({x: POINTS}), numpy_fn(POINTS))  # round: half to even, as NumPy
    np.testing.assert_array_equal(sad.lambdify([x], f)(POINTS), numpy_fn(POINTS))
    for v in POINTS:
        assert sad.lambdify([x], f)(float(v)) == numpy_fn(v)  # the one-point path too
    assert f.gen_graph(x) == tape.zero and (f * x).diff(x, 3, method="taylor") == tape.zero
    assert (x * f).gen_graph(x).eval({x: 2.5}) == numpy_fn(2.5)


def test_round_to_decimals_and_the_python_protocols():
    tape, x = tape_x(2.675)
    assert sad.round(x, 2).eval() == np.round(2.675, 2) and np.round(x, 1).eval() == np.round(2.675, 1)
    assert round(x).eval() == round(2.675) and math.floor(x).eval() == 2.0 and math.ceil(x).eval() == 3.0
    assert math.trunc(-x).eval() == -2.0 and np.fix(-x).eval() == -2.0


@pytest.mark.parametrize("fn, numpy_fn, quotient", [(sad.mod, np.mod, np.floor), (sad.fmod, np.fmod, np.trunc)])
def test_mod_and_fmod(fn, numpy_fn, quotient):
    tape, x = tape_x(0.0)
    y = tape.var("y", 1.0)
    f = fn(x, y)
    for a in (-5.5, -2.0, -0.3, 0.0, 0.3, 4.0, 7.25):
        for b in (-2.0, 0.75, 2.0):
            at = {x: a, y: b}
            assert f.eval(at) == numpy_fn(a, b)
            assert f.derive(x, at) == 1.0 and f.derive(y, at) == -quotient(a / b)
            if abs(a / b - round(a / b)) > 1e-3:  # away from the jumps: central differences
                assert f.derive(y, at) == pytest.approx(central(lambda v: numpy_fn(a, v), b), rel=1e-7)
    assert np.isnan(f.eval({x: 1.0, y: 0.0})) and np.isnan(sad.lambdify([x, y], f)(1.0, 0.0))
    assert (x % 2.0).eval({x: -5.5}) == np.mod(-5.5, 2.0) and (x // 2.0).eval({x: -5.5}) == -5.5 // 2.0
    assert [t.eval({x: 7.0}) for t in divmod(x, 2.0)] == list(divmod(7.0, 2.0))


# -- higher orders, Taylor mode, closed forms ---------------------------------------------------
def test_fifth_derivatives_through_kinks_are_the_pieces_derivatives():
    tape, x = tape_x(0.7)
    f = sad.maximum(sad.sin(x), x ** 2 / 2) + sad.relu(x - 0.2) * sad.exp(x) + sad.floor(3 * x) * x ** 3 \
        + sad.clip(x ** 3, -0.1, 0.2) + sad.mod(x ** 2, 0.3)
    for x0 in (0.7, -0.4, 1.45):
        piece = sympy.sin(X) if math.sin(x0) > x0 ** 2 / 2 else X ** 2 / 2
        if x0 > 0.2:
            piece += (X - 0.2) * sympy.exp(X)
        piece += math.floor(3 * x0) * X ** 3 + (X ** 3 if -0.1 < x0 ** 3 < 0.2 else 0)
        piece += X ** 2 - 0.3 * math.floor(x0 ** 2 / 0.3)
        want = float(sympy.diff(piece, X, 5).subs(X, x0))
        for method in ("graph", "taylor", "auto"):
            assert f.diff(x, 5, method=method).eval({x: x0}) == pytest.approx(want, rel=1e-12, abs=1e-12), (x0, method)


# -- SymPy and the parser ------------------------------------------------------------------------
@pytest.mark.parametrize("expr", [
    sympy.Max(X, X ** 2, sympy.Rational(1, 3)), sympy.Min(sympy.sin(X), 0), sympy.Heaviside(X - 1),
    sympy.Heaviside(X, 0), sympy.floor(3 * X) + sympy.ceiling(X / 2), sympy.Mod(X ** 2, 3),
    sympy.Piecewise((X ** 2, X < 1), (sympy.log(X), X < 3), (0, True)),
    sympy.Piecewise((1, (X > 0) & (X < 2)), (X, sympy.Or(X < -1, sympy.Eq(X, 5)))),
])
def test_sympy_constructs_come_in_with_their_values_and_derivatives(expr):
    plain = expr.subs(X, sympy.Symbol("x"))
    t = sad.Tape().from_sympy(plain)
    x = t.tape.vars["x"]
    for v in (-1.5, 0.25, 0.999, 1.7, 2.5, 4.0):
        want = expr.subs(X, v)
        got = t.eval({x: v})
        if want == sympy.nan:
            assert np.isnan(got)
            continue
        assert got == pytest.approx(float(want), rel=1e-14, abs=1e-15), v
        d = sympy.diff(expr, X).subs(X, v)
        if d.is_finite and not d.has(sympy.DiracDelta):
            assert t.gen_graph(x).eval({x: v}) == pytest.approx(float(d.evalf()), rel=1e-13, abs=1e-14), v


@pytest.mark.parametrize("build", [
    lambda x: sad.maximum(x, x ** 2), lambda x: sad.relu(x - 1) + sad.clip(x, 0, 1), lambda x: sad.heaviside(x - 1, 0.25),
    lambda x: sad.where(x > 1, sad.log(x), x), lambda x: sad.floor(x) * sad.ceil(x) + sad.round(x) - sad.trunc(-x),
    lambda x: sad.mod(x, 0.75) + sad.fmod(-x, 0.75), lambda x: (x < 1) + (x >= 2) * 3,
])
def test_to_sympy_gives_the_same_function(build):
    tape, x = tape_x(0.0)
    t = build(x)
    expr = t.to_sympy()
    for v in (0.3, 1.0, 1.25, 2.0, 2.5, 3.7):
        assert float(expr.subs(sympy.Symbol("x"), v)) == pytest.approx(t.eval({x: v}), rel=1e-14, abs=1e-15), v
    back = sad.Tape().from_sympy(expr)
    for v in (0.3, 1.25, 2.5):
        assert back.eval({"x": v}) == pytest.approx(t.eval({x: v}), rel=1e-14, abs=1e-15)


def test_the_parser_reads_them_by_name():
    t = sad.parse("maximum(x, y) + minimum(x, 1) + relu(x - 2) + floor(y) + ceil(x) + round(y) + trunc(-y) "
                  "+ mod(x, 2) + fmod(y, 2) + heaviside(x, 0.5) + fmax(x, y) + fmin(x, y)")
    x, y = t.tape.vars["x"], t.tape.vars["y"]
    want = (max(2.5, 1.5) + 1 + 0.5 + 1 + 3 + 2 + -1 + 0.5 + 1.5 + 1 + 2.5 + 1.5)
    assert t.eval({x: 2.5, y: 1.5}) == want


# -- every engine agrees -------------------------------------------------------------------------
ENGINE_CASES = [
    ("maximum at a tie", lambda x, y: sad.maximum(x * y, y) * x, {"x": 1.0, "y": 2.0}),
    ("minimum away from ties", lambda x, y: sad.minimum(sad.sin(x), y * y) * y, {"x": 0.4, "y": 1.5}),
    ("relu at its kink", lambda x, y: sad.relu(x - 1.0) * y + sad.relu(y) * x * x, {"x": 1.0, "y": 0.7}),
    ("clip at a bound", lambda x, y: sad.clip(x * y, 0.0, 2.0) * x, {"x": 1.0, "y": 2.0}),
    ("where with finite branches", lambda x, y: sad.where(x > y, x * x * y, sad.exp(x - y)), {"x": 0.5, "y": 0.3}),
    ("floor and mod", lambda x, y: sad.floor(x * 3) * x * y + sad.mod(x * y, 0.75) * x, {"x": 0.9, "y": 1.3}),
    ("fmax with nan ignored", lambda x, y: sad.fmax(x * x, y) * y, {"x": 0.6, "y": 0.2}),
]


@pytest.mark.parametrize("case, build, point", ENGINE_CASES, ids=[c[0] for c in ENGINE_CASES])
def test_every_engine_gives_the_same_second_derivatives(case, build, point):
    """forward∘forward, forward∘reverse, reverse∘reverse, Taylor mode, hessian, hvp, the numeric
    modes and the traced Hessian all read the one fdiff, so a convention at a kink holds in each;
    away from kinks the oracle is a central difference of the first derivative (h = 1e-5: error
    O(h²) ≈ 1e-10, below the 1e-7 asked)."""
    tape = sad.Tape()
    v = {n: tape.var(n, p) for n, p in point.items()}
    f = build(*v.values())
    x, y = v["x"], v["y"]
    ways = {
        "ff": f.gen_graph(x).gen_graph(y).eval(), "fr": f.gen_graph(x).grad_graph(y).eval(),
        "rr": f.grad_graph(x).grad_graph(y).eval(), "hessian": sad.hessian(f, [x, y])[0][1].eval(),
        "hvp": sad.hvp(f, [x, y], [0.0, 1.0])[0].eval(), "numeric": f.gen_graph(x).derive(y),
        "numeric reverse": f.grad_graph(x).grad()[y],
        "traced": float(sad.hessian(lambda p: build(p[0], p[1]))(np.array([point["x"], point["y"]]))[0, 1]),
    }
    xx = {"ff": f.diff(x, 2, method="graph").eval(), "taylor": f.diff(x, 2, method="taylor").eval(),
          "rr": f.grad_graph(x).grad_graph(x).eval()}
    assert max(ways.values()) - min(ways.values()) <= 1e-13 * max(1.0, abs(ways["ff"])), ways
    assert max(xx.values()) - min(xx.values()) <= 1e-13 * max(1.0, abs(xx["ff"])), xx
    if not any(word in case for word in ("tie", "kink", "bound")):  # smooth here: central differences
        first, h = f.gen_graph(x), 1e-5
        fd = (first.eval({y: point["y"] + h}) - first.eval({y: point["y"] - h})) / (2 * h)
        assert ways["ff"] == pytest.approx(fd, rel=1e-7, abs=1e-8)


def test_sympy_differentiates_the_rounding_functions_as_here():
    """SymPy leaves d floor(x)/dx unevaluated; the forms sent to it say 0 (and 1, −floor(a/b) for
    Mod), so SymPy's derivative is a number at a point, equal to ours."""
    tape, x = tape_x(0.0)
    y = tape.var("y", 0.75)
    S = sympy.Symbol("x")
    for t in (sad.floor(x) * x, sad.ceil(x) * x, sad.mod(x * x, y), sad.round(x) + sad.trunc(x) * x):
        expr = t.to_sympy()
        for v in (0.3, 1.6, 2.9):
            want = float(sympy.diff(expr, S).subs({S: v, sympy.Symbol("y"): 0.75}))
            assert t.gen_graph(x).eval({x: v}) == pytest.approx(want, rel=1e-14, abs=1e-15)
    assert float(sympy.diff(sad.mod(x, y).to_sympy(), sympy.Symbol("y")).subs({S: 2.0, sympy.Symbol("y"): 0.75})) == -2.0


def test_sympy_lambdify_evaluates_the_forms_sent_to_sympy():
    tape, x = tape_x(0.0)
    S = sympy.Symbol("x")
    for t, numpy_fn in ((sad.round(x), np.round), (sad.trunc(x), np.trunc), (sad.fmod(x, 0.75), lambda v: np.fmod(v, 0.75)),
                        (sad.floor(x), np.floor), (sad.mod(x, 0.75), lambda v: np.mod(v, 0.75))):
        for modules in ("numpy", "math", "mpmath"):
            g = sympy.lambdify([S], t.to_sympy(), modules)
            assert [float(g(v)) for v in (-2.5, -1.5, 0.5, 2.5, 2.7)] == [numpy_fn(v) for v in (-2.5, -1.5, 0.5, 2.5, 2.7)]
