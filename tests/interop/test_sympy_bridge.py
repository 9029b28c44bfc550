"""to_sympy / from_sympy: round trips, unsupported constructs, deep expressions."""

from fractions import Fraction

import numpy as np
import pytest
import sympy

import subgraph_ad as sad
from subgraph_ad import SympyConversionError, Tape
from subgraph_ad.core import OPS
from conftest import Cube

X, Y = sympy.symbols("x y")


@pytest.mark.parametrize(
    "text",
    [
        "exp(-x**2/2)",
        "x*y + sin(x)",
        "sin(x)*exp(cos(x))/(1 + x**2)",
        "tanh(tanh(tanh(x)))",
        "y*log(x) + sqrt(y*log(x))",
        "x**y - 2**x + x**(-3) + tan(x)",
        "pi*x + E",
    ],
)
def test_round_trip_is_the_same_function(text):
    expr = sympy.sympify(text)
    tape = Tape()
    t = tape.from_sympy(expr)
    back = t.to_sympy()
    assert sympy.simplify(back - expr) == 0
    point = {"x": 1.7, "y": 1.3}
    want = float(expr.evalf(30, subs={X: 1.7, Y: 1.3}))
    assert float(back.evalf(30, subs={X: 1.7, Y: 1.3})) == pytest.approx(want, rel=1e-13)
    assert t.eval({k: v for k, v in point.items() if k in tape.vars}) == pytest.approx(want, rel=1e-13)


def test_from_sympy_reuses_vars_by_name(tape):
    x = tape.var("x", 0.25)
    t = tape.from_sympy(X * Y)
    assert set(tape.vars) == {"x", "y"} and tape.vars["x"] == x
    assert t.index == (x * tape.vars["y"]).index


def test_to_sympy_keeps_exact_binary_fractions(tape):
    x = tape.var("x")
    assert (x * 0.5 + 3).to_sympy() == X / 2 + 3
    assert sad.sigmoid(x).to_sympy() == 1 / (1 + sympy.exp(-X))
    assert sad.SinFn(3)(x).to_sympy() == -sympy.cos(X)


@pytest.mark.parametrize("expr", [X + sympy.I,
                                  sympy.Function("mystery")(X), sympy.besselj(X, Y)])
def test_unsupported_constructs_raise_and_append_nothing(tape, expr):
    tape.var("x")
    before = list(tape.nodes)
    with pytest.raises(SympyConversionError):
        tape.from_sympy(sympy.exp(X) + expr)
    assert tape.nodes == before and set(tape.vars) == {"x"}


def test_from_sympy_rejects_non_expressions(tape):
    with pytest.raises(SympyConversionError, match="takes a SymPy expression"):
        tape.from_sympy(object())


def test_user_function_through_sympy_by_registered_name(tape):
    sad.register(Cube("cube3"))
    try:
        t = tape.from_sympy(sympy.Function("cube3")(X) + 1)
        assert t.eval({"x": 2.0}) == 9.0
        assert str(t.to_sympy()) == "cube3(x) + 1"
    finally:
        del sad.FUNCTIONS["cube3"]


def test_deep_expressions_convert_without_recursion_limits():
    # SymPy's own constructors recurse, so the depth is what SymPy can hold; ours walks iteratively
    tape = Tape()
    x = tape.var("x", 0.5)
    z = x
    for _ in range(300):
        z = sad.sin(z)
    expr = z.to_sympy()
    assert expr.func is sympy.sin
    t2 = Tape()
    back = t2.from_sympy(expr)
    assert len(t2) == 301
    assert back.eval({"x": 0.5}) == pytest.approx(z.eval(), rel=1e-14)
    assert np.isfinite(back.eval({"x": 0.5}))


#: Where f(offset + 0.5·x) is real for x in [0.2, 0.5] when the default (0.3: arguments in
#: [0.4, 0.55]) is outside a function's domain.
OFFSETS = {"acosh": 1.6}


def _plain_application(fn):
    """Whether fn's SymPy form is F(args) for a SymPy function class F (then it must come back as fn)."""
    hook = getattr(fn, "to_sympy", None)
    if hook is None:
        return False
    dummies = tuple(sympy.Dummy() for _ in range(fn.arity))
    image = hook(*dummies)
    return isinstance(image, sympy.Function) and image.args == dummies


