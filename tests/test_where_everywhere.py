"""``where`` in every engine: the derivative of the branch taken, at every order, never the
untaken branch's inf or nan.

Each expression below has a branch that is inf or nan at (or beyond) its switch point: log(x),
sin(x)/x, x·log(x) and sqrt(x) at 0 and below, and a smooth pair (exp, sin) for contrast. Every
engine (``diff`` by each method, with and without its closed form; ``taylor_graph`` by the var
and by a direction; ``grad_graph`` repeated; the Laplacian; the numeric modes; the traced
transforms; ``lambdify`` on every backend) is checked at orders 0–9 at the switch and on either
side of it against mpmath's value, at 50 digits, of SymPy's derivative of the branch taken there,
alone (the oracle knows nothing of ``where``). log's and the (exp, sin) pair's points come as
close to the switch as a double can (the smallest subnormal, 1e-300, 1 ± 1e-12), where the
untaken branch is at its worst; the oracle's inf is the double's overflow, met exactly.
"""

from __future__ import annotations

import functools
import math
import warnings
from typing import Any, Callable

import mpmath
import numpy as np
import pytest
import sympy as sp

import subgraph_ad as sad
from conftest import jax_float64
from subgraph_ad.ad.operators import BIHARMONIC_METHODS
from subgraph_ad.compile import registry
from subgraph_ad.compile.backends import c
from subgraph_ad.compile.program import build_program

X, Y = sp.symbols("x y")
ORDERS = 9
TINY = np.finfo(float).tiny


def _taken(cond: Callable[[float], bool], yes: sp.Expr, no: sp.Expr) -> Callable[[float], sp.Expr]:
    return lambda p: yes if cond(p) else no


def _around(switch: float, *gaps: float) -> list[float]:
    return [switch, *(switch + s * g for g in gaps for s in (-1.0, 1.0))]


#: Points close to 0 on either side. log(x) and x² are taken as close as a double can (the
#: smallest subnormal, 1e-300), where log's derivatives overflow: the oracle's inf, met exactly.
#: x·log(x) and sqrt(x) from 1e-8 on: their derivative graphs hold x·(1/x²) and the like, whose
#: factors overflow at 1e-300 where the product does not (the branch's own algebra, not the
#: switch). sin(x)/x is taken at ±2 only: its n-th derivative by the quotient rule sums terms
#: of order n!/xⁿ⁺¹ to a value of order 1/n, losing 8 digits at x = 0.5 and n = 8 in any engine.
NEAR_ZERO = _around(0.0, 1e-8, 0.5) + [-0.0]

#: (name, f on Terms and traced arrays, the branch taken at a point as SymPy, the points, the
#: switch point)
CASES: list[tuple[str, Callable[[Any], Any], Callable[[float], sp.Expr], list[float], float]] = [
    ("log", lambda x: np.where(x > 0, np.log(x), x * x), _taken(lambda p: p > 0, sp.log(X), X * X),
     _around(0.0, 5e-324, 1e-300) + NEAR_ZERO, 0.0),
    ("sinc", lambda x: np.where(x == 0, 1.0, np.sin(x) / x),
     _taken(lambda p: p == 0, sp.Integer(1), sp.sin(X) / X), _around(0.0, 2.0), 0.0),
    ("xlogx", lambda x: np.where(x > 0, x * np.log(x), 0.0),
     _taken(lambda p: p > 0, X * sp.log(X), sp.Integer(0)), NEAR_ZERO, 0.0),
    ("sqrt", lambda x: np.where(x > 0, np.sqrt(x), 0.0), _taken(lambda p: p > 0, sp.sqrt(X), sp.Integer(0)),
     NEAR_ZERO, 0.0),
    ("expsin", lambda x: np.where(x < 1, np.exp(x), np.sin(x)), _taken(lambda p: p < 1, sp.exp(X), sp.sin(X)),
     _around(1.0, 1e-12, 1e-8, 0.5), 1.0),
]


@functools.lru_cache(maxsize=None)
def _derivative(branch: sp.Expr, n: int) -> Callable[[Any], Any]:
    return sp.lambdify(X, sp.diff(branch, X, n), "mpmath")


def _exact(branch: Callable[[float], sp.Expr], p: float, n: int) -> Any:
    """The n-th derivative at p of the branch taken there: SymPy's derivative, its value by mpmath
    at 50 digits (an mpf)."""
    with mpmath.workdps(50):
        return +mpmath.mpf(_derivative(branch(p), n)(mpmath.mpf(p)))


def _truth(branch: Callable[[float], sp.Expr], p: float, n: int) -> float:
    """``_exact`` rounded to a double: inf where it overflows one."""
    return float(_exact(branch, p, n))


def _check(got: Any, want: float, what: str, scale: float | None = None) -> None:
    """Within 1e-9 of ``scale`` (the size of the terms that sum to ``want``; by default ``want``'s
    own, plus 1e-300 for the x² branch's 2x at a subnormal): every result here is a few roundings
    per order from its value, far below this. An overflow is the same inf."""
    got = float(got)
    if math.isinf(want):
        assert got == want, f"{what}: got {got}, expected {want}"
        return
    bound = 1e-9 * (abs(want) if scale is None else scale) + 1e-300
    assert math.isfinite(got) and abs(got - want) <= bound, f"{what}: got {got}, expected {want}"


