"""The built-in two-argument functions atan2, hypot and pow, written through the public
BinaryFn door (a spelling and the two partials as Terms), and xlogy, the partial of a power in
its exponent."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..core.term import Term
from .base import BinaryFn, register
from .exponential import log
from .stop_gradient import stop_gradient
from .piecewise import abs_, sign


@dataclass(frozen=True, repr=False)
class Atan2(BinaryFn):
    """atan2(y, x): the angle of the point (x, y), in (−π, π]; ∂/∂y = x/(x² + y²),
    ∂/∂x = −y/(x² + y²), computed on the point scaled by w = 1/hypot(x, y): (x·w)/r²·w with
    r² = (x·w)² + (y·w)² ≈ 1, so the partials survive |x|, |y| beyond 1e±154, where x² + y²
    overflows or underflows. w is a ``stop_gradient``: it cancels from the quotient, so the
    partials' derivatives are those of the rational function, and Taylor mode carries no
    series of hypot."""

    name = "atan2"
    spelling = ("atan2",)

    def fdiff(self, lhs: Term, rhs: Term, output: Term) -> tuple[Term, Term]:
        w = stop_gradient(1.0 / hypot(lhs, rhs))
        y, x = lhs * w, rhs * w
        q = w / (y * y + x * x)
        return x * q, -(y * q)


@dataclass(frozen=True, repr=False)
class Hypot(BinaryFn):
    """hypot(a, b) = √(a² + b²) without overflow; its partials a/out and b/out reuse the output."""

    name = "hypot"
    spelling = ("hypot",)

    def fdiff(self, lhs: Term, rhs: Term, output: Term) -> tuple[Term, Term]:
        return lhs / output, rhs / output


@dataclass(frozen=True, repr=False)
class Xlogy(BinaryFn):
    """xlogy(p, a) = p·log(a), and 0 where p is 0 and a is not nan (as ``scipy.special.xlogy``).

    It is ∂(a ** b)/∂b = out·log(a) with the limits IEEE arithmetic misses: where a power is 0
    because its base is 0 (0 ** b, b > 0) or inf (inf ** b, b < 0), it is 0 near that b, so every
    derivative in the exponent is 0 — 0·(∓inf) would say nan. It is linear in p, which the
    forward engines read from ``linear``: the chain rule in p is xlogy(dp, a), 0 wherever dp is,
    so the n-th derivative of 0 ** b in b is n nested xlogy, 0 where b > 0; its partial in p
    (for reverse sweeps) is log(a) where p is not 0, and 0 where it is. A base that is a positive
    constant needs none of this: there it is the plain product p·log(a), whose log(a) folds to a
    number.

    >>> from subgraph_ad import Tape
    >>> tape = Tape(); b = tape.var("b", 1.5)
    >>> (0.0 ** b).diff(b, 3).eval(), xlogy(0.0, 0.0)
    (0.0, 0.0)
    """

    name = "xlogy"
    spelling = ("xlogy",)
    linear = (True, False)

    def __call__(self, *args: Any) -> Any:
        if len(args) != 2:
            return super().__call__(*args)  # the arity error
        p, a = args
        if isinstance(p, Term) and not isinstance(a, Term):
            a = p._lift(a)
        if isinstance(a, Term) and a.node.op == "const" and 0.0 < a.node.payload < math.inf:
            return p * log(a)
        return super().__call__(p, a)

    def fdiff(self, lhs: Term, rhs: Term, output: Term) -> tuple[Term, Term]:
        # ∂/∂p is log(a), taken as 0 where p is 0, as the value is (the strong zero): xlogy of
        # |sign(p)|, which is 1 or 0, so a reverse sweep through 0 ** b never meets log(0)
        return xlogy(abs_(sign(lhs)), rhs), lhs / rhs


@dataclass(frozen=True, repr=False)
class Pow(BinaryFn):
    """pow(a, b) = a ** b (real powers: nan for a negative base and a fractional exponent). On
    Terms it appends the power operation itself, so ``pow(x, y)`` and ``x ** y`` are one node,
    and its partials here are the power's in every engine."""

    name = "pow"
    spelling = ("pow",)

    def __call__(self, *args: Any) -> Any:
        if len(args) == 2 and any(isinstance(a, Term) for a in args):
            a, b = args
            return a**b
        return super().__call__(*args)

    def fdiff(self, lhs: Term, rhs: Term, output: Term) -> tuple[Term, Term]:
        return power_partial(0, lhs, rhs, output), power_partial(1, lhs, rhs, output)


def power_partial(k: int, a: Any, b: Any, out: Any) -> Any:
    """∂(a ** b)/∂a (k = 0) or ∂(a ** b)/∂b (k = 1), stated once for the pow function and the
    power op (whose engines ask for one partial at a time: a constant exponent has none). On
    Terms or numbers alike. b·a**(b−1) stays valid for a <= 0; the exponent's out·log(a) is
    xlogy(out, a), 0 where the power is 0 at a base of 0 (0 ** b, b > 0), not 0·(−inf)."""
    return b * a ** (b - 1.0) if k == 0 else xlogy(out, a)


atan2 = register(Atan2())
hypot = register(Hypot())
pow_ = register(Pow())
#: Not registered: it is what differentiating a power builds, not a function users name.
xlogy = Xlogy()
