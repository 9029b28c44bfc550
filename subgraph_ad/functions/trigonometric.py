"""sin and cos as one cycling family, and tan, written through the public UnaryFn door."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..core.term import Term
from .base import UnaryFn, register


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


sin = register(SinFn(0))
cos = register(SinFn(1))
tan = register(Tan())
