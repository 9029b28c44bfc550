"""Every way of getting a second derivative agrees, at edge points and on random expressions.

Each function states its derivative once (``fdiff``), and every engine derives the rest, so the
eight ways of taking a second derivative — forward∘forward, forward∘reverse, reverse∘forward,
reverse∘reverse, Taylor mode, ``hessian``, ``hvp`` and the traced ``sad.hessian`` — plus the
numeric modes and the compiled program must give the same value at every point, including
those where a partial is infinite or 0·inf lurks (0 ** b, x ** y at x = 0, log and sqrt at 0,
abs and sign at 0, atan2 at the origin, overflow). Where the true value is known it is checked
too (SymPy's limit, or the closed form).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy

import subgraph_ad as sad
from subgraph_ad import Tape
from subgraph_ad.ad.taylor import taylor_graph


def _same(a: float, b: float) -> bool:
    """Equal as IEEE values: nan matches nan, infinities match by sign, finite values to 1e-12."""
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= 1e-12 * max(1.0, abs(a), abs(b))


def _ways(build, names: tuple[str, str], point: dict[str, float]) -> dict[str, float]:
    """∂²f/∂a∂b (a, b = ``names``) at ``point`` by every engine, by name."""
    tape = Tape()
    v = {n: tape.var(n, point[n]) for n in point}
    f = build(*v.values())
    a, b = v[names[0]], v[names[1]]
    order = list(v.values())
    i, j = order.index(a), order.index(b)
    unit = [1.0 if k == j else 0.0 for k in range(len(order))]
    found = {
        "forward∘forward": f.gen_graph(a).gen_graph(b).eval(),
        "forward∘reverse": f.gen_graph(a).grad_graph(b).eval(),
        "reverse∘forward": f.grad_graph(a).gen_graph(b).eval(),
        "reverse∘reverse": f.grad_graph(a).grad_graph(b).eval(),
        "diff graph": f.diff(a, b, method="graph").eval(),
        "hessian": sad.hessian(f, order)[i][j].eval(),
        "hvp": sad.hvp(f, order, unit)[i].eval(),
        "numeric forward": f.gen_graph(a).derive(b),
        "numeric reverse": f.grad_graph(a).grad()[b],
        "compiled": float(sad.lambdify(order, f.gen_graph(a).gen_graph(b))(*point.values())),
    }
    if a is b:
        found["taylor"] = taylor_graph(f, a, 2)[1].eval()
        found["diff taylor"] = f.diff(a, 2, method="taylor").eval()
    x0 = np.array(list(point.values()))
    found["traced hessian"] = float(np.asarray(sad.hessian(lambda p: build(*p))(x0))[i, j])
    return found


#: (case, f, the two vars, the point, the true value or None where it is undefined)
EDGES = [
    ("0 ** b in b", lambda b: 0.0 ** b, ("b", "b"), {"b": 1.5}, 0.0),
    ("x ** y at x = 0, in y", lambda x, y: x ** y, ("y", "y"), {"x": 0.0, "y": 2.5}, 0.0),
    ("x ** y at x = 0, in x and y", lambda x, y: x ** y, ("x", "y"), {"x": 0.0, "y": 2.5}, 0.0),
    ("x ** y at x = 0, in x", lambda x, y: x ** y, ("x", "x"), {"x": 0.0, "y": 2.5}, 0.0),
    ("log at 0", lambda x: sad.log(x), ("x", "x"), {"x": 0.0}, -math.inf),
    ("sqrt at 0", lambda x: sad.sqrt(x), ("x", "x"), {"x": 0.0}, -math.inf),
    ("abs at 0", lambda x: sad.abs(x) * x, ("x", "x"), {"x": 0.0}, 0.0),
    ("sign at 0", lambda x: sad.sign(x) * x * x, ("x", "x"), {"x": 0.0}, 0.0),
    ("atan2 at the origin", lambda y, x: sad.atan2(y, x), ("y", "x"), {"y": 0.0, "x": 0.0}, None),
    ("overflow to inf", lambda x: sad.exp(x * x), ("x", "x"), {"x": 40.0}, math.inf),
    ("xlogy-like product at 0", lambda x, y: x * sad.log(y), ("x", "y"), {"x": 0.0, "y": 0.0}, None),
]


@pytest.mark.parametrize("case, build, names, point, truth", EDGES, ids=[e[0] for e in EDGES])
def test_every_engine_agrees_at_edge_points(case, build, names, point, truth):
    found = _ways(build, names, point)
    reference = found["forward∘forward"]
    assert all(_same(value, reference) for value in found.values()), found
    if truth is not None:
        assert _same(reference, truth), (reference, truth)


def test_the_true_values_at_the_edges_are_sympys_limits():
    """The closed-form truths above, from SymPy: d²(0**b)/db² = 0 near b = 1.5, and
    d²(x**y)/dy² → 0 as x → 0⁺ at y = 2.5."""
    b, x, y = sympy.symbols("b x y", positive=True)
    assert sympy.diff(sympy.Integer(0) ** b, b, 2) == 0
    assert sympy.limit(sympy.diff(x**y, y, 2).subs(y, sympy.Rational(5, 2)), x, 0, "+") == 0
    assert sympy.limit(sympy.diff(x**y, x, y).subs(y, sympy.Rational(5, 2)), x, 0, "+") == 0


RANDOM = [
    lambda x, y: sad.sin(x * y) * sad.exp(-x) + sad.atan2(y, x + 2.0),
    lambda x, y: sad.tanh(x) ** y + sad.sigmoid(x - y) * sad.erf(y),
    lambda x, y: sad.log1p(x * x) / sad.cosh(y) + sad.hypot(x, y) * sad.sec(x),
    lambda x, y: sad.sqrt(x * x + y * y) * sad.asinh(x) - sad.cbrt(y - x) + sad.expm1(x * y),
    lambda x, y: y ** x * sad.cot(y) + sad.acos(x / 3.0) * sad.log2(y),
]


@pytest.mark.parametrize("k", range(len(RANDOM)))
@pytest.mark.parametrize("names", [("x", "x"), ("x", "y"), ("y", "y")])
def test_every_engine_agrees_on_random_expressions(k, names):
    point = {"x": 0.7, "y": 1.3}
    found = _ways(RANDOM[k], names, point)
    h = 1e-4  # central difference of the first derivative: error O(h²) ≈ 1e-8 relative
    tape = Tape()
    v = {n: tape.var(n, p) for n, p in point.items()}
    first = RANDOM[k](*v.values()).grad_graph(v[names[0]])
    plus, minus = dict(point), dict(point)
    plus[names[1]] += h
    minus[names[1]] -= h
    fd = (first.eval({v[n]: plus[n] for n in v}) - first.eval({v[n]: minus[n] for n in v})) / (2 * h)
    reference = found["forward∘forward"]
    assert all(abs(value - reference) <= 1e-10 * max(1.0, abs(reference)) for value in found.values()), found
    assert abs(reference - fd) <= 1e-6 * max(1.0, abs(reference))
