"""The differentiation view of a node, in every engine: a partial that is a gate selects, and a
function whose derivative runs through another is one class written outside the package.

Oracles: SymPy (derivatives of the closed forms, evaluated to 30 digits) and the flat truth of
relu/maximum/clip of log x just above 0, where the function is constant.
"""

from __future__ import annotations

import functools
import math
import warnings
from typing import Any, Callable

import numpy as np
import pytest
import sympy as sp

import subgraph_ad as sad
from conftest import jax_float64
from subgraph_ad.ad.operators import BIHARMONIC_METHODS
from subgraph_ad.compile import registry
from subgraph_ad.compile.backends import c
from subgraph_ad.compile.program import build_program
from subgraph_ad.functions.view import gates, view

ABS = sad.FUNCTIONS["abs"]
X, Y = sp.symbols("x y")


# -- a function whose derivative runs through another, written as a user would -------------------
class SoftsignSlope(sad.UnaryFn):
    """softsign′(u) = 1/(1 + |u|)², which is (1 − |softsign u|)²: it runs through softsign. Its
    spelling is one elementary of its own: NumPy's calls in turn, and the C form."""

    name = "softsign_slope"
    spelling = (sad.Elementary("softsign_slope", 1, (np.absolute, functools.partial(np.add, 1.0), np.square,
                                                     np.reciprocal),
                               "(1.0 / (1.0 + abs({0})) ** 2)", "(1.0 / ((1.0 + fabs({0})) * (1.0 + fabs({0}))))",
                               lambda arg: 1 / (1 + sp.Abs(arg)) ** 2),)

    @property
    def through(self) -> Any:
        return softsign, lambda g: (1.0 - ABS(g)) ** 2


class Softsign(sad.UnaryFn):
    """softsign(u) = u/(1 + |u|), spelled by one elementary whose array form is a plain function
    (it uses its argument twice, so it is no chain of ufuncs)."""

    name = "softsign"
    spelling = (sad.Elementary("softsign", 1, (lambda v: v / (1.0 + abs(v)),), "({0} / (1.0 + abs({0})))",
                               "(({0}) / (1.0 + fabs({0})))", lambda arg: arg / (1 + sp.Abs(arg))),)

    def fdiff(self, input: Any, output: Any) -> Any:
        return slope(input)


softsign, slope = Softsign(), SoftsignSlope()

#: The oracle's symbols: real, so that SymPy differentiates Abs as sign.
XR, YR = sp.symbols("x y", real=True)

#: The point, where u = 1.3·sin(x)·y + 0.2 > 0, and one where u < 0 (x = -0.6).
POINT, NEGATIVE = {XR: 0.4, YR: 0.7}, {XR: -0.6, YR: 0.7}
#: The orders every engine is held to.
ORDERS = 8


def _inner(x: Any, y: Any, sin: Callable[[Any], Any] = sad.sin) -> Any:
    return 1.3 * sin(x) * y + 0.2


def _softsign_case(at: dict[sp.Symbol, float] = POINT) -> tuple[Any, Any, Any, sp.Expr]:
    """softsign(u) on a tape at ``at``, and its SymPy form written independently in real x and y
    (Abs kept: the oracle differentiates it itself)."""
    tape = sad.Tape()
    x, y = tape.var("x", at[XR]), tape.var("y", at[YR])
    inner = sp.Float(1.3) * sp.sin(XR) * YR + sp.Rational(1, 5)
    return tape, (x, y), softsign(_inner(x, y)), inner / (1 + sp.Abs(inner))


@functools.lru_cache(maxsize=None)
def _diff(expr: sp.Expr, *spec: Any) -> sp.Expr:
    """SymPy's derivative, once per expression and spec (8th-order forms of softsign are long)."""
    return sp.diff(expr, *spec)


def _at(expr: sp.Expr, at: dict[sp.Symbol, float] = POINT) -> float:
    """The value at 30 digits, each symbol (real or not) given by its name."""
    values = {str(k): sp.Float(v, 30) for k, v in at.items()}
    return float(expr.subs({s: values[s.name] for s in expr.free_symbols}).evalf(30))


def _close(got: Any, want: float, what: str) -> None:
    """1e-9 relative: orders up to 8 at a tame point carry a few roundings per order."""
    assert math.isfinite(float(got)) and abs(float(got) - want) <= 1e-9 * abs(want) + 1e-12, (what, got, want)


@pytest.mark.slow
@pytest.mark.parametrize("at", [POINT, NEGATIVE])
def test_a_function_through_another_differentiates_in_every_engine(at):
    """diff by every method with and without its closed form, mixed partials, and taylor_graph by
    the var and by a direction, on either side of softsign's kink at u = 0."""
    tape, (x, y), f, truth = _softsign_case(at)
    by_var = sad.taylor_graph(f, x, ORDERS)
    by_direction = sad.taylor_graph(f, {x: 0.5, y: -1.0}, 4)
    for n in range(1, ORDERS + 1):
        want = _at(_diff(truth, XR, n), at)
        for method in ("graph", "taylor", "auto"):
            for closed_form in (True, False):
                _close(f.diff(x, n, method=method, closed_form=closed_form).eval(), want, f"diff {method} {n}")
        _close(by_var[n - 1].eval(), want, f"taylor_graph by var {n}")
    for method in ("graph", "taylor", "auto"):
        _close(f.diff(x, 2, y, 1, method=method).eval(), _at(_diff(truth, XR, 2, YR, 1), at), f"diff x x y {method}")
    t = sp.Symbol("t", real=True)
    along = truth.subs({XR: XR + t / 2, YR: YR - t}, simultaneous=True)
    for n in range(1, 5):
        want = _at(sp.diff(along, t, n).subs(t, 0), at)
        _close(by_direction[n - 1].eval(), want, f"taylor_graph along (0.5, -1) {n}")


