"""The built-in two-argument functions atan2, hypot and pow, written through the public
BinaryFn door: a value, the two partials as values and as Terms; and xlogy, the partial of a
power in its exponent."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.term import Term
from .base import BinaryFn, register
from .exponential import log


@dataclass(frozen=True, repr=False)
class Atan2(BinaryFn):
    """atan2(y, x): the angle of the point (x, y), in (−π, π]; ∂/∂y = x/(x² + y²),
    ∂/∂x = −y/(x² + y²)."""

    name = "atan2"
    numpy = np.arctan2
    ufuncs = (np.arctan2,)
    scalar = math.atan2

    def f(self, a: Any, b: Any) -> Any:
        return np.arctan2(a, b)

    def grad(self, a: Any, b: Any) -> tuple[Any, Any]:
        r2 = a * a + b * b
        return b / r2, -a / r2

    def fdiff(self, lhs: Term, rhs: Term, output: Term) -> tuple[Term, Term]:
        r2 = lhs * lhs + rhs * rhs
        return rhs / r2, -lhs / r2

    def to_sympy(self, a: Any, b: Any) -> Any:
        import sympy

        return sympy.atan2(a, b)


@dataclass(frozen=True, repr=False)
class Hypot(BinaryFn):
    """hypot(a, b) = √(a² + b²) without overflow; its partials a/out and b/out reuse the output."""

    name = "hypot"
    numpy = np.hypot
    ufuncs = (np.hypot,)
    scalar = math.hypot

    def f(self, a: Any, b: Any) -> Any:
        return np.hypot(a, b)

    def grad(self, a: Any, b: Any) -> tuple[Any, Any]:
        out = np.hypot(a, b)
        return a / out, b / out

    def fdiff(self, lhs: Term, rhs: Term, output: Term) -> tuple[Term, Term]:
        return lhs / output, rhs / output

    def to_sympy(self, a: Any, b: Any) -> Any:
        import sympy

        return sympy.sqrt(a**2 + b**2)


def _xlogy(p: float, a: float) -> float:
    """The scalar xlogy, for Numba (``np.log``: nan below 0, -inf at 0, as NumPy)."""
    if p == 0.0 and a == a:  # a == a: not nan
        return 0.0
    return p * np.log(a)


@dataclass(frozen=True, repr=False)
class Xlogy(BinaryFn):
    """xlogy(p, a) = p·log(a), and 0 where p is 0 and a is not nan (as ``scipy.special.xlogy``).

    It is ∂(a ** b)/∂b = out·log(a) with the limits IEEE arithmetic misses: where a power is 0
    because its base is 0 (0 ** b, b > 0) or inf (inf ** b, b < 0), it is 0 near that b, so every
    derivative in the exponent is 0 — 0·(∓inf) would say nan. Linear in p, so its derivative
    in p is again an xlogy: d xlogy(p, a) = xlogy(dp, a) + p·da/a, and the n-th derivative of
    0 ** b in b is n nested xlogy, 0 where b > 0. A base that is a positive constant needs none
    of this: there it is the plain product p·log(a), whose log(a) folds to a number.

    >>> from subgraph_ad import Tape
    >>> tape = Tape(); b = tape.var("b", 1.5)
    >>> (0.0 ** b).diff(b, 3).eval(), xlogy(0.0, 0.0)
    (0.0, 0.0)
    """

    name = "xlogy"
    scalar = staticmethod(_xlogy)

    def __call__(self, p: Any, a: Any) -> Any:
        if isinstance(p, Term) and not isinstance(a, Term):
            a = p._lift(a)
        if isinstance(a, Term) and a.node.op == "const" and 0.0 < a.node.payload < math.inf:
            return p * log(a)
        return super().__call__(p, a)

    def f(self, p: Any, a: Any) -> Any:
        value = p * np.log(a)
        return np.where((p == 0.0) & ~np.isnan(a), 0.0, value)[()]

    def grad(self, p: Any, a: Any) -> tuple[Any, Any]:
        # ∂/∂p is log(a), taken as 0 where p is 0 and log(a) infinite, as the value is: there
        # xlogy stays 0 (0 ** b near b > 0), where a tangent times log(0) would say nan
        log_a = np.log(a)
        return np.where((p == 0.0) & np.isinf(log_a), 0.0, log_a)[()], p / a

    def fdiff(self, lhs: Term, rhs: Term, output: Term) -> tuple[Term, Term]:
        return log(rhs), lhs / rhs

    def gen_graph(self, lhs: Term, rhs: Term, output: Term, dlhs: Term | None, drhs: Term | None) -> Term | None:
        via_p = None if dlhs is None else xlogy(dlhs, rhs)
        via_a = None if drhs is None else (lhs * drhs) / rhs
        if via_p is None:
            return via_a
        return via_p if via_a is None else via_p + via_a

    def to_sympy(self, p: Any, a: Any) -> Any:
        import sympy

        return p * sympy.log(a)


@dataclass(frozen=True, repr=False)
class Pow(BinaryFn):
    """pow(a, b) = a ** b (real powers: nan for a negative base and a fractional exponent). On
    Terms it appends the power operation itself, so ``pow(x, y)`` and ``x ** y`` are one node."""

    name = "pow"
    numpy = np.power
    ufuncs = (np.power,)

    def __call__(self, a: Any, b: Any) -> Any:
        if isinstance(a, Term) or isinstance(b, Term):
            return a**b
        return super().__call__(a, b)

    def f(self, a: Any, b: Any) -> Any:
        return np.power(a, b)

    def grad(self, a: Any, b: Any) -> tuple[Any, Any]:
        return b * a ** (b - 1.0), xlogy.f(np.power(a, b), a)

    def fdiff(self, lhs: Term, rhs: Term, output: Term) -> tuple[Term, Term]:
        return rhs * lhs ** (rhs - 1.0), xlogy(output, lhs)

    def to_sympy(self, a: Any, b: Any) -> Any:
        return a**b


atan2 = register(Atan2())
hypot = register(Hypot())
pow_ = register(Pow())
#: Not registered: it is what differentiating a power builds, not a function users name.
xlogy = Xlogy()
