"""``where`` in every engine: the derivative of the branch taken, at every order, never the
untaken branch's inf or nan.

Each expression below has a branch that is inf or nan at (or beyond) its switch point: log(x),
sin(x)/x, x·log(x) and sqrt(x) at 0 and below, and a smooth pair (exp, sin) for contrast. Every
engine is checked at orders 0–6 just below, at, and just above the switch against SymPy's
derivative of the branch taken there, alone (the oracle knows nothing of ``where``).
"""

from __future__ import annotations

import contextlib
import math
import warnings
from typing import Any, Callable, Iterator

import numpy as np
import pytest
import sympy as sp

import subgraph_ad as sad

X, Y = sp.symbols("x y")
ORDERS = 6


def _taken(cond: Callable[[float], bool], yes: sp.Expr, no: sp.Expr) -> Callable[[float], sp.Expr]:
    return lambda p: yes if cond(p) else no


#: (name, f on Terms and traced arrays, the branch taken at a point as SymPy, switch point)
CASES: list[tuple[str, Callable[[Any], Any], Callable[[float], sp.Expr], float]] = [
    ("log", lambda x: np.where(x > 0, np.log(x), x * x), _taken(lambda p: p > 0, sp.log(X), X * X), 0.0),
    ("sinc", lambda x: np.where(x == 0, 1.0, np.sin(x) / x),
     _taken(lambda p: p == 0, sp.Integer(1), sp.sin(X) / X), 0.0),
    ("xlogx", lambda x: np.where(x > 0, x * np.log(x), 0.0),
     _taken(lambda p: p > 0, X * sp.log(X), sp.Integer(0)), 0.0),
    ("sqrt", lambda x: np.where(x > 0, np.sqrt(x), 0.0), _taken(lambda p: p > 0, sp.sqrt(X), sp.Integer(0)), 0.0),
    ("expsin", lambda x: np.where(x < 1, np.exp(x), np.sin(x)), _taken(lambda p: p < 1, sp.exp(X), sp.sin(X)), 1.0),
]


def _points(switch: float) -> list[float]:
    return [switch - 0.5, switch, switch + 0.5]


def _truth(branch: Callable[[float], sp.Expr], p: float, n: int) -> float:
    """The n-th derivative at p of the branch taken there, by SymPy, to 30 digits."""
    return float(sp.diff(branch(p), X, n).subs(X, sp.Float(p, 30)).evalf(30))


def _check(got: Any, want: float, what: str) -> None:
    """Within 1e-9 relative (plus 1e-12 absolute): the orders here are low and the points tame,
    so a Taylor or repeated-pass result carries a few roundings per order, far below this."""
    got = float(got)
    assert math.isfinite(got) and abs(got - want) <= 1e-9 * abs(want) + 1e-12, f"{what}: got {got}, expected {want}"


def _tape_at(build: Callable[[Any], Any], p: float) -> tuple[Any, Any]:
    tape = sad.Tape()
    x = tape.var("x", p)
    return x, build(x)


def test_diff_every_method_and_taylor_graph() -> None:
    """diff by repeated passes, Taylor mode and auto, and taylor_graph by the var and by a direction."""
    for name, build, branch, switch in CASES:
        for p in _points(switch):
            x, f = _tape_at(build, p)
            by_var = sad.taylor_graph(f, x, ORDERS)
            by_direction = sad.taylor_graph(f, {x: 1.0}, ORDERS)
            for n in range(ORDERS + 1):
                want = _truth(branch, p, n)
                for method in ("graph", "taylor", "auto"):
                    _check(f.diff(x, n, method=method).eval(), want, f"{name} diff {method} n={n} at {p}")
                if n:
                    _check(by_var[n - 1].eval(), want, f"{name} taylor_graph by var n={n} at {p}")
                    _check(by_direction[n - 1].eval(), want, f"{name} taylor_graph by direction n={n} at {p}")


