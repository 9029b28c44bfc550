"""Property-based fuzzing of the parser: any text gives a Term or a ParseError that says where;
random expression trees, rendered as text, parse to their own value (NumPy and mpmath as oracles)."""

import math
import re

import mpmath
import numpy as np
from hypothesis import given, settings, strategies as st

import subgraph_ad as sad
from subgraph_ad import ParseError
from conftest import examples

PLACE = re.compile(r"^(?:line (\d+), )?column (\d+): |^empty expression|^the expression is \d+ characters long")


def parse_or_refuse(text: str) -> None:
    """Parse; a refusal must be a ParseError whose message is printable and points into the text."""
    try:
        result = sad.parse(text)
    except ParseError as exc:
        message = str(exc)
        message.encode("utf-8")
        place = PLACE.match(message)
        assert place, message
        if place.group(2):
            lines = text.split("\n")
            line = int(place.group(1) or 1)
            assert 1 <= line <= len(lines) and 1 <= int(place.group(2)) <= len(lines[line - 1]) + 1, message
    else:
        assert isinstance(result, sad.Term)


# every code point, lone surrogates included (Hypothesis leaves them out unless asked)
ANY_CHARACTER = st.one_of(st.characters(exclude_categories=()), st.characters(min_codepoint=0xD800,
                                                                               max_codepoint=0xDFFF))
GRAMMAR_PIECES = st.one_of(st.sampled_from(list("xy0123456789.+-*/^() ,e")),
                           st.sampled_from(["sin", "exp", "atan2", "log", "**", "pi", "_", "j", "0x", "\n", "#"]))


@settings(max_examples=examples(150))
@given(st.text(ANY_CHARACTER, max_size=40))
def test_any_text_gives_a_term_or_a_parse_error(text):
    parse_or_refuse(text)


@settings(max_examples=examples(150))
@given(st.lists(GRAMMAR_PIECES, max_size=30).map("".join))
def test_text_from_the_grammars_characters_gives_a_term_or_a_parse_error(text):
    parse_or_refuse(text)


# long runs of blanks and comments before a character that no token starts with: a tokenizer
# pattern that could split the run in many ways takes exponential time here
BLANKS = st.lists(st.sampled_from([" ", "  ", "\t", "\n", "#", "# c#\n", "\r\n"]), min_size=20, max_size=60)


@settings(max_examples=examples(50), deadline=2000)
@given(BLANKS.map("".join), ANY_CHARACTER, st.sampled_from(["", "x", "(", "x +"]))
def test_blank_runs_before_any_character_are_read_in_linear_time(blanks, character, before):
    parse_or_refuse(before + blanks + character)


# -- grammar-aware: expression trees, rendered, parsed and evaluated -------------------------------
def _cbrt(v):
    return mpmath.sign(v) * mpmath.cbrt(abs(v))


#: name -> (NumPy/math value, mpmath value); aliases included: all of them must parse.
FUNCTIONS = {
    "abs": (np.abs, mpmath.fabs), "absolute": (np.abs, mpmath.fabs), "sign": (np.sign, mpmath.sign),
    "sin": (np.sin, mpmath.sin), "cos": (np.cos, mpmath.cos), "tan": (np.tan, mpmath.tan),
    "sec": (lambda v: 1 / np.cos(v), mpmath.sec), "csc": (lambda v: 1 / np.sin(v), mpmath.csc),
    "cot": (lambda v: 1 / np.tan(v), mpmath.cot),
    "asin": (np.arcsin, mpmath.asin), "arcsin": (np.arcsin, mpmath.asin), "acos": (np.arccos, mpmath.acos),
    "arccos": (np.arccos, mpmath.acos), "atan": (np.arctan, mpmath.atan), "arctan": (np.arctan, mpmath.atan),
    "sinh": (np.sinh, mpmath.sinh), "cosh": (np.cosh, mpmath.cosh), "tanh": (np.tanh, mpmath.tanh),
    "asinh": (np.arcsinh, mpmath.asinh), "arcsinh": (np.arcsinh, mpmath.asinh),
    "acosh": (np.arccosh, mpmath.acosh), "arccosh": (np.arccosh, mpmath.acosh),
    "atanh": (np.arctanh, mpmath.atanh), "arctanh": (np.arctanh, mpmath.atanh),
    "exp": (np.exp, mpmath.exp), "expm1": (np.expm1, mpmath.expm1), "log": (np.log, mpmath.log),
    "ln": (np.log, mpmath.log), "log1p": (np.log1p, mpmath.log1p), "log2": (np.log2, lambda v: mpmath.log(v, 2)),
    "log10": (np.log10, mpmath.log10), "sqrt": (np.sqrt, mpmath.sqrt), "cbrt": (np.cbrt, _cbrt),
    "sigmoid": (lambda v: 1 / (1 + np.exp(-v)), lambda v: 1 / (1 + mpmath.exp(-v))),
    "erf": (math.erf, mpmath.erf), "erfc": (math.erfc, mpmath.erfc),
    "atan2": (np.arctan2, mpmath.atan2), "arctan2": (np.arctan2, mpmath.atan2),
    "hypot": (np.hypot, mpmath.hypot), "pow": (np.power, mpmath.power), "power": (np.power, mpmath.power),
}
ARITY = {name: 2 if name in ("atan2", "arctan2", "hypot", "pow", "power") else 1 for name in FUNCTIONS}
#: value -> ways to write it; the value is stated here, not computed from the text.
NUMBERS = {
    1.0: ["1", "1.0", "1.", "0x1", "0b1", "1e0", "01.0"], 2.0: ["2", "0b10", "0o2", "2.0", "20e-1", "0_2.0"],
    3.0: ["3", "0x3", "30e-1", "3_0e-1"], 0.5: ["0.5", ".5", "5e-1", "0.50", "5_0e-2"],
    1.5: ["1.5", "15e-1", "1_5e-1"], 10.0: ["10", "1_0", "0xa", "0XA", "0o12", "1e1", "1E+1", "0b1010"],
    0.1: ["0.1", "1e-1", ".1", "0.1_0"], 7.25: ["7.25", "725e-2", "0.725e1"], 100.0: ["100", "1e2", "1_00", "0x64"],
    0.001: ["0.001", "1e-3", "1E-3", "0.000_1e1"], 123456789.0: ["123_456_789", "0x75bcd15", "1.23456789e8"],
}
PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2, "**": 4}
ATOM, UNARY = 5, 3

