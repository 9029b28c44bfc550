"""The rounding functions ``floor``, ``ceil``, ``round`` and ``trunc`` (piecewise constant: a
structurally zero derivative) and the remainders ``mod`` and ``fmod``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.term import Term
from .base import BinaryFn, UnaryFn, register
from .elementary import Step
from .kink_elementaries import KINKS, Kinded


def _const(like: Any, value: float) -> Any:
    """The number ``value`` as a constant of ``like``'s tape, or as a number when the rule runs
    on numbers."""
    return like.tape.const(value) if isinstance(like, Term) else value


_ROUNDING = {"floor": "floor", "ceil": "ceil", "round": "rint", "trunc": "trunc"}


@dataclass(frozen=True, repr=False)
class Rounding(Kinded, UnaryFn):
    """floor, ceil, round (half to even) and trunc: piecewise constant, derivative a structural
    zero. ``round(x, decimals)`` rounds to that many decimals, as ``np.round``."""

    kind: str = "floor"
    constant = True

    @property
    def spelling(self) -> tuple[Step, ...]:
        return (KINKS[_ROUNDING[self.kind]],)

    def __call__(self, x: Any, decimals: int = 0) -> Any:  # type: ignore[override]
        if decimals:
            if self.kind != "round" or isinstance(decimals, bool) or not isinstance(decimals, (int, np.integer)):
                raise TypeError(f"{self.name}() takes decimals (an int) for round only, got {decimals!r}")
            scale = 10.0 ** int(decimals)
            return super().__call__(x * scale) / scale
        return super().__call__(x)

    def fdiff(self, input: Term, output: Term) -> None:
        return None


floor = register(Rounding("floor"))
ceil = register(Rounding("ceil"))
round_ = register(Rounding("round"))
trunc = register(Rounding("trunc"))


@dataclass(frozen=True, repr=False)
class Remainder(Kinded, BinaryFn):
    """mod(a, b) = a − b·floor(a/b), with the sign of b (NumPy's ``%``, ``np.mod``,
    ``np.remainder``), and fmod(a, b) = a − b·trunc(a/b), with the sign of a (C's fmod); the
    partials are 1 and −floor(a/b) (−trunc(a/b)), also at the jumps."""

    kind: str = "mod"

    def fdiff(self, lhs: Any, rhs: Any, output: Any) -> tuple[Any, Any]:
        quotient = (floor if self.kind == "mod" else trunc)(lhs / rhs)
        return _const(output, 1.0), -quotient


mod = register(Remainder("mod"))
fmod = register(Remainder("fmod"))
