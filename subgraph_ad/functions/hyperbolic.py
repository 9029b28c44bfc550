"""tanh, sinh and cosh as one cycling family, and the inverse hyperbolic functions, written
through the public UnaryFn door."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..core.term import Term
from .base import UnaryFn, register
from .exponential import sqrt


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


_NAMES = ("sinh", "cosh")
_UFUNCS: tuple[Any, Any] = (np.sinh, np.cosh)
_SCALARS: tuple[Callable[[float], float], ...] = (math.sinh, math.cosh)


@dataclass(frozen=True, repr=False)
class SinhFn(UnaryFn):
    """sinh and cosh as one function with a state ``n`` (mod 2): each is the other's
    derivative, so every order of either is one node away."""

    n: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "n", self.n % 2)

    @property
    def name(self) -> str:  # type: ignore[override]
        return _NAMES[self.n]

    @property
    def numpy(self) -> Any:  # type: ignore[override]
        return _UFUNCS[self.n]

    @property
    def ufuncs(self) -> tuple[Callable[..., Any], ...]:  # type: ignore[override]
        return (_UFUNCS[self.n],)

    @property
    def scalar(self) -> Callable[[float], float]:  # type: ignore[override]
        return _SCALARS[self.n]

    def f(self, v: Any) -> Any:
        return _UFUNCS[self.n](v)

    def grad(self, v: Any) -> Any:
        return _UFUNCS[1 - self.n](v)

    def fdiff(self, input: Term, output: Term) -> Term:
        return SinhFn(self.n + 1)(input)

    def to_sympy(self, arg: Any) -> Any:
        import sympy

        return (sympy.sinh, sympy.cosh)[self.n](arg)


@dataclass(frozen=True, repr=False)
class Asinh(UnaryFn):
    """arsinh; asinh′ = 1/√(u² + 1)."""

    name = "asinh"
    numpy = np.arcsinh
    ufuncs = (np.arcsinh,)
    scalar = math.asinh

    def f(self, v: Any) -> Any:
        return np.arcsinh(v)

    def grad(self, v: Any) -> Any:
        return 1.0 / np.sqrt(v * v + 1.0)

    def fdiff(self, input: Term, output: Term) -> Term:
        return 1.0 / sqrt(input * input + 1.0)

    def to_sympy(self, arg: Any) -> Any:
        import sympy

        return sympy.asinh(arg)


@dataclass(frozen=True, repr=False)
class Acosh(UnaryFn):
    """arcosh on [1, ∞) (nan below); acosh′ = 1/√(u² − 1)."""

    name = "acosh"
    numpy = np.arccosh
    ufuncs = (np.arccosh,)
    scalar = np.arccosh

    def f(self, v: Any) -> Any:
        return np.arccosh(v)

    def grad(self, v: Any) -> Any:
        return 1.0 / np.sqrt(v * v - 1.0)

    def fdiff(self, input: Term, output: Term) -> Term:
        return 1.0 / sqrt(input * input - 1.0)

    def to_sympy(self, arg: Any) -> Any:
        import sympy

        return sympy.acosh(arg)


@dataclass(frozen=True, repr=False)
class Atanh(UnaryFn):
    """artanh on (−1, 1) (±inf at ±1, nan beyond); atanh′ = 1/(1 − u²)."""

    name = "atanh"
    numpy = np.arctanh
    ufuncs = (np.arctanh,)
    scalar = np.arctanh

    def f(self, v: Any) -> Any:
        return np.arctanh(v)

    def grad(self, v: Any) -> Any:
        return 1.0 / (1.0 - v * v)

    def fdiff(self, input: Term, output: Term) -> Term:
        return 1.0 / (1.0 - input * input)

    def to_sympy(self, arg: Any) -> Any:
        import sympy

        return sympy.atanh(arg)


tanh = register(Tanh())
sinh = register(SinhFn(0))
cosh = register(SinhFn(1))
asinh = register(Asinh())
acosh = register(Acosh())
atanh = register(Atanh())
