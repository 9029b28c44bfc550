"""``stop_gradient``: the identity with a structurally zero derivative."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.term import Term
from .base import UnaryFn
from .elementary import Elementary


@dataclass(frozen=True, repr=False)
class StopGradient(UnaryFn):
    """The identity with a structurally zero derivative (JAX's ``lax.stop_gradient``): a shift
    that only steadies the numbers, such as the max in logsumexp."""

    name = "stop_gradient"
    constant = True
    jumps = False
    spelling = (Elementary("identity", 1, (np.positive,), "(+{0})", "({0})", lambda a: a),)

    def fdiff(self, input: Term, output: Term) -> None:
        return None


#: Not registered: np.positive stays the identity, and text never names it.
stop_gradient = StopGradient()
