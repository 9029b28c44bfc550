"""Derivatives of exact expressions are exact: every rational factor a method puts on the tape
(Taylor mode's 1/k and binomials, closed forms' coefficients, the operators' weights) is an exact
constant, so ``to_sympy`` of any derivative is the derivative itself, with no float left in it.

The zero check is cheap and still decisive. Our SymPy form must be Float-free (a rounded
coefficient, 0.333… for 1/3 or 0.22499… for 9/40, is a Float to SymPy) and agree with the
reference at three rational points to 45 significant digits: a coefficient rounded to float64
errs by ~1e-17 of itself, 28 orders of magnitude above what the check lets through. The values
are computed at 80 digits, each distinct subexpression once (``value``): evalf walks a shared
subexpression as often as it is used, which takes minutes for the DAG of a 20th derivative.

The references are independent of the tape. Up to ``SYMPY_UP_TO`` orders it is ``sympy.diff`` of
``f.to_sympy()``; above, SymPy's own derivative outgrows the test (tanh(tanh(tanh(x))): 10 s at
order 10, 80 s at 13, each order twice the last), so the reference is mpmath's Taylor
coefficients of the same SymPy expression at 80 digits (``mpmath.taylor``: finite differences
at raised precision, which agree with ``sympy.diff`` to ~1e-59 where both run). Orders to 20 on
F1–F5 and the random corpus (orders 1–8 by every method, all 20 by Taylor mode and the 20th by
``diff``); the whole file runs in about a minute.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from fractions import Fraction

import mpmath
import numpy as np
import pytest
import sympy

import subgraph_ad as sad
import subgraph_ad.functions as fn
from subgraph_ad.benchmark_functions import BENCHMARKS  # F1–F5
from subgraph_ad.cli import main as cli_main
from subgraph_ad.core import dependencies
from subgraph_ad.interop.sympy_bridge import convert

X, Y = sympy.symbols("x y")
POINTS = (sympy.Rational(3, 7), sympy.Rational(5, 11), sympy.Rational(9, 13))
OTHERS = {"y": sympy.Rational(7, 5), "w2": sympy.Rational(2, 3)}  # F2's y, F5's w2
DIGITS = 80
#: a difference at most this much of the derivative's size at a point is zero (see above)
ZERO = mpmath.mpf(10) ** -45
SYMPY_UP_TO = 5


def value(expr: sympy.Expr, p: sympy.Rational) -> tuple[mpmath.mpc, set]:
    """expr to ``DIGITS`` digits at x = p (every other symbol at its value in ``OTHERS``), each
    distinct subexpression evaluated once (no recursion: evalf and free_symbols walk a shared
    subexpression as often as it is used), and the Floats in it."""
    memo: dict = {}
    floats: set = set()
    stack = [(expr, False)]
    while stack:
        e, ready = stack.pop()
        if e in memo:
            continue
        if isinstance(e, sympy.Symbol):
            memo[e] = sympy.Float(OTHERS.get(e.name, p), DIGITS)
        elif not e.args:
            if isinstance(e, sympy.Float):
                floats.add(e)
            memo[e] = e.evalf(DIGITS)
        elif not ready:
            stack.append((e, True))
            stack.extend((a, False) for a in e.args if a not in memo)
        else:
            memo[e] = e.func(*[memo[a] for a in e.args]).evalf(DIGITS)
    re, im = (sympy.Float(part, DIGITS) for part in memo[expr].as_real_imag())
    with mpmath.workdps(DIGITS):
        return mpmath.mpc(mpmath.mpf(str(re)), mpmath.mpf(str(im))), floats


def at_points(expr: sympy.Expr) -> dict:
    """A SymPy reference's values at ``POINTS``."""
    return {p: value(expr, p)[0] for p in POINTS}


def assert_exact(ours: sympy.Expr, expected: dict, what: str) -> None:
    """ours is Float-free and has the ``expected`` value at each point (a dict point -> value)."""
    for p, reference in expected.items():
        found, floats = value(ours, p)
        assert not floats, f"{what}: float coefficients {sorted(floats, key=abs)[:4]}"
        assert abs(found - reference) <= ZERO * max(1, abs(reference)), f"{what}: {found} != {reference} at {p}"


