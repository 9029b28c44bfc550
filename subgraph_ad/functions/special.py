"""The error functions erf and erfc, written through the public UnaryFn door.

Their derivative ±2/√π·exp(−u²) closes on exp, so every order stays small in Taylor mode.
Values come from SciPy's ufuncs when SciPy is installed (``pip install 'subgraph_ad[special]'``),
else from ``math.erf`` point by point; the Numba backend always uses ``math.erf``.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..core.term import Term
from .base import UnaryFn, register
from .exponential import exp

#: 2/√π, the derivative of erf at 0
TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


@functools.cache
def _ufunc(name: str) -> Callable[..., Any] | None:
    """SciPy's erf or erfc ufunc, or None without SciPy (looked up once, on first use)."""
    try:
        import scipy.special
    except ImportError:
        return None
    return getattr(scipy.special, name)


def _pointwise(scalar: Callable[[float], float], v: Any) -> Any:
    if np.ndim(v) == 0:
        return np.float64(scalar(float(v)))
    return np.vectorize(scalar, otypes=[float])(v)


@dataclass(frozen=True, repr=False)
class Erf(UnaryFn):
    """The error function, or its complement (``complement=True``): erf′ = 2/√π·exp(−u²),
    erfc′ = −erf′."""

    complement: bool = False

    @property
    def name(self) -> str:  # type: ignore[override]
        return "erfc" if self.complement else "erf"

    @property
    def ufuncs(self) -> tuple[Any, ...]:  # type: ignore[override]
        found = _ufunc(self.name)
        return (found,) if found is not None else ()

    @property
    def scalar(self) -> Callable[[float], float]:  # type: ignore[override]
        return math.erfc if self.complement else math.erf

    def f(self, v: Any) -> Any:
        found = _ufunc(self.name)
        return found(v) if found is not None else _pointwise(self.scalar, v)

    def grad(self, v: Any) -> Any:
        return (-TWO_OVER_SQRT_PI if self.complement else TWO_OVER_SQRT_PI) * np.exp(-v * v)

    def fdiff(self, input: Term, output: Term) -> Term:
        return (-TWO_OVER_SQRT_PI if self.complement else TWO_OVER_SQRT_PI) * exp(-(input * input))

    def to_sympy(self, arg: Any) -> Any:
        import sympy

        return (sympy.erfc if self.complement else sympy.erf)(arg)


erf = register(Erf())
erfc = register(Erf(complement=True))