def _tape_at(build: Callable[[Any], Any], p: float) -> tuple[Any, Any]:
    tape = sad.Tape()
    x = tape.var("x", p)
    return x, build(x)


def test_diff_every_method_and_taylor_graph() -> None:
    """diff by repeated passes, Taylor mode and auto, each with and without its closed form, and
    taylor_graph by the var and by a direction (a number and a Term)."""
    for name, build, branch, points, _ in CASES:
        for p in points:
            x, f = _tape_at(build, p)
            by_var = sad.taylor_graph(f, x, ORDERS)
            by_number = sad.taylor_graph(f, {x: 1.0}, ORDERS)
            by_term = sad.taylor_graph(f, {x: x.tape.const(1.0)}, ORDERS)
            for n in range(ORDERS + 1):
                want = _truth(branch, p, n)
                for method in ("graph", "taylor", "auto"):
                    for closed_form in (True, False):
                        got = f.diff(x, n, method=method, closed_form=closed_form).eval()
                        _check(got, want, f"{name} diff {method} closed_form={closed_form} n={n} at {p}")
                if n:
                    _check(by_var[n - 1].eval(), want, f"{name} taylor_graph by var n={n} at {p}")
                    _check(by_number[n - 1].eval(), want, f"{name} taylor_graph by {{x: 1.0}} n={n} at {p}")
                    _check(by_term[n - 1].eval(), want, f"{name} taylor_graph by {{x: const(1)}} n={n} at {p}")


@pytest.mark.slow
def test_reverse_and_mixed_sweeps() -> None:
    """grad_graph n times over, gen_graph over grad_graph, and grad_graph over a Taylor derivative:
    the gradient of a selection is made of selections, so every later pass stays exact."""
    for name, build, branch, points, _ in CASES:
        for p in points:
            x, f = _tape_at(build, p)
            reverse, mixed = f, f.grad_graph(x)
            for n in range(1, ORDERS + 1):
                want = _truth(branch, p, n)
                reverse = reverse.grad_graph(x)
                _check(reverse.eval(), want, f"{name} grad_graph^{n} at {p}")
                _check(mixed.eval(), want, f"{name} gen_graph^{n - 1}(grad_graph) at {p}")
                mixed = mixed.gen_graph(x)
                over_taylor = f.diff(x, n - 1, method="taylor").grad_graph(x)
                _check(over_taylor.eval(), want, f"{name} grad_graph(taylor) n={n} at {p}")


def test_numeric_modes() -> None:
    """derive, jvp, grad and vjp on numbers, of f and of its derivative graphs."""
    for name, build, branch, points, _ in CASES:
        for p in points:
            x, f = _tape_at(build, p)
            for n in range(1, ORDERS + 1):
                want = _truth(branch, p, n)
                d = f.diff(x, n - 1, method="graph")
                _check(d.derive(x), want, f"{name} derive of order {n - 1} at {p}")
                _check(sad.jvp([d], {x: 1.0})[0], want, f"{name} jvp of order {n - 1} at {p}")
                _check(d.grad()[x], want, f"{name} grad of order {n - 1} at {p}")
                _check(sad.vjp([d], [1.0])[x], want, f"{name} vjp of order {n - 1} at {p}")


def test_traced_transforms() -> None:
    """sad.derivative at every order, on an array of all the points and on each alone, and sad.grad
    and sad.hessian on the array."""
    for name, build, branch, points, _ in CASES:
        array = np.array(points)
        for n in range(ORDERS + 1):
            derivative = sad.derivative(build, n)
            for p, v in zip(points, derivative(array)):
                _check(v, _truth(branch, p, n), f"{name} sad.derivative n={n} at {p} (array)")
            for p in points:
                _check(derivative(p), _truth(branch, p, n), f"{name} sad.derivative n={n} at {p}")
        total = lambda v: np.sum(build(v))  # noqa: E731 - the traced function
        gradient, hessian = sad.grad(total)(array), sad.hessian(total)(array)
        for k, p in enumerate(points):
            _check(gradient[k], _truth(branch, p, 1), f"{name} sad.grad at {p}")
            _check(hessian[k, k], _truth(branch, p, 2), f"{name} sad.hessian at {p}")
        assert np.all(hessian[~np.eye(len(points), dtype=bool)] == 0.0)