def assert_exact_terms(terms: list[sad.Term], expected: list[dict], what: str) -> None:
    """``assert_exact`` for each of the Terms, from the SymPy form of each node they need written
    over its operands' names (what ``to_sympy`` substitutes into each other; the LaTeX printer's
    temporaries): SymPy distributes a rational over a sum, c·(a + b) = c·a + c·b, so the whole
    form of a 20th derivative grows with every order where its graph does not."""
    tape = terms[0].tape
    order = dependencies(tape, [t.index for t in terms])
    names = {i: sympy.Dummy() for i in order}
    forms = convert(tape, order, names)
    floats = {f for i in order for f in forms[i].atoms(sympy.Float)}
    assert not floats, f"{what}: float coefficients {sorted(floats, key=abs)[:4]}"
    for p in POINTS:
        at = {sympy.Symbol(v.name): sympy.Float(OTHERS.get(v.name, p), DIGITS) for v in tape.vars.values()}
        for i in order:
            at[names[i]] = forms[i].xreplace(at).evalf(DIGITS)
        for term, reference in zip(terms, expected):
            found, _ = value(at[names[term.index]], p)
            assert abs(found - reference[p]) <= ZERO * max(1, abs(reference[p])), \
                f"{what}: {found} != {reference[p]} at {p}, order {terms.index(term) + 1}"


def references(f: sympy.Expr, wrt: sympy.Symbol, n: int) -> list[dict]:
    """The derivatives of orders 1..n of the SymPy expression f at ``POINTS``: by ``sympy.diff``
    up to ``SYMPY_UP_TO``, by mpmath's Taylor coefficients above (see the module's docstring)."""
    out: list[dict] = [{} for _ in range(n)]
    real = {s: sympy.Symbol(s.name, real=True) for s in f.free_symbols}  # cbrt is sign(u)·|u|^(1/3)
    f, wrt = f.xreplace(real), real.get(wrt, wrt)
    d = f
    for k in range(min(n, SYMPY_UP_TO)):
        d = sympy.diff(d, wrt)
        assert not d.has(sympy.Derivative, sympy.Subs), d
        out[k] = at_points(d)
    if n > SYMPY_UP_TO:
        others = {s: OTHERS[s.name] for s in f.free_symbols if s != wrt}
        g = sympy.lambdify(wrt, f.xreplace(others), "mpmath")
        with mpmath.workdps(DIGITS):
            for p in POINTS:
                taylor = mpmath.taylor(g, mpmath.mpf(p.p) / p.q, n)
                for k in range(SYMPY_UP_TO, n):
                    out[k][p] = mpmath.mpc(taylor[k + 1] * mpmath.factorial(k + 1))
    return out


# -- F1–F5, every method, orders 1..20 ---------------------------------------------------------

@pytest.fixture(scope="module")
def benchmark_references() -> dict[str, list[dict]]:
    out = {}
    for name in BENCHMARKS:
        tape, f, x = BENCHMARKS[name]()
        out[name] = references(f.to_sympy(), sympy.Symbol(x.name), 20)
    return out


#: the orders ``diff`` builds one by one (taylor_graph checks every order to 20 in one build)
ORDERS = (1, 2, 3, 4, 5, 6, 8, 10, 13, 16, 20)


@pytest.mark.parametrize("name", sorted(BENCHMARKS))
@pytest.mark.parametrize("method", ["auto", "graph", "taylor"])
def test_diff_of_the_benchmark_functions_is_exact_to_order_20(benchmark_references, name, method):
    for n in ORDERS if method != "graph" else ORDERS[:8]:  # gen_graph passes: 818 nodes at 10 for F4
        tape, f, x = BENCHMARKS[name]()
        assert_exact_terms([f.diff(x, n, method=method)], [benchmark_references[name][n - 1]], f"{name} {method} n={n}")


@pytest.mark.parametrize("name", sorted(BENCHMARKS))
def test_taylor_graph_every_order_is_exact(benchmark_references, name):
    tape, f, x = BENCHMARKS[name]()
    assert_exact_terms(sad.taylor_graph(f, x, 20), benchmark_references[name], f"{name} taylor_graph")


def test_above_the_exact_order_the_coefficients_stay_exact():
    # past order 150 Taylor mode's scalars are Fractions whatever the inputs; with exact inputs
    # the constants they become keep their exact value: exp(x/3)'s 160th derivative is
    # exp(x/3)/3**160, a constant of 254 bits
    tape = sad.Tape()
    x = tape.var("x", 0.5)
    d = sad.exp(x / 3).diff(x, 160, method="taylor").to_sympy()
    assert d == sympy.exp(X / 3) / 3**160


# -- a seeded random corpus of exact expressions -----------------------------------------------

def _inside(a):  # in (−0.36, 0.36) for every real a: inside asin's, acos's and atanh's domains
    return a / (2 + a * a)


