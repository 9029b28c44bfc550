"""The kinks: ``maximum``, ``minimum``, ``fmax``, ``fmin``, ``relu``, ``clip`` and ``heaviside``,
with JAX's derivatives at ties and kinks, and ``reduce_extremum`` (``np.max`` of an array of
Terms)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .base import BinaryFn, Function, UnaryFn, register
from .conditions import equal, greater, isnan, less
from .kink_elementaries import KINKS, Kinded


def _either(a: Any, b: Any) -> Any:
    """1 where either 0/1 value is 1 (on Terms and numbers alike)."""
    return a + b - a * b


@dataclass(frozen=True, repr=False)
class Extremum(Kinded, BinaryFn):
    """``maximum``, ``minimum`` (nan propagates; ties split the derivative ½/½) and ``fmax``,
    ``fmin`` (a nan operand is ignored; a tie gives all to b), with JAX's derivatives."""

    kind: str = "maximum"

    def fdiff(self, lhs: Any, rhs: Any, output: Any) -> tuple[Any, Any]:
        wins = greater if self.kind in ("maximum", "fmax") else less
        if self.kind in ("fmax", "fmin"):
            first = _either(wins(lhs, rhs), isnan(rhs))
            return first, 1.0 - first
        tie = 0.5 * equal(lhs, rhs)
        return wins(lhs, rhs) + tie, wins(rhs, lhs) + tie


maximum = register(Extremum("maximum"))
minimum = register(Extremum("minimum"))
fmax = register(Extremum("fmax"))
fmin = register(Extremum("fmin"))


@dataclass(frozen=True, repr=False)
class Relu(UnaryFn):
    """max(x, 0); relu′ = 1 for x > 0, else 0 (relu′(0) = 0, as JAX and PyTorch)."""

    name = "relu"
    spelling = (KINKS["relu"],)

    def fdiff(self, input: Any, output: Any) -> Any:
        return greater(input, 0.0)


relu = register(Relu())


def clip(x: Any, lo: Any = None, hi: Any = None) -> Any:
    """``np.clip``: minimum(maximum(x, lo), hi), as JAX defines it (so at x == lo or hi the
    derivative is ½); None leaves that side open."""
    if lo is not None:
        x = maximum(x, lo)
    return x if hi is None else minimum(x, hi)


@dataclass(frozen=True, repr=False)
class Heaviside(BinaryFn):
    """heaviside(x, h0): 0 for x < 0, h0 at 0, 1 for x > 0 (h0 = ½ by default, SymPy's
    Heaviside(x)); derivative 0 in x, and in h0 1 where x == 0."""

    name = "heaviside"
    spelling = (KINKS["heaviside"],)

    def __call__(self, x: Any, h0: Any = 0.5) -> Any:  # type: ignore[override]
        return super().__call__(x, h0)

    def fdiff(self, lhs: Any, rhs: Any, output: Any) -> tuple[None, Any]:
        return None, equal(lhs, 0.0)


heaviside = register(Heaviside())

def reduce_extremum(values: Any, fn: Function) -> Any:
    """``np.max``/``np.min`` of a sequence (an object array, raveled) as a chain of
    maximum/minimum nodes; numbers among them stay numbers until they meet a Term."""
    items = list(np.asarray(values, dtype=object).ravel())
    if not items:
        raise ValueError(f"{fn.name} of an empty array has no identity")
    out = items[0]
    for item in items[1:]:
        out = fn(out, item)
    return out
