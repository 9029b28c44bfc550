"""Error-message audit (issue 16, point 9): every public exception, triggered on purpose.

Each case asserts the exception type, that the message names *what was given* (the offending
value, type, name or path) and *what was expected* (words describing the accepted input), and —
for every call that takes a tape — that the tape is exactly as before: same length, same nodes,
same vars, same derivative memo (STYLE.md habit 11: no half-done state).

Messages are matched by fragments, case-insensitively, so rewording is free as long as the
message keeps both halves.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import pytest
import sympy

import subgraph_ad as sad
from subgraph_ad.cli import main


# -- helpers -------------------------------------------------------------------------------------------
def snapshot(tape: sad.Tape) -> tuple:
    """Everything a failed call must leave as it was."""
    return (len(tape), list(tape.nodes), tuple(tape.vars), dict(tape.deriv_cache), list(tape.orders))


@contextlib.contextmanager
def unchanged(*tapes: sad.Tape) -> Iterator[None]:
    """The tapes are the same after the block as before it (the block is expected to raise)."""
    before = [snapshot(t) for t in tapes]
    yield
    after = [snapshot(t) for t in tapes]
    assert after == before, "a raising call changed the tape"


def says(error: BaseException, *fragments: str | tuple[str, ...]) -> None:
    """The message of ``error`` contains every fragment (case-insensitive); a tuple of fragments
    is satisfied by any one of them (synonyms: "var" or "Term")."""
    message = str(error).lower()
    missing = [f for f in fragments
               if not any(alt.lower() in message for alt in ((f,) if isinstance(f, str) else f))]
    assert not missing, f"message {str(error)!r} lacks {missing}"


@dataclass
class World:
    """A tape with two vars and an expression, a second tape, and a placeholder."""

    tape: sad.Tape
    x: sad.Term
    y: sad.Term
    f: sad.Term
    other: sad.Tape
    u: sad.Term
    p: sad.Term


@pytest.fixture
def w() -> World:
    tape = sad.Tape()
    x, y = tape.var("x", 0.5), tape.var("y", 2.0)
    f = x * y + sad.sin(x)
    other = sad.Tape()
    u = other.var("u", 1.0)
    p = tape.placeholder("p")
    f.gen_graph(x)  # a memo to keep intact
    return World(tape, x, y, f, other, u, p)


# -- wrt: every entry point that differentiates by a var -----------------------------------------------
ENTRY_POINTS: dict[str, Callable[[World, Any], Any]] = {
    "gen_graph": lambda w, v: w.f.gen_graph(v),
    "diff": lambda w, v: w.f.diff(v, 2),
    "diff_taylor": lambda w, v: w.f.diff(v, 3, method="taylor"),
    "derivatives": lambda w, v: sad.derivatives(w.f, v, 2),
    "taylor_graph": lambda w, v: sad.taylor_graph(w.f, v, 2),
    "grad_graph": lambda w, v: w.f.grad_graph(v),
    "derive": lambda w, v: w.f.derive(v),
    "jacobian": lambda w, v: sad.jacobian([w.f], [w.x, v]),
    "hessian": lambda w, v: sad.hessian(w.f, [v]),
    "hvp": lambda w, v: sad.hvp(w.f, [v], [1.0]),
    "lambdify": lambda w, v: sad.lambdify([v], w.f),
}


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
def test_wrt_that_is_not_a_var_names_the_node_and_asks_for_a_var(w: World, entry: str) -> None:
    """A derived node (x*y) is refused with ValueError naming its op and asking for a var."""
    product = w.x * w.y
    with unchanged(w.tape), pytest.raises(ValueError) as info:
        ENTRY_POINTS[entry](w, product)
    says(info.value, "mul", "var")


#: The entries that also take a var by its name (or SymPy Symbol), as SymPy's diff and subs do.
BY_NAME = {"diff", "diff_taylor", "derivatives", "lambdify"}


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
@pytest.mark.parametrize("given", [1.5, b"x", None])
def test_wrt_of_a_wrong_type_names_it_and_asks_for_a_term(w: World, entry: str, given: Any) -> None:
    """A number, bytes or None where a var Term belongs: TypeError showing the value."""
    with unchanged(w.tape), pytest.raises(TypeError) as info:
        ENTRY_POINTS[entry](w, given)
    says(info.value, repr(given), ("var", "term"))


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
def test_a_name_is_a_var_where_names_are_taken_and_a_type_error_elsewhere(w: World, entry: str) -> None:
    """A name that names no var: ValueError listing the vars where names are taken; elsewhere
    a name is a wrong type."""
    error = ValueError if entry in BY_NAME else TypeError
    with unchanged(w.tape), pytest.raises(error) as info:
        ENTRY_POINTS[entry](w, "q")
    says(info.value, "'q'", ("'x', 'y'",) if entry in BY_NAME else ("var", "term"))


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
def test_wrt_from_another_tape_names_both_tapes(w: World, entry: str) -> None:
    """A var of another tape is refused with ValueError naming it and both tapes."""
    with unchanged(w.tape, w.other), pytest.raises(ValueError) as info:
        ENTRY_POINTS[entry](w, w.u)
    says(info.value, "'u'", "tape")


# -- mixing tapes, constants, vars ----------------------------------------------------------------------
@pytest.mark.parametrize("combine", [
    lambda a, b: a + b, lambda a, b: b * a, lambda a, b: a ** b, lambda a, b: b / a,
    lambda a, b: sad.atan2(a, b), lambda a, b: sad.hypot(b, a), lambda a, b: sad.pow(a, b),
    lambda a, b: np.arctan2(a, b),
])
def test_terms_of_two_tapes_never_mix_and_the_error_names_both(w: World, combine: Callable) -> None:
    with unchanged(w.tape, w.other), pytest.raises(ValueError) as info:
        combine(w.x, w.u)
    says(info.value, "two different tapes", repr(w.x), repr(w.u))


def test_outputs_of_two_tapes_are_refused_by_lambdify_jvp_vjp_and_to_dot(w: World) -> None:
    for call in (lambda: sad.lambdify([w.x], [w.f, w.u]), lambda: sad.jvp([w.f, w.u], {w.x: 1.0}),
                 lambda: sad.vjp([w.f, w.u], [1.0, 1.0]), lambda: sad.jacobian([w.f, w.u], [w.x])):
        with unchanged(w.tape, w.other), pytest.raises(ValueError) as info:
            call()
        says(info.value, "tape", repr(w.u))
    with pytest.raises(ValueError) as info:
        sad.Term.to_dot([w.f, w.u])
    says(info.value, "two different tapes")


@pytest.mark.parametrize("value, shown", [("1", "str"), (True, "bool"), (1j, "complex"), (None, "NoneType"),
                                          ([1.0], "list")])
def test_a_constant_must_be_a_real_number(w: World, value: Any, shown: str) -> None:
    with unchanged(w.tape), pytest.raises(TypeError) as info:
        w.tape.const(value)
    says(info.value, shown, repr(value), "real number")


def test_a_term_does_not_combine_with_a_string(w: World) -> None:
    """Python's reflected-operator protocol gives the message here; it still names both types."""
    with unchanged(w.tape), pytest.raises(TypeError) as info:
        w.x + "1"
    says(info.value, "Term", "str")


