"""A power by a constant is lowered once (``program.POWERS``), so every backend computes x ** k
the same way, bit for bit with NumPy: ``x ** 2``, ``x ** -1`` and ``x ** 0.5`` as NumPy's array
operator computes them (``square``, ``reciprocal``, ``sqrt``: its fast paths), every other power
as the C library's ``pow``, called here through ctypes. NumPy's AVX-512 array loop for those
calls SVML's ``pow`` instead (1 ulp away at ~5 % of points, where its scalars, ``math.pow``, C
and XLA call the C library's), so that loop is not the oracle for them.

The points: 10⁵, half in [-4, 4], half of every magnitude from subnormal to near the largest
double, either sign, and the edges (±0, ±inf, nan, subnormals, overflow and underflow of x**k).
JAX on the CPU flushes subnormals to zero (XLA sets the CPU's FTZ/DAZ modes), so it is held to
the others wherever neither x nor x**k is subnormal."""

import ctypes
import ctypes.util
import warnings

import numpy as np
import pytest

from subgraph_ad import Tape, lambdify
from subgraph_ad.compile.backends import c
from subgraph_ad.compile.lambdify import BackendWarning
from subgraph_ad.compile.program import build_program

#: The exponents of the issue: the whole ones from -3 to 7, the square root and its inverse, and a
#: power that is neither.
EXPONENTS = [*range(-3, 8), 0.5, -0.5, 2.5]
#: NumPy's ``x ** k`` that does not call ``pow`` (numpy/_core/src/multiarray/number.c,
#: ``fast_scalar_power``): bit for bit the same on every machine. 0 and 1 the tape folds.
FAST = {2: np.square, -1: np.reciprocal, 0.5: np.sqrt, 0: np.ones_like, 1: np.positive}
TINY = np.finfo(float).tiny
SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -5e-324, 1e-310, -1e-310, TINY, -TINY,
           1.7976931348623157e308, -1.7976931348623157e308, 1e103, -1e103, 1e-103, -1e-103, 1.2e-154, -1.2e-154,
           1e154, -1e154, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, 3.0, -3.0]


def _points(n: int = 100_000) -> np.ndarray:
    rng = np.random.default_rng(33)
    x = np.where(rng.random(n) < 0.5, -1.0, 1.0) * 10.0 ** rng.uniform(-330.0, 308.25, n)
    x[: n // 2] = rng.uniform(-4.0, 4.0, n // 2)
    x[: len(SPECIAL)] = SPECIAL
    return x


POINTS = _points()


def _libm_pow() -> np.ufunc:
    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    libm.pow.argtypes, libm.pow.restype = [ctypes.c_double, ctypes.c_double], ctypes.c_double
    return np.frompyfunc(libm.pow, 2, 1)


POW = _libm_pow()


def _reference(k: float) -> np.ndarray:
    with np.errstate(all="ignore"):
        if k in FAST:
            return POINTS ** (int(k) if float(k).is_integer() else k)  # NumPy's own operator
        return POW(POINTS, float(k)).astype(float)


def _differ(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Where two results differ in any bit (every nan is one value)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return (a.view(np.int64) != b.view(np.int64)) & ~(np.isnan(a) & np.isnan(b))


def _subnormal(v: np.ndarray) -> np.ndarray:
    return (v != 0) & (np.abs(v) < TINY)


def _program(k: float):
    """x ** k with k written three ways, as a program's three outputs: a Python number as given,
    a float, and a constant Term. Each must be lowered the same way."""
    tape = Tape()
    x = tape.var("x")
    return x, [x ** k, x ** float(k), x ** tape.const(float(k))]


def _each(name: str, k: float, results, reference: np.ndarray, where: np.ndarray | None = None) -> None:
    for form, result in zip(("k", "float(k)", "const(k)"), results):
        differ = _differ(result, reference) if where is None else _differ(result, reference) & where
        assert not differ.any(), _report(f"{name} (x ** {form})", k, differ, POINTS)


def _report(name: str, k: float, differ: np.ndarray, points: np.ndarray) -> str:
    where = points[differ][:4]
    return f"{name}: x**{k} differs at {differ.sum()} of {differ.size} points, e.g. {where.tolist()}"


def test_numpy_fast_paths_are_what_the_oracle_takes_them_to_be():
    """The oracle's own premise: NumPy's ``x ** k`` for 2, -1 and 0.5 is square, reciprocal, sqrt."""
    with np.errstate(all="ignore"):
        for k, fast in FAST.items():
            assert not _differ(POINTS ** k, fast(POINTS)).any(), k


@pytest.mark.parametrize("k", EXPONENTS)
@pytest.mark.parametrize("backend", ["numpy", "numba", "C"])
def test_numpy_numba_and_c_compute_x_to_the_k_bit_for_bit_as_numpy(backend, k):
    reference = _reference(k)
    x, powers = _program(k)
    if backend == "C":
        results = c.cpu_function(build_program(x.tape, [x], powers))(POINTS)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("error", BackendWarning)  # the backend itself, never a fallback
            results = lambdify([x], powers, backend=backend)(POINTS)
    _each(backend, k, results, reference)


@pytest.mark.parametrize("k", EXPONENTS)
def test_the_one_point_code_computes_x_to_the_k_as_the_arrays_do(k):
    reference = _reference(k)[:3000]
    x, powers = _program(k)
    f = lambdify([x], powers)
    results = np.array([f(float(v)) for v in POINTS[:3000]]).T
    for form, result in zip(("k", "float(k)", "const(k)"), results):
        differ = _differ(result, reference)
        assert not differ.any(), _report(f"one point (x ** {form})", k, differ, POINTS[:3000])


@pytest.mark.parametrize("k", EXPONENTS)
def test_jax_computes_x_to_the_k_bit_for_bit_as_numpy_away_from_subnormals(k):
    reference = _reference(k)
    x, powers = _program(k)
    results = [np.asarray(r) for r in lambdify([x], powers, backend="jax")(POINTS)]
    assert all(r.dtype == np.float64 for r in results)
    normal = ~(_subnormal(POINTS) | _subnormal(reference))
    assert normal.sum() > 0.97 * POINTS.size
    _each("JAX", k, results, reference, normal)
