"""The built-in two-argument functions atan2, hypot and pow, written through the public
BinaryFn door: a value, the two partials as values and as Terms."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.term import Term
from .base import BinaryFn, register
from .exponential import log


@dataclass(frozen=True, repr=False)
class Atan2(BinaryFn):
    """atan2(y, x): the angle of the point (x, y), in (−π, π]; ∂/∂y = x/(x² + y²),
    ∂/∂x = −y/(x² + y²)."""

    name = "atan2"
    numpy = np.arctan2
    ufuncs = (np.arctan2,)
    scalar = math.atan2

    def f(self, a: Any, b: Any) -> Any:
        return np.arctan2(a, b)

    def grad(self, a: Any, b: Any) -> tuple[Any, Any]:
        r2 = a * a + b * b
        return b / r2, -a / r2

    def fdiff(self, lhs: Term, rhs: Term, output: Term) -> tuple[Term, Term]:
        r2 = lhs * lhs + rhs * rhs
        return rhs / r2, -lhs / r2

    def to_sympy(self, a: Any, b: Any) -> Any:
        import sympy

        return sympy.atan2(a, b)


@dataclass(frozen=True, repr=False)
class Hypot(BinaryFn):
    """hypot(a, b) = √(a² + b²) without overflow; its partials a/out and b/out reuse the output."""

    name = "hypot"
    numpy = np.hypot
    ufuncs = (np.hypot,)
    scalar = math.hypot

    def f(self, a: Any, b: Any) -> Any:
        return np.hypot(a, b)

    def grad(self, a: Any, b: Any) -> tuple[Any, Any]:
        out = np.hypot(a, b)
        return a / out, b / out

    def fdiff(self, lhs: Term, rhs: Term, output: Term) -> tuple[Term, Term]:
        return lhs / output, rhs / output

    def to_sympy(self, a: Any, b: Any) -> Any:
        import sympy

        return sympy.sqrt(a**2 + b**2)


@dataclass(frozen=True, repr=False)
class Pow(BinaryFn):
    """pow(a, b) = a ** b (real powers: nan for a negative base and a fractional exponent). On
    Terms it appends the power operation itself, so ``pow(x, y)`` and ``x ** y`` are one node."""

    name = "pow"
    numpy = np.power
    ufuncs = (np.power,)

    def __call__(self, a: Any, b: Any) -> Any:
        if isinstance(a, Term) or isinstance(b, Term):
            return a**b
        return super().__call__(a, b)

    def f(self, a: Any, b: Any) -> Any:
        return np.power(a, b)

    def grad(self, a: Any, b: Any) -> tuple[Any, Any]:
        return b * a ** (b - 1.0), np.power(a, b) * np.log(a)

    def fdiff(self, lhs: Term, rhs: Term, output: Term) -> tuple[Term, Term]:
        return rhs * lhs ** (rhs - 1.0), output * log(lhs)

    def to_sympy(self, a: Any, b: Any) -> Any:
        return a**b


atan2 = register(Atan2())
hypot = register(Hypot())
pow_ = register(Pow())
