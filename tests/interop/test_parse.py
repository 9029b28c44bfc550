"""The safe parser: what it accepts, and hostile inputs it must refuse without running them."""

import math

import pytest
import sympy

import subgraph_ad as sad
from subgraph_ad import ParseError
from conftest import Cube


@pytest.mark.parametrize(
    "text, reference",
    [
        ("exp(-x^2/2) * sin(y)", "exp(-x**2/2)*sin(y)"),
        ("x**2 + 3*x - 1", "x**2 + 3*x - 1"),
        ("x^2^3", "x**(2**3)"),  # right-associative like **
        ("-x^2", "-(x**2)"),
        ("2^-x", "2**(-x)"),
        ("sqrt(x) / tanh(y) + log(x*y)", "sqrt(x)/tanh(y) + log(x*y)"),
        ("sigmoid(x)", "1/(1+exp(-x))"),
        ("1.5e-3 * x + pi", "0.0015*x + pi"),
        ("  x  ", "x"),
    ],
)
def test_accepted_expressions_mean_what_sympy_means(text, reference):
    t = sad.parse(text)
    expected = sympy.sympify(reference)
    point = {k: v for k, v in {"x": 0.7, "y": 1.3}.items() if k in t.tape.vars}
    value = float(expected.evalf(30, subs={sympy.Symbol(k): v for k, v in point.items()}))
    assert t.eval(point) == pytest.approx(value, rel=1e-13)


def test_parse_on_an_existing_tape_reuses_vars(tape):
    x = tape.var("x", 0.5)
    y = tape.var("y", 4.2)
    t = sad.parse("x*y + sin(x)", tape=tape)
    assert t.index == (x * y + sad.sin(x)).index
    assert set(tape.vars) == {"x", "y"}
    assert t.eval() == pytest.approx(2.579425538604203, rel=1e-15)
    assert sad.parse("z + x", tape=tape).eval() == 0.5  # new vars get value 0.0


@pytest.mark.parametrize(
    "text, message",
    [
        ("__import__('os').system('echo hacked')", "a call of a non-name is not allowed"),
        ("__import__('os')", "a call of __import__ is not allowed"),
        ("x.__class__", "attribute access is not allowed"),
        ("(lambda: 1)()", "a call of a non-name"),
        ("lambda: 1", "a lambda is not allowed"),
        ("[i for i in x]", "a comprehension is not allowed"),
        ("x[0]", "subscripting is not allowed"),
        ("x if y else 1", "a conditional expression is not allowed"),
        ("x < 1", "a comparison is not allowed"),
        ("(y := 3)", "an assignment is not allowed"),
        ("'abc'", "only real numbers are allowed"),
        ("1j * x", "only real numbers are allowed"),
        ("x % 2", "operator Mod is not allowed"),
        ("x // 2", "operator FloorDiv is not allowed"),
        ("~x", "unary operator Invert is not allowed"),
        ("sin(x, y)", "takes exactly one positional argument"),
        ("sin(x=1)", "takes exactly one positional argument"),
        ("foo(x)", "a call of foo is not allowed"),
        ("sin + 1", "sin is a function"),
        ("x +", "invalid syntax"),
        ("x = 1", "invalid syntax"),
        ("", "invalid syntax"),
        ("1" + "0" * 400, "too large for a float"),
    ],
)
def test_refused_input_says_where_and_why(text, message):
    with pytest.raises(ParseError, match="column|characters|nest") as info:
        sad.parse(text)
    assert message in str(info.value)
    assert isinstance(info.value, ValueError)


def test_error_column_points_into_the_original_text():
    with pytest.raises(ParseError, match="column 9: attribute access"):
        sad.parse("x^2 + y^x.real")  # the '^'s must not shift the reported column


def test_hostile_input_is_never_executed(tmp_path):
    marker = tmp_path / "ran"
    with pytest.raises(ParseError):
        sad.parse(f"__import__('pathlib').Path({str(marker)!r}).touch()")
    assert not marker.exists()


@pytest.mark.parametrize(
    "text, message",
    [
        ("(" * 1000 + "x" + ")" * 1000, "parentheses nest 1000 deep"),
        ("-" * 10_000 + "x", "nest"),
        ("x+" * 15_000 + "x", "characters long"),
        ("+".join(["x"] * 400), "nests more than"),
    ],
)
def test_huge_or_deeply_nested_input_is_a_clear_error(text, message):
    with pytest.raises(ParseError, match=message):
        sad.parse(text)


def test_a_failed_parse_leaves_the_tape_unchanged(tape):
    tape.var("x", 1.0)
    before = list(tape.nodes)
    with pytest.raises(ParseError):
        sad.parse("sin(q) + exp(x) + x.y", tape=tape)
    with pytest.raises(ParseError):
        sad.parse("sin(q) + 10**" + "9" * 400, tape=tape)
    assert tape.nodes == before and set(tape.vars) == {"x"}


def test_parse_argument_types():
    with pytest.raises(TypeError, match="takes a str"):
        sad.parse(3)
    with pytest.raises(TypeError, match="must be a Tape"):
        sad.parse("x", tape="tape")


def test_extra_functions_by_name():
    t = sad.parse("cube(x) + 1", functions={"cube": Cube()})
    assert t.eval({"x": 2.0}) == 9.0
    assert t.diff(t.tape.vars["x"]).eval({"x": 2.0}) == 12.0
    assert math.isnan(sad.parse("log(x)").eval({"x": -1.0}))