@pytest.mark.parametrize("name", sorted(sad.FUNCTIONS))
def test_every_registered_function_round_trips_through_sympy(name):
    """to_sympy, then from_sympy on a fresh tape: the same value at two points, for every function
    in the registry (the built-ins, and whatever else is registered when the tests are collected)."""
    fn = sad.FUNCTIONS[name]
    offset = OFFSETS.get(name, 0.3)
    for point in (0.2, 0.5):
        tape = sad.Tape()
        x = tape.var("x", point)
        t = fn(offset + 0.5 * x, 1.1 - 0.2 * x) if fn.arity == 2 else fn(offset + 0.5 * x)
        expr = t.to_sympy()
        fresh = sad.Tape()
        back = fresh.from_sympy(expr)
        want, got = t.eval(), back.eval({"x": point})
        assert np.isfinite(want) and np.isfinite(got), (name, point, want, got)
        assert got == pytest.approx(want, rel=1e-14), name
        if _plain_application(fn):  # recognised by its SymPy class (SymPy may have rewritten the
            # argument, exp(0.3 + x/2) -> 1.35·exp(x/2)): the very same function is on the tape
            assert any(n.op == "fn" and n.payload is fn for n in fresh.nodes), (name, expr)


@pytest.mark.parametrize("expr, name", [(sympy.atan(X), "atan"), (sympy.Abs(X), "abs"), (sympy.erf(X), "erf"),
                                        (sympy.atan2(Y, X), "atan2"), (sympy.exp(X), "exp")])
def test_sympy_classes_map_to_the_registered_functions(tape, expr, name):
    if name not in sad.FUNCTIONS:
        pytest.skip(f"{name} is not registered")
    t = tape.from_sympy(expr)
    assert t.node.op == "fn" and t.node.payload is sad.FUNCTIONS[name]


def test_e_and_pi_stay_named_constants(tape):
    t = tape.from_sympy(sympy.E * X + sympy.pi)
    assert t.to_sympy() == sympy.E * X + sympy.pi
    assert t.eval({"x": 2.0}) == pytest.approx(2 * np.e + np.pi, rel=1e-15)
    assert set(tape.vars) == {"x"}


def test_sympy_functions_accept_terms(tape):
    x = tape.var("x", 0.3)
    t = sad.exp(-x**2 / 2) * sad.sin(3 * x)
    reference = sympy.exp(-X**2 / 2) * sympy.sin(3 * X)
    assert sympy.sympify(t) == reference
    assert sympy.sin(t) == sympy.sin(reference)
    assert X + t == X + reference
    f = sympy.lambdify([X], t)
    assert f(0.3) == pytest.approx(float(reference.subs(X, 0.3)), rel=1e-14)
    g = sympy.lambdify([X], [t, t.diff(x)])
    assert g(0.3)[1] == pytest.approx(float(sympy.diff(reference, X).subs(X, 0.3)), rel=1e-13)


@pytest.mark.parametrize("constant", [
    sympy.Rational(1, 3), sympy.Rational(-7, 3), sympy.pi, sympy.E, sympy.EulerGamma, sympy.log(2), sympy.sqrt(2),
    sympy.cbrt(3), sympy.exp(2), sympy.pi**2 / 6, sympy.atan(sympy.Rational(1, 2)), 2 * sympy.sqrt(2) * sympy.log(3),
    sympy.Integer(3)**40,
])
def test_exact_constants_round_trip_exactly(tape, constant):
    expr = constant * X**sympy.Rational(3, 2) + constant
    back = tape.from_sympy(expr).to_sympy()
    assert back == expr and not back.has(sympy.Float)
    assert tape.from_sympy(constant).eval() == pytest.approx(float(constant), rel=1e-15)


def test_a_rational_and_a_rational_power_come_back_exactly(tape):
    back = tape.from_sympy(sympy.Rational(1, 3) * X**sympy.Rational(3, 2)).to_sympy()
    assert back == X**sympy.Rational(3, 2) / 3


def test_the_derivative_of_2_to_the_x_keeps_log_2(tape):
    x = tape.var("x", 0.5)
    assert (2**x).diff(x).to_sympy() == 2**X * sympy.log(2)
    assert (2**x).diff(x, 2, method="graph").to_sympy() == 2**X * sympy.log(2)**2
    assert str((2**x).diff(x)) == "log(2)*2**x"


def test_derivatives_keep_exact_rationals(tape):
    x = tape.var("x", 0.5)
    assert (x ** Fraction(1, 3)).diff(x, 2).to_sympy() == -2 * X**sympy.Rational(-5, 3) / 9
    assert (x**2 / 3).diff(x).to_sympy() == 2 * X / 3


