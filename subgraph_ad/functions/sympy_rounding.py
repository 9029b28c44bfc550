"""SymPy functions for the rounding functions (``rounding``): NumPy's rint (half to even) and
trunc, which SymPy lacks, and SymPy's floor, ceiling and Mod with the derivatives SymPy leaves
unevaluated (0, and 1 and −floor(a/b)), so a SymPy derivative of them is a number at a point, as
here. Integer-valued where they jump.

A module of its own because it imports SymPy, which ``kink_elementaries`` loads only when a
SymPy form is asked for; and at module level because a budgeted SymPy check sends SymPy's
derivative back from a worker process by pickling it, and pickle finds a class by its module
and name.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import sympy


class rint(sympy.Function):  # noqa: N801 - SymPy's lower-case function names
    """Round half to even (NumPy's rint)."""

    _imp_ = staticmethod(lambda v: np.rint(np.asarray(v, dtype=float))[()])  # for sympy.lambdify, any modules

    @classmethod
    def eval(cls, arg: Any) -> Any:
        if arg.is_Number:
            return sympy.Integer(round(sympy.Rational(arg))) if arg.is_finite else arg
        return None

    def fdiff(self, argindex: int = 1) -> Any:
        return sympy.S.Zero


class trunc(sympy.Function):  # noqa: N801
    """Round toward zero."""

    _imp_ = staticmethod(lambda v: np.trunc(np.asarray(v, dtype=float))[()])

    @classmethod
    def eval(cls, arg: Any) -> Any:
        if arg.is_Number:
            return sympy.Integer(int(sympy.Rational(arg))) if arg.is_finite else arg
        return None

    def fdiff(self, argindex: int = 1) -> Any:
        return sympy.S.Zero


class floor(sympy.floor):  # noqa: N801
    """SymPy's floor, derivative 0."""

    def fdiff(self, argindex: int = 1) -> Any:
        return sympy.S.Zero


class ceiling(sympy.ceiling):  # noqa: N801
    """SymPy's ceiling, derivative 0."""

    def fdiff(self, argindex: int = 1) -> Any:
        return sympy.S.Zero


class Mod(sympy.Mod):
    """SymPy's Mod (the sign of the divisor, as NumPy's mod), partials 1 and −floor(a/b)."""

    def fdiff(self, argindex: int = 1) -> Any:
        a, b = self.args
        return sympy.S.One if argindex == 1 else -floor(a / b)


def fmod(a: Any, b: Any) -> Any:
    """C's fmod (the sign of a): a − b·trunc(a/b)."""
    return a - b * trunc(a / b)


#: The classes by the name the elementaries of ``kink_elementaries`` ask for.
CLASSES: dict[str, Any] = {"rint": rint, "trunc": trunc, "floor": floor, "ceiling": ceiling, "Mod": Mod}
