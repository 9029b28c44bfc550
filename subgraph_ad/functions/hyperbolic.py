"""tanh, written through the public UnaryFn door."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.term import Term
from .base import UnaryFn, register


@dataclass(frozen=True, repr=False)
class Tanh(UnaryFn):
    """tanh; tanh′ = 1 − tanh², so its derivatives are polynomials in the output."""

    name = "tanh"
    numpy = np.tanh
    ufuncs = (np.tanh,)
    scalar = math.tanh

    def f(self, v: Any) -> Any:
        return np.tanh(v)

    def grad(self, v: Any) -> Any:
        return 1.0 - np.tanh(v) ** 2

    def fdiff(self, input: Term, output: Term) -> Term:
        return 1.0 - output * output

    def to_sympy(self, arg: Any) -> Any:
        import sympy

        return sympy.tanh(arg)


tanh = register(Tanh())
