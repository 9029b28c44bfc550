"""Seeded random expressions: every mode agrees with SymPy, whatever the folds and sharing did.

The generator builds the same random tree twice, once on a tape and once in SymPy, so the
reference is independent of our construction, folding and interning.
"""

import math

import numpy as np
import pytest
import sympy

import subgraph_ad as sad
from conftest import close

X, Y = sympy.symbols("x y")
UNARY = [
    (sad.exp, sympy.exp), (sad.sin, sympy.sin), (sad.cos, sympy.cos), (sad.tanh, sympy.tanh),
    (sad.sigmoid, lambda a: 1 / (1 + sympy.exp(-a))),
    (lambda a: sad.log(1 + a * a), lambda a: sympy.log(1 + a * a)),
    (lambda a: sad.sqrt(2 + sad.sin(a)), lambda a: sympy.sqrt(2 + sympy.sin(a))),
]
BINARY = [
    (lambda a, b: a + b, lambda a, b: a + b),
    (lambda a, b: a - b, lambda a, b: a - b),
    (lambda a, b: a * b, lambda a, b: a * b),
    (lambda a, b: a / (2 + b * b), lambda a, b: a / (2 + b * b)),
]


def random_pair(rng: np.random.Generator, tape: sad.Tape, size: int):
    """A random expression built identically on the tape and in SymPy, bottom-up (no recursion)."""
    x, y = tape.vars["x"], tape.vars["y"]
    pool = [(x, X), (y, Y), (x, X)]
    for _ in range(size):
        if rng.random() < 0.4:
            ours, theirs = UNARY[rng.integers(len(UNARY))]
            a = pool[rng.integers(len(pool))]
            pool.append((ours(a[0]), theirs(a[1])))
        elif rng.random() < 0.2:
            c = float(rng.choice([-1.0, 0.0, 0.5, 1.0, 2.0, 3.0]))
            a = pool[rng.integers(len(pool))]
            k = int(rng.integers(1, 4))
            pool.append((c * a[0] ** k + a[0] * 0, sympy.Rational(c).limit_denominator() * a[1] ** k))
        else:
            ours, theirs = BINARY[rng.integers(len(BINARY))]
            a, b = pool[rng.integers(len(pool))], pool[rng.integers(len(pool))]
            pool.append((ours(a[0], b[0]), theirs(a[1], b[1])))
    (a, sa), (b, sb) = pool[-1], pool[-2]  # tie the last two together so the tree is not trivial
    return a * b + a, sa * sb + sa


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(40))
def test_random_expression_derivatives_match_sympy(seed):
    rng = np.random.default_rng(seed)
    tape = sad.Tape()
    x, y = tape.var("x", 0.4), tape.var("y", -0.7)
    ours, theirs = random_pair(rng, tape, size=8)
    point = {X: sympy.Float(0.4, 30), Y: sympy.Float(-0.7, 30)}

    def ref(expr):
        value = complex(expr.evalf(30, subs=point))
        return value.real if value.imag == 0 else math.nan

    assert close(ours.eval(), ref(theirs), 1e-12)
    dx_ref = ref(sympy.diff(theirs, X))
    assert close(ours.derive(x), dx_ref, 1e-10)
    assert close(ours.grad()[y], ref(sympy.diff(theirs, Y)), 1e-10)
    for order in (1, 2, 3):
        assert close(ours.diff(x, order).eval(), ref(sympy.diff(theirs, X, order)), 1e-8)
    assert close(ours.diff(x, y).eval(), ref(sympy.diff(theirs, X, Y)), 1e-8)
    f = sad.lambdify([x, y], [ours, ours.diff(x)])
    value, slope = f(0.4, -0.7)
    assert close(value, ours.eval(), 1e-14) and close(slope, dx_ref, 1e-10)
