"""Operators where a node's operands repeat: a seeded corpus against independent oracles.

On a tape ``x - x``, ``x / x`` and ``f(a, a)`` are nodes whose two operands are one node, and
pairwise differences written as NumPy writes them (``x[:, None] - x[None, :]``) put xᵢ − xᵢ on
the diagonal. Every operator pass must sum a node's partials over every slot an operand fills.

The corpus (``CORPUS`` expressions, seeded) builds each expression twice from one recipe — on a
tape and in SymPy, by this file's own table, never ``to_sympy`` — and every recipe holds a
repeated operand (a − a, a/a, f(g, g) for every binary built-in, shared subterms in both
factors, squares, pairwise differences with the diagonal, conditions of a node with itself),
one built-in unary function on an argument inside its domain (``DOMAINS`` of test_operators),
conditions (``where``, comparisons) and a var that u does not depend on (a zero tangent). Then
the Laplacian, the weighted Laplacian, the biharmonic (both methods), the derivative tensor and
the directional jets are checked against

- the SymPy twin, differentiated by ``mpmath.diff`` at 50 digits (its gradient and Hessian:
  every second-order operator and the jets of orders 1 and 2), and for the first ten recipes
  (one of each repeated form) by ``sympy.diff`` as well (the Laplacian; SymPy's own derivatives
  of these trees take from 0.05 s to 8 s each, too slow for all);
- repeated ``gen_graph`` (the forward engine, which shares no code with the operator passes):
  Σ ∂ᵢ∂ᵢ∂ⱼ∂ⱼu for the biharmonic (nested and direct on alternate rows of blocks), and the
  orders 1–4 of t ↦ u(x + t·v), the recipe rebuilt on leaves x + t·v, for the jets.

Tolerance: against the 50-digit values 1e-9 of max(1, |reference|) (a wrong pairing is off by
O(1): see ``test_the_reported_cases``); against ``gen_graph`` — both sides float64 sums of a few
hundred terms of fourth derivatives — 1e-8 of max(1, |reference|). The file runs in ~30 s of
one core.

Traced functions of pairwise differences are checked against JAX's ``trace∘hessian`` in float64.
"""

from __future__ import annotations

import itertools
import json
import math
from typing import Any, Callable

import jax
import jax.numpy as jnp
import mpmath
import numpy as np
import pytest
import sympy

import subgraph_ad as sad
from subgraph_ad.ad import operators as ops
from subgraph_ad.cli import main
from subgraph_ad.core import dependencies
from subgraph_ad.functions import FUNCTIONS, sympy_hook
from subgraph_ad.functions.binary import xlogy
from test_operators import DIGITS, apply, real, sym, symmetric

CORPUS = 200
#: Random steps per recipe besides the three chosen by seed (more make SymPy's twin too slow).
RANDOM_STEPS = 1
SYMPY_RTOL = 1e-9
GRAPH_RTOL = 1e-8
UNARY = sorted(name for name, fn in FUNCTIONS.items() if fn.arity == 1)
BINARY = sorted(name for name, fn in FUNCTIONS.items() if fn.arity == 2)


def agrees(ours: float, reference: float, rtol: float) -> bool:
    return abs(ours - reference) <= rtol * max(1.0, abs(reference))


# -- one recipe, two builders: Terms and SymPy ------------------------------------------------------------
def _heaviside(a: Any, h0: Any) -> Any:
    """SymPy's twin of heaviside(a, h0), from its definition (SymPy's own Heaviside(a, a) differentiates
    into unevaluated Subs)."""
    return sympy.Piecewise((0, a < 0), (h0, sympy.Eq(a, 0)), (1, True))


class Ours:
    """The recipe's operations on Terms."""

    lib = sad
    exp, sin, sqrt, tanh, atan2 = sad.exp, sad.sin, sad.sqrt, sad.tanh, sad.atan2

    @staticmethod
    def fn(name: str, *args: Any) -> Any:
        return FUNCTIONS[name](*args)

    @staticmethod
    def where(condition: Any, a: Any, b: Any) -> Any:
        return sad.where(condition, a, b)

    @staticmethod
    def indicator(condition: Any) -> Any:
        return sad.where(condition, 1.0, 0.0)

    @staticmethod
    def xlogy(p: Any, a: Any) -> Any:
        return xlogy(p, a)


