"""The error functions erf and erfc, written through the public UnaryFn door.

Their derivative ±2/√π·exp(−u²) closes on exp, so every order stays small in Taylor mode.
Values come from SciPy's ufuncs when SciPy is installed (``pip install scipy``),
else from ``math.erf`` point by point (the ``erf`` elementary); compiled code uses ``math.erf``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..core.term import Term
from .base import UnaryFn, register
from .elementary import Step
from .exponential import exp

#: 2/√π, the derivative of erf at 0
TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


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
        return (-TWO_OVER_SQRT_PI if self.complement else TWO_OVER_SQRT_PI) * exp(-(input * input))


erf = register(Erf())
erfc = register(Erf(complement=True))