leaves = st.one_of(
    st.sampled_from(sorted(NUMBERS)).flatmap(lambda v: st.tuples(st.just("num"), st.just(v),
                                                                   st.sampled_from(NUMBERS[v]))),
    st.tuples(st.just("var"), st.sampled_from(["x", "y", "z"])),
)


def _extend(children):
    return st.one_of(
        st.tuples(st.just("neg"), children),
        st.tuples(st.just("bin"), st.sampled_from(sorted(PRECEDENCE)), children, children),
        st.sampled_from(sorted(FUNCTIONS)).flatmap(
            lambda name: st.tuples(st.just("call"), st.just(name), st.lists(children, min_size=ARITY[name],
                                                                            max_size=ARITY[name]))),
    )


trees = st.recursive(leaves, _extend, max_leaves=10)


def _precedence(tree) -> int:
    if tree[0] == "bin":
        return PRECEDENCE[tree[1]]
    return UNARY if tree[0] == "neg" else ATOM


@st.composite
def rendered(draw, tree) -> str:
    """The tree as text: parentheses where Python's precedence needs them, and some where it does
    not; ``^`` or ``**``; blanks, tabs and newlines (inside parentheses) between tokens."""
    def blank() -> str:
        return draw(st.sampled_from(["", "", " ", "  ", "\t"]))

    def wrap(child, needed: bool) -> str:
        text = draw(rendered(child))
        if needed or draw(st.integers(0, 5)) == 0:
            return "(" + blank() + text + draw(st.sampled_from(["", " ", "\n"])) + ")"
        return text

    kind = tree[0]
    if kind == "num":
        return tree[2]
    if kind == "var":
        return tree[1]
    if kind == "neg":
        return "-" + blank() + wrap(tree[1], _precedence(tree[1]) < UNARY)
    if kind == "call":
        args = ("," + blank()).join(draw(rendered(arg)) for arg in tree[2])
        return tree[1] + "(" + blank() + args + blank() + ")"
    op, left, right = tree[1], tree[2], tree[3]
    p = PRECEDENCE[op]
    if op == "**":  # right-associative; its base binds tighter than a sign, its exponent may be signed
        lhs, rhs = wrap(left, _precedence(left) <= p), wrap(right, _precedence(right) < UNARY)
        op = draw(st.sampled_from(["**", "^"]))
    else:
        lhs, rhs = wrap(left, _precedence(left) < p), wrap(right, _precedence(right) <= p)
    return lhs + blank() + op + blank() + rhs


def _numpy_value(tree, point):
    """The tree's value in float64, operation by operation (IEEE: nan and inf, never an exception)."""
    kind = tree[0]
    if kind == "num":
        return np.float64(tree[1])
    if kind == "var":
        return np.float64(point[tree[1]])
    if kind == "neg":
        return -_numpy_value(tree[1], point)
    if kind == "call":
        return np.float64(FUNCTIONS[tree[1]][0](*(_numpy_value(a, point) for a in tree[2])))
    a, b = _numpy_value(tree[2], point), _numpy_value(tree[3], point)
    return {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide, "**": np.power}[tree[1]](a, b)