class Theirs:
    """The same operations in SymPy."""

    lib = sympy
    exp, sin, sqrt, tanh, atan2 = sympy.exp, sympy.sin, sympy.sqrt, sympy.tanh, sympy.atan2

    @staticmethod
    def fn(name: str, *args: Any) -> Any:
        return _heaviside(*args) if name == "heaviside" else sympy_hook(FUNCTIONS[name])(*args)

    @staticmethod
    def where(condition: Any, a: Any, b: Any) -> Any:
        return sympy.Piecewise((a, condition), (b, True))

    @staticmethod
    def indicator(condition: Any) -> Any:
        return sympy.Piecewise((1, condition), (0, True))

    @staticmethod
    def xlogy(p: Any, a: Any) -> Any:
        return p * sympy.log(a)


def inside(L: Any, a: Any) -> Any:
    """a mapped into (0.1, 0.5): inside the domain of every binary built-in in both slots."""
    return 0.3 + 0.2 * L.tanh(a)


def away(a: Any) -> Any:
    """0.5 + a²: a denominator bounded away from 0."""
    return 0.5 + a * a


#: The steps a recipe is made of: (L, operands) -> a value, the same arithmetic on Terms and in SymPy.
STEPS: dict[str, Callable[..., Any]] = {
    # repeated operands
    "a - a": lambda L, a, b: b * L.exp(a - a),
    "sqrt of a - a": lambda L, a, b: L.sqrt((0.5 * (a - a) + 0.25) ** 2 + 1.25) + b,
    "a/a": lambda L, a, b: (away(a) / away(a)) * b,
    "a/a inside": lambda L, a, b: b / (away(a) / away(a) + a * a),
    "atan2(a, a)": lambda L, a, b: L.sin(b * a) * L.atan2(a, a),
    "a*a": lambda L, a, b: a * a + b,
    "shared factors": lambda L, a, b: (a + b) * (a * b),
    "shared function": lambda L, a, b: L.sin(a) * (L.sin(a) + b),
    "xlogy(a, a)": lambda L, a, b: L.xlogy(away(a), away(a)) * b,
    "where(a >= a)": lambda L, a, b: L.where(a >= a, b, a) + L.indicator(a > a) * a,
    # conditions
    "where": lambda L, a, b: L.where(a > b, a * b, L.sin(b)),
    "comparison": lambda L, a, b: L.indicator(a < b) * b + a,
    # ordinary arithmetic
    "a*b": lambda L, a, b: a * b,
    "a/(2+b*b)": lambda L, a, b: a / (2 + b * b),
    "a-b": lambda L, a, b: a - b,
    "a**3+b": lambda L, a, b: a**3 + b,
}
REPEATED = [name for name in STEPS if name not in ("where", "comparison", "a*b", "a/(2+b*b)", "a-b", "a**3+b")]
PAIRWISE: dict[str, Callable[[Any, Any], Any]] = {
    "exp(-d²)": lambda L, d: L.exp(-(d * d)),
    "cos(d)": lambda L, d: L.fn("cos", d),
    "1/(1+d²)": lambda L, d: 1 / (1 + d * d),
    "sqrt(1+d²)": lambda L, d: L.sqrt(1 + d * d),
}


