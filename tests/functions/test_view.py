"""The differentiation view of a node, in every engine: a partial that is a gate selects, and a
function whose derivative runs through another is one class written outside the package.

Oracles: SymPy (derivatives of the closed forms, evaluated to 30 digits) and the flat truth of
relu/maximum/clip of log x just above 0, where the function is constant.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
import pytest
import sympy as sp

import subgraph_ad as sad
from subgraph_ad.functions.view import gates, view

ABS = sad.FUNCTIONS["abs"]
X, Y = sp.symbols("x y")


# -- a function whose derivative runs through another, written as a user would -------------------
class SoftsignSlope(sad.UnaryFn):
    """softsign′(u) = 1/(1 + |u|)², which is (1 − |softsign u|)²: it runs through softsign."""

    name = "softsign_slope"

    def f(self, v: Any) -> Any:
        return 1.0 / (1.0 + np.abs(v)) ** 2

    @property
    def through(self) -> Any:
        return softsign, lambda g: (1.0 - ABS(g)) ** 2

    def to_sympy(self, arg: Any) -> Any:
        return 1 / (1 + sp.Abs(arg)) ** 2


class Softsign(sad.UnaryFn):
    """softsign(u) = u/(1 + |u|)."""

    name = "softsign"

    def f(self, v: Any) -> Any:
        return v / (1.0 + np.abs(v))

    def fdiff(self, input: Any, output: Any) -> Any:
        return slope(input)

    def to_sympy(self, arg: Any) -> Any:
        return arg / (1 + sp.Abs(arg))


softsign, slope = Softsign(), SoftsignSlope()


def _softsign_case() -> tuple[Any, Any, Any, sp.Expr]:
    tape = sad.Tape()
    x, y = tape.var("x", 0.4), tape.var("y", 0.7)
    u = 1.3 * sad.sin(x) * y + 0.2
    inner = 1.3 * sp.sin(X) * Y + sp.Rational(1, 5)
    return tape, (x, y), softsign(u), inner / (1 + inner)  # u > 0 there: |u| = u


def _at(expr: sp.Expr) -> float:
    return float(expr.subs({X: sp.Float(0.4, 30), Y: sp.Float(0.7, 30)}).evalf(30))


def _close(got: Any, want: float, what: str) -> None:
    """1e-9 relative: orders up to 6 at a tame point carry a few roundings per order."""
    assert math.isfinite(float(got)) and abs(float(got) - want) <= 1e-9 * abs(want) + 1e-12, (what, got, want)


@pytest.mark.parametrize("method", ["graph", "taylor", "auto"])
def test_a_function_through_another_differentiates_in_every_engine(method):
    tape, (x, y), f, truth = _softsign_case()
    for n in range(1, 7):
        d = f.diff(x, n, method=method)
        want = _at(sp.diff(truth, X, n))
        _close(d.eval(), want, f"diff {method} {n}")
        _close(sad.lambdify([x, y], d)(0.4, 0.7), want, f"lambdify {method} {n}")


def test_a_function_through_another_in_reverse_the_laplacian_and_the_numeric_modes():
    tape, (x, y), f, truth = _softsign_case()
    g = f
    for n in range(1, 5):
        g = g.grad_graph(x)
        _close(g.eval(), _at(sp.diff(truth, X, n)), f"grad_graph pass {n}")
    _close(sad.laplacian(f, [x, y]).eval(), _at(sp.diff(truth, X, 2) + sp.diff(truth, Y, 2)), "laplacian")
    _close(f.derive(x), _at(sp.diff(truth, X)), "derive")
    numeric = f.grad()
    _close(numeric[x], _at(sp.diff(truth, X)), "grad x")
    _close(numeric[y], _at(sp.diff(truth, Y)), "grad y")
    assert slope.grad(0.4) == pytest.approx(-2 / 1.4**3, rel=1e-15)  # the plain fdiff, Q′(g)·g′, on numbers


def test_a_through_node_reuses_g_where_g_is_on_the_tape():
    tape = sad.Tape()
    x = tape.var("x", 0.3)
    s = softsign(x)
    found = view(tape, slope(x).index).through(build=False)
    assert found is not None and found[0].index == s.index


# -- gates: relu/maximum/clip of a singular argument ---------------------------------------------
FLAT: dict[str, Callable[[Any], Any]] = {
    "relu": lambda x: sad.relu(sad.log(x)),
    "maximum": lambda x: sad.maximum(sad.log(x), -1.0),
    "clip": lambda x: sad.clip(sad.log(x), -1.0, 1.0),
    "minimum": lambda x: sad.minimum(-sad.log(x), 1.0),
    "heaviside": lambda x: sad.heaviside(x - 1.0, sad.log(x)),
}


@pytest.mark.parametrize("name", sorted(FLAT))
@pytest.mark.parametrize("p", [0.0, 1e-300])
def test_a_gate_selects_so_a_flat_piece_stays_flat_in_every_engine(name, p):
    """Each function is constant for x in [0, 1/e): every derivative is 0 there, where the
    argument's derivatives are inf (x = 0) or huge."""
    build = FLAT[name]
    tape = sad.Tape()
    x = tape.var("x", p)
    f = build(x)
    for method in ("graph", "taylor", "auto"):
        for n in range(1, 7):
            d = f.diff(x, n, method=method)
            assert d.eval() == 0.0, (method, n)
            assert sad.lambdify([x], d)(p) == 0.0, (method, n)
    g = f
    for n in range(1, 4):
        g = g.grad_graph(x)
        assert g.eval() == 0.0, ("grad_graph", n)
    assert sad.laplacian(f, [x]).eval() == 0.0
    assert f.derive(x) == 0.0 and f.grad()[x] == 0.0
    assert sad.grad(build)(p) == 0.0


def test_the_view_says_which_partials_are_gates():
    assert gates(sad.FUNCTIONS["relu"]) == (True,)
    assert gates(sad.FUNCTIONS["maximum"]) == (True, True)
    assert gates(sad.FUNCTIONS["heaviside"]) == (True, True)  # in x a structural zero, in h a gate
    assert gates(sad.FUNCTIONS["tanh"]) == (False,) and gates(ABS) == (False,)


def test_a_gate_costs_no_node_over_a_product_for_a_condition():
    """relu′·du as select(u > 0, du): one node, as the product (u > 0)·du was (5 nodes either way)."""
    tape = sad.Tape()
    x = tape.var("x", 0.3)
    f = sad.relu(sad.sin(x))
    start = len(tape)
    f.gen_graph(x)
    assert [n.op for n in tape.nodes[start:]] == ["const", "fn", "const", "fn", "fn"]  # 1, cos, 0, u > 0, select
    assert tape.nodes[-1].payload is sad.FUNCTIONS["select"]


def test_a_slope_that_is_more_than_a_scaled_g_is_a_node_of_g_alone():
    """σ′'s Q′(σ) = 1 − 2σ is one node of σ (the local partial and the adjoint multiply by it);
    tanh′'s −2·tanh is a scaled tanh, left to the engines to write out."""
    from subgraph_ad.functions import slope

    tape = sad.Tape()
    x = tape.var("x", 0.3)
    s = slope(sad.FUNCTIONS["dsigmoid"], sad.sigmoid(x))
    assert s is not None and s.eval() == pytest.approx(1 - 2 / (1 + math.exp(-0.3)), rel=1e-15)
    assert slope(sad.FUNCTIONS["sech2"], sad.tanh(x)) is None
