"""exp, log and their relatives (log1p, expm1, log2, log10), sqrt, cbrt and the logistic sigmoid,
written through the public UnaryFn door: a spelling and a local derivative each.

Each local derivative reuses a node that exists already where it can (exp′ = exp, sqrt′ =
0.5 / sqrt), so high orders close on the function's own output. σ′ = σ(1 − σ) is the exception
in value: it rounds to 0 where σ rounds to 1 (u > 37), so σ′ is a function of its own whose
derivative runs through σ (``Function.through``), so its derivatives still close on σ.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable, cast

import numpy as np

from ..core.term import Term
from .base import Function, UnaryFn, register
from .elementary import ELEMENTARY, Step


@dataclass(frozen=True, repr=False)
class Exp(UnaryFn):
    """exp; its derivative is its own output, so every order reuses one node."""

    name = "exp"
    spelling = ("exp",)

    def fdiff(self, input: Term, output: Term) -> Term:
        return output


@dataclass(frozen=True, repr=False)
class Log(UnaryFn):
    """Natural log; nan for negative input, as in NumPy."""

    name = "log"
    spelling = ("log",)

    def fdiff(self, input: Term, output: Term) -> Term:
        return 1.0 / input


@dataclass(frozen=True, repr=False)
class Sqrt(UnaryFn):
    """sqrt; sqrt′ = 1/(2 sqrt), written with the output node."""

    name = "sqrt"
    spelling = ("sqrt",)
    power = 0.5

    def fdiff(self, input: Term, output: Term) -> Term:
        return 0.5 / output


@dataclass(frozen=True, repr=False)
class SigmoidSlope(UnaryFn):
    """σ′ = 1/(2 + 2·cosh u), which is σ − σ² without its cancellation: its derivative runs
    through σ (``through``), so every order closes on σ's nodes. Q is written as the completed
    square ¼ − (σ − ½)², like tanh′ = 1 − tanh² a constant minus a square: Taylor mode's
    coefficients past 0 are then one Cauchy square of (σ − ½)'s, which are σ's (the 10th
    derivative: 71 nodes, against 97 for σ − σ²), and the slope −2·(σ − ½) is a node of σ alone
    that the local partial and the adjoint share (``slope``)."""

    name = "dsigmoid"
    spelling = ("dsigmoid",)

    @property
    def through(self) -> tuple[Function, Callable[[Any], Any]]:
        return sigmoid, lambda g: 0.25 - (g - 0.5) * (g - 0.5)


@dataclass(frozen=True, repr=False)
class Sigmoid(UnaryFn):
    """The logistic function; σ′ is ``SigmoidSlope``, σ(1 − σ) accurate in the tails."""

    name = "sigmoid"
    spelling = ("sigmoid",)

    def fdiff(self, input: Term, output: Term) -> Term:
        return dsigmoid(input)


@dataclass(frozen=True, repr=False)
class Log1p(UnaryFn):
    """log(1 + u), accurate for small u; log1p′ = 1/(1 + u)."""

    name = "log1p"
    spelling = ("log1p",)

    def fdiff(self, input: Term, output: Term) -> Term:
        return 1.0 / (1.0 + input)


@dataclass(frozen=True, repr=False)
class Expm1(UnaryFn):
    """exp(u) − 1, accurate for small u; expm1′ = exp(u), not expm1 + 1: below u ≈ −37 the
    output rounds to −1 and expm1 + 1 to 0, where exp(u) is e^u to the last digit."""

    name = "expm1"
    spelling = ("expm1",)

    def fdiff(self, input: Term, output: Term) -> Term:
        return exp(input)


@dataclass(frozen=True, repr=False)
class LogBase(UnaryFn):
    """The logarithm to a fixed base (2 and 10 have elementaries of their own); its derivative
    is 1/(u·ln base)."""

    base: float = 2.0

    @property
    def name(self) -> str:
        return f"log{self.base:g}"

    @property
    def spelling(self) -> tuple[Step, ...]:
        return (self.name,) if self.name in ELEMENTARY else ()

    def f(self, v: Any) -> Any:
        return super().f(v) if self.spelling else np.log(v) / math.log(self.base)

    def fdiff(self, input: Term, output: Term) -> Term:
        return cast(Term, exact(input, lambda k: 1 / log(k(self.base))) / input)

    def to_sympy(self, arg: Any) -> Any:
        import sympy

        return sympy.log(arg, int(self.base) if float(self.base).is_integer() else self.base)


def exact(like: Any, number: Callable[[Callable[[Any], Any]], Any]) -> Any:
    """A constant of a derivative rule (1/ln 10, 2/√π), ``number(k)`` of its exact ingredients
    k(10), k(PI): on the tape of ``like`` where that is a Term (k makes them exact constants and
    folding keeps the result exact, so SymPy sees 1/log(10), not 0.434…), in floats where the
    rule runs on numbers.

    >>> from subgraph_ad import Tape
    >>> from subgraph_ad.core.ops import PI
    >>> tape = Tape(); x = tape.var("x")
    >>> exact(x, lambda k: 2 / sqrt(k(PI))).to_sympy(), round(exact(0.5, lambda k: 2 / sqrt(k(PI))), 6)
    (2/sqrt(pi), 1.128379)
    """
    return number(like._lift if isinstance(like, Term) else float)


@dataclass(frozen=True, repr=False)
class Cbrt(UnaryFn):
    """The real cube root (negative for negative u); cbrt′ = 1/(3·cbrt²), written with the
    output node."""

    name = "cbrt"
    spelling = ("cbrt",)

    def fdiff(self, input: Term, output: Term) -> Term:
        return Fraction(1, 3) / (output * output)


exp = register(Exp())
log = register(Log())
sqrt = register(Sqrt())
sigmoid = register(Sigmoid())
dsigmoid = register(SigmoidSlope())  # σ′; a name of its own, so that what `str` prints parses back
log1p = register(Log1p())
expm1 = register(Expm1())
log2 = register(LogBase(2.0))
log10 = register(LogBase(10.0))
cbrt = register(Cbrt())
