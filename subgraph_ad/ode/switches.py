"""Where a condition switches inside a step.

A condition (a comparison, sign, floor, a gate such as relu′ = (u > 0): ``System.switches``)
is constant to differentiation, so a step's series holds its value at the step's start: past
a switch the polynomial follows the wrong branch. A step whose end sees another value of some
condition is therefore cut at the switch, found by bisection on the step polynomial (the
state there as the step would leave it, then every row's value from the value table: generic
for every such function), to the first float where the new value holds; the next step starts
there, its series on the new branch, the state continuous.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from .pairs import advance
from .stepper import increment
from .system import System

#: Fills coefficient 0 of every row of c (rows, 1, …) from the states' and t's.
Values = Callable[[System, np.ndarray], None]
#: Switches in a row, each within the resolution of t, that make a chattering condition.
CHATTER = 100


def conditions(system: System, values: Values, y: np.ndarray, t: np.ndarray) -> np.ndarray:
    """The condition rows' values (switches, …) at the states y (n, …) and times t (…)."""
    c = np.zeros((system.rows, 1) + np.shape(t))
    c[system.states, 0] = y
    if system.time >= 0:
        c[system.time, 0] = t
    with np.errstate(all="ignore"):
        values(system, c)
    return np.asarray(c[system.switches, 0])


def changed(before: np.ndarray, after: np.ndarray) -> np.ndarray:
    """Per member (the trailing axes), whether some condition differs (nan equals nan)."""
    differs = (before != after) & ~(np.isnan(before) & np.isnan(after))
    return np.asarray(np.any(differs, axis=0))


def at_offset(system: System, values: Values, coefficients: np.ndarray, hi: float, lo: float, y: np.ndarray,
              low: np.ndarray, tau: float) -> np.ndarray:
    """The conditions τ into a step from the time pair (hi, lo) and the state pair (y, low) of
    one member, coefficients (n, p + 1): at the state and time the step to τ would leave, so
    that the next step's values are these."""
    with np.errstate(all="ignore"):
        y_tau, _ = increment(coefficients, np.array(tau), y, low)
    t_hi, t_lo = advance(np.array(hi), np.array(lo), np.array(tau))
    return conditions(system, values, y_tau, t_hi + t_lo)


def locate(at: Callable[[float], np.ndarray], before: np.ndarray, h: float) -> float:
    """The first float offset τ in (0, h] (h < 0: backward) where the conditions ``at(τ)``
    differ from ``before``, given that they differ at h: bisection on the floats' bit
    patterns (ordered like their values), so at most 64 evaluations, and τ ≠ 0: a step makes
    progress."""
    sign = 1.0 if h > 0.0 else -1.0
    lo, hi = 0, int(np.float64(abs(h)).view(np.int64))
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if changed(before, at(sign * float(np.int64(mid).view(np.float64)))):
            hi = mid
        else:
            lo = mid
    return sign * float(np.int64(hi).view(np.float64))
