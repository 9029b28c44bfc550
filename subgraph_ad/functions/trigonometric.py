"""sin and cos as one cycling family, tan, sec, csc, cot and the inverse functions, written
through the public UnaryFn door."""

from __future__ import annotations

from dataclasses import dataclass

from ..core.term import Term
from .base import UnaryFn, register
from .elementary import Step
from .exponential import sqrt

_NAMES = ("sin", "cos", "-sin", "-cos")
_SPELLINGS: tuple[tuple[Step, ...], ...] = (("sin",), ("cos",), ("sin", "neg"), ("cos", "neg"))


@dataclass(frozen=True, repr=False)
class SinFn(UnaryFn):
    """The family sin, cos, -sin, -cos as one function with an order state ``n`` (mod 4).

    Its derivative is the next member, so the 100th derivative of sin is one node away.
    """

    n: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "n", self.n % 4)

    @property
    def name(self) -> str:
        return _NAMES[self.n]

    @property
    def spelling(self) -> tuple[Step, ...]:
        return _SPELLINGS[self.n]

    @property
    def negative_of(self) -> UnaryFn | None:
        return SinFn(self.n - 2) if self.n >= 2 else None

    def fdiff(self, input: Term, output: Term) -> Term:
        return SinFn(self.n + 1)(input)


@dataclass(frozen=True, repr=False)
class Tan(UnaryFn):
    """tan; tan′ = 1 + tan², written with the output node."""

    name = "tan"
    spelling = ("tan",)

    def fdiff(self, input: Term, output: Term) -> Term:
        return 1.0 + output * output


@dataclass(frozen=True, repr=False)
class Sec(UnaryFn):
    """sec = 1/cos; sec′ = sec·tan."""

    name = "sec"
    spelling = ("sec",)

    def fdiff(self, input: Term, output: Term) -> Term:
        return output * tan(input)


@dataclass(frozen=True, repr=False)
class Csc(UnaryFn):
    """csc = 1/sin; csc′ = −csc·cot."""

    name = "csc"
    spelling = ("csc",)

    def fdiff(self, input: Term, output: Term) -> Term:
        return -(output * cot(input))


@dataclass(frozen=True, repr=False)
class Cot(UnaryFn):
    """cot = 1/tan; cot′ = −(1 + cot²), a polynomial in the output."""

    name = "cot"
    spelling = ("cot",)

    def fdiff(self, input: Term, output: Term) -> Term:
        return -1.0 - output * output


@dataclass(frozen=True, repr=False)
class Asin(UnaryFn):
    """arcsin on [−1, 1] (nan outside); asin′ = 1/√(1 − u²)."""

    name = "asin"
    spelling = ("asin",)

    def fdiff(self, input: Term, output: Term) -> Term:
        return 1.0 / sqrt(1.0 - input * input)


@dataclass(frozen=True, repr=False)
class Acos(UnaryFn):
    """arccos on [−1, 1] (nan outside); acos′ = −1/√(1 − u²)."""

    name = "acos"
    spelling = ("acos",)

    def fdiff(self, input: Term, output: Term) -> Term:
        return -1.0 / sqrt(1.0 - input * input)


@dataclass(frozen=True, repr=False)
class Atan(UnaryFn):
    """arctan; atan′ = 1/(1 + u²)."""

    name = "atan"
    spelling = ("atan",)

    def fdiff(self, input: Term, output: Term) -> Term:
        return 1.0 / (1.0 + input * input)


sin = register(SinFn(0))
cos = register(SinFn(1))
tan = register(Tan())
sec = register(Sec())
csc = register(Csc())
cot = register(Cot())
asin = register(Asin())
acos = register(Acos())
atan = register(Atan())
