"""The elementary operations the comparisons, selections, extrema and rounding functions are
spelled with (``KINKS``): each one's NumPy, scalar, C and SymPy forms, and ``Kinded``, the
family of functions whose name is their kind and whose spelling is that entry."""

from __future__ import annotations

import functools
import math
from typing import Any, Callable

import numpy as np

from .base import Function
from .elementary import Elementary, Step


def _sympy_indicator(cond: Any) -> Any:
    """1 where the SymPy condition holds, else 0: the SymPy form of a condition Term."""
    import sympy

    return sympy.Piecewise((1, cond), (0, True))


def _indicated(expr: Any) -> Any:
    """The SymPy condition of a 0/1 indicator ``Piecewise((1, c), (0, True))``, else None."""
    import sympy

    if isinstance(expr, sympy.Piecewise) and len(expr.args) == 2:
        (one, cond), (zero, rest) = expr.args
        if one == 1 and zero == 0 and rest == sympy.true:
            return cond
    return None


def sympy_truth(c: Any) -> Any:
    """The SymPy condition "c is not 0" of a condition's SymPy form, read back as the relation
    it stands for (``x > 0``, not ``Ne(Piecewise((1, x > 0), (0, True)), 0)``)."""
    import sympy

    inner = _indicated(c)
    if inner is None:
        return sympy.Ne(c, 0)
    if isinstance(inner, sympy.Eq) and inner.rhs == 0 and _indicated(inner.lhs) is not None:
        return sympy.Not(_indicated(inner.lhs))  # the complement: equal(c, 0)
    return inner


def _relation(name: str, ufunc: Any, symbol: str, sympy_name: str) -> Elementary:
    def convert(a: Any, b: Any) -> Any:
        import sympy

        return _sympy_indicator(getattr(sympy, sympy_name)(a, b))

    return Elementary(name, 2, (ufunc,), f"(1.0 if {{0}} {symbol} {{1}} else 0.0)", f"((({{0}}) {symbol} ({{1}})) ? 1.0 : 0.0)",
                      convert)


def _select_array(c: Any, a: Any) -> Any:
    """a where c is not 0, else exactly 0 (an inf or nan a included)."""
    return np.where(np.asarray(c) != 0.0, a, 0.0)[()]


def _select(c: float, a: float) -> float:
    return a if c != 0.0 else 0.0


def _sympy_select(c: Any, a: Any) -> Any:
    import sympy

    return sympy.Piecewise((a, sympy_truth(c)), (0, True))


def _maximum(a: float, b: float) -> float:
    return a if a > b or a != a else b  # a != a: nan, which np.maximum propagates


def _minimum(a: float, b: float) -> float:
    return a if a < b or a != a else b


def _relu(v: float) -> float:
    """max(0, v) with NumPy's tie: −0.0 at −0.0, as np.maximum(0.0, v) and the C form give."""
    return v if v >= 0.0 or v != v else 0.0


def _heaviside(v: float, h: float) -> float:
    if v != v:
        return v
    return 1.0 if v > 0.0 else 0.0 if v < 0.0 else h


def _sympy_relu(a: Any) -> Any:
    import sympy

    return sympy.Piecewise((a, a > 0), (0, True))  # relu'(0) = 0, as here (Max(0, x) would say ½)


def _sympy_isfinite(a: Any) -> Any:
    import sympy

    return _sympy_indicator(sympy.Abs(a) < sympy.oo)


def _sympy_isnan(a: Any) -> Any:
    import sympy

    return sympy.S.Zero  # a real SymPy expression is never nan


def _sympy_named(name: str) -> Callable[..., Any]:
    def convert(*args: Any) -> Any:
        from .sympy_rounding import CLASSES

        return CLASSES[name](*args)

    return convert


def _sympy_fmod(a: Any, b: Any) -> Any:
    from .sympy_rounding import fmod

    return fmod(a, b)


def _mod(a: float, b: float) -> float:
    """Python's float ``%`` is NumPy's remainder (the sign of b); at b = 0 it raises, and the
    one-point path reruns the point on NumPy (nan)."""
    return a % b


