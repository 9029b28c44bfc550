"""Every registered function on the CPU's three paths — the NumPy backend, the Numba backend and
the one-point Python code — at IEEE edges: the same values (nan where nan, infinities equal,
−0.0 kept), and Numba compiles each one itself rather than falling back to NumPy (SciPy's
functions through their forms on one float, ``functions.special_scalar``).

The oracle for the values is NumPy/SciPy's own ufuncs, called here directly (``REFERENCE``),
not through the library."""

import math
import warnings

import mpmath
import numpy as np
import pytest
import scipy.special

import subgraph_ad as sad
from subgraph_ad.functions import FUNCTIONS

EDGES = [math.nan, math.inf, -math.inf, 0.0, -0.0, 5e-324, 1e-300, 0.5, -0.5, 1.0, -1.0, 2.5, -2.5, 3.0, -7.0,
         30.0, 710.0, -745.2, 1e16, 1e300, -1e300]



def _lgamma(v):
    """log|Γ(a)| by mpmath at 30 digits; +inf at the poles and at ±inf, as C's lgamma (SciPy's
    gammaln gives −inf at −inf and inf at 5e-324, where the value is 744.44)."""
    def one(a):
        if math.isnan(a):
            return math.nan
        if math.isinf(a) or a == math.floor(a) and a <= 0:
            return math.inf
        with mpmath.workdps(30):
            return float(mpmath.re(mpmath.loggamma(a)))
    return np.array([one(a) for a in v])


def _indicator(ufunc):
    return lambda a, b: ufunc(a, b).astype(float)


REFERENCE = {
    "ceil": np.ceil, "floor": np.floor, "trunc": np.trunc, "round": np.rint, "relu": lambda v: np.maximum(0.0, v),
    "sinc": np.sinc, "softplus": lambda v: np.logaddexp(0.0, v), "gamma": scipy.special.gamma, "lgamma": _lgamma,
    "digamma": scipy.special.digamma, "erfinv": scipy.special.erfinv,
    "fmax": np.fmax, "fmin": np.fmin, "maximum": np.maximum, "minimum": np.minimum, "fmod": np.fmod,
    "mod": np.remainder, "heaviside": np.heaviside, "logaddexp": np.logaddexp, "logaddexp2": np.logaddexp2,
    "select": lambda c, a: np.where(c != 0, a, 0.0),
    **{name: _indicator(getattr(np, name)) for name in
       ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal")},
}


#: Relative tolerance in ulps: 4 (libm and NumPy/SciPy differ by 1–2), and 64 for lgamma, whose
#: one-point value is CPython's own math.lgamma: 6 ulps off at 2.5, 40 at −2.5 near a zero of
#: log|Γ| (glibc, which Numba calls, and SciPy are within 1 there).
ULPS = {"lgamma": 64}

#: IEEE 754 leaves the sign of max(−0, +0) and min(−0, +0) to the implementation (relu's is
#: NumPy's on every path: −0.0 at −0.0).
ZERO_TIES = {"fmax", "fmin", "maximum", "minimum"}


def same(got, ref, signed_zeros: bool = True, ulps: int = 4) -> bool:
    got, ref = np.asarray(got, dtype=float), np.asarray(ref, dtype=float)
    with np.errstate(invalid="ignore"):
        close = np.isclose(got, ref, rtol=ulps * np.finfo(float).eps, atol=0) | (got == ref)
    ok = np.where(np.isnan(ref), np.isnan(got), close)
    zeros = (ref == 0) & (got == 0)
    return bool(ok.all() and (not signed_zeros or (np.signbit(got[zeros]) == np.signbit(ref[zeros])).all()))


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_numpy_numba_and_one_point_agree_at_the_edges(name):
    fn = FUNCTIONS[name]
    tape = sad.Tape()
    ins = [tape.var("x"), tape.var("y")][: fn.arity]
    grid = np.meshgrid(*[np.array(EDGES)] * fn.arity)
    args = [g.ravel() for g in grid]
    with np.errstate(all="ignore"):
        ref = REFERENCE[name](*args)
    signed = name not in ZERO_TIES
    numpy_fn = sad.lambdify(ins, fn(*ins), backend="numpy")
    assert same(numpy_fn(*args), ref, signed), name
    numba_fn = sad.lambdify(ins, fn(*ins), backend="numba")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = numba_fn(*args)
    assert [w.category for w in caught] == []  # Numba compiles every built-in (SciPy's: ``special_scalar``)
    assert same(got, ref, signed), name
    points = [numpy_fn(*(float(a[i]) for a in args)) for i in range(len(args[0]))]
    assert same(points, ref, signed, ULPS.get(name, 4)), name


def test_every_registered_builtin_is_covered():
    families = ("conditions", "extrema", "rounding", "stop_gradient", "gamma")
    builtins = {n for n, f in FUNCTIONS.items() if type(f).__module__ in {f"subgraph_ad.functions.{m}" for m in families}}
    assert builtins <= set(REFERENCE), builtins - set(REFERENCE)