def _mpmath_value(tree, point):
    """The tree's value with 40 digits; an error or a complex value where float64 is finite means
    the reference is not usable there (e.g. a pole that rounding stepped over)."""
    kind = tree[0]
    if kind == "num":
        return mpmath.mpf(tree[1])
    if kind == "var":
        return mpmath.mpf(point[tree[1]])
    if kind == "neg":
        return -_mpmath_value(tree[1], point)
    if kind == "call":
        return FUNCTIONS[tree[1]][1](*(_mpmath_value(a, point) for a in tree[2]))
    a, b = _mpmath_value(tree[2], point), _mpmath_value(tree[3], point)
    return {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b, "/": lambda: a / b,
            "**": lambda: mpmath.power(a, b)}[tree[1]]()


def _children(tree) -> list:
    return {"neg": lambda: [tree[1]], "bin": lambda: [tree[2], tree[3]], "call": lambda: list(tree[2])}.get(
        tree[0], list)()


def _has_var(tree) -> bool:
    stack = [tree]
    while stack:
        node = stack.pop()
        if node[0] == "var":
            return True
        stack.extend(_children(node))
    return False


def _constant_parts_are_ordinary(tree) -> bool:
    """No var-free part is 0, inf or nan: the tape folds ``0*f`` to 0 where IEEE says 0*inf = nan,
    and folds constants exactly, where float64 may overflow first."""
    stack = [tree]
    while stack:
        node = stack.pop()
        stack.extend(_children(node))
        if node[0] != "num" and not _has_var(node):
            with np.errstate(all="ignore"):
                value = _numpy_value(node, {})
            if value == 0 or not np.isfinite(value):
                return False
    return True


points = st.fixed_dictionaries({name: st.floats(-2.5, 2.5, allow_nan=False) for name in "xyz"})


@settings(max_examples=examples(150))
@given(st.data(), trees.filter(_constant_parts_are_ordinary), points)
def test_a_rendered_tree_parses_to_its_own_value(data, tree, point):
    text = data.draw(rendered(tree), label="text")
    tape = sad.Tape()
    for name, value in point.items():
        tape.var(name, value)
    ours = float(sad.parse(text, tape=tape).eval())
    with np.errstate(all="ignore"):
        naive = float(_numpy_value(tree, point))
    if math.isnan(naive) or math.isinf(naive):
        assert ours == naive or math.isnan(ours) and math.isnan(naive), (text, ours, naive)
        return
    with mpmath.workdps(40):
        try:
            exact = _mpmath_value(tree, point)
        except (ZeroDivisionError, ValueError):
            exact = None
        usable = isinstance(exact, mpmath.mpf) and abs(exact) < 1e308
        reference = float(exact) if usable else naive
    # relative 1e-9 where float64 evaluation is itself accurate; where the tree is ill-conditioned
    # at the point, within a thousand times the error that plain float64 evaluation makes there
    tolerance = 1e-9 * max(1.0, abs(reference)) + 1e3 * abs(naive - reference)
    assert abs(ours - reference) <= tolerance, (text, ours, reference, naive)


@settings(max_examples=examples(40))
@given(st.data(), trees.filter(_constant_parts_are_ordinary), trees.filter(_constant_parts_are_ordinary))
def test_two_operands_side_by_side_get_the_implicit_multiplication_hint(data, left, right):
    lhs, rhs = (re.sub(r"\s+", " ", data.draw(rendered(tree))) for tree in (left, right))
    text = f"({lhs}) ({rhs})"
    try:
        sad.parse(text)
    except ParseError as exc:
        assert str(exc).startswith(f"column {len(lhs) + 4}: implicit multiplication is not accepted; write "), exc
        if len(text) < 60:
            fixed = str(exc).split("; write ", 1)[1]
            assert fixed == f"({lhs})*({rhs})"
            sad.parse(fixed)
    else:
        raise AssertionError(f"{text!r} was accepted")


if __name__ == "__main__":
    # Coverage-guided fuzzing of the parser with atheris (optional: pip install atheris), e.g.
    #   PYTHONPATH=tests .venv/bin/python tests/interop/test_parse_fuzz.py -max_total_time=600
    import inspect
    import sys

    import atheris

    from subgraph_ad.interop import parse as parser
    from subgraph_ad.interop import tokens as tokenizer

    def _one_input(data: bytes) -> None:
        parse_or_refuse(atheris.FuzzedDataProvider(data).ConsumeUnicode(400))

    for module in (parser, tokenizer):
        for function in vars(module).values():
            if inspect.isfunction(function) and function.__module__ == module.__name__:
                atheris.instrument_func(function)
    atheris.Setup(sys.argv, _one_input)
    atheris.Fuzz()
