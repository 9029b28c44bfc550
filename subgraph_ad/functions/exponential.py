"""exp, log and their relatives (log1p, expm1, log2, log10), sqrt, cbrt and the logistic sigmoid,
written through the public UnaryFn door.

Each local derivative reuses a node that exists already where it can (exp′ = exp, sqrt′ =
0.5 / sqrt, σ′ = σ(1 − σ)), so high orders close on the function's own output.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import partial
from typing import Any

import numpy as np

from ..core.term import Term
from .base import UnaryFn, register


@dataclass(frozen=True, repr=False)
class Exp(UnaryFn):
    """exp; its derivative is its own output, so every order reuses one node."""

    name = "exp"
    numpy = np.exp
    ufuncs = (np.exp,)
    scalar = math.exp

    def f(self, v: Any) -> Any:
        return np.exp(v)

    def grad(self, v: Any) -> Any:
        return np.exp(v)

    def fdiff(self, input: Term, output: Term) -> Term:
        return output

    def to_sympy(self, arg: Any) -> Any:
        import sympy

        return sympy.exp(arg)


@dataclass(frozen=True, repr=False)
class Log(UnaryFn):
    """Natural log; nan for negative input, as in NumPy."""

    name = "log"
    numpy = np.log
    ufuncs = (np.log,)
    scalar = np.log  # IEEE: nan below 0, -inf at 0 (math.log raises)

    def f(self, v: Any) -> Any:
        return np.log(v)

    def grad(self, v: Any) -> Any:
        return 1.0 / v

    def fdiff(self, input: Term, output: Term) -> Term:
        return 1.0 / input

    def to_sympy(self, arg: Any) -> Any:
        import sympy

        return sympy.log(arg)


@dataclass(frozen=True, repr=False)
class Sqrt(UnaryFn):
    """sqrt; sqrt′ = 1/(2 sqrt), written with the output node."""

    name = "sqrt"
    power = 0.5
    numpy = np.sqrt
    ufuncs = (np.sqrt,)
    scalar = np.sqrt

    def f(self, v: Any) -> Any:
        return np.sqrt(v)

    def grad(self, v: Any) -> Any:
        return 0.5 / np.sqrt(v)

    def fdiff(self, input: Term, output: Term) -> Term:
        return 0.5 / output

    def to_sympy(self, arg: Any) -> Any:
        import sympy

        return sympy.sqrt(arg)


def _sigmoid(v: float) -> float:
    """The scalar sigmoid without overflow on either side."""
    if v >= 0.0:
        return 1.0 / (1.0 + math.exp(-v))
    e = math.exp(v)
    return e / (1.0 + e)


@dataclass(frozen=True, repr=False)
class Sigmoid(UnaryFn):
    """The logistic function; σ′ = σ(1 − σ), a polynomial in the output."""

    name = "sigmoid"
    # exp(-logaddexp(0, -v)) == 1 / (1 + exp(-v)) without overflow for large -v
    ufuncs = (np.negative, partial(np.logaddexp, 0.0), np.negative, np.exp)
    scalar = staticmethod(_sigmoid)

    def f(self, v: Any) -> Any:
        return np.exp(-np.logaddexp(0.0, -v))

    def grad(self, v: Any) -> Any:
        s = self.f(v)
        return s * (1.0 - s)

    def fdiff(self, input: Term, output: Term) -> Term:
        return output * (1.0 - output)

    def to_sympy(self, arg: Any) -> Any:
        import sympy

        return 1 / (1 + sympy.exp(-arg))


@dataclass(frozen=True, repr=False)
class Log1p(UnaryFn):
    """log(1 + u), accurate for small u; log1p′ = 1/(1 + u)."""

    name = "log1p"
    numpy = np.log1p
    ufuncs = (np.log1p,)
    scalar = np.log1p

    def f(self, v: Any) -> Any:
        return np.log1p(v)

    def grad(self, v: Any) -> Any:
        return 1.0 / (1.0 + v)

    def fdiff(self, input: Term, output: Term) -> Term:
        return 1.0 / (1.0 + input)

    def to_sympy(self, arg: Any) -> Any:
        import sympy

        return sympy.log(1 + arg)


@dataclass(frozen=True, repr=False)
class Expm1(UnaryFn):
    """exp(u) − 1, accurate for small u; expm1′ = expm1 + 1, closing on the output."""

    name = "expm1"
    numpy = np.expm1
    ufuncs = (np.expm1,)
    scalar = math.expm1

    def f(self, v: Any) -> Any:
        return np.expm1(v)

    def grad(self, v: Any) -> Any:
        return np.exp(v)

    def fdiff(self, input: Term, output: Term) -> Term:
        return output + 1.0

    def to_sympy(self, arg: Any) -> Any:
        import sympy

        return sympy.exp(arg) - 1


@dataclass(frozen=True, repr=False)
class LogBase(UnaryFn):
    """The logarithm to a fixed base (2 or 10); its derivative is 1/(u·ln base)."""

    base: float = 2.0

    @property
    def name(self) -> str:  # type: ignore[override]
        return f"log{self.base:g}"

    @property
    def numpy(self) -> Any:  # type: ignore[override]
        return {2.0: np.log2, 10.0: np.log10}.get(self.base)

    @property
    def ufuncs(self) -> tuple[Any, ...]:  # type: ignore[override]
        return (self.numpy,) if self.numpy is not None else ()

    @property
    def scalar(self) -> Any:  # type: ignore[override]
        return self.numpy

    def f(self, v: Any) -> Any:
        return np.log(v) / math.log(self.base)

    def grad(self, v: Any) -> Any:
        return 1.0 / (v * math.log(self.base))

    def fdiff(self, input: Term, output: Term) -> Term:
        return (1.0 / math.log(self.base)) / input

    def to_sympy(self, arg: Any) -> Any:
        import sympy

        return sympy.log(arg, int(self.base) if float(self.base).is_integer() else self.base)


@dataclass(frozen=True, repr=False)
class Cbrt(UnaryFn):
    """The real cube root (negative for negative u); cbrt′ = 1/(3·cbrt²), written with the
    output node."""

    name = "cbrt"
    numpy = np.cbrt
    ufuncs = (np.cbrt,)
    scalar = np.cbrt

    def f(self, v: Any) -> Any:
        return np.cbrt(v)

    def grad(self, v: Any) -> Any:
        return 1.0 / (3.0 * np.cbrt(v) ** 2)

    def fdiff(self, input: Term, output: Term) -> Term:
        return Fraction(1, 3) / (output * output)

    def to_sympy(self, arg: Any) -> Any:
        import sympy

        return sympy.sign(arg) * sympy.Abs(arg) ** sympy.Rational(1, 3)  # the real root, any sign


exp = register(Exp())
log = register(Log())
sqrt = register(Sqrt())
sigmoid = register(Sigmoid())
log1p = register(Log1p())
expm1 = register(Expm1())
log2 = register(LogBase(2.0))
log10 = register(LogBase(10.0))
cbrt = register(Cbrt())
