"""The elementary operations every backend can spell, each declared once with its spelling on
every target.

A function says how it is computed as a chain of these (``spelling``): ``sec`` is cos then
reciprocal, ``-sin`` is sin then negation. The backends then lower any function without
knowing its class — NumPy as ufuncs applied in place, the one-point path and Numba as ``math``
calls on floats, C as an expression, SymPy as its functions — and the parser reads the other
names of each (``arctan``, ``ln``). A new target is one reading of this table; a new function
whose steps are here needs no backend edit at all.

>>> ELEMENTARY["atan"].aliases, ELEMENTARY["recip"].scalar.format("x")
(('arctan',), '(1.0 / x)')
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Union

import numpy as np


@dataclass(frozen=True)
class Elementary:
    """One elementary operation and how each target writes it.

    - ``numpy``: ufunc-like callables applied in turn, the first as ``u(*operands, out=buf)``
      and the rest as ``u(buf, out=buf)`` (an in-place chain, no temporaries), or one plain
      function of arrays (a single item that is not a ufunc: its result is copied into place);
    - ``scalar``: Python floats, for the one-point path and Numba: a ``math``/NumPy function or
      a plain Python function, or an expression template over ``{0}``, ``{1}``. A ``math``
      function raises where the IEEE result is not a finite real (the one-point path then reruns
      the point on NumPy scalars); Numba's ``math`` gives IEEE values;
    - ``c``: a C99/CUDA expression template (``exp({0})``), IEEE semantics, no fast math;
    - ``sympy``: the SymPy form, a callable of SymPy expressions;
    - ``aliases``: other names of it in text (NumPy's ``arctan``, mathematicians' ``ln``).
    """

    name: str
    arity: int
    numpy: tuple[Callable[..., Any], ...]
    scalar: Union[str, Callable[..., float]]
    c: str
    sympy: Callable[..., Any]
    aliases: tuple[str, ...] = field(default=())

    def array(self, *v: Any) -> Any:
        """The value on NumPy arrays or scalars (the chain of ``numpy`` applied in turn)."""
        first, *rest = self.numpy
        out = first(*v)
        for u in rest:
            out = u(out)
        return out


def _sympy(name: str) -> Callable[..., Any]:
    """SymPy's function of this name, looked up when first called (SymPy loads lazily)."""

    def convert(*args: Any) -> Any:
        import sympy

        return getattr(sympy, name)(*args)

    convert.__name__ = f"sympy_{name}"
    return convert


@functools.cache
def _scipy(name: str) -> Callable[..., Any] | None:
    """SciPy's ufunc of this name, or None without SciPy (looked up once, on first use)."""
    try:
        import scipy.special
    except ImportError:
        return None
    found: Callable[..., Any] = getattr(scipy.special, name)
    return found


def _special(name: str, scalar: Callable[[float], float]) -> Callable[..., Any]:
    """An array function for a ``math`` special function: SciPy's ufunc when installed
    (``pip install scipy``), else ``math`` point by point."""

    def array(v: Any) -> Any:
        found = _scipy(name)
        if found is not None:
            return found(v)
        if np.ndim(v) == 0:
            return np.float64(scalar(float(v)))
        return np.vectorize(scalar, otypes=[float])(v)

    array.__name__ = name
    return array


def _sigmoid(v: float) -> float:
    """The logistic function of a float, without overflow on either side."""
    if v >= 0.0:
        return 1.0 / (1.0 + math.exp(-v))
    e = math.exp(v)
    return e / (1.0 + e)


def _xlogy(p: float, a: float) -> float:
    """p·log(a), 0 where p is 0 and a is not nan (``np.log``: nan below 0, -inf at 0)."""
    if p == 0.0 and a == a:  # a == a: not nan
        return 0.0
    return float(p * np.log(a))


def _xlogy_array(p: Any, a: Any) -> Any:
    with np.errstate(all="ignore"):
        value = p * np.log(a)
    return np.where((p == 0.0) & ~np.isnan(a), 0.0, value)[()]


def _sympy_cbrt(a: Any) -> Any:
    import sympy

    return sympy.sign(a) * sympy.Abs(a) ** sympy.Rational(1, 3)  # the real root, any sign


def _sympy_sigmoid(a: Any) -> Any:
    import sympy

    return 1 / (1 + sympy.exp(-a))


def _sympy_sech2(a: Any) -> Any:
    """1 − tanh²: SymPy's own tanh′, so derivatives print and compare as SymPy writes them."""
    import sympy

    return 1 - sympy.tanh(a) ** 2


def _sympy_dsigmoid(a: Any) -> Any:
    """σ(1 − σ): SymPy's own σ′."""
    return _sympy_sigmoid(a) * (1 - _sympy_sigmoid(a))


def _same(name: str, numpy: Any, scalar: Any, aliases: tuple[str, ...] = (),
          sympy: Callable[..., Any] | None = None) -> Elementary:
    """A one-argument elementary that NumPy, ``math``, C and (unless given) SymPy all call
    ``name``."""
    return Elementary(name, 1, (numpy,), scalar, f"{name}({{0}})", sympy or _sympy(name), aliases)


def _sympy_log(base: int) -> Callable[..., Any]:
    def convert(a: Any) -> Any:
        import sympy

        return sympy.log(a, base)

    return convert


