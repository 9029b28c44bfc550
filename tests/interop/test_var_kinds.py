"""The SymPy bridge both ways: ``sad.from_sympy`` builds on a new tape (or a given one), and
``subs``, ``diff``, ``check_against_sympy`` and ``lambdify`` take a var as its Term, its SymPy
Symbol or its name alike, each result checked against SymPy on the same expression."""

import math

import numpy as np
import pytest
import sympy

import subgraph_ad as sad
from subgraph_ad.testing import check_against_sympy

X, Y = sympy.symbols("x y")
EXPR = sympy.exp(-X**2 / 2) * sympy.sin(3 * Y) + X * Y**2
KINDS = ["term", "symbol", "name"]


def key(f, kind, name):
    return {"term": f.tape.vars[name], "symbol": sympy.Symbol(name), "name": name}[kind]


def test_from_sympy_builds_on_a_new_tape_unless_one_is_given():
    f = sad.from_sympy(EXPR)
    g = sad.from_sympy(EXPR)
    assert f.tape is not g.tape and sorted(f.tape.vars) == ["x", "y"]
    assert sympy.simplify(f.to_sympy() - EXPR) == 0
    tape = sad.Tape()
    x = tape.var("x", 0.25)
    h = sad.from_sympy(sympy.sin(X) + 1, tape=tape)
    assert h.tape is tape and h.tape.vars["x"].index == x.index and len(h.tape.vars) == 1
    assert h.eval() == pytest.approx(math.sin(0.25) + 1, rel=1e-15)
    with pytest.raises(TypeError, match="tape must be a Tape or None, got str"):
        sad.from_sympy(EXPR, tape="t")


@pytest.mark.parametrize("kind", KINDS)
def test_subs_takes_each_kind_of_var_and_the_two_argument_form(kind):
    f = sad.from_sympy(EXPR)
    expected = float(EXPR.subs({X: 0.3, Y: -1.1}))
    assert f.subs({key(f, kind, "x"): 0.3, key(f, kind, "y"): -1.1}) == pytest.approx(expected, rel=1e-14)
    partial = f.subs(key(f, kind, "x"), 0.3)  # subs(x, v), as in SymPy: y stays a var
    assert isinstance(partial, sad.Term)
    assert sympy.simplify(partial.to_sympy() - EXPR.subs(X, sympy.Float(0.3))) == 0


@pytest.mark.parametrize("kind", KINDS)
def test_diff_takes_each_kind_of_var(kind):
    f = sad.from_sympy(EXPR)
    d = f.diff(key(f, kind, "x"), 2, key(f, kind, "y"))
    assert sympy.simplify(d.to_sympy() - sympy.diff(EXPR, X, 2, Y)) == 0


@pytest.mark.parametrize("kind", KINDS)
def test_check_against_sympy_takes_each_kind_of_var(kind):
    f = sad.from_sympy(EXPR)
    report = check_against_sympy(f, key(f, kind, "x"), key(f, kind, "y"))
    assert report.status == "pass", report


@pytest.mark.parametrize("kind", KINDS)
def test_lambdify_takes_each_kind_of_var(kind):
    f = sad.from_sympy(EXPR)
    compiled = sad.lambdify([key(f, kind, "y"), key(f, kind, "x")], f)  # y first: order is the caller's
    reference = sympy.lambdify([Y, X], EXPR, "numpy")
    ys, xs = np.linspace(-1, 1, 7), np.linspace(0.1, 2, 7)
    np.testing.assert_allclose(compiled(ys, xs), reference(ys, xs), rtol=1e-14)
    single = sad.lambdify(key(f, kind, "x"), f.subs(key(f, kind, "y"), 0.5))
    assert single(0.7) == pytest.approx(float(EXPR.subs({X: 0.7, Y: 0.5})), rel=1e-14)


def test_a_name_or_symbol_of_no_var_is_an_error_naming_the_vars():
    f = sad.from_sympy(EXPR)
    before = len(f.tape)
    for call in (lambda: f.subs("z", 1.0), lambda: f.diff(sympy.Symbol("z")), lambda: f.diff("z"),
                 lambda: sad.lambdify(["x", "z"], f), lambda: check_against_sympy(f, "z")):
        with pytest.raises(ValueError, match=r"'z' names no var of this tape; vars are \['x', 'y'\]"):
            call()
    assert len(f.tape) == before