def test_floats_stay_floats(tape):
    x = tape.var("x")
    for value in (0.1, 0.5, 2.0, 1e-20):
        back = tape.from_sympy(sympy.Float(value) * X + sympy.pi * sympy.Float(value)).to_sympy()
        assert back == sympy.Float(value) * X + sympy.pi * sympy.Float(value), value
    assert (x * 0.1).to_sympy() == sympy.Float(0.1) * X
    assert (x * 0.5).to_sympy() == X / 2  # a short binary fraction is that fraction exactly


def test_exact_and_float_constants_are_interned_apart(tape):
    third, rounded = tape.const(Fraction(1, 3)), tape.const(1 / 3)
    assert third.index != rounded.index
    assert third.to_sympy() == sympy.Rational(1, 3) and rounded.to_sympy() == sympy.Float(1 / 3)
    assert tape.const(2).index == tape.const(2.0).index == tape.from_sympy(sympy.Integer(2)).index
    assert tape.const(0.5).index == tape.from_sympy(sympy.Rational(1, 2)).index
    assert tape.from_sympy(sympy.Float(0.5)).index != tape.const(0.5).index


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "pow"])
def test_folded_rationals_are_sympys_rationals(tape, op):
    rng = np.random.default_rng(3)
    apply = OPS[op].apply
    for _ in range(20):
        a = Fraction(int(rng.integers(-20, 20)), int(rng.integers(1, 12)))
        b = Fraction(int(rng.integers(-5, 5)), 1 if op == "pow" else int(rng.integers(1, 12)))
        if (op == "div" and b == 0) or (op == "pow" and a == 0 and b < 0):
            continue
        folded = apply(tape.const(a), tape.const(b))
        assert folded.op == "const"
        assert folded.to_sympy() == apply(sympy.Rational(a.numerator, a.denominator), sympy.Rational(b.numerator, b.denominator))


def test_folded_rational_powers_are_exact_or_real(tape):
    assert (tape.const(Fraction(4, 9)) ** tape.const(Fraction(1, 2))).to_sympy() == sympy.Rational(2, 3)
    assert (tape.const(Fraction(8, 27)) ** tape.const(Fraction(-2, 3))).to_sympy() == sympy.Rational(9, 4)
    assert (tape.const(2) ** tape.const(Fraction(1, 2))).to_sympy() == sympy.sqrt(2)
    assert (tape.const(-8) ** tape.const(Fraction(1, 3))).to_sympy() is sympy.nan  # real powers only


def test_exact_forms_past_the_size_limit_become_floats(tape):
    big = tape.const(Fraction(1, 3)) ** tape.const(300)  # 476 bits: more than an exact form keeps
    assert big.to_sympy() == sympy.Float(float(Fraction(1, 3) ** 300))
    x = tape.var("x")
    assert str(big * x) == f"{float(Fraction(1, 3) ** 300)!r}*x"


class Erfi(sad.UnaryFn):
    """A user function whose SymPy form is a SymPy function no built-in uses."""

    name = "erfi"

    def f(self, v):
        return np.vectorize(lambda u: float(sympy.erfi(u)))(v)

    def grad(self, v):
        return 2 / np.sqrt(np.pi) * np.exp(v * v)

    def fdiff(self, input, output):
        return 2 / np.sqrt(np.pi) * sad.exp(input * input)

    def to_sympy(self, arg):
        return sympy.erfi(arg)


def test_a_registered_user_function_with_a_sympy_form_comes_back(monkeypatch, tape):
    x = tape.var("x", 0.4)
    with pytest.raises(SympyConversionError, match="erfi"):
        tape.from_sympy(sympy.erfi(X))  # not registered yet
    erfi = Erfi()
    monkeypatch.setitem(sad.FUNCTIONS, "erfi", erfi)  # the reverse map notices the registry changed
    t = erfi(x) * sad.atan(x)
    assert t.to_sympy() == sympy.erfi(X) * sympy.atan(X)
    back = tape.from_sympy(t.to_sympy())
    assert back.index == t.index  # rebuilt on the same tape: the very same nodes
    assert sad.Tape().from_sympy(sympy.erfi(X)).eval({"x": 0.4}) == pytest.approx(float(sympy.erfi(0.4)), rel=1e-14)


def test_a_binary_user_function_without_a_hook_goes_by_name(monkeypatch, tape):
    class Mean(sad.BinaryFn):
        name = "mean2"

        def f(self, a, b):
            return (a + b) / 2

    monkeypatch.setitem(sad.FUNCTIONS, "mean2", Mean())
    x, y = tape.var("x", 1.0), tape.var("y", 3.0)
    t = sad.FUNCTIONS["mean2"](x, y)
    assert t.to_sympy() == sympy.Function("mean2")(X, Y)
    assert tape.from_sympy(t.to_sympy()).index == t.index
