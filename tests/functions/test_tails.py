"""Derivatives in the tails keep their digits where the problem is well conditioned.

A rule that reuses the output can lose everything where the output rounds to a constant:
expm1 + 1 is 0 below u ≈ −37 where e^u is not. The oracle is mpmath at 50 digits.
"""


import mpmath
import numpy as np
import pytest

import subgraph_ad as sad
from subgraph_ad import Tape
from subgraph_ad.compile.backends import c
from subgraph_ad.compile.program import build_program

mpmath.mp.dps = 50


@pytest.mark.parametrize("u", [-40.0, -100.0, -700.0])
@pytest.mark.parametrize("order", [1, 2, 3])
def test_expm1_derivatives_far_left_are_e_to_the_u(u, order):
    tape = Tape()
    x = tape.var("x", u)
    found = sad.expm1(x).diff(x, order).eval()
    assert found == pytest.approx(float(mpmath.exp(u)), rel=1e-14, abs=0)
    assert sad.expm1(x).derive(x) == pytest.approx(float(mpmath.exp(u)), rel=1e-14, abs=0)


def _mp_derivative(fn, u: float, order: int) -> float:
    """The order-th derivative of an mpmath function at u, exact to the working precision."""
    with mpmath.workdps(60):
        return float(mpmath.diff(fn, mpmath.mpf(u), order))


def _sigmoid(v):
    return 1 / (1 + mpmath.exp(-v))


#: tanh⁽ⁿ⁾, σ⁽ⁿ⁾ and expm1⁽ⁿ⁾ where the function rounds to its limit: 1 − tanh², σ(1 − σ) and
#: expm1 + 1 are 0 there.
CASES = [("tanh", sad.tanh, mpmath.tanh, u) for u in (10.0, 20.0, -20.0, 30.0)] + \
        [("sigmoid", sad.sigmoid, _sigmoid, u) for u in (40.0, -40.0)] + \
        [("expm1", sad.expm1, mpmath.expm1, u) for u in (-40.0, -100.0)]


def _engines(fn, u: float, order: int) -> dict[str, float]:
    """The order-th derivative of fn at u by every engine: diff by each method, repeated grad_graph,
    the numeric forward and reverse modes (order 1), and compiled with NumPy and Numba."""
    tape = Tape()
    x = tape.var("x", u)
    f = fn(x)
    found = {m: f.diff(x, order, method=m).eval() for m in ("graph", "taylor", "auto")}
    d = f
    for _ in range(order):
        d = d.grad_graph(x)
    found["grad_graph"] = d.eval()
    d = f.diff(x, order)
    for backend in ("numpy", "numba"):
        found[backend] = float(sad.lambdify([x], d, backend=backend)(u))
        found[f"{backend} array"] = float(sad.lambdify([x], d, backend=backend)(np.array([u, u]))[1])
    if order == 1:
        found["derive"] = f.derive(x)
        found["grad"] = f.grad()[x]
        found["sad.grad"] = sad.grad(lambda v: fn(v))(u)
    return found


@pytest.mark.parametrize("name, fn, reference, u", CASES, ids=[f"{c[0]}({c[3]:g})" for c in CASES])
@pytest.mark.parametrize("order", [1, 2, 3, 4])
def test_tanh_and_sigmoid_derivatives_in_the_tails_keep_their_digits(name, fn, reference, u, order):
    expected = _mp_derivative(reference, u, order)
    assert expected != 0.0
    for engine, value in _engines(fn, u, order).items():
        assert value == pytest.approx(expected, rel=1e-13, abs=0), engine


@pytest.mark.parametrize("name, fn, reference, u", CASES, ids=[f"{c[0]}({c[3]:g})" for c in CASES])
def test_tail_derivatives_lower_to_c_and_jax(name, fn, reference, u, x64):
    """sech² and σ′ are not registered names, yet any derivative graph holding them compiles: C
    (built by cc on the CPU, as the CUDA backend's body) and JAX."""
    tape = Tape()
    x = tape.var("x", u)
    ds = [fn(x).diff(x, n) for n in (1, 2)]
    points = np.array([u, u])
    program = build_program(tape, [x], ds)
    compiled = {"c": c.cpu_function(program)(points), "jax": sad.lambdify([x], ds, backend="jax")(points)}
    for n, k in enumerate((1, 2)):
        expected = _mp_derivative(reference, u, k)
        for backend, values in compiled.items():
            assert float(np.asarray(values[n])[1]) == pytest.approx(expected, rel=1e-13, abs=0), backend


#: Points where x² + y² overflows or underflows (or loses digits to subnormals), though atan2's
#: partials x/(x² + y²) and −y/(x² + y²) are representable.
SCALES = [(1e-200, 1e-200), (1e200, 1e200), (1e-160, 3e-160), (-2e160, 1e160), (1e300, -1e299), (3.0, 4.0)]


def _mp_atan2_partials(y: float, x: float) -> tuple[float, float]:
    """∂atan2/∂y and ∂atan2/∂x at (y, x), in exact arithmetic rounded once."""
    r2 = mpmath.mpf(x) ** 2 + mpmath.mpf(y) ** 2
    return float(mpmath.mpf(x) / r2), float(-mpmath.mpf(y) / r2)


@pytest.mark.parametrize("y, x", SCALES)
def test_atan2_partials_at_extreme_scales(y, x):
    """Both partials by the forward and reverse subgraphs, the numeric modes and NumPy-compiled
    code, where x² + y² is inf or 0 in floating point."""
    tape = Tape()
    vy, vx = tape.var("y", y), tape.var("x", x)
    z = sad.atan2(vy, vx)
    expected = _mp_atan2_partials(y, x)
    gradient = z.grad()
    for k, (var, want) in enumerate(zip((vy, vx), expected)):
        assert want != 0.0
        found = {"gen_graph": z.gen_graph(var).eval(), "grad": gradient[var], "derive": z.derive(var),
                 "grad_graph": z.grad_graph(var).eval(), "diff": z.diff(var, 1, method="taylor").eval(),
                 "numpy": float(sad.lambdify([vy, vx], z.gen_graph(var))(y, x))}
        for engine, value in found.items():
            assert value == pytest.approx(want, rel=1e-14, abs=0), (engine, k)