def test_var_errors_name_the_var_and_what_is_allowed(w: World) -> None:
    with unchanged(w.tape), pytest.raises(ValueError) as info:
        w.tape.var("x")
    says(info.value, "'x'", "already exists", "tape.vars")
    with unchanged(w.tape), pytest.raises(ValueError) as info:
        w.tape.var("1x")
    says(info.value, "'1x'", "identifier")
    with unchanged(w.tape), pytest.raises(TypeError) as info:
        w.tape.var("q", "abc")
    says(info.value, "'q'", "str", "'abc'", "number")
    with unchanged(w.tape), pytest.raises(TypeError) as info:
        w.x.set("abc")
    says(info.value, "'x'", "'abc'", "number")
    with unchanged(w.tape), pytest.raises(ValueError) as info:
        w.f.set(1.0)
    says(info.value, "add", "var")


def test_a_term_is_not_a_number(w: World) -> None:
    """float(), bool() and comparisons on a Term explain why and what to use instead."""
    for call, words in ((lambda: float(w.x), ("Term(0: var 'x')", "eval")),
                        (lambda: bool(w.x), ("truth value", "eval")),
                        (lambda c=(w.x < 1): bool(c), ("truth value",))):
        with unchanged(w.tape), pytest.raises(TypeError) as info:
            call()
        says(info.value, *words)


# -- values ---------------------------------------------------------------------------------------------
def test_unfed_placeholder_is_named_with_how_to_feed_it(w: World) -> None:
    g = w.p * w.x
    for call in (g.eval, lambda: g.derive(w.x), g.grad, lambda: w.p.value):
        with unchanged(w.tape), pytest.raises(sad.UnfedPlaceholder) as info:
            call()
        says(info.value, "'p'", "value")
    assert g.eval({w.p: 2.0}) == 1.0  # fed, it works


