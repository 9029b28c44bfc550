"""One declaration, one rule: a function states its value and its local derivative once, and
every engine, number path and backend derives the rest.

A user function with only ``f`` (or a spelling) and ``fdiff`` gets eval, derive, grad,
gen_graph, grad_graph, Taylor mode, lambdify on every backend and SymPy; one written
rustograd-style with ``gen_graph`` is turned into the same one rule when its class is defined,
so no engine sees two rules. Oracles: SymPy's derivatives of the same closed forms.
"""

import ast
import math
import warnings
from pathlib import Path

import numpy as np
import pytest
import sympy

import subgraph_ad as sad
from subgraph_ad import Tape
from subgraph_ad.compile.lambdify import BackendWarning
from subgraph_ad.functions import FUNCTIONS
from subgraph_ad.ad.taylor.plan import DEGREES
from subgraph_ad.core import OPS

FUNCTIONS_DIR = Path(sad.__file__).parent / "functions"
X = sympy.Symbol("x")


class Gauss(sad.UnaryFn):
    """exp(−v²), stated by its value and its local derivative only."""

    name = "gauss_rule"

    def f(self, v):
        return np.exp(-v * v)

    def fdiff(self, input, output):
        return -2.0 * input * output


class GaussChain(sad.UnaryFn):
    """The same function, written rustograd-style: the chain rule applied by the function."""

    name = "gauss_chain"

    def f(self, v):
        return np.exp(-v * v)

    def gen_graph(self, input, output, derived):
        return -2.0 * input * output * derived


class SpelledSech(sad.UnaryFn):
    """1/cosh, by a spelling: f, the backends and SymPy come from it."""

    name = "spelled_sech"
    spelling = ("cosh", "recip")

    def fdiff(self, input, output):
        return -(output * sad.tanh(input))


CASES = {"rule": (Gauss(), sympy.exp(-X**2)), "rustograd": (GaussChain(), sympy.exp(-X**2)),
         "spelled": (SpelledSech(), 1 / sympy.cosh(X))}


@pytest.mark.parametrize("kind", sorted(CASES))
def test_a_user_function_gets_every_path_from_its_one_rule(kind):
    fn, closed = CASES[kind]
    tape = Tape()
    x = tape.var("x", 0.7)
    z = fn(sad.sin(x))
    expr = closed.subs(X, sympy.sin(X))
    truth = [float(sympy.diff(expr, X, k).subs(X, 0.7)) for k in range(6)]
    assert z.eval() == pytest.approx(truth[0], rel=1e-14)
    assert z.derive(x) == pytest.approx(truth[1], rel=1e-13)
    assert z.grad()[x] == pytest.approx(truth[1], rel=1e-13)
    assert fn.grad(0.3) == pytest.approx(float(sympy.diff(closed, X).subs(X, 0.3)), rel=1e-14)
    assert z.gen_graph(x).eval() == pytest.approx(truth[1], rel=1e-13)
    assert z.grad_graph(x).grad_graph(x).eval() == pytest.approx(truth[2], rel=1e-12)
    assert sad.taylor_graph(z, x, 5)[-1].eval() == pytest.approx(truth[5], rel=1e-10)
    assert z.diff(x, 4, method="graph").eval() == pytest.approx(truth[4], rel=1e-11)
    points = np.linspace(-1.0, 1.0, 7)
    d2 = z.diff(x, 2)
    reference = np.array([float(sympy.diff(expr, X, 2).subs(X, p)) for p in points])
    for backend in ("numba", "numpy"):
        if backend == "numba":
            pytest.importorskip("numba")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", BackendWarning)
            g = sad.lambdify([x], d2, backend=backend)
        assert np.allclose(g(points), reference, rtol=1e-12, atol=0)
        assert g(0.7) == pytest.approx(truth[2], rel=1e-12)


def test_the_spelling_gives_sympy_and_the_rustograd_rule_is_the_fdiff_every_engine_reads():
    tape = Tape()
    x = tape.var("x", 0.4)
    assert SpelledSech()(x).to_sympy() == 1 / sympy.cosh(X)
    # the rustograd rule became fdiff when the class was defined: the same nodes as the direct rule
    assert GaussChain().fdiff(x, sad.exp(x)).to_sympy() == Gauss().fdiff(x, sad.exp(x)).to_sympy()
    assert "fdiff" in vars(GaussChain)


def test_no_builtin_states_its_derivative_twice():
    """Every built-in states f′ once (``fdiff``); none writes ``grad`` or a ``gen_graph`` rule,
    and none lowers itself per backend (``ufuncs``, ``scalar``): its spelling does."""
    for path in sorted(FUNCTIONS_DIR.glob("*.py")):
        if path.name in ("base.py", "elementary.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                names = {item.name for item in node.body if isinstance(item, ast.FunctionDef)}
                assigned = {t.id for item in node.body if isinstance(item, ast.Assign)
                            for t in item.targets if isinstance(t, ast.Name)}
                assert not names & {"grad", "gen_graph"}, (path.name, node.name)
                assert not assigned & {"ufuncs", "scalar", "numpy"}, (path.name, node.name)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_the_numeric_derivative_of_every_builtin_is_its_rule_on_numbers(name):
    """grad is fdiff run on numbers: checked against central differences (h = 1e-6: the
    truncation error h²·f‴/6 and the rounding error 1e-16/h are both below 1e-7 relative at
    these points, where the functions are smooth)."""
    fn = FUNCTIONS[name]
    points = [(0.3,), (0.6,), (1.3,), (2.6,)] if fn.arity == 1 else [(0.3, 0.7), (0.6, 1.1)]
    h = 1e-6
    for p in points:
        if not all(math.isfinite(fn(*(v + d for v in p))) for d in (-h, 0.0, h)):
            continue  # outside the domain (acosh below 1, atanh beyond 1)
        partials = (fn.grad(*p),) if fn.arity == 1 else fn.grad(*p)
        for k, partial in enumerate(partials):
            plus = [v + h if j == k else v for j, v in enumerate(p)]
            minus = [v - h if j == k else v for j, v in enumerate(p)]
            fd = (fn(*plus) - fn(*minus)) / (2 * h)
            assert float(partial) == pytest.approx(fd, rel=1e-7, abs=1e-9), (name, p, k)


def test_the_taylor_degree_table_has_a_row_for_every_op():
    assert set(OPS) | {"fn"} <= set(DEGREES)


def test_parser_and_printer_read_the_declarations():
    # aliases come from the elementaries (arctan, ln, fabs); the printed -sin is sin negated
    tape = Tape()
    x = tape.var("x", 0.5)
    assert sad.parse("arctan(x) + ln(x) + fabs(x)", tape=tape) == sad.atan(x) + sad.log(x) + sad.abs(x)
    assert str(sad.sin(x).diff(x, 2)) == "-sin(x)"
    assert math.isclose(sad.parse("2^3^2").eval(), 512.0)