@pytest.mark.slow
def test_a_function_through_another_in_reverse_the_operators_and_the_numeric_modes():
    tape, (x, y), f, truth = _softsign_case()
    g, mixed = f, f.grad_graph(x)
    for n in range(1, ORDERS + 1):
        want = _at(_diff(truth, XR, n))
        g = g.grad_graph(x)
        _close(g.eval(), want, f"grad_graph pass {n}")
        _close(mixed.eval(), want, f"gen_graph^{n - 1}(grad_graph)")
        mixed = mixed.gen_graph(x)
    matrix = sad.hessian(f, [x, y])
    for i, a in enumerate((XR, YR)):
        for j, b in enumerate((XR, YR)):
            _close(matrix[i][j].eval(), _at(_diff(truth, a, b)), f"hessian {a}{b}")
    lap = _diff(truth, XR, 2) + _diff(truth, YR, 2)
    _close(sad.laplacian(f, [x, y]).eval(), _at(lap), "laplacian")
    for method in BIHARMONIC_METHODS:
        _close(sad.biharmonic(f, [x, y], method=method).eval(), _at(sp.diff(lap, XR, 2) + sp.diff(lap, YR, 2)),
               f"biharmonic {method}")
    _close(f.derive(x), _at(_diff(truth, XR)), "derive")
    numeric = f.grad()
    _close(numeric[x], _at(_diff(truth, XR)), "grad x")
    _close(numeric[y], _at(_diff(truth, YR)), "grad y")
    _close(sad.jvp([f], {x: 1.0, y: 2.0})[0], _at(_diff(truth, XR) + 2 * _diff(truth, YR)), "jvp")
    assert slope.grad(0.4) == pytest.approx(-2 / 1.4**3, rel=1e-15)  # the plain fdiff, Q′(g)·g′, on numbers


def test_a_function_through_another_traced():
    """sad.derivative to order 8, sad.grad and sad.hessian of a traced function calling softsign
    on arrays, at points on either side of the kink."""
    points = np.array([POINT[XR], NEGATIVE[XR]])
    build = lambda v: softsign(_inner(v, 0.7, np.sin))  # noqa: E731 - the traced function
    _, _, _, truth = _softsign_case()
    for n in range(ORDERS + 1):
        got = sad.derivative(build, n)(points)
        for p, v in zip(points, got):
            _close(v, _at(_diff(truth, XR, n), {XR: p, YR: 0.7}), f"sad.derivative {n} at {p}")
    total = lambda v: np.sum(build(v))  # noqa: E731
    gradient, hessian = sad.grad(total)(points), sad.hessian(total)(points)
    for k, p in enumerate(points):
        _close(gradient[k], _at(_diff(truth, XR), {XR: p, YR: 0.7}), f"sad.grad at {p}")
        _close(hessian[k, k], _at(_diff(truth, XR, 2), {XR: p, YR: 0.7}), f"sad.hessian at {p}")
    assert hessian[0, 1] == hessian[1, 0] == 0.0


def _float64(backend: str) -> Any:
    """JAX in 64 bits for the call (its default is 32), the flag restored after."""
    return jax_float64(backend == "jax")


#: ``lambdify``'s backends that run here, and C: the CUDA backend's kernels are its body.
BACKENDS = [*(name for name in registry.names() if name != "cuda"), "C"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_function_through_another_compiles_on_every_backend(backend):
    """Its derivatives to order 8 by each method, and by repeated grad_graph to order 4, in one
    program, at points on either side of the kink: the backend itself, never a fallback."""
    tape, (x, y), f, truth = _softsign_case()
    orders = [n for _ in range(2) for n in range(ORDERS + 1)] + list(range(1, 5))
    outputs = [f.diff(x, n, method=method) for method in ("graph", "taylor") for n in range(ORDERS + 1)]
    g = f
    for _ in range(4):
        g = g.grad_graph(x)
        outputs.append(g)
    xs, ys = np.array([POINT[XR], NEGATIVE[XR], 1.1]), np.full(3, 0.7)
    with _float64(backend), warnings.catch_warnings():
        warnings.simplefilter("error", sad.BackendWarning)
        if backend == "C":
            values = c.cpu_function(build_program(tape, [x, y], outputs))(xs, ys)
        else:
            values = sad.lambdify([x, y], outputs, backend=backend)(xs, ys)
        for k, (n, value) in enumerate(zip(orders, values)):
            for p, v in zip(xs, np.broadcast_to(np.asarray(value, dtype=float), xs.shape)):
                _close(v, _at(_diff(truth, XR, n), {XR: p, YR: 0.7}), f"{backend} output {k} (order {n}) at {p}")


def test_a_function_through_another_prints_as_sympy():
    """to_sympy of softsign and of its derivatives is SymPy's own derivative of its form: equal
    in value at points on either side of the kink (SymPy keeps Abs and sign apart, so the two
    need not simplify to one form)."""
    tape, (x, y), f, truth = _softsign_case()
    for n in range(5):
        ours, want = f.diff(x, n).to_sympy(), _diff(truth, XR, n)
        for at in (POINT, NEGATIVE):
            assert abs(_at(ours, at) - _at(want, at)) <= 1e-14 * abs(_at(want, at)), (n, at)


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
    total = lambda v: np.sum(build(v))  # noqa: E731 - traced over an array: elementwise array nodes
    assert np.all(sad.grad(total)(np.full(2, p)) == 0.0) and np.all(sad.hessian(total)(np.full(2, p)) == 0.0)


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