#: every built-in whose derivative SymPy knows, each on an argument inside its real domain (where
#: SymPy, mpmath and our form are one analytic function: no branch cut, no pole) for every real a
UNARY = [
    fn.exp, fn.sin, fn.cos, fn.sinh, fn.cosh, fn.tanh, fn.atan, fn.asinh, fn.sigmoid, fn.expm1,
    fn.erf, fn.erfc, fn.softplus,
    lambda a: fn.log(1 + a * a), lambda a: fn.sqrt(1 + a * a), lambda a: fn.cbrt(1 + a * a),
    lambda a: fn.log1p(a * a), lambda a: fn.log2(1 + a * a), lambda a: fn.log10(1 + a * a),
    lambda a: fn.gamma(1 + a * a), lambda a: fn.lgamma(1 + a * a), lambda a: fn.digamma(1 + a * a),
    lambda a: fn.asin(_inside(a)), lambda a: fn.acos(_inside(a)), lambda a: fn.atanh(_inside(a)),
    lambda a: fn.acosh(2 + a * a), lambda a: fn.tan(_inside(a)), lambda a: fn.sec(_inside(a)),
    lambda a: fn.csc(1 + _inside(a)), lambda a: fn.cot(1 + _inside(a)),
]
BINARY = [
    lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b, lambda a, b: a / (1 + b * b),
    lambda a, b: a ** 3 - b, lambda a, b: fn.atan2(a, 2 + b * b), lambda a, b: fn.hypot(a, 1 + b * b),
    lambda a, b: fn.xlogy(a, 1 + b * b), fn.logaddexp,
]
RATIONALS = [Fraction(9, 40), Fraction(1, 3), Fraction(-5, 7), Fraction(2), Fraction(1, 2)]


def random_expression(rng: np.random.Generator, x: sad.Term, y: sad.Term, size: int) -> sad.Term:
    """A small random expression with repeated operands (x twice in the pool, subexpressions
    reused) and rational constants, bottom-up."""
    pool = [x, y, x]
    for _ in range(size):
        r = rng.random()
        a = pool[rng.integers(len(pool))]
        if r < 0.45:
            pool.append(UNARY[rng.integers(len(UNARY))](a))
        elif r < 0.65:
            c = RATIONALS[rng.integers(len(RATIONALS))]
            pool.append(c * a if rng.random() < 0.5 else a + c)
        else:
            b = pool[rng.integers(len(pool))]
            pool.append(BINARY[rng.integers(len(BINARY))](a, b))
    return pool[-1] * pool[-2] + pool[-1] / 3


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(12))
def test_random_exact_expressions_differentiate_exactly(seed):
    expected = None
    for method in ("auto", "graph", "taylor"):
        tape = sad.Tape()
        x, y = tape.var("x", 0.4), tape.var("y", 0.3)
        f = random_expression(np.random.default_rng(seed), x, y, 4)
        if expected is None:
            assert not f.to_sympy().atoms(sympy.Float)
            expected = references(f.to_sympy(), X, 8)
        for n in (1, 2, 3, 5, 8):
            assert_exact(f.diff(x, n, method=method).to_sympy(), expected[n - 1], f"seed {seed} {method} n={n}: {f}")


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::subgraph_ad.AccuracyWarning")  # about float64 evaluation, not the form
@pytest.mark.parametrize("seed", range(12))
def test_random_exact_expressions_are_exact_to_order_20(seed):
    # every order to 20 in one Taylor build, and the 20th alone by diff's default
    tape = sad.Tape()
    x, y = tape.var("x", 0.4), tape.var("y", 0.3)
    f = random_expression(np.random.default_rng(seed), x, y, 4)
    expected = references(f.to_sympy(), X, 20)
    assert_exact_terms(sad.taylor_graph(f, x, 20), expected, f"seed {seed} taylor_graph: {f}")
    assert_exact_terms([f.diff(x, 20)], expected[19:], f"seed {seed} diff n=20: {f}")


@pytest.mark.parametrize("k", range(len(UNARY) + len(BINARY)))
def test_every_function_differentiates_exactly(k):
    # the corpus draws functions at random; here each one, once, on a rational linear argument
    tape = sad.Tape()
    x, y = tape.var("x", 0.4), tape.var("y", 0.3)
    u = x * Fraction(9, 40) + y / 3
    f = UNARY[k](u) if k < len(UNARY) else BINARY[k - len(UNARY)](u, x / 3)
    expected = references((f * x).to_sympy(), X, 6)
    for method in ("auto", "graph", "taylor"):
        for n in (1, 3, 6):
            assert_exact((f * x).diff(x, n, method=method).to_sympy(), expected[n - 1], f"{f} {method} n={n}")


# -- the operators -------------------------------------------------------------------------------