#: Every elementary operation by name (C99's name where C has it).
ELEMENTARY: dict[str, Elementary] = {e.name: e for e in (
    _same("exp", np.exp, math.exp),
    _same("expm1", np.expm1, math.expm1, sympy=lambda a: _sympy("exp")(a) - 1),
    # np.log on one point: math.log raises at 0 (the one-point path reruns on NumPy), Numba's is IEEE
    _same("log", np.log, math.log, ("ln",)),
    _same("log1p", np.log1p, math.log1p, sympy=lambda a: _sympy("log")(1 + a)),
    _same("log2", np.log2, math.log2, sympy=_sympy_log(2)),
    _same("log10", np.log10, math.log10, sympy=_sympy_log(10)),
    _same("sqrt", np.sqrt, math.sqrt),
    _same("sin", np.sin, math.sin),
    _same("cos", np.cos, math.cos),
    _same("tan", np.tan, math.tan),
    Elementary("sec", 1, (np.cos, np.reciprocal), "(1.0 / _math.cos({0}))", "(1.0 / cos({0}))", _sympy("sec")),
    Elementary("csc", 1, (np.sin, np.reciprocal), "(1.0 / _math.sin({0}))", "(1.0 / sin({0}))", _sympy("csc")),
    Elementary("cot", 1, (np.tan, np.reciprocal), "(1.0 / _math.tan({0}))", "(1.0 / tan({0}))", _sympy("cot")),
    _same("asin", np.arcsin, math.asin, ("arcsin",)),
    _same("acos", np.arccos, math.acos, ("arccos",)),
    _same("atan", np.arctan, math.atan, ("arctan",)),
    _same("sinh", np.sinh, math.sinh),
    _same("cosh", np.cosh, math.cosh),
    _same("tanh", np.tanh, math.tanh),
    _same("asinh", np.arcsinh, math.asinh, ("arcsinh",)),
    _same("acosh", np.arccosh, math.acosh, ("arccosh",)),
    _same("atanh", np.arctanh, math.atanh, ("arctanh",)),
    Elementary("cbrt", 1, (np.cbrt,), np.cbrt, "cbrt({0})", _sympy_cbrt),  # math.cbrt: 3 ulp off NumPy's
    Elementary("erf", 1, (_special("erf", math.erf),), math.erf, "erf({0})", _sympy("erf")),
    Elementary("erfc", 1, (_special("erfc", math.erfc),), math.erfc, "erfc({0})", _sympy("erfc")),
    Elementary("fabs", 1, (np.absolute,), math.fabs, "fabs({0})", _sympy("Abs"), ("abs", "absolute")),
    Elementary("sign", 1, (np.sign,), np.sign, "((({0}) > 0.0) - (({0}) < 0.0) + (({0}) != ({0}) ? ({0}) : 0.0))", _sympy("sign")),
    Elementary("neg", 1, (np.negative,), "(-{0})", "(-{0})", lambda a: -a),
    Elementary("recip", 1, (np.reciprocal,), "(1.0 / {0})", "(1.0 / {0})", lambda a: 1 / a),
    Elementary("sigmoid", 1, (np.negative, functools.partial(np.logaddexp, 0.0), np.negative, np.exp), _sigmoid,
               "(({0}) >= 0.0 ? 1.0 / (1.0 + exp(-({0}))) : exp({0}) / (1.0 + exp({0})))", _sympy_sigmoid),
    # 1/cosh² and 1/(2 + 2·cosh): tanh′ and σ′ to a few ulp where 1 − tanh² and σ(1 − σ) round
    # to 0 (|u| > 19, u > 37); the reciprocal before the square keeps subnormal results
    Elementary("sech2", 1, (np.cosh, np.reciprocal, np.square), "((1.0 / _math.cosh({0})) ** 2)",
               "pow(1.0 / cosh({0}), 2.0)", _sympy_sech2),
    Elementary("dsigmoid", 1, (np.cosh, functools.partial(np.add, 1.0), functools.partial(np.multiply, 2.0),
                               np.reciprocal),
               "(1.0 / (2.0 + 2.0 * _math.cosh({0})))", "(1.0 / (2.0 + 2.0 * cosh({0})))", _sympy_dsigmoid),
    Elementary("atan2", 2, (np.arctan2,), math.atan2, "atan2({0}, {1})", _sympy("atan2"), ("arctan2",)),
    Elementary("hypot", 2, (np.hypot,), math.hypot, "hypot({0}, {1})",
               lambda a, b: _sympy("sqrt")(a**2 + b**2)),
    Elementary("pow", 2, (np.power,), np.power, "pow({0}, {1})", lambda a, b: a**b, ("power",)),
    Elementary("xlogy", 2, (_xlogy_array,), _xlogy,
               "((({0}) == 0.0 && ({1}) == ({1})) ? 0.0 : ({0}) * log({1}))",
               lambda p, a: p * _sympy("log")(a)),
)}


#: A step of a spelling: an elementary, or its name in ``ELEMENTARY``.
Step = Union[Elementary, str]


def steps(spelling: tuple[Step, ...]) -> tuple[Elementary, ...]:
    """A spelling's steps as Elementary records (names looked up in ``ELEMENTARY``)."""
    return tuple(ELEMENTARY[s] if isinstance(s, str) else s for s in spelling)