def test_reverse_and_mixed_sweeps() -> None:
    """grad_graph n times over, gen_graph over grad_graph, and grad_graph over a Taylor derivative:
    the gradient of a selection is made of selections, so every later pass stays exact."""
    for name, build, branch, switch in CASES:
        for p in _points(switch):
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
    for name, build, branch, switch in CASES:
        for p in _points(switch):
            x, f = _tape_at(build, p)
            for n in range(1, ORDERS + 1):
                want = _truth(branch, p, n)
                d = f.diff(x, n - 1, method="graph")
                _check(d.derive(x), want, f"{name} derive of order {n - 1} at {p}")
                _check(sad.jvp([d], {x: 1.0})[0], want, f"{name} jvp of order {n - 1} at {p}")
                _check(d.grad()[x], want, f"{name} grad of order {n - 1} at {p}")
                _check(sad.vjp([d], [1.0])[x], want, f"{name} vjp of order {n - 1} at {p}")


def test_traced_transforms() -> None:
    """sad.derivative at every order, sad.grad and sad.hessian on an array holding all three points."""
    for name, build, branch, switch in CASES:
        points = np.array(_points(switch))
        for n in range(ORDERS + 1):
            got = sad.derivative(build, n)(points)
            for p, v in zip(points, got):
                _check(v, _truth(branch, p, n), f"{name} sad.derivative n={n} at {p}")
        total = lambda v: np.sum(build(v))  # noqa: E731 - the traced function
        gradient, hessian = sad.grad(total)(points), sad.hessian(total)(points)
        for k, p in enumerate(points):
            _check(gradient[k], _truth(branch, p, 1), f"{name} sad.grad at {p}")
            _check(hessian[k, k], _truth(branch, p, 2), f"{name} sad.hessian at {p}")
        assert np.all(hessian[~np.eye(len(points), dtype=bool)] == 0.0)


@contextlib.contextmanager
def _float64(backend: str) -> Iterator[None]:
    """JAX in 64 bits for the call (its default is 32), the flag restored after."""
    if backend != "jax":
        yield
        return
    import jax

    previous = jax.config.read("jax_enable_x64")
    jax.config.update("jax_enable_x64", True)
    try:
        yield
    finally:
        jax.config.update("jax_enable_x64", previous)


@pytest.mark.parametrize("backend", ["numpy", "numba", "jax"])
def test_lambdify_every_backend(backend: str) -> None:
    """Each expression's derivatives of orders 0–6 (default diff) and its second derivative by
    two reverse sweeps, compiled in one program per expression, at the three points at once."""
    with _float64(backend):
        _lambdified(backend)


def _lambdified(backend: str) -> None:
    for name, build, branch, switch in CASES:
        tape = sad.Tape()
        x = tape.var("x", 0.0)
        f = build(x)
        outputs = [f.diff(x, n) for n in range(ORDERS + 1)] + [f.grad_graph(x).grad_graph(x)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a backend's note that it falls back, if any
            compiled = sad.lambdify([x], outputs, backend=backend)
        points = np.array(_points(switch))
        values = compiled(points)
        for n in range(ORDERS + 2):
            order = n if n <= ORDERS else 2
            for p, v in zip(points, np.asarray(values[n], dtype=float)):
                _check(v, _truth(branch, p, order), f"{name} lambdify {backend} output {n} at {p}")


def test_laplacian_and_biharmonic() -> None:
    """u = f(x)·exp(y): Δu = (f″ + f)·e^y and Δ²u = (f⁗ + 2f″ + f)·e^y, by every biharmonic method."""
    for name, build, branch, switch in CASES:
        for p in _points(switch):
            tape = sad.Tape()
            x, y = tape.var("x", p), tape.var("y", 0.25)
            u = build(x) * sad.exp(y)
            taken = branch(p) * sp.exp(Y)
            at = {X: sp.Float(p, 30), Y: sp.Float(0.25, 30)}
            lap = float((sp.diff(taken, X, 2) + sp.diff(taken, Y, 2)).subs(at).evalf(30))
            fourth = sp.diff(taken, X, 4) + 2 * sp.diff(taken, X, 2, Y, 2) + sp.diff(taken, Y, 4)
            bih = float(fourth.subs(at).evalf(30))
            _check(sad.laplacian(u, [x, y]).eval(), lap, f"{name} laplacian at {p}")
            for method in ("auto", "nested", "direct"):
                _check(sad.biharmonic(u, [x, y], method=method).eval(), bih, f"{name} biharmonic {method} at {p}")