def test_lambdify_output_needing_a_var_that_is_not_an_input(w: World) -> None:
    with unchanged(w.tape), pytest.raises(ValueError) as info:
        sad.lambdify([w.x], w.f)
    says(info.value, "'y'", "input")


def test_eval_with_unknown_or_foreign_or_bad_values(w: World) -> None:
    with unchanged(w.tape), pytest.raises(KeyError) as info:
        w.f.eval({"q": 1.0})
    says(info.value, "'q'", "vars are", "'x'")
    with unchanged(w.tape), pytest.raises(ValueError) as info:
        w.f.eval({w.u: 1.0})
    says(info.value, "'u'", "another tape")
    with unchanged(w.tape), pytest.raises(TypeError) as info:
        w.f.eval({w.x: "a"})
    says(info.value, "str", "'a'", "number")


# -- limits ---------------------------------------------------------------------------------------------
def test_tapes_have_a_finite_default_budget_that_can_be_lifted() -> None:
    """A runaway build must end in a LimitError, not in taking all memory (issue 16, point 7)."""
    default = sad.Tape().max_nodes
    assert isinstance(default, int) and 1_000_000 <= default < 10**9
    assert sad.Tape(max_nodes=None).max_nodes is None


def test_limit_error_names_the_budget_and_the_count_and_rolls_back() -> None:
    tape = sad.Tape(max_nodes=12)
    a = tape.var("a", 0.3)
    g = sad.tanh(sad.tanh(a))
    for method in ("graph", "taylor", "auto"):
        with unchanged(tape), pytest.raises(sad.LimitError) as info:
            g.diff(a, 6, method=method)
        says(info.value, "max_nodes=12", "13")
    with unchanged(tape), pytest.raises(sad.LimitError) as info:
        sad.derivatives(g, a, 4)
    says(info.value, "max_nodes=12")
    while len(tape) < 12:
        tape.var(f"v{len(tape)}")
    with unchanged(tape), pytest.raises(sad.LimitError) as info:
        a * 7.5
    says(info.value, "max_nodes=12", "13")
    with unchanged(tape), pytest.raises(sad.LimitError):
        sad.parse("a * 9.25 + 1", tape=tape)
    with unchanged(tape), pytest.raises(sad.LimitError):
        tape.from_sympy(sympy.sympify("a * 9.25"))


# -- parse -----------------------------------------------------------------------------------------------
def _parse_constant(name: str, default: int) -> int:
    from subgraph_ad.interop import parse as module

    return int(getattr(module, name, default))


PARSE_CASES: list[tuple[str, str, tuple[str, ...]]] = [
    # (label, text, fragments the message must contain: what was given and what is expected)
    ("syntax", "x +* 2", ("column", "*")),
    ("attribute", "x.real", ("column 1", "attribute", "only numbers")),
    ("dunder call", "__import__('os')", ("__import__", "names starting with `_` are not allowed", "with a letter")),
    ("unknown function", "qqq(x)", ("qqq", "known functions")),
    ("arity", "sin(x, y)", ("sin", "one", "2")),
    ("keyword argument", "sin(x=1)", ("sin", "keyword")),
    ("string", "'a'", ("string", "only")),
    ("comparison", "x < 1", ("comparison", "only")),
    ("lambda", "lambda: 1", ("lambda", "only")),
    ("subscript", "x[0]", ("subscript", "only")),
    ("function as a name", "sin + 1", ("sin", "sin(")),
    ("complex literal", "1j", ("1j", "real")),
    ("bit operator", "x & y", ("&", "+ - * /")),
    ("empty", "", ("empty",)),
    ("whitespace only", "   ", ("empty",)),
    ("lone surrogate", "x + \ud800", ("column", "d800")),
    ("huge hex literal", "0x" + "f" * 5000, ("5000", "digits")),
    ("huge binary literal", "0b" + "1" * 5000, ("5000", "digits")),
    ("huge decimal literal", "1" + "0" * 5000, ("digits",)),
]


