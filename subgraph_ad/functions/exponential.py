"""exp, log, sqrt and the logistic sigmoid, written through the public UnaryFn door.

Each local derivative reuses a node that exists already where it can (exp′ = exp, sqrt′ =
0.5 / sqrt, σ′ = σ(1 − σ)), so high orders close on the function's own output.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
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


exp = register(Exp())
log = register(Log())
sqrt = register(Sqrt())
sigmoid = register(Sigmoid())
