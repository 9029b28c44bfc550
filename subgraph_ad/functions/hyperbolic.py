"""tanh, sinh and cosh as one cycling family, and the inverse hyperbolic functions, written
through the public UnaryFn door."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ..core.term import Term
from .base import Function, UnaryFn, register
from .elementary import Step
from .exponential import sqrt


@dataclass(frozen=True, repr=False)
class Sech2(UnaryFn):
    """tanh′ = sech² = 1/cosh², which is 1 − tanh² without its cancellation (0 for |u| > 19,
    where tanh rounds to ±1); its derivative runs through tanh (``through``): −2·tanh·sech², and
    so on, polynomials in tanh times sech²."""

    name = "sech2"
    spelling = ("sech2",)

    @property
    def through(self) -> tuple[Function, Callable[[Any], Any]]:
        return tanh, lambda g: 1.0 - g * g


@dataclass(frozen=True, repr=False)
class Tanh(UnaryFn):
    """tanh; tanh′ = sech² (``Sech2``), 1 − tanh² accurate in the tails."""

    name = "tanh"
    spelling = ("tanh",)

    def fdiff(self, input: Term, output: Term) -> Term:
        return sech2(input)


_NAMES = ("sinh", "cosh")


@dataclass(frozen=True, repr=False)
class SinhFn(UnaryFn):
    """sinh and cosh as one function with a state ``n`` (mod 2): each is the other's
    derivative, so every order of either is one node away."""

    n: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "n", self.n % 2)

    @property
    def name(self) -> str:
        return _NAMES[self.n]

    @property
    def spelling(self) -> tuple[Step, ...]:
        return (_NAMES[self.n],)

    def fdiff(self, input: Term, output: Term) -> Term:
        return SinhFn(self.n + 1)(input)


@dataclass(frozen=True, repr=False)
class Asinh(UnaryFn):
    """arsinh; asinh′ = 1/√(u² + 1)."""

    name = "asinh"
    spelling = ("asinh",)

    def fdiff(self, input: Term, output: Term) -> Term:
        return 1.0 / sqrt(input * input + 1.0)


@dataclass(frozen=True, repr=False)
class Acosh(UnaryFn):
    """arcosh on [1, ∞) (nan below); acosh′ = 1/√(u² − 1)."""

    name = "acosh"
    spelling = ("acosh",)

    def fdiff(self, input: Term, output: Term) -> Term:
        return 1.0 / sqrt(input * input - 1.0)


@dataclass(frozen=True, repr=False)
class Atanh(UnaryFn):
    """artanh on (−1, 1) (±inf at ±1, nan beyond); atanh′ = 1/(1 − u²)."""

    name = "atanh"
    spelling = ("atanh",)

    def fdiff(self, input: Term, output: Term) -> Term:
        return 1.0 / (1.0 - input * input)


tanh = register(Tanh())
sech2 = register(Sech2())  # tanh′; a name of its own, so that what `str` prints parses back
sinh = register(SinhFn(0))
cosh = register(SinhFn(1))
asinh = register(Asinh())
acosh = register(Acosh())
atanh = register(Atanh())
