"""abs and sign, written through the public UnaryFn door.

d|u| = sign(u)·du, and sign has a structurally zero derivative. At u = 0 both follow SymPy:
sign(0) = 0, so the derivative of |u| there is 0 (a subgradient), never nan.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.term import Term
from .base import UnaryFn, register


@dataclass(frozen=True, repr=False)
class Sign(UnaryFn):
    """sign: −1, 0 or 1 (nan for nan); its derivative is a structural zero."""

    name = "sign"
    constant = True
    spelling = ("sign",)

    def fdiff(self, input: Term, output: Term) -> None:
        return None


@dataclass(frozen=True, repr=False)
class Abs(UnaryFn):
    """|u|; abs′ = sign(u), 0 at u = 0."""

    name = "abs"
    spelling = ("fabs",)

    def fdiff(self, input: Term, output: Term) -> Term:
        return sign(input)


sign = register(Sign())
abs_ = register(Abs())