def test_laplacian_and_biharmonic() -> None:
    """The Laplacian of f's derivatives (Δf⁽ⁿ⁻²⁾ = f⁽ⁿ⁾ to n = 9) and of itself (Δᵏf = f⁽²ᵏ⁾ to
    k = 4); in two vars, u = f(x)·exp(y): Δu = (f″ + f)·e^y and Δ²u = (f⁗ + 2f″ + f)·e^y, by every
    biharmonic method."""
    for name, build, branch, points, _ in CASES:
        for p in points:
            x, f = _tape_at(build, p)
            for n in range(2, ORDERS + 1):
                got = sad.laplacian(f.diff(x, n - 2, method="graph"), [x]).eval()
                _check(got, _truth(branch, p, n), f"{name} laplacian of order {n - 2} at {p}")
            power = f
            for k in range(1, ORDERS // 2 + 1):
                power = sad.laplacian(power, [x])
                _check(power.eval(), _truth(branch, p, 2 * k), f"{name} laplacian^{k} at {p}")
            y = x.tape.var("y", 0.25)
            u = f * sad.exp(y)
            with mpmath.workdps(50):
                f0, f2, f4 = (_exact(branch, p, n) for n in (0, 2, 4))
                e = mpmath.exp(mpmath.mpf(0.25))
                lap, bih = float((f2 + f0) * e), float((f4 + 2 * f2 + f0) * e)
                lap_scale, bih_scale = float((abs(f2) + abs(f0)) * e), float((abs(f4) + 2 * abs(f2) + abs(f0)) * e)
            _check(sad.laplacian(u, [x, y]).eval(), lap, f"{name} laplacian of f·e^y at {p}", lap_scale)
            for method in BIHARMONIC_METHODS:
                got = sad.biharmonic(u, [x, y], method=method).eval()
                _check(got, bih, f"{name} biharmonic {method} of f·e^y at {p}", bih_scale)


#: ``lambdify``'s backends that run here, and C: the CUDA backend's kernels are the C body
#: (``c.c_body``), compiled here with the system's C compiler; CUDA itself needs a GPU.
BACKENDS = [*(name for name in registry.names() if name != "cuda"), "C"]


def _float64(backend: str) -> Any:
    """JAX in 64 bits for the call (its default is 32), the flag restored after."""
    return jax_float64(backend == "jax")


def _compiled(backend: str, xs: list[Any], outputs: list[Any]) -> Callable[..., Any]:
    if backend == "C":
        return c.cpu_function(build_program(xs[0].tape, xs, outputs))
    with warnings.catch_warnings():
        warnings.simplefilter("error", sad.BackendWarning)  # the backend itself, never a fallback
        return sad.lambdify(xs, outputs, backend=backend)


def _subnormal(v: float) -> bool:
    return v != 0 and abs(v) < TINY


#: The expressions whose compiled derivatives are held to order 9 by repeated grad_graph too;
#: the others' to order 5 that way: their nine reverse sweeps hold 4,000–12,000 steps (each
#: sweep over the last one's graph), a minute of C compilation, and meet no other rule.
REVERSE_ALL_ORDERS = ("log", "expsin")


def _every_engine(f: Any, x: Any, reverse_orders: int) -> tuple[list[int], list[Any]]:
    """f's derivatives of orders 0–9 by every engine that builds them on the tape (diff by each
    method, taylor_graph by the var and by a direction, the Laplacian repeated), and by
    ``reverse_orders`` grad_graph passes, with their orders."""
    orders: list[int] = []
    outputs: list[Any] = []
    for method in ("auto", "graph", "taylor"):
        orders += range(ORDERS + 1)
        outputs += [f.diff(x, n, method=method) for n in range(ORDERS + 1)]
    for wrt in (x, {x: 1.0}):
        orders += range(1, ORDERS + 1)
        outputs += sad.taylor_graph(f, wrt, ORDERS)
    reverse, power = f, f
    for n in range(1, reverse_orders + 1):
        reverse = reverse.grad_graph(x)
        orders.append(n)
        outputs.append(reverse)
    for k in range(1, ORDERS // 2 + 1):
        power = sad.laplacian(power, [x])
        orders.append(2 * k)
        outputs.append(power)
    return orders, outputs


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
def test_lambdify_every_backend(backend: str) -> None:
    """Every engine's derivatives, built at the switch and on one side of it (two vars of one
    tape, one program per expression), run at all the points at once. JAX on the CPU flushes
    subnormals to zero (XLA sets the CPU's FTZ/DAZ modes), so it is held to the others wherever
    neither the point nor the value is subnormal."""
    with _float64(backend):
        for name, build, branch, points, switch in CASES:
            tape = sad.Tape()
            xs = [tape.var("x", switch), tape.var("x_side", max(points))]
            orders, outputs, built = [], [], []
            for x in xs:
                reverse_orders = ORDERS if name in REVERSE_ALL_ORDERS else 5
                engine_orders, engine_outputs = _every_engine(build(x), x, reverse_orders)
                orders += engine_orders
                outputs += engine_outputs
                built += [x.name] * len(engine_outputs)
            array = np.array(points)
            values = _compiled(backend, xs, outputs)(array, array)
            for k, (n, at, value) in enumerate(zip(orders, built, values)):
                value = np.broadcast_to(np.asarray(value, dtype=float), array.shape)
                for p, v in zip(points, value):
                    want = _truth(branch, p, n)
                    if backend == "jax" and (_subnormal(p) or _subnormal(want)):
                        continue
                    _check(v, want, f"{name} {backend} output {k} (order {n}, built by {at}) at {p}")