@pytest.mark.parametrize("label, text, fragments", PARSE_CASES, ids=[c[0] for c in PARSE_CASES])
def test_parse_errors_say_where_and_why_and_leave_the_tape(w: World, label: str, text: str,
                                                            fragments: tuple[str, ...]) -> None:
    """Every bad input is a ParseError (a ValueError) with a message naming the culprit and the
    accepted language, and parsing onto an existing tape leaves it as it was."""
    with unchanged(w.tape), pytest.raises(sad.ParseError) as info:
        sad.parse(text, tape=w.tape)
    assert isinstance(info.value, ValueError)
    says(info.value, *fragments)


def test_parse_refuses_text_over_its_documented_length_and_nesting(w: World) -> None:
    longest = _parse_constant("MAX_LENGTH", 20_000)
    deepest = _parse_constant("MAX_DEPTH", 200)
    with unchanged(w.tape), pytest.raises(sad.ParseError) as info:
        sad.parse("x+" * (longest // 2 + 1) + "x", tape=w.tape)
    says(info.value, str(longest))
    with unchanged(w.tape), pytest.raises(sad.ParseError) as info:
        sad.parse("(" * (deepest + 1) + "x" + ")" * (deepest + 1), tape=w.tape)
    says(info.value, str(deepest))


def test_parse_argument_types(w: World) -> None:
    with pytest.raises(TypeError) as info:
        sad.parse(3)  # type: ignore[arg-type]
    says(info.value, "int", "3", "str")
    with pytest.raises(TypeError) as info:
        sad.parse("x", tape=5)  # type: ignore[arg-type]
    says(info.value, "int", "5", "Tape")


# -- pluggable functions without or with broken rules ------------------------------------------------------
class NoRule(sad.UnaryFn):
    """A function with a value and a numeric derivative but no symbolic rule."""

    name = "norule"

    def f(self, v: Any) -> Any:
        return v * v

    def grad(self, v: Any) -> Any:
        return 2 * v


class NoRule2(sad.BinaryFn):
    name = "norule2"

    def f(self, a: Any, b: Any) -> Any:
        return a * b

    def grad(self, a: Any, b: Any) -> tuple[Any, Any]:
        return b, a


class ReturnsFloat(NoRule):
    name = "returnsfloat"

    def gen_graph(self, input: sad.Term, output: sad.Term, derived: sad.Term) -> Any:
        return 3.0


class FdiffReturnsList(NoRule):
    name = "fdifflist"

    def fdiff(self, input: sad.Term, output: sad.Term) -> Any:
        return [input]


@pytest.mark.parametrize("method", ["graph", "taylor", "auto"])
def test_a_function_without_a_rule_is_named_never_a_silent_zero(w: World, method: str) -> None:
    x, y = w.x.eval(), w.y.eval()
    for g, slope in ((NoRule()(w.x * w.y), 2 * x * y * y), (NoRule2()(w.x, w.y), y)):
        assert g.derive(w.x) == pytest.approx(slope)  # the numeric modes still work
        for call in (lambda: g.gen_graph(w.x), lambda: g.diff(w.x, 3, method=method),
                     lambda: sad.derivatives(g, w.x, 2, method=method), lambda: g.grad_graph([w.x, w.y])):
            with unchanged(w.tape), pytest.raises(NotImplementedError) as info:
                call()
            says(info.value, g.node.payload.name, "fdiff", "gen_graph")


@pytest.mark.parametrize("method", ["graph", "taylor", "auto"])
def test_a_rule_returning_a_non_term_is_a_type_error_naming_function_and_result(w: World, method: str) -> None:
    foreign = w.u

    class ReturnsForeign(NoRule):
        name = "returnsforeign"

        def gen_graph(self, input: sad.Term, output: sad.Term, derived: sad.Term) -> Any:
            return foreign

    cases = ((ReturnsFloat(), ("returnsfloat", "float", "3.0", "Term")),
             (ReturnsForeign(), ("returnsforeign", "var 'u'", "same tape")),
             (FdiffReturnsList(), ("fdifflist", "list", "Term")))
    for fn, fragments in cases:
        g = fn(w.x * w.y)
        for call in (lambda: g.gen_graph(w.x), lambda: g.diff(w.x, 3, method=method)):
            with unchanged(w.tape, w.other), pytest.raises(TypeError) as info:
                call()
            says(info.value, *fragments)


def test_function_call_errors(w: World) -> None:
    with unchanged(w.tape), pytest.raises(TypeError) as info:
        sad.sin(w.x, w.y)
    says(info.value, "sin", "1 argument", "2")
    with unchanged(w.tape), pytest.raises(TypeError) as info:
        sad.atan2(w.x)
    says(info.value, "atan2", "2 arguments", "1")
    with pytest.raises(TypeError) as info:
        sad.sin("a")
    says(info.value, "sin", "str", "'a'", "numbers")
    with pytest.raises(TypeError) as info:
        sad.register(3)  # type: ignore[arg-type]
    says(info.value, "int", "3", "UnaryFn")
    bad = NoRule()
    bad.name = "not a name"
    with pytest.raises(ValueError) as info:
        sad.register(bad)
    says(info.value, "'not a name'", "identifier")


# -- diff / derivatives arguments ---------------------------------------------------------------------------
def test_diff_arguments_are_checked_before_anything_is_built(w: World) -> None:
    cases = [((), TypeError, ("at least one var", "diff(x")),
             ((2,), TypeError, ("count 2", "follow a var")),
             ((w.x, -1), ValueError, ("-1", ">= 0")),
             ((w.x, 1.5), TypeError, ("float", "1.5", "vars and int counts")),
             ((w.x, b"x"), TypeError, ("bytes", "b'x'", "vars and int counts"))]
    for args, error, fragments in cases:
        for call in (lambda: w.f.diff(*args), lambda: sad.derivatives(w.f, *args)):
            with unchanged(w.tape), pytest.raises(error) as info:
                call()
            says(info.value, *fragments)
    for call in (lambda: w.f.diff(w.x, 2, method="magic"), lambda: sad.derivatives(w.f, w.x, method="magic")):
        with unchanged(w.tape), pytest.raises(ValueError) as info:
            call()
        says(info.value, "'magic'", "'graph'", "'taylor'")
    with unchanged(w.tape), pytest.raises(ValueError) as info:
        sad.taylor_graph(w.f, w.x, -1)
    says(info.value, "-1", ">= 0")


def test_derive_arguments(w: World) -> None:
    with unchanged(w.tape), pytest.raises(TypeError) as info:
        w.f.derive(w.x, 3)
    says(info.value, "int", "3", "dict", "diff(x, n)")
    with unchanged(w.tape), pytest.raises(ValueError) as info:
        w.f.derive({w.x * w.y: 1.0})
    says(info.value, "mul", "var")
    with unchanged(w.tape), pytest.raises(TypeError) as info:
        sad.jvp([w.f], [1.0])  # type: ignore[arg-type]
    says(info.value, "list", "dict")


# -- Grad lookups -------------------------------------------------------------------------------------------
def test_grad_lookup_of_a_foreign_or_unknown_name_says_what_it_accepts(w: World) -> None:
    g = w.f.grad()
    assert g[w.y] == pytest.approx(0.5)
    for key, fragments in ((w.u, ("var 'u'", "Term of its tape", "var name")),
                           ("q", ("'q'", "vars are", "'x'")),
                           (3, ("int", "3", "Term of its tape"))):
        with pytest.raises(KeyError) as info:
            g[key]
        says(info.value, *fragments)


# -- matrices: shapes and outputs ------------------------------------------------------------------------------
def test_jacobian_hessian_hvp_shapes_and_outputs(w: World) -> None:
    with unchanged(w.tape), pytest.raises(ValueError) as info:
        sad.hvp(w.f, [w.x, w.y], [1.0])
    says(info.value, "one component per input", "2", "[1.0]")
    with unchanged(w.tape), pytest.raises(ValueError) as info:
        sad.hvp(w.f, [w.x], [1.0, 2.0, 3.0])
    says(info.value, "1", "[1.0, 2.0, 3.0]")
    with unchanged(w.tape), pytest.raises(TypeError) as info:
        sad.hessian([w.f], [w.x])
    says(info.value, "one output", "list")
    with unchanged(w.tape), pytest.raises(ValueError) as info:
        sad.hessian(w.f, [w.x, w.x])
    says(info.value, "repeat", "'x'")
    with unchanged(w.tape), pytest.raises(TypeError) as info:
        sad.jacobian([], [w.x])
    says(info.value, "non-empty list", "[]")
    with unchanged(w.tape), pytest.raises(ValueError) as info:
        sad.vjp([w.f], [1.0, 2.0])
    says(info.value, "one cotangent per output", "(1)", "[1.0, 2.0]")
    with unchanged(w.tape), pytest.raises(ValueError) as info:
        sad.hutchinson_trace(w.f, [w.x, w.y], samples=0)
    says(info.value, "samples", ">= 1", "0")


# -- lambdify -----------------------------------------------------------------------------------------------
def test_lambdify_bad_arguments(w: World) -> None:
    cases = [(lambda: sad.lambdify([], w.f), TypeError, ("inputs", "non-empty list", "[]")),
             (lambda: sad.lambdify([w.x, w.y], "f"), TypeError, ("outputs", "'f'")),
             (lambda: sad.lambdify([w.x, w.x], w.x), ValueError, ("repeat", "'x', 'x'")),
             (lambda: sad.lambdify([w.x, w.y], w.f, backend="gpu"), ValueError, ("'gpu'", "'numpy'", "'numba'")),
             (lambda: sad.lambdify([w.x, w.y], w.f, block=0), ValueError, ("block", "positive int", "0"))]
    for call, error, fragments in cases:
        with unchanged(w.tape), pytest.raises(error) as info:
            call()
        says(info.value, *fragments)
    compiled = sad.lambdify([w.x, w.y], w.f)
    with pytest.raises(TypeError) as info:
        compiled(1.0)
    says(info.value, "2 arguments", "x, y", "got 1")


# -- SymPy -------------------------------------------------------------------------------------------------
SYMPY_CASES: list[tuple[str, Callable[[sympy.Symbol], Any], tuple[str, ...]]] = [
    ("imaginary unit", lambda X: X + sympy.I, ("I", "real numbers")),
    ("unknown function", lambda X: sympy.besselj(0, X), ("besselj", "supported", "sin")),
    ("integral", lambda X: sympy.Integral(X, X), ("Integral", "supported")),
    ("equation", lambda X: sympy.Eq(X, 1), ("Eq", "supported")),
    ("not SymPy", lambda X: object(), ("object", "SymPy expression")),
]


@pytest.mark.parametrize("label, make, fragments", SYMPY_CASES, ids=[c[0] for c in SYMPY_CASES])
def test_sympy_conversion_errors_name_the_construct(w: World, label: str, make: Callable, fragments: tuple) -> None:
    """The message names the construct the user gave (not an inner piece of it) and what is
    supported; nothing is left on the tape."""
    expr = make(sympy.Symbol("x"))
    with unchanged(w.tape), pytest.raises(sad.SympyConversionError) as info:
        w.tape.from_sympy(expr)
    assert isinstance(info.value, ValueError)
    says(info.value, *fragments)


# -- drawing -----------------------------------------------------------------------------------------------
def test_render_suffix_and_missing_directory(w: World, tmp_path: Path) -> None:
    with unchanged(w.tape), pytest.raises(ValueError) as info:
        w.f.render(tmp_path / "f.xyz")
    says(info.value, "f.xyz", ".svg", ".png", ".pdf", ".dot")
    missing = tmp_path / "no" / "such" / "f.dot"
    with unchanged(w.tape), pytest.raises(OSError) as info:
        w.f.render(missing)
    says(info.value, str(missing))


def test_to_dot_options_are_checked(w: World) -> None:
    with pytest.raises(ValueError) as info:
        w.f.to_dot(rankdir="XY")
    says(info.value, "'XY'", "TB", "LR")
    with pytest.raises(ValueError) as info:
        w.f.to_dot(precision=0)
    says(info.value, "precision", "positive int", "0")
    with pytest.raises(TypeError):
        sad.Term.to_dot(3)


def test_graphviz_not_found_says_how_to_install_and_to_dot_still_works(w: World, tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty directory: no dot, no neato
    with unchanged(w.tape), pytest.raises(sad.GraphvizNotFound) as info:
        w.f.render(tmp_path / "f.svg")
    says(info.value, "'dot'", "not found", "install", "apt-get install graphviz", "to_dot")
    assert isinstance(info.value, sad.GraphvizError)
    with unchanged(w.tape), pytest.raises(sad.GraphvizNotFound):
        sad.animate(w.f, w.x, 2, tmp_path / "f.html")
    assert w.f.to_dot().startswith("digraph")
    w.f.render(tmp_path / "f.dot")  # the DOT file needs no Graphviz
    assert (tmp_path / "f.dot").read_text().startswith("digraph")


def test_graphviz_failing_reports_its_exit_status_and_message(w: World, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A `dot` that runs but fails (here a stand-in script) is a GraphvizError with its status
    and its first line of stderr, not a CalledProcessError from deep inside."""
    fake = tmp_path / "dot"
    fake.write_text("#!/bin/sh\necho 'Error: syntax error in line 1 near fake' >&2\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}")
    with unchanged(w.tape), pytest.raises(sad.GraphvizError) as info:
        w.f.render(tmp_path / "f.svg")
    assert not isinstance(info.value, sad.GraphvizNotFound)
    says(info.value, "dot", "exit code 3", "syntax error in line 1 near fake")


def test_graph_too_large_names_the_size_and_the_way_out(w: World, tmp_path: Path) -> None:
    big = (sad.exp(w.x * w.y) * sad.sin(w.x)).diff(w.x, 4, method="graph")
    size = len(big.to_dot(max_nodes=None).split("->")) - 1
    assert size > 10
    with unchanged(w.tape), pytest.raises(sad.GraphTooLarge) as info:
        big.render(tmp_path / "big.svg", max_nodes=10)
    says(info.value, "max_nodes=10", "max_nodes=None")
    with unchanged(w.tape), pytest.raises(sad.GraphTooLarge) as info:
        sad.animate(sad.exp(w.x * w.y) * sad.sin(w.x), w.x, 4, tmp_path / "big.html", max_nodes=10)
    says(info.value, "max_nodes=10", "max_nodes=None")


def test_animate_bad_arguments(w: World, tmp_path: Path) -> None:
    cases = [((w.f, w.x, 2, tmp_path / "a.mp4"), {}, ValueError, ("a.mp4", ".html", ".svg", ".gif")),
             ((w.f, w.x, 2, tmp_path / "no" / "a.html"), {}, OSError, (str(tmp_path / "no"), "does not exist")),
             ((w.f, w.x, 0, tmp_path / "a.html"), {}, ValueError, ("order", "at least 1", "0")),
             ((w.f, w.x, 2, tmp_path / "a.html"), {"per": "frame"}, ValueError, ("'frame'", "'node'", "'pass'")),
             ((w.f, w.x, 2, tmp_path / "a.html"), {"method": "magic"}, ValueError, ("'magic'", "'graph'")),
             ((w.f, w.x, 2, tmp_path / "a.html"), {"interval": -1}, ValueError, ("interval", "positive", "-1")),
             ((w.f, tmp_path / "a.html"), {}, TypeError, ("animate()", "at least one var")),
             ((w.f, [w.x, w.y], 3, tmp_path / "a.html"), {}, TypeError, ("vars and int counts", "list")),
             ((w.f, 3, w.x, tmp_path / "a.html"), {}, TypeError, ("count 3", "must follow a var")),
             ((3.0, w.x, 2, tmp_path / "a.html"), {}, TypeError, ("float", "3.0", "Term"))]
    for args, kwargs, error, fragments in cases:
        with unchanged(w.tape), pytest.raises(error) as info:
            sad.animate(*args, **kwargs)
        says(info.value, *fragments)


# -- traced functions and checkpointing -------------------------------------------------------------------
def test_checkpointed_grad_bad_arguments() -> None:
    for n in (-1, 2.5, True, "3"):
        with pytest.raises(ValueError) as info:
            sad.checkpointed_grad(lambda v: v * 0.5, 0.3, n)  # type: ignore[arg-type]
        says(info.value, "n_steps", "int >= 0", repr(n))
    with pytest.raises(TypeError) as info:
        sad.checkpointed_grad(3, 0.3, 2)  # type: ignore[arg-type]
    says(info.value, "int", "3", "step function")
    with pytest.raises(ValueError) as info:
        sad.checkpointed_grad(lambda v: v[:2], np.ones(3), 2)
    says(info.value, "(3,)", "(2,)", "shape")


def test_traced_function_errors() -> None:
    with pytest.raises(ValueError) as info:
        sad.grad(lambda a, b: a * b, argnums=5)(1.0, 2.0)
    says(info.value, "argnums 5", "out of range", "2 argument")
    with pytest.raises(TypeError) as info:
        sad.grad(lambda a, b: a * b, argnums="a")(1.0, 2.0)  # type: ignore[arg-type]
    says(info.value, "argnums", "'a'", "int or a non-empty tuple")
    with pytest.raises(TypeError) as info:
        sad.grad(lambda a, b: a * b, argnums=())(1.0, 2.0)
    says(info.value, "argnums", "()")
    with pytest.raises(TypeError) as info:
        sad.grad(3)  # type: ignore[arg-type]
    says(info.value, "int", "3", "Python function")
    with pytest.raises(ValueError) as info:
        sad.derivative(np.sin, -1)
    says(info.value, "order", "-1", ">= 0")
    with pytest.raises(TypeError) as info:
        sad.grad(lambda a: a if a > 0 else -a)(1.0)
    says(info.value, "grad", "<lambda>", "compare", "branch")
    with pytest.raises(TypeError) as info:
        sad.grad(lambda a: "text")(1.0)
    says(info.value, "one number", "str", "'text'")


# -- the command line ------------------------------------------------------------------------------------
def run_cli(argv: list[str]) -> tuple[int, str]:
    """Exit status (returned or raised by argparse) and stderr of ``main(argv)``."""
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            status = main(argv)
        except SystemExit as exit_:
            status = exit_.code if isinstance(exit_.code, int) else 1
    return status, err.getvalue()


CLI_CASES: list[tuple[str, list[str], tuple[str, ...]]] = [
    ("wrt not in expression", ["diff", "x*y", "--wrt", "X", "--at", "x=1,y=2"], ("--wrt", "'X'", "variables: x, y")),
    ("verify wrt not in expression", ["verify", "x*y", "--wrt", "z"], ("'z'", "x, y")),
    ("empty expression", ["diff", "", "--wrt", "x"], ("empty expression",)),
    ("bad syntax", ["diff", "x +* 2", "--wrt", "x", "--at", "x=1"], ("column 4", "*")),
    ("unsafe call", ["diff", "__import__('os')", "--wrt", "x", "--at", "x=1"], ("__import__", "starting with `_`")),
    ("bad value", ["diff", "x^2", "--wrt", "x", "--at", "x=abc"], ("--at x", "'abc'", "number")),
    ("unknown var at", ["diff", "x^2", "--wrt", "x", "--at", "q=1"], ("'q'", "variables: x")),
    ("missing value", ["diff", "x^2", "--wrt", "x"], ("no value for x", "--at x=", "--default")),
    ("bad order", ["diff", "x^2", "--wrt", "x", "--order", "0", "--at", "x=1"], ("--order", "at least 1", "0")),
    ("bad suffix", ["render", "x^2", "-o", "out.xyz"], ("out.xyz", ".xyz", ".svg")),
    ("missing directory", ["diff", "x^2", "--wrt", "x", "--at", "x=1", "--svg", "/nonexistent-dir/a.svg"],
     ("/nonexistent-dir", "does not exist")),
    ("bad method", ["diff", "x^2", "--wrt", "x", "--at", "x=1", "--method", "magic"], ("'magic'", "'graph'")),
    ("bad --fn spec", ["diff", "x^2", "--wrt", "x", "--at", "x=1", "--fn", "badspec"], ("badspec", "module:name")),
    ("missing --fn module", ["diff", "x^2", "--wrt", "x", "--at", "x=1", "--fn", "nomodule_zz:f"],
     ("nomodule_zz", "no module")),
    ("verify points", ["verify", "x^2", "--wrt", "x", "--points", "0"], ("--points", "at least 1", "0")),
    ("verify range", ["verify", "x^2", "--wrt", "x", "--range", "2", "1"], ("--range", "LOW < HIGH", "2")),
    ("grad wrt twice", ["grad", "x*y", "--at", "x=1,y=2", "--wrt", "x", "--wrt", "x"], ("twice", "x, x")),
    ("unknown command", ["bogus"], ("'bogus'", "diff", "grad")),
    ("no command", [], ("command is required", "diff")),
]


@pytest.mark.parametrize("label, argv, fragments", CLI_CASES, ids=[c[0] for c in CLI_CASES])
def test_cli_errors_are_one_line_with_a_non_zero_status(label: str, argv: list[str], fragments: tuple[str, ...],
                                                         tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    status, err = run_cli(argv)
    assert status not in (0, None), (status, err)
    assert "Traceback" not in err and err.strip(), err
    assert "error" in err.lower()
    says(Exception(err), *fragments)


def test_cli_expression_may_start_with_a_minus() -> None:
    """Not an error: "-x^2" is an expression, not an option (it was 'arguments are required')."""
    status, err = run_cli(["diff", "-x^2", "--wrt", "x", "--at", "x=1"])
    assert status == 0, err


def test_cli_as_a_process_exits_non_zero_without_a_traceback(tmp_path: Path) -> None:
    """The installed entry point really exits with the status main() reports."""
    done = subprocess.run([sys.executable, "-m", "subgraph_ad", "diff", "x*y", "--wrt", "X", "--at", "x=1,y=2"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(Path(sad.__file__).parent.parent)})
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    says(Exception(done.stderr), "'X'", "variables: x, y")
    assert "df/dX" not in done.stdout
