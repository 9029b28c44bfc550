"""The safe parser: what it accepts, what it refuses and how it says so, its limits, and a
corpus of hostile strings that must each give a Term or a ParseError and nothing else."""

import math
import re

import pytest
import sympy

import subgraph_ad as sad
from subgraph_ad import ParseError
from subgraph_ad.functions import FUNCTIONS
from subgraph_ad.interop.parse import MAX_DEPTH, MAX_DIGITS, MAX_LENGTH, free_names
from conftest import Cube


@pytest.mark.parametrize(
    "text, reference",
    [
        ("exp(-x^2/2) * sin(y)", "exp(-x**2/2)*sin(y)"),
        ("x**2 + 3*x - 1", "x**2 + 3*x - 1"),
        ("x^2^3", "x**(2**3)"),  # right-associative like **
        ("-x^2", "-(x**2)"),
        ("2^-x", "2**(-x)"),
        ("2**-x**2", "2**(-(x**2))"),
        ("-x*y", "(-x)*y"),
        ("x - y - 1", "(x - y) - 1"),
        ("x / y / 2", "(x / y) / 2"),
        ("x / y * 2", "(x / y) * 2"),
        ("--x - -y", "x + y"),
        ("+x", "x"),
        ("sqrt(x) / tanh(y) + log(x*y)", "sqrt(x)/tanh(y) + log(x*y)"),
        ("sigmoid(x)", "1/(1+exp(-x))"),
        ("atan2(y, x) + hypot(x, y) + pow(x, y)", "atan2(y, x) + sqrt(x**2 + y**2) + x**y"),
        ("ln(x) + arctan(y)", "log(x) + atan(y)"),
        ("1.5e-3 * x + pi", "0.0015*x + pi"),
        ("1_000.5 + 0x1F + 0o17 + 0b11 + .5 + 5.", "1000.5 + 31 + 15 + 3 + 0.5 + 5"),
        ("  x  ", "x"),
        ("x +\n\ty  # a comment\n", "x + y"),
        ("(x\n+ 1)", "x + 1"),
        ("1e-999999 + x", "x"),  # underflows to 0, as in Python
        ("0x" + "0" * (MAX_DIGITS - 1) + "1", "1"),
        ("0" * (MAX_DIGITS - 1) + ".5", "0.5"),
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


def test_names_are_read_as_python_reads_identifiers():
    t = sad.parse("α*x + 𝑥")  # non-ASCII names work; NFKC makes the italic 𝑥 the name x, as in Python
    assert set(t.tape.vars) == {"α", "x"}
    assert t.eval({"α": 2.0, "x": 3.0}) == 9.0
    assert sad.parse("sinn + e").eval({"sinn": 1.0}) == pytest.approx(1 + math.e)  # a bare name is a var


@pytest.mark.parametrize(
    "text, message",
    [
        ("__import__('os').system('echo hacked')", "column 1: __import__: names starting with `_` are not allowed"),
        ("__import__('os')", "names starting with `_` are not allowed"),
        ("x.__class__", "column 1: attribute access is not allowed"),
        ("(lambda: 1)()", "column 2: a lambda is not allowed"),
        ("lambda: 1", "a lambda is not allowed"),
        ("[i for i in x]", "a list is not allowed"),
        ("x[0]", "subscripting is not allowed"),
        ("x[1:2]", "subscripting is not allowed"),
        ("x if y else 1", "column 3: a conditional expression is not allowed"),
        ("x < 1", "a comparison is not allowed"),
        ("1 < x < 2", "a comparison is not allowed"),
        ("x and y", "a boolean operator is not allowed"),
        ("(y := 3)", "column 4: an assignment is not allowed"),
        ("x = 1", "column 3: an assignment is not allowed"),
        ("'abc'", "a string is not allowed"),
        ("f'{x}'", "a string is not allowed"),
        ("{x: 1}", "a dict or set is not allowed"),
        ("(1, 2)", "column 3: a tuple is not allowed"),
        ("1j * x", "only real numbers are allowed, got the imaginary number 1j"),
        ("True + x", "only real numbers are allowed, got True"),
        ("None", "only real numbers are allowed, got None"),
        ("x % 2", "column 3: the operator % is not allowed (use + - * / ^ **)"),
        ("x // 2", "the operator // is not allowed"),
        ("x @ y", "the operator @ is not allowed"),
        ("~x", "the unary operator ~ is not allowed"),
        ("sin(*x)", "column 5: unpacking is not allowed"),
        ("import os", "the keyword import is not allowed"),
        ("sin(x, y)", "column 1: sin() takes exactly one positional argument, got 2"),
        ("atan2(x)", "atan2() takes exactly 2 positional arguments, got 1"),
        ("sin()", "sin() takes exactly one positional argument, got 0"),
        ("sin(x=1)", "column 6: keyword arguments are not allowed: sin() takes exactly one positional argument"),
        ("sin + 1", "column 1: sin is a function; write sin(...)"),
        ("sin x", "sin is a function; write sin(x)"),
        ("x +", "column 4: invalid syntax: the expression ends after '+'"),
        ("x +* 3", "column 4: invalid syntax: expected a number, a name or '(' after '+', got '*'"),
        ("exp(x", "column 4: invalid syntax: this '(' of the call of exp is never closed"),
        ("(x))", "column 4: invalid syntax: ')' without a matching '('"),
        ("0123", "'0123' is not a valid number"),
        ("1.2.3", "'1.2.3' is not a valid number"),
        ("0xg", "'0xg' is not a valid number"),
        ("x²", "column 2: character '²' (U+00B2 SUPERSCRIPT TWO) is not allowed in a name"),
        ("x\u200b+1", "character '\\u200b' (U+200B ZERO WIDTH SPACE) is not allowed"),
        ("x\0", "column 2: character '\\x00' (U+0000) is not allowed"),
        ("x\ud800", "column 2: character '\\ud800' (U+D800 a lone surrogate) is not allowed"),
        ("1" + "0" * 400, "is too large for a float"),
        ("1e999999", "the number 1e999999 is too large for a float"),
        ("x +\n  y.z", "line 2, column 3: attribute access is not allowed"),
    ],
)
def test_refused_input_says_where_and_why(text, message):
    with pytest.raises(ParseError) as info:
        sad.parse(text)
    assert message in str(info.value)
    assert isinstance(info.value, ValueError)


def test_error_column_points_into_the_original_text():
    with pytest.raises(ParseError, match="column 9: attribute access"):
        sad.parse("x^2 + y^x.real")
    with pytest.raises(ParseError, match="column 10: attribute access"):
        sad.parse("   x^2 + y.real")  # leading blanks count


def test_hostile_input_is_never_executed(tmp_path):
    marker = tmp_path / "ran"
    with pytest.raises(ParseError):
        sad.parse(f"__import__('pathlib').Path({str(marker)!r}).touch()")
    assert not marker.exists()


@pytest.mark.parametrize("text", ["", "   ", "\n\t \r\n", "# only a comment", "  # one\n# two\n"])
def test_an_empty_expression_says_so(text):
    with pytest.raises(ParseError, match="^empty expression"):
        sad.parse(text)


@pytest.mark.parametrize(
    "text, fixed",
    [
        ("2x", "2*x"),
        ("2 x", "2*x"),
        ("x y", "x*y"),
        ("3sin(x)", "3*sin(x)"),
        ("2(x+1)", "2*(x+1)"),
        ("(x+1)(x-1)", "(x+1)*(x-1)"),
        ("(x+1)2", "(x+1)*2"),
        ("2pi + 1", "2*pi + 1"),
        ("1.5e3x^2", "1.5e3*x^2"),
    ],
)
def test_implicit_multiplication_gets_the_fixed_text(text, fixed):
    with pytest.raises(ParseError, match="implicit multiplication is not accepted") as info:
        sad.parse(text)
    assert str(info.value).endswith(f"write {fixed}")
    reference = sympy.sympify(fixed.replace("^", "**"))
    value = float(reference.evalf(30, subs={sympy.Symbol("x"): 0.7, sympy.Symbol("y"): 1.3}))
    assert sad.parse(fixed).eval({k: v for k, v in {"x": 0.7, "y": 1.3}.items() if k in fixed}) == \
        pytest.approx(value, rel=1e-13)  # the suggestion is what was meant


def test_a_long_text_shows_the_neighbourhood_of_the_fix():
    text = "x + " * 30 + "2y" + " + x" * 30
    with pytest.raises(ParseError) as info:
        sad.parse(text)
    message = str(info.value)
    assert message == ("column 122: implicit multiplication is not accepted; "
                       "write ...x + x + x + x + x + x + 2*y + x + x + x + x + x + x...")


@pytest.mark.parametrize(
    "text, functions, meant",
    [
        ("sinn(x)", None, "sin"),
        ("exq(x) + 1", None, "exp"),
        ("atna2(y, x)", None, "atan2"),
        ("arcsn(x)", None, "arcsin"),  # the aliases are known names too
        ("cueb(x)", {"cube": Cube()}, "cube"),  # and the user's functions
    ],
)
def test_a_misspelt_function_gets_did_you_mean(text, functions, meant):
    with pytest.raises(ParseError, match=f"a call of {text[:text.index('(')]} is not allowed") as info:
        sad.parse(text, functions=functions)
    assert str(info.value).endswith(f"did you mean {meant}?")


def test_an_unknown_call_far_from_any_function_lists_the_known_ones():
    with pytest.raises(ParseError) as info:
        sad.parse("frobnicate(x)")
    assert "known functions: abs, acos," in str(info.value) and "did you mean" not in str(info.value)
    with pytest.raises(ParseError, match=r"x is not a known function; .*; for a product write x\*\(\.\.\.\)$"):
        sad.parse("x(y + 1)")


# -- limits ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("prefix, value", [("0x", 1.0), ("0X", 1.0), ("0o", 1.0), ("0b", 1.0), ("", 0.0)])
def test_integer_literals_of_any_base_are_limited_in_digits(prefix, value):
    at_limit = prefix + "0" * (MAX_DIGITS - 1) + ("1" if prefix else "0")
    assert sad.parse(f"{at_limit} + x").eval({"x": 3.0}) == 3.0 + value
    for digits in (MAX_DIGITS + 1, 5000):
        with pytest.raises(ParseError, match=f"has {digits} digits; at most MAX_DIGITS = {MAX_DIGITS} are accepted"):
            sad.parse("x + " + prefix + "1" * digits)


def test_numbers_near_the_float_range():
    assert sad.parse("9" * 308).eval() == float("9" * 308)  # 309 digits would overflow
    assert sad.parse("0x" + "f" * 255).eval() == float(int("f" * 255, 16))
    with pytest.raises(ParseError, match=r"the number 9999999999999999999999999\.\.\.999999999999 is too large"):
        sad.parse("9" * 309)
    with pytest.raises(ParseError, match="too large for a float"):
        sad.parse("0x1" + "0" * 256)
    with pytest.raises(ParseError, match=f"has {MAX_DIGITS + 7} digits"):
        sad.parse("1." + "0" * MAX_DIGITS + "e999999")


def test_text_length_is_limited():
    assert sad.parse(" " * (MAX_LENGTH - 1) + "x").tape.vars.keys() == {"x"}
    with pytest.raises(ParseError, match=f"is {MAX_LENGTH + 1} characters long; at most MAX_LENGTH = {MAX_LENGTH}"):
        sad.parse("x" + " " * MAX_LENGTH)


def test_nesting_up_to_the_limit_parses_and_one_more_level_is_refused():
    assert sad.parse("(" * MAX_DEPTH + "x" + ")" * MAX_DEPTH).eval({"x": 2.5}) == 2.5
    with pytest.raises(ParseError, match=f"nests {MAX_DEPTH + 1} levels deep here .*MAX_DEPTH = {MAX_DEPTH}"):
        sad.parse("(" * (MAX_DEPTH + 1) + "x" + ")" * (MAX_DEPTH + 1))
    assert sad.parse("-" * (MAX_DEPTH - 1) + "x").eval({"x": 2.5}) == -2.5  # an odd number of signs
    with pytest.raises(ParseError, match=f"nests {MAX_DEPTH + 1} levels deep"):
        sad.parse("x" + "^x" * (MAX_DEPTH + 1))


def test_deep_calls_at_the_limit_build_and_evaluate():
    t = sad.parse("sin(" * (MAX_DEPTH - 1) + "x" + ")" * (MAX_DEPTH - 1))
    value = 0.5
    for _ in range(MAX_DEPTH - 1):
        value = math.sin(value)
    assert t.eval({"x": 0.5}) == pytest.approx(value, rel=1e-12)


def test_ten_thousand_operand_sums_and_products_parse():
    t = sad.parse("+".join(["x"] * 10_000))
    assert t.eval({"x": 0.25}) == 2500.0
    t = sad.parse("*".join(f"x{i % 7}" for i in range(10_000)))
    values = {f"x{k}": 1.0 + k / 1000 for k in range(7)}
    assert t.eval(values) == pytest.approx(math.prod(values[f"x{i % 7}"] for i in range(10_000)), rel=1e-11)


def test_a_hundred_thousand_character_expression_parses():
    terms = [f"{i % 10}.5*y{i % 13}" for i in range(13_000)]
    text = " + ".join(terms)[:100_000]
    text = text[: text.rindex(" + ")]
    assert 99_900 < len(text) <= 100_000
    t = sad.parse(text)
    point = {f"y{k}": k / 4 for k in range(13)}
    count = text.count(" + ") + 1
    assert t.eval(point) == pytest.approx(sum((i % 10 + 0.5) * (i % 13) / 4 for i in range(count)), rel=1e-12)


def test_a_failed_parse_leaves_the_tape_unchanged(tape):
    tape.var("x", 1.0)
    before = list(tape.nodes)
    for text in ["sin(q) + exp(x) + x.y", "sin(q) + 10**" + "9" * 400, "q + exp(x) + (", "q*x + 2y"]:
        with pytest.raises(ParseError):
            sad.parse(text, tape=tape)
    assert tape.nodes == before and set(tape.vars) == {"x"}


def test_parse_argument_types():
    with pytest.raises(TypeError, match="takes a str, got int 3"):
        sad.parse(3)
    with pytest.raises(TypeError, match="takes a str, got bytes"):
        sad.parse(b"x")
    with pytest.raises(TypeError, match="must be a Tape"):
        sad.parse("x", tape="tape")
    with pytest.raises(TypeError, match="functions maps names to UnaryFn or BinaryFn instances; got 'f': builtin"):
        sad.parse("f(x)", functions={"f": len})


def test_extra_functions_by_name():
    t = sad.parse("cube(x) + 1", functions={"cube": Cube()})
    assert t.eval({"x": 2.0}) == 9.0
    assert t.diff(t.tape.vars["x"]).eval({"x": 2.0}) == 12.0
    assert math.isnan(sad.parse("log(x)").eval({"x": -1.0}))


def test_free_names_are_the_names_read_as_values():
    assert free_names("e^x + sin(pi*y) + x") == ["e", "x", "pi", "y"]
    assert free_names("+".join(["z"] * 10_000)) == ["z"]  # where Python's ast would give up
    with pytest.raises(ParseError, match="did you mean sin"):
        free_names("sinn(x)")


# -- the hostile corpus ----------------------------------------------------------------------------
def _hostile() -> list[str]:
    """Strings a careless or malicious user might send: each must give a Term or a ParseError."""
    plain = [
        # surrogates, control characters, odd Unicode
        "x\ud800", "\udfff", "\ud83d\ude00", "sin(\ud800)", "# \ud800", "x # \ud800", "x\ud800 + 1",
        "\0", "x\0", "x\0+1", "# \0", "\0x", "x\x7f", "x\x1c+1", "\u2028x", "x\u00a0+1", "x\u200b+1",
        "x\u0301", "😀", "x😀", "١٢٣", "x+١", "α+β", "é", "𝑥", "x²", "ℯ^x", "π", "∞", "ｘ", "ｉｆ",
        "x\u202e+1", "\ufeffx", "x\ufffd", "ำ", "ำx", "xำ", " " * 64 + "\ud800", "x +" + " \t\n" * 40 + "\0",
        "# a # b # c\n" * 30 + "\ud800", "(" + "\n" * 100 + "\x01",
        # Python that is not in the grammar
        "f'{x}'", 'f"{__import__(\'os\')}"', "rb'x'", "'''x'''", '"x"', "'x", "x'", "x'y'",
        "x.real", "(x).__class__", "1 .real", "x.y.z", "sin.__call__(x)", "().__class__.__bases__[0]",
        "lambda: 1", "lambda x: x", "(lambda: 1)()", "[i for i in x]", "(i for i in x)", "{i for i in x}",
        "{x: 1}", "{x}", "[x]", "[*x]", "(y := 3)", "y := 3", "x = 1", "x == 1", "x != 1", "1 < x < 2",
        "x <= y", "x >= y", "x > y", "x < y", "x is y", "x in y", "x not in y", "not x", "x and y", "x or y",
        "x if x else y", "await x", "yield x", "def f(): pass", "import os", "from os import path",
        "sin(*x)", "sin(**x)", "f(**x)", "*x", "**x", "sin(x=1)", "atan2(y=1, x=2)", "sin(x, y=1)",
        "x[0]", "x[1:2]", "x[::2]", "x[...]", "...", "x: int", "x -> y", "x;y", "x\\\n+1", "\\", "@x",
        "x@y", "x|y", "x&y", "x<<1", "x>>1", "~x", "x%2", "x//2", "!x", "x!", "$", "$x", "?", "`x`", "x?",
        "True", "False", "None", "None + x", "1j", "1J", "2.5j", "1j * x", "x * 2j",
        "__import__('os')", "__import__('os').system('echo hacked')", "__builtins__", "__class__",
        "os.system('ls')", "exec('1')", "eval('1')", "open('f')", "globals()", "getattr(x, 'y')",
        "breakpoint()", "print(x)", "input()", "compile('1', '', 'eval')",
        # calls: unknown, misspelt, wrong arity
        "sinn(x)", "Sin(x)", "SIN(x)", "exq(x)", "lgo(x)", "sqr(x)", "atna2(y,x)", "arcsn(x)", "foo(x)",
        "x(y)", "e(x)", "pi(x)", "_(x)", "sin()", "sin(,)", "sin(x,)", "sin(x, y)", "sin(x, y, z)",
        "atan2(x)", "atan2(x, y, z)", "pow(x)", "hypot()", "sin(x)(y)", "sin", "sin + 1", "sin x",
        "sin sin x", "exp", "ln", "ln(x)", "arctan2(y, x)", "absolute(-x)", "power(x, 2)",
        # juxtaposition and odd numbers
        "2x", "2 x", "x y", "3sin(x)", "2(x+1)", ")(", "(x)(y)", "(x+1)(x-1)", "(x+1)2", "x2", "2e", "2e+",
        "1e", "1.e5", ".e5", "e.5", "0x", "0b2", "0o9", "0_", "1__2", "01", "00", "0.0.0", "1..2", "x.5",
        "1.5.5", "1e5x", "0x1fg", "0b1012", "1_000", "1_000.000_1", "0x_f", "0xf_", "1e1_0", "1e+-1",
        # operators out of place
        "x^^2", "x***2", "x**-2", "-x**-2", "--x", "-+-x", "+x", "x+", "x-", "x*", "x/", "/x", "^x", "x^",
        "x*/y", "x+*y", "x,", ",", "(,)", "()", "(", ")", "x)", "((x)", "(x))", "sin(x", "sin x)", "x)(",
        # blanks, comments, lines
        "", " ", "\t", "\n", "\r\n", "\x0c", "# c", "x # c", "x\n", "\nx", "  \n  x  \n ", "(x\n+\ny)",
        "x\n+\ny", "\tx", "x\t+\ty", "#" * 10, "x#\n+1", "x\r+1", "x # (\n)",
        # numbers at and over the limits
        "1e999999", "-1e999999", "1e-999999", "1e308*10", "1.8e308", "1.7976931348623157e308", "1e309",
        "1" + "0" * 400, "0." + "0" * 500 + "1", "1" * 400 + ".5", "inf", "nan", "-inf + x",
        "0x" + "f" * 5000, "0b" + "1" * 5000, "0o" + "7" * 5000, "9" * 5000, "9" * 4300, "9" * 4301,
        "0x" + "f" * 4301, "1e" + "9" * 5000, "1e-" + "9" * 999, "0x" + "0" * 5000 + "1",
        "0" * 5000, "1" + "_0" * 2000, "0b" + "1" * MAX_DIGITS, "0b" + "1" * (MAX_DIGITS + 1),
    ]
    n = MAX_DEPTH
    sized = [
        "(" * 199 + "x" + ")" * 199, "(" * 201 + "x" + ")" * 201, "(" * n + "x" + ")" * n,
        "(" * (n + 1) + "x" + ")" * (n + 1), "(" * 100_000, ")" * 100_000, "(" * 50_000 + ")" * 50_000,
        "-" * 100_000 + "x", "+" * 100_000 + "x", "~" * 1000 + "x", "x" + "^x" * 20_000, "sin(" * 20_000,
        "x+" * 15_000 + "x", "x" * MAX_LENGTH, " " * MAX_LENGTH, "x" * (MAX_LENGTH + 1), "9" * 10**6,
        "#" + "x" * (MAX_LENGTH - 1), "x" + "\n" * 50_000 + ".y",
    ]
    return plain + sized


def test_every_hostile_string_gives_a_term_or_a_parse_error():
    corpus = _hostile()
    assert len(corpus) >= 250
    where = re.compile(r"^(column \d+|line \d+, column \d+|empty expression|the expression is \d+ characters)")
    longest = 300 + sum(len(name) + 2 for name in FUNCTIONS)  # the list of known functions, no more text
    leaks, terms, refused = [], 0, 0
    for text in corpus:
        try:
            result = sad.parse(text)
        except ParseError as exc:
            refused += 1
            message = str(exc)
            message.encode("utf-8")  # printable: no lone surrogate from the text leaks into it
            if not where.match(message) or len(message) > longest:
                leaks.append((text[:40], f"message without a place or too long: {message[:200]}"))
        except Exception as exc:  # anything else is the bug this test is for
            leaks.append((text[:40], f"{type(exc).__name__}: {exc}"[:200]))
        else:
            terms += 1
            if not isinstance(result, sad.Term):
                leaks.append((text[:40], f"returned {type(result).__name__}"))
    assert not leaks, leaks
    assert terms + refused == len(corpus) and terms > 20 and refused > 200
