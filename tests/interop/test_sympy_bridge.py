"""to_sympy / from_sympy: round trips, unsupported constructs, deep expressions."""

import numpy as np
import pytest
import sympy

import subgraph_ad as sad
from subgraph_ad import SympyConversionError, Tape
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
    if not expr.has(sympy.pi, sympy.E):  # those become floats on the tape
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


@pytest.mark.parametrize("expr", [sympy.Abs(X), sympy.Piecewise((X, X > 0), (0, True)), X + sympy.I,
                                  sympy.Function("mystery")(X), sympy.atan2(X, Y)])
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
