"""sin and cos as one cycling family, and tan, written through the public UnaryFn door."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..core.term import Term
from .base import UnaryFn, register
from .exponential import sqrt


def _neg_sin(v: float) -> float:
    return -math.sin(v)


def _neg_cos(v: float) -> float:
    return -math.cos(v)


_NAMES = ("sin", "cos", "-sin", "-cos")
_VALUES: tuple[Callable[[Any], Any], ...] = (np.sin, np.cos, lambda v: -np.sin(v), lambda v: -np.cos(v))
_UFUNCS = ((np.sin,), (np.cos,), (np.sin, np.negative), (np.cos, np.negative))
_SCALARS = (math.sin, math.cos, _neg_sin, _neg_cos)


@dataclass(frozen=True, repr=False)
class SinFn(UnaryFn):
    """The family sin, cos, -sin, -cos as one function with an order state ``n`` (mod 4).

    Its derivative is the next member, so the 100th derivative of sin is one node away.
    """

    n: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "n", self.n % 4)

    @property
    def name(self) -> str:  # type: ignore[override]
        return _NAMES[self.n]

    @property
    def numpy(self) -> Any:  # type: ignore[override]
        return (np.sin, np.cos, None, None)[self.n]

    @property
    def ufuncs(self) -> tuple[Callable[..., Any], ...]:  # type: ignore[override]
        return _UFUNCS[self.n]

    @property
    def scalar(self) -> Callable[[float], float]:  # type: ignore[override]
        return _SCALARS[self.n]

    @property
    def negative_of(self) -> UnaryFn | None:  # type: ignore[override]
        return SinFn(self.n - 2) if self.n >= 2 else None

    def f(self, v: Any) -> Any:
        return _VALUES[self.n](v)

    def grad(self, v: Any) -> Any:
        return _VALUES[(self.n + 1) % 4](v)

    def fdiff(self, input: Term, output: Term) -> Term:
        return SinFn(self.n + 1)(input)

    def to_sympy(self, arg: Any) -> Any:
        import sympy

        base = sympy.sin(arg) if self.n % 2 == 0 else sympy.cos(arg)
        return -base if self.n >= 2 else base


@dataclass(frozen=True, repr=False)
class Tan(UnaryFn):
    """tan; tan′ = 1 + tan², written with the output node."""

    name = "tan"
    numpy = np.tan
    ufuncs = (np.tan,)
    scalar = math.tan

    def f(self, v: Any) -> Any:
        return np.tan(v)

    def grad(self, v: Any) -> Any:
        return 1.0 + np.tan(v) ** 2

    def fdiff(self, input: Term, output: Term) -> Term:
        return 1.0 + output * output

    def to_sympy(self, arg: Any) -> Any:
        import sympy

        return sympy.tan(arg)


def _sec(v: float) -> float:
    return 1.0 / math.cos(v)


def _csc(v: float) -> float:
    return 1.0 / math.sin(v)


def _cot(v: float) -> float:
    return 1.0 / math.tan(v)


@dataclass(frozen=True, repr=False)
class Sec(UnaryFn):
    """sec = 1/cos; sec′ = sec·tan."""

    name = "sec"
    ufuncs = (np.cos, np.reciprocal)
    scalar = staticmethod(_sec)

    def f(self, v: Any) -> Any:
        return 1.0 / np.cos(v)

    def grad(self, v: Any) -> Any:
        return np.tan(v) / np.cos(v)

    def fdiff(self, input: Term, output: Term) -> Term:
        return output * tan(input)

    def to_sympy(self, arg: Any) -> Any:
        import sympy

        return sympy.sec(arg)


@dataclass(frozen=True, repr=False)
class Csc(UnaryFn):
    """csc = 1/sin; csc′ = −csc·cot."""

    name = "csc"
    ufuncs = (np.sin, np.reciprocal)
    scalar = staticmethod(_csc)

    def f(self, v: Any) -> Any:
        return 1.0 / np.sin(v)

    def grad(self, v: Any) -> Any:
        return -1.0 / (np.sin(v) * np.tan(v))

    def fdiff(self, input: Term, output: Term) -> Term:
        return -(output * cot(input))

    def to_sympy(self, arg: Any) -> Any:
        import sympy

        return sympy.csc(arg)


@dataclass(frozen=True, repr=False)
class Cot(UnaryFn):
    """cot = 1/tan; cot′ = −(1 + cot²), a polynomial in the output."""

    name = "cot"
    ufuncs = (np.tan, np.reciprocal)
    scalar = staticmethod(_cot)

    def f(self, v: Any) -> Any:
        return 1.0 / np.tan(v)

    def grad(self, v: Any) -> Any:
        return -1.0 / np.sin(v) ** 2

    def fdiff(self, input: Term, output: Term) -> Term:
        return -1.0 - output * output

    def to_sympy(self, arg: Any) -> Any:
        import sympy

        return sympy.cot(arg)


@dataclass(frozen=True, repr=False)
class Asin(UnaryFn):
    """arcsin on [−1, 1] (nan outside); asin′ = 1/√(1 − u²)."""

    name = "asin"
    numpy = np.arcsin
    ufuncs = (np.arcsin,)
    scalar = np.arcsin

    def f(self, v: Any) -> Any:
        return np.arcsin(v)

    def grad(self, v: Any) -> Any:
        return 1.0 / np.sqrt(1.0 - v * v)

    def fdiff(self, input: Term, output: Term) -> Term:
        return 1.0 / sqrt(1.0 - input * input)

    def to_sympy(self, arg: Any) -> Any:
        import sympy

        return sympy.asin(arg)


@dataclass(frozen=True, repr=False)
class Acos(UnaryFn):
    """arccos on [−1, 1] (nan outside); acos′ = −1/√(1 − u²)."""

    name = "acos"
    numpy = np.arccos
    ufuncs = (np.arccos,)
    scalar = np.arccos

    def f(self, v: Any) -> Any:
        return np.arccos(v)

    def grad(self, v: Any) -> Any:
        return -1.0 / np.sqrt(1.0 - v * v)

    def fdiff(self, input: Term, output: Term) -> Term:
        return -1.0 / sqrt(1.0 - input * input)

    def to_sympy(self, arg: Any) -> Any:
        import sympy

        return sympy.acos(arg)


@dataclass(frozen=True, repr=False)
class Atan(UnaryFn):
    """arctan; atan′ = 1/(1 + u²)."""

    name = "atan"
    numpy = np.arctan
    ufuncs = (np.arctan,)
    scalar = math.atan

    def f(self, v: Any) -> Any:
        return np.arctan(v)

    def grad(self, v: Any) -> Any:
        return 1.0 / (1.0 + v * v)

    def fdiff(self, input: Term, output: Term) -> Term:
        return 1.0 / (1.0 + input * input)

    def to_sympy(self, arg: Any) -> Any:
        import sympy

        return sympy.atan(arg)


sin = register(SinFn(0))
cos = register(SinFn(1))
tan = register(Tan())
sec = register(Sec())
csc = register(Csc())
cot = register(Cot())
asin = register(Asin())
acos = register(Acos())
atan = register(Atan())
