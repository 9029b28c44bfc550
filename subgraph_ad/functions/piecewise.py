"""abs and sign, written through the public UnaryFn door.

d|u| = sign(u)·du, and sign has a structurally zero derivative. At u = 0 both follow SymPy:
sign(0) = 0, so the derivative of |u| there is 0 (a subgradient), never nan.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.term import Term
from .base import UnaryFn, register


@dataclass(frozen=True, repr=False)
class Sign(UnaryFn):
    """sign: −1, 0 or 1 (nan for nan); its derivative is a structural zero."""

    name = "sign"
    numpy = np.sign
    ufuncs = (np.sign,)
    scalar = np.sign

    def f(self, v: Any) -> Any:
        return np.sign(v)

    def grad(self, v: Any) -> Any:
        return np.zeros_like(v) if np.ndim(v) else 0.0

    def fdiff(self, input: Term, output: Term) -> None:
        return None

    def to_sympy(self, arg: Any) -> Any:
        import sympy

        return sympy.sign(arg)


@dataclass(frozen=True, repr=False)
class Abs(UnaryFn):
    """|u|; abs′ = sign(u), 0 at u = 0."""

    name = "abs"
    numpy = np.absolute
    ufuncs = (np.absolute,)
    scalar = math.fabs

    def f(self, v: Any) -> Any:
        return np.absolute(v)

    def grad(self, v: Any) -> Any:
        return np.sign(v)

    def fdiff(self, input: Term, output: Term) -> Term:
        return sign(input)

    def to_sympy(self, arg: Any) -> Any:
        import sympy

        return sympy.Abs(arg)


sign = register(Sign())
abs_ = register(Abs())
