"""SymPy's own entry points accept Terms: its printers, ``sympy.diff``, and ``subs``/``evalf``
with SymPy's meaning; ``sad.pi`` and ``sad.e`` are exact. Oracles: SymPy on the same formula."""

import math

import numpy as np
import pytest
import sympy

import subgraph_ad as sad
from subgraph_ad import Tape

X, Y = sympy.symbols("x y")


@pytest.fixture
def xy():
    tape = Tape()
    return tape, tape.var("x", 0.5), tape.var("y", 2.0)


def test_sympys_printers_print_the_formula(xy):
    tape, x, y = xy
    f = sad.sin(x) * sad.exp(x) / y
    assert sympy.latex(f) == sympy.latex(sympy.sin(X) * sympy.exp(X) / Y)
    assert sympy.pretty(f) == sympy.pretty(sympy.sin(X) * sympy.exp(X) / Y)
    assert "mathtt" not in sympy.latex(f)


def test_sympy_diff_of_a_term_differentiates_by_the_var_of_the_symbols_name(xy):
    tape, x, y = xy
    f = sad.sin(x * y)
    d = sympy.diff(f, X, 2)
    assert isinstance(d, sad.Term)
    assert sympy.simplify(d.to_sympy() - sympy.diff(sympy.sin(X * Y), X, 2)) == 0
    with pytest.raises(ValueError, match="'z' names no var"):
        f.diff(sympy.Symbol("z"))


def test_subs_gives_a_value_for_numbers_and_a_term_for_terms(xy):
    tape, x, y = xy
    f = x * y + sad.sin(x)
    assert f.subs({x: 0.3, y: 1.5}) == pytest.approx(0.3 * 1.5 + math.sin(0.3), rel=1e-15)
    assert np.allclose(f.subs({"x": np.array([0.0, 1.0]), "y": 2.0}), [0.0, 2.0 + math.sin(1.0)])
    g = f.subs({x: y * y})
    assert sympy.simplify(g.to_sympy() - (Y**3 + sympy.sin(Y**2))) == 0
    partial = f.subs({y: 3.0})  # y only: x remains, so a Term
    assert isinstance(partial, sad.Term) and sympy.simplify(partial.to_sympy() - (3 * X + sympy.sin(X))) == 0
    n = len(tape)
    with pytest.raises(ValueError, match=r"subs\(\): the name 'q' names no var of this tape; vars are \['x', 'y'\]"):
        f.subs({"q": 1.0})
    assert len(tape) == n


def test_evalf_has_sympys_meaning(xy):
    tape, x, y = xy
    f = sad.exp(x) * y
    assert f.evalf(30) == sympy.N(sympy.exp(sympy.Rational(1, 2)) * 2, 30)
    assert f.evalf(20, subs={x: 1.0}) == sympy.N(sympy.E * 2, 20)


def test_pi_and_e_are_exact_constants(xy):
    tape, x, y = xy
    assert (sad.pi * x).to_sympy() == sympy.pi * X
    assert (x + sad.e).to_sympy() == X + sympy.E
    assert float(sad.pi) == math.pi and math.cos(sad.pi) == -1.0 and sad.e == math.e


def test_a_derivatives_step_stands_for_its_term(xy):
    tape, x, y = xy
    steps = sad.derivatives(sad.exp(x) * sad.sin(x), x, 3)
    exact = float(sympy.diff(sympy.exp(X) * sympy.sin(X), X, 3).subs(X, 0.5))
    assert steps[-1].eval() == pytest.approx(exact, rel=1e-13)
    assert steps[-1].term.eval() == steps[-1].eval()
