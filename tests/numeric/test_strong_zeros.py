"""Strong zeros in the numeric sweeps: a zero tangent (or adjoint) times an infinite partial is
0, not nan. Along a direction that does not move x, f(x, b) is differentiated as f(x₀, ·), so
the oracle is SymPy's derivative of f in b alone at x₀ — which never meets ∂f/∂x."""

from __future__ import annotations

import math

import numpy as np
import sympy as sp

import subgraph_ad as sad

X, B = sp.symbols("x b")

#: f(x, b) with ∂f/∂x infinite (or f itself infinite) at x = 0, on Terms and in SymPy.
CASES = [
    (lambda x, b: sad.sqrt(x) * b, sp.sqrt(X) * B),
    (lambda x, b: sad.sqrt(x) + b * b, sp.sqrt(X) + B**2),
    (lambda x, b: sad.cbrt(x) * sad.sin(b), sp.cbrt(X) * sp.sin(B)),
    (lambda x, b: x**0.5 * sad.exp(b) + b, sp.sqrt(X) * sp.exp(B) + B),
    (lambda x, b: sad.log(x) + b**3, sp.log(X) + B**3),
    (lambda x, b: sad.sqrt(x * b) + b, sp.sqrt(X * B) + B),
]


def _along_b(expr: sp.Expr, b0: float) -> float:
    """d/dt f(0, b0 + t) at t = 0: f with x set to 0 first, so SymPy never forms ∂f/∂x."""
    return float(sp.diff(expr.subs(X, 0), B).subs(B, b0))


def test_derive_and_jvp_along_a_direction_that_does_not_move_x() -> None:
    for build, expr in CASES:
        tape = sad.Tape()
        x, b = tape.var("x", 0.0), tape.var("b", 2.0)
        f = build(x, b)
        want = _along_b(expr, 2.0)
        for got in (f.derive({x: 0.0, b: 1.0}), sad.jvp([f], {x: 0.0, b: 1.0})[0], f.derive(b)):
            assert math.isfinite(got) and abs(got - want) <= 1e-12 * (1 + abs(want)), (expr, got, want)


def test_zero_tangent_entries_of_an_array_direction() -> None:
    """Points x = [0, 1, 4] with tangents [0, 1, 0]: the zero entries give f's b-derivative
    there, the moving one the full directional derivative (SymPy's, by the chain rule)."""
    tape = sad.Tape()
    x, b = tape.var("x"), tape.var("b")
    f = sad.sqrt(x) * b + sad.sqrt(x) + b * b
    expr = sp.sqrt(X) * B + sp.sqrt(X) + B**2
    xs, tx = np.array([0.0, 1.0, 4.0]), np.array([0.0, 1.0, 0.0])
    got = f.derive({x: tx, b: 1.0}, {x: xs, b: 2.0})
    want = [float((sp.diff(expr, X) * t + sp.diff(expr, B)).subs({X: v, B: 2}) if t else
                  sp.diff(expr.subs(X, v), B).subs(B, 2)) for v, t in zip(xs, tx)]
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_reverse_sweep_stops_at_a_zero_adjoint() -> None:
    """f = 0·sqrt(x) + b written so that the product is a node (c·sqrt(x), c a var set to 0):
    its adjoint into sqrt(x) is 0, and ∂f/∂x = c·sqrt′(x) is 0 at c = 0, by SymPy."""
    tape = sad.Tape()
    x, b, c = tape.var("x", 0.0), tape.var("b", 2.0), tape.var("c", 0.0)
    f = c * sad.sqrt(x) + b
    expr = sp.Symbol("c") * sp.sqrt(X) + B
    # the partial in x on the slice c = 0, where it is 0 for every x > 0 and by continuity at 0
    want = float(sp.limit(sp.diff(expr.subs(sp.Symbol("c"), 0), X), X, 0, "+"))
    assert f.grad()[x] == want == 0.0
    assert f.grad()[b] == 1.0