def _fmod(a: float, b: float) -> float:
    """C's fmod (the sign of a) from ``%``, which Numba compiles and math.fmod it does not: for
    |a| and |b| the two are the same exact remainder. At b = 0 (or an infinite a) it raises
    in Python, and the one-point path reruns the point on NumPy (nan); Numba gives nan."""
    return math.copysign(abs(a) % abs(b), a)


def _sympy_op(name: str) -> Callable[..., Any]:
    def convert(*args: Any) -> Any:
        import sympy

        return getattr(sympy, name)(*args)

    return convert


#: The elementaries of this module: comparisons, selection, extrema, rounding.
KINKS: dict[str, Elementary] = {e.name: e for e in (
    _relation("less", np.less, "<", "Lt"),
    _relation("less_equal", np.less_equal, "<=", "Le"),
    _relation("greater", np.greater, ">", "Gt"),
    _relation("greater_equal", np.greater_equal, ">=", "Ge"),
    _relation("equal", np.equal, "==", "Eq"),
    _relation("not_equal", np.not_equal, "!=", "Ne"),
    Elementary("isnan", 1, (np.isnan,), "(1.0 if {0} != {0} else 0.0)", "(isnan({0}) ? 1.0 : 0.0)", _sympy_isnan),
    Elementary("isfinite", 1, (np.isfinite,), "(1.0 if abs({0}) < _inf else 0.0)", "(isfinite({0}) ? 1.0 : 0.0)",
               _sympy_isfinite),
    Elementary("select", 2, (_select_array,), _select, "((({0}) != 0.0) ? ({1}) : 0.0)", _sympy_select),
    Elementary("maximum", 2, (np.maximum,), _maximum, "((({0}) > ({1}) || ({0}) != ({0})) ? ({0}) : ({1}))",
               _sympy_op("Max")),
    Elementary("minimum", 2, (np.minimum,), _minimum, "((({0}) < ({1}) || ({0}) != ({0})) ? ({0}) : ({1}))",
               _sympy_op("Min")),
    Elementary("fmax", 2, (np.fmax,), np.fmax, "fmax({0}, {1})", _sympy_op("Max")),
    Elementary("fmin", 2, (np.fmin,), np.fmin, "fmin({0}, {1})", _sympy_op("Min")),
    Elementary("relu", 1, (functools.partial(np.maximum, 0.0),), _relu,
               "((({0}) >= 0.0 || ({0}) != ({0})) ? ({0}) : 0.0)", _sympy_relu),  # -0 at -0: np.maximum's tie
    Elementary("heaviside", 2, (np.heaviside,), _heaviside,
               "(({0}) != ({0}) ? ({0}) : ({0}) > 0.0 ? 1.0 : ({0}) < 0.0 ? 0.0 : ({1}))", _sympy_op("Heaviside")),
    Elementary("floor", 1, (np.floor,), np.floor, "floor({0})", _sympy_named("floor")),
    Elementary("ceil", 1, (np.ceil,), np.ceil, "ceil({0})", _sympy_named("ceiling"), ("ceiling",)),
    Elementary("rint", 1, (np.rint,), np.rint, "nearbyint({0})", _sympy_named("rint")),
    Elementary("trunc", 1, (np.trunc,), np.trunc, "trunc({0})", _sympy_named("trunc")),
    Elementary("mod", 2, (np.remainder,), _mod,
               "(fmod({0}, {1}) != 0.0 && ((fmod({0}, {1}) < 0.0) != (({1}) < 0.0)) ? fmod({0}, {1}) + ({1}) "
               ": fmod({0}, {1}) != 0.0 ? fmod({0}, {1}) : copysign(0.0, {1}))", _sympy_named("Mod"), ("remainder",)),
    Elementary("fmod", 2, (np.fmod,), _fmod, "fmod({0}, {1})", _sympy_fmod),
)}


class Kinded(Function):
    """A family of functions told apart by ``kind``: each one's name is its kind, and its
    spelling that entry of ``KINKS``."""

    kind: str

    @property
    def name(self) -> str:
        return self.kind

    @property
    def spelling(self) -> tuple[Step, ...]:
        return (KINKS[self.kind],)