OPERATOR_CASES = [
    lambda x, y: sad.exp(-(x * x + y * y) / 2) * sad.sin(3 * x) / 7,
    lambda x, y: sad.tanh(x / 3 + y * Fraction(9, 40)) ** 2,
    lambda x, y: sad.log(1 + x * x) * sad.sqrt(1 + y * y) / 5,
]


@pytest.mark.parametrize("case", range(len(OPERATOR_CASES)))
def test_laplacians_are_sympys_sum_of_second_derivatives(case):
    tape = sad.Tape()
    x, y = tape.var("x", 0.4), tape.var("y", 0.3)
    u = OPERATOR_CASES[case](x, y)
    s = u.to_sympy()
    hxx, hxy, hyy = sympy.diff(s, X, 2), sympy.diff(s, X, Y), sympy.diff(s, Y, 2)
    assert_exact(sad.laplacian(u, [x, y]).to_sympy(), at_points(hxx + hyy), "laplacian")
    weights = [[Fraction(1, 3), Fraction(1, 2)], [Fraction(1, 2), 0.25]]
    expected = at_points(hxx / 3 + hxy + hyy / 4)
    assert_exact(sad.laplacian(u, [x, y], weights=weights).to_sympy(), expected, "weighted laplacian")
    expected = at_points(sympy.diff(hxx + hyy, X, 2) + sympy.diff(hxx + hyy, Y, 2))
    assert_exact(sad.biharmonic(u, [x, y]).to_sympy(), expected, "biharmonic")


def test_directional_jets_are_exact():
    tape = sad.Tape()
    x, y = tape.var("x", 0.4), tape.var("y", 0.3)
    u = OPERATOR_CASES[0](x, y)
    t = sympy.Symbol("t")
    along = u.to_sympy().xreplace({X: X + t, Y: Y + sympy.Rational(1, 3) * t})
    for j, d in enumerate(sad.taylor_graph(u, {x: 1, y: Fraction(1, 3)}, 6), 1):
        assert_exact(d.to_sympy(), at_points(sympy.diff(along, t, j).xreplace({t: 0})), f"jet {j}")


# -- printing ----------------------------------------------------------------------------------

#: a decimal with many digits is a rounded fraction (0.3333333333333333, 0.22499999999999998)
LONG_DECIMAL = re.compile(r"\d\.\d{6,}")


def test_str_and_latex_print_the_coefficients_exactly():
    tape, f, x = BENCHMARKS["F3"]()
    d = f.diff(x, 6, method="taylor")
    text, latex = str(d), d._repr_latex_()
    assert not LONG_DECIMAL.search(text), text
    assert not LONG_DECIMAL.search(latex), latex
    assert "1/720*" in text and r"\frac{t_{10}}{3}" in latex  # exact: 1/720, a third


def test_the_cli_prints_exact_coefficients(capsys):
    code = cli_main(["diff", "sin(x)*exp(cos(x))/(1+x^2)", "--wrt", "x", "--order", "9", "--at", "x=0.5",
                     "--sympy", "--max-sympy-chars", "0", "-q"])
    out = capsys.readouterr().out
    assert code == 0
    form = out[out.index("SymPy form"):]
    assert not LONG_DECIMAL.search(form), form[:2000]


def test_without_gmpy2_the_exact_scalars_are_fractions(tmp_path):
    # core.rationals uses gmpy2's mpq where it is installed (the dev extra: this suite) and
    # Fraction where it is not, which a blocked import stands for here. The builds must give
    # exact forms with either, checked as above: Float-free, and SymPy's to 45 digits.
    script = tmp_path / "fallback.py"
    script.write_text(textwrap.dedent("""
        import sys
        sys.modules["gmpy2"] = None  # import gmpy2 raises ImportError
        from fractions import Fraction
        import sympy
        import subgraph_ad as sad
        from subgraph_ad.benchmark_functions import BENCHMARKS
        from subgraph_ad.core.rationals import Q
        assert Q is Fraction, Q
        X, at = sympy.Symbol("x"), {sympy.Symbol("x"): sympy.Rational(3, 7)}
        for name in ("F1", "F2", "F3"):  # evalf walks F4's shared subexpressions for minutes
            for method in ("taylor", "auto"):
                tape, f, x = BENCHMARKS[name]()
                ours = f.diff(x, 6, method=method).to_sympy()
                assert not ours.atoms(sympy.Float), (name, method)
                want = sympy.diff(f.to_sympy(), X, 6).xreplace(at).evalf(60)
                assert abs(ours.xreplace(at).evalf(60) - want) <= 1e-45 * abs(want), (name, method)
        print("exact")
    """))
    env = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(sad.__file__))}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0 and done.stdout.strip() == "exact", done.stderr[-3000:]