def recipe(seed: int) -> tuple[int, list[tuple]]:
    """The number of vars u uses and its steps (kind, name, operand picks), seeded. Every recipe
    has a repeated-operand step, f(g, g) for a binary built-in and a unary built-in (each cycled
    over by seed, so the corpus covers all), plus ``RANDOM_STEPS`` random ones; every fifth recipe adds
    the sum of a function of pairwise differences over all pairs, the diagonal included."""
    rng = np.random.default_rng(seed)
    d = 2 + seed % 2
    steps = [("step", REPEATED[seed % len(REPEATED)]), ("binary", BINARY[seed % len(BINARY)]),
             ("unary", UNARY[seed % len(UNARY)])]
    steps += [("step", str(rng.choice(list(STEPS)))) for _ in range(RANDOM_STEPS)]
    if seed % 5 == 0:
        steps.append(("pairwise", list(PAIRWISE)[seed // 5 % len(PAIRWISE)]))
    order = rng.permutation(len(steps))
    picks = [tuple(int(k) for k in rng.integers(0, 1 << 30, 2)) for _ in steps]
    return d, [steps[k] + (picks[k],) for k in order]


def build(L: Any, seed: int, leaves: list[Any]) -> Any:
    """The expression of recipe ``seed`` over ``leaves`` (Terms with Ours, SymPy with Theirs)."""
    d, steps = recipe(seed)
    pool = list(leaves[:d])
    for kind, name, (i, j) in steps:
        a, b = pool[-1 - i % min(3, len(pool))], pool[j % len(pool)]  # mostly the latest: depth
        if kind == "step":
            pool.append(STEPS[name](L, a, b))
        elif kind == "binary":
            g = inside(L, a)
            pool.append(L.fn(name, g, g) * b + b)
        elif kind == "unary":
            pool.append(apply(FUNCTIONS[name], [a], L.lib) * b + a)
        else:
            total = 0
            for xi, xj in itertools.product(leaves[:d], repeat=2):
                total = total + PAIRWISE[name](L, xi - xj)
            pool.append(total * b)
    return pool[-1] * pool[-2] + pool[-3]


# -- the oracles -----------------------------------------------------------------------------------------
#: mpmath's atan2 of the real parts: SymPy's printing for mpmath can hand it complex numbers whose
#: imaginary part is 0, which mpmath's atan2 refuses.
MPMATH_REAL = {"atan2": lambda y, x: mpmath.atan2(mpmath.re(y), mpmath.re(x))}


def at_digits(exprs: list[sympy.Expr], names: list[str], point: dict[str, float]) -> list[float]:
    """SymPy expressions at a point, by mpmath at 50 digits (a DiracDelta off its kink is 0)."""
    f = sympy.lambdify([sym(n) for n in names], [e.replace(sympy.DiracDelta, lambda *a: 0) for e in exprs],
                       modules=[MPMATH_REAL, "mpmath"])
    with mpmath.workdps(DIGITS):
        return [real(v) for v in f(*(mpmath.mpf(point[n]) for n in names))]


class Case:
    """Recipe ``seed`` on a tape and in SymPy, its vars (u does not depend on the last, z), a
    point, symmetric weights and a direction with a zero component."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        d, _ = recipe(seed)
        self.names = [f"x{k}" for k in range(d)] + ["z"]
        self.tape = sad.Tape()
        self.xs = [self.tape.var(n) for n in self.names]
        self.u = build(Ours, seed, self.xs)
        self.U = build(Theirs, seed, [sym(n) for n in self.names])
        rng = np.random.default_rng(1000 + seed)
        self.point = {n: float(rng.uniform(-0.8, 0.8)) for n in self.names}
        self.weights = symmetric(seed, len(self.names))
        v = [float(c) for c in rng.choice([-1.0, 0.5, 1.0, 2.0], len(self.names))]
        v[int(rng.integers(len(v)))] = 0.0
        self.direction = v

    def eval(self, term: sad.Term) -> float:
        return float(term.eval(self.point))

    def second_order(self) -> tuple[list[float], list[list[float]]]:
        """The gradient and the Hessian of the SymPy twin by ``mpmath.diff`` at 50 digits."""
        n = len(self.names)
        f = sympy.lambdify([sym(a) for a in self.names], self.U.replace(sympy.DiracDelta, lambda *a: 0),
                           modules=[MPMATH_REAL, "mpmath"])
        gradient, hessian = [0.0] * n, [[0.0] * n for _ in range(n)]
        with mpmath.workdps(DIGITS):
            at = [mpmath.mpf(self.point[a]) for a in self.names]
            for i in range(n):
                gradient[i] = real(mpmath.diff(f, at, [int(k == i) for k in range(n)]))
                for j in range(i, n):
                    hessian[i][j] = hessian[j][i] = real(mpmath.diff(f, at, [(k == i) + (k == j) for k in range(n)]))
        return gradient, hessian

    def sympy_laplacian(self) -> float:
        """Σ ∂²U/∂xᵢ² by ``sympy.diff``, at 50 digits."""
        lap = sum((sympy.diff(self.U, sym(a), 2) for a in self.names), sympy.Integer(0))
        found = complex(lap.xreplace({sym(a): sympy.Float(v, DIGITS) for a, v in self.point.items()}).evalf(DIGITS))
        return found.real if abs(found.imag) <= 1e-30 * max(1.0, abs(found.real)) else math.nan

    def graph_biharmonic(self) -> float:
        """Σᵢⱼ ∂ᵢ∂ᵢ∂ⱼ∂ⱼu by repeated gen_graph."""
        seconds = [self.u.gen_graph(x).gen_graph(x) for x in self.xs]
        return sum(self.eval(s.gen_graph(x).gen_graph(x)) for s in seconds for x in self.xs)

    def graph_jets(self, n: int) -> list[float]:
        """dᵏ/dtᵏ u(x + t·v) at t = 0, k = 1..n: the recipe rebuilt on leaves x + t·v of a tape
        of its own, differentiated in t by repeated gen_graph."""
        tape = sad.Tape()
        t = tape.var("t", 0.0)
        xs = [tape.var(name, self.point[name]) for name in self.names]
        shifted = build(Ours, self.seed, [x + c * t for x, c in zip(xs, self.direction)])
        out = []
        for _ in range(n):
            shifted = shifted.gen_graph(t)
            out.append(float(shifted.eval()))
        return out


def _check(failures: list, label: str, ours: float, reference: float, rtol: float) -> None:
    if not agrees(ours, reference, rtol):
        failures.append((label, ours, reference))


@pytest.mark.slow
@pytest.mark.parametrize("block", range(10))
def test_operators_on_repeated_operands_match_sympy_and_gen_graph(block):
    """``CORPUS`` recipes in ten blocks: every operator at a seeded point against the SymPy twin's
    derivatives at 50 digits (by mpmath.diff; the first ten also by sympy.diff) and
    repeated gen_graph."""
    for seed in range(block, CORPUS, 10):
        case = Case(seed)
        u, xs, failures = case.u, case.xs, []
        gradient, hessian = case.second_order()
        n, v, A = len(xs), case.direction, case.weights
        lap = case.eval(sad.laplacian(u, xs))
        _check(failures, "laplacian", lap, sum(hessian[i][i] for i in range(n)), SYMPY_RTOL)
        if seed < len(REPEATED):  # the first recipes: each repeated form once
            _check(failures, "laplacian (sympy.diff)", lap, case.sympy_laplacian(), SYMPY_RTOL)
        weighted = sum(A[i][j] * hessian[i][j] for i in range(n) for j in range(n))
        _check(failures, "weighted", case.eval(sad.laplacian(u, xs, weights=A)), weighted, SYMPY_RTOL)
        tensor = sad.derivative_tensor(u, xs, 2)
        for i, j in itertools.combinations_with_replacement(range(n), 2):
            _check(failures, f"tensor[{i}, {j}]", case.eval(tensor[j, i]), hessian[i][j], SYMPY_RTOL)
        jets = [case.eval(t) for t in sad.taylor_graph(u, dict(zip(xs, v)), 4)]
        _check(failures, "jet 1", jets[0], sum(g * c for g, c in zip(gradient, v)), SYMPY_RTOL)
        _check(failures, "jet 2", jets[1], sum(v[i] * hessian[i][j] * v[j] for i in range(n) for j in range(n)),
               SYMPY_RTOL)
        for k, (ours, theirs) in enumerate(zip(jets, case.graph_jets(4)), start=1):
            _check(failures, f"jet {k} (gen_graph)", ours, theirs, GRAPH_RTOL)
        method = ops.BIHARMONIC_METHODS[1 + seed // 10 % 2]  # nested and direct, on alternate rows of blocks
        _check(failures, f"biharmonic {method}", case.eval(sad.biharmonic(u, xs, method=method)),
               case.graph_biharmonic(), GRAPH_RTOL)
        assert not failures, (seed, recipe(seed), case.point, failures)


def test_the_corpus_covers_every_builtin_and_every_repeated_form():
    """Each unary and binary built-in and each repeated-operand step is in some recipe, and each
    recipe's tape really has a node whose operands repeat and a var u does not reach."""
    used: set[tuple[str, str]] = set()
    for seed in range(CORPUS):
        used.update((kind, name) for kind, name, _ in recipe(seed)[1])
    assert {("unary", n) for n in UNARY} | {("binary", n) for n in BINARY} <= used
    assert {("step", n) for n in REPEATED} <= used and {("pairwise", n) for n in PAIRWISE} <= used
    for seed in range(0, CORPUS, 7):
        tape = sad.Tape()
        xs = [tape.var(f"x{k}") for k in range(4)]
        u = build(Ours, seed, xs)
        reached = dependencies(tape, [u.index])
        assert any(len(tape.nodes[i].args) == 2 and len(set(tape.nodes[i].args)) == 1 for i in reached), seed
        assert xs[-1].index not in reached


# -- the cases as they were found ------------------------------------------------------------------------
REPORTED = [
    ("exp(x·y)·exp(x − x)", lambda x, y: sad.exp(x * y) * sad.exp(x - x)),
    ("(x/x)·exp(x·y)", lambda x, y: (x / x) * sad.exp(x * y)),
    ("sin(y·x)·atan2(x, x)", lambda x, y: sad.sin(y * x) * sad.atan2(x, x)),
    ("sqrt((0.5(x − x) + 0.25)² + 1.25) + x + cos y",
     lambda x, y: sad.sqrt((0.5 * (x - x) + 0.25) ** 2 + 1.25) + x + sad.cos(y)),
    ("xlogy(x·x + 1, x·x + 1)·y", lambda x, y: xlogy(x * x + 1, x * x + 1) * y),
]


@pytest.mark.parametrize("name, f", REPORTED, ids=[name for name, _ in REPORTED])
def test_the_reported_cases(name, f):
    """The expressions that were wrong (Laplacian 0.1459, −3.3126; biharmonic 2.2635, −497.75, −51.09
    where SymPy says 0.4701, 2.1532, 1.8903), against SymPy at 50 digits, every method and weights."""
    tape = sad.Tape()
    x, y = tape.var("x", 0.3), tape.var("y", -0.7)
    X, Y = sym("x"), sym("y")
    u = f(x, y)
    U = u.to_sympy().xreplace({sympy.Symbol("x"): X, sympy.Symbol("y"): Y})
    lap = sympy.diff(U, X, 2) + sympy.diff(U, Y, 2)
    weighted = 2 * sympy.diff(U, X, 2) + sympy.diff(U, X, Y) + sympy.diff(U, Y, 2)
    bih = sympy.diff(lap, X, 2) + sympy.diff(lap, Y, 2)
    jet = sympy.diff(U.xreplace({X: X + sym("t"), Y: Y - 2 * sym("t")}), sym("t"), 3).xreplace({sym("t"): 0})
    point = {"x": 0.3, "y": -0.7}
    want = at_digits([lap, weighted, bih, jet], ["x", "y"], point)
    got = [sad.laplacian(u, [x, y]).eval(), sad.laplacian(u, [x, y], weights=[[2, 0.5], [0.5, 1]]).eval(),
           sad.biharmonic(u, [x, y], method="nested").eval(), sad.biharmonic(u, [x, y], method="direct").eval(),
           sad.taylor_graph(u, {x: 1.0, y: -2.0}, 3)[2].eval()]
    for label, ours, theirs in zip(["laplacian", "weighted", "nested", "direct", "jet 3"], got,
                                   [want[0], want[1], want[2], want[2], want[3]]):
        assert agrees(ours, theirs, SYMPY_RTOL), (name, label, ours, theirs)


#: where() whose untaken branch is singular at the point (nan or inf, and so are its derivatives),
#: with the branch taken there in SymPy.
UNTAKEN = [
    ("where(x > 0, sqrt x, x)·e^y", lambda x, y: sad.where(x > 0, sad.sqrt(x), x) * sad.exp(y),
     lambda X, Y: X * sympy.exp(Y)),
    ("where(x > 0, log x, x²)·y", lambda x, y: sad.where(x > 0, sad.log(x), x * x) * y, lambda X, Y: X**2 * Y),
    ("where(x > 0, x log x, 0) + sin(x·y)", lambda x, y: sad.where(x > 0, x * sad.log(x), 0.0) + sad.sin(x * y),
     lambda X, Y: sympy.sin(X * Y)),
]


@pytest.mark.parametrize("name, f, taken", UNTAKEN, ids=[name for name, _, _ in UNTAKEN])
@pytest.mark.parametrize("x0", [-1.0, 0.0])
def test_the_branch_not_taken_leaves_no_nan(name, f, taken, x0):
    """A condition is constant: the operators of where(c, a, b) are those of the branch taken, even
    where the other is nan with its derivatives (a condition's vars once counted as moving it, so
    select's partial c multiplied the nan: Laplacian and jets nan, where SymPy's are finite; and a
    pairing carried an adjoint 0 through select into the nan branch)."""
    tape = sad.Tape()
    x, y = tape.var("x", x0), tape.var("y", 0.5)
    X, Y, T = sym("x"), sym("y"), sym("t")
    U = taken(X, Y)
    lap = sympy.diff(U, X, 2) + sympy.diff(U, Y, 2)
    moved = U.xreplace({X: X + T, Y: Y + 2 * T})
    exprs = [lap, 2 * sympy.diff(U, X, 2) + sympy.diff(U, X, Y) + sympy.diff(U, Y, 2),
             sympy.diff(lap, X, 2) + sympy.diff(lap, Y, 2)]
    exprs += [sympy.diff(moved, T, k).xreplace({T: 0}) for k in (1, 2, 3)]
    want = at_digits(exprs, ["x", "y"], {"x": x0, "y": 0.5})
    u = f(x, y)
    got = [sad.laplacian(u, [x, y]), sad.laplacian(u, [x, y], weights=[[2, 0.5], [0.5, 1]]),
           sad.biharmonic(u, [x, y], method="nested")]
    got += sad.taylor_graph(u, {x: 1.0, y: 2.0}, 3)
    for label, ours, theirs in zip(["laplacian", "weighted", "biharmonic", "jet 1", "jet 2", "jet 3"],
                                   [t.eval() for t in got], want):
        assert agrees(ours, theirs, SYMPY_RTOL), (name, label, ours, theirs)
    assert agrees(sad.biharmonic(u, [x, y], method="direct").eval(), want[2], SYMPY_RTOL), (name, "direct")


def test_the_cli_laplacian_of_x_minus_x(capsys):
    """``subgraph-ad laplacian`` goes through the same pass: exp(x·y)·exp(x − x) is (x² + y²)·e^{xy}."""
    assert main(["laplacian", "exp(x*y)*exp(x-x)", "--at", "x=0.3,y=-0.7", "--biharmonic", "--json"]) == 0
    values = {row["operator"]: row["value"] for row in json.loads(capsys.readouterr().out)["operators"]}
    X, Y = sym("x"), sym("y")
    U = sympy.exp(X * Y)
    lap = sympy.diff(U, X, 2) + sympy.diff(U, Y, 2)
    want = at_digits([lap, sympy.diff(lap, X, 2) + sympy.diff(lap, Y, 2)], ["x", "y"], {"x": 0.3, "y": -0.7})
    assert agrees(values["Δf"], want[0], SYMPY_RTOL) and agrees(values["Δ²f"], want[1], SYMPY_RTOL)


# -- traced pairwise differences against JAX -------------------------------------------------------------
def pairwise_numpy(phi: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """Σᵢⱼ φ(xᵢ − xⱼ) as NumPy code writes it: the diagonal holds xᵢ − xᵢ."""
    return lambda x: np.sum(phi(x[:, None] - x[None, :])) + np.sum(x * x[::-1])


def pairwise_jax(phi: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda x: jnp.sum(phi(x[:, None] - x[None, :])) + jnp.sum(x * x[::-1])


KERNELS = {  # φ in NumPy (on arrays of Terms) and in JAX
    "exp(-d²)": (lambda d: np.exp(-d**2), lambda d: jnp.exp(-d**2)),
    "cos(d)": (np.cos, jnp.cos),
    "1/(1+d²)": (lambda d: 1 / (1 + d**2), lambda d: 1 / (1 + d**2)),
    "sqrt(1+d²)": (lambda d: np.sqrt(1 + d**2), lambda d: jnp.sqrt(1 + d**2)),
}


@pytest.mark.parametrize("kernel", KERNELS)
def test_traced_pairwise_differences_match_jax(kernel, x64):
    """sad.laplacian(fn), weighted, biharmonic (both methods) and derivative_tensor(fn, 2) of
    Σᵢⱼ φ(xᵢ − xⱼ) on a batch of points in 3 and 4 dimensions, against JAX's trace∘hessian,
    Σ A∘hessian and trace∘hessian∘trace∘hessian in float64, to 1e-10 of max(1, |JAX|)."""
    ours_phi, jax_phi = KERNELS[kernel]
    f, g = pairwise_numpy(ours_phi), pairwise_jax(jax_phi)
    lap = lambda x: jnp.trace(jax.hessian(g)(x))  # noqa: E731
    reference = jax.jit(jax.vmap(lambda x: (jax.hessian(g)(x), jnp.trace(jax.hessian(lap)(x)))))
    for d in (3, 4):
        points = np.random.default_rng(d).uniform(-1.0, 1.0, (3, d))
        A = np.array(symmetric(d, d))
        hessians, biharmonic = (np.array(v) for v in reference(jnp.asarray(points)))
        want = {"laplacian": np.trace(hessians, axis1=1, axis2=2), "weighted": np.einsum("ij,pij->p", A, hessians),
                "nested": biharmonic, "direct": biharmonic, "tensor": hessians}
        got = {"laplacian": sad.laplacian(f)(points), "weighted": sad.laplacian(f, weights=A)(points),
               "nested": sad.biharmonic(f, method="nested")(points),
               "direct": sad.biharmonic(f, method="direct")(points), "tensor": sad.derivative_tensor(f, 2)(points)}
        for label, ours in got.items():
            np.testing.assert_allclose(ours, want[label], rtol=1e-10, atol=1e-10, err_msg=f"{kernel} {label} d={d}")


def test_the_reported_pairwise_kernel_and_hutchinson(x64):
    """Σᵢⱼ exp(−(xᵢ − xⱼ)²) at (0.1, 0.5, −0.3): −8.0902 (JAX's trace∘hessian), was −14.090. The
    Hutchinson estimate of a Laplacian with a diagonal Hessian (φ(xᵢ − xᵢ)·sin xᵢ: the diagonal's
    terms only) is exact for every Rademacher probe, vᵀHv = Σ vᵢ²Hᵢᵢ: so it must equal JAX's trace
    whatever the seed."""
    point = np.array([0.1, 0.5, -0.3])
    f = lambda x: np.sum(np.exp(-(x[:, None] - x[None, :]) ** 2))  # noqa: E731
    g = lambda x: jnp.sum(jnp.exp(-(x[:, None] - x[None, :]) ** 2))  # noqa: E731
    want = float(jnp.trace(jax.hessian(g)(jnp.asarray(point))))
    assert agrees(sad.laplacian(f)(point[None])[0], want, 1e-12)

    diagonal = lambda x: np.sum(np.diagonal(np.exp(x[:, None] - x[None, :])) * np.sin(x) + x**3)  # noqa: E731
    jax_diagonal = lambda x: jnp.sum(jnp.diagonal(jnp.exp(x[:, None] - x[None, :])) * jnp.sin(x) + x**3)  # noqa: E731
    trace = float(jnp.trace(jax.hessian(jax_diagonal)(jnp.asarray(point))))
    for seed in (0, 1):
        assert agrees(sad.laplacian(diagonal, samples=4, seed=seed)(point), trace, 1e-12)
    tape = sad.Tape()
    xs = [tape.var(f"x{k}", float(c)) for k, c in enumerate(point)]
    u = sum(sad.exp(x - x) * sad.sin(x) + x**3 for x in xs)
    assert agrees(sad.laplacian(u, xs, samples=4, seed=2), trace, 1e-12)
    assert agrees(sad.hutchinson_trace(u, xs, samples=4, seed=3), trace, 1e-12)
