"""The error functions erf and erfc, written through the public UnaryFn door.

Their derivative ±2/√π·exp(−u²) closes on exp, so every order stays small in Taylor mode.
Values come from SciPy's ufuncs when SciPy is installed (``pip install scipy``),
else from ``math.erf`` point by point (the ``erf`` elementary); compiled code uses ``math.erf``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from ..core.ops import PI
from ..core.term import Term
from .base import UnaryFn, register
from .elementary import Step
from .exponential import exact, exp, sqrt


@dataclass(frozen=True, repr=False)
class Erf(UnaryFn):
    """The error function, or its complement (``complement=True``): erf′ = 2/√π·exp(−u²),
    erfc′ = −erf′."""

    complement: bool = False

    @property
    def name(self) -> str:
        return "erfc" if self.complement else "erf"

    @property
    def spelling(self) -> tuple[Step, ...]:
        return (self.name,)

    def fdiff(self, input: Term, output: Term) -> Term:
        return cast(Term, exact(input, lambda k: (-2 if self.complement else 2) / sqrt(k(PI))) * exp(-(input * input)))


erf = register(Erf())
erfc = register(Erf(complement=True))
