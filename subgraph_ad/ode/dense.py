"""Dense output and root isolation on the step polynomials.

Each step leaves the solution's Taylor polynomial over [t, t + h]; between steps the solution
is that polynomial (Horner), so ``sol(t)`` and ``t_eval`` cost no extra steps and go forward
and backward alike. An event's g has a polynomial over the step from the same recurrence, and
its zeros are isolated on it: sign changes at Chebyshev points, and between them the zeros of
g′ (a g that dips below zero and back, or touches it, between two samples has a turning point
there), each refined by bisection to adjacent floats.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .stepper import horner

_EPS = np.finfo(float).eps


def _value(q: np.ndarray, s: float) -> float:
    acc = 0.0
    for c in q[::-1]:
        acc = acc * s + c
    return float(acc)


def _bisect(q: np.ndarray, a: float, b: float, fa: float) -> float:
    """A zero of q in [a, b] where q changes sign, to adjacent floats."""
    for _ in range(200):
        m = 0.5 * (a + b)
        if m <= a or m >= b:
            break
        fm = _value(q, m)
        if fm == 0.0:
            return m
        if (fm < 0.0) == (fa < 0.0):
            a, fa = m, fm
        else:
            b = m
    return b


def roots(q: np.ndarray, rtol: float) -> list[tuple[float, int]]:
    """The zeros s of q(s) = Σ q_k s^k in (0, 1], ascending, each with its direction: +1 rising,
    −1 falling, 0 touching (a double zero: |q| within rtol of its size there, at a turning
    point)."""
    m = max(16, 2 * len(q))
    s = 0.5 - 0.5 * np.cos(np.pi * np.arange(m + 1) / m)
    v = horner(q[None, :, None], s[None, :])[0]
    dq = q[1:] * np.arange(1, len(q))
    dv = horner(dq[None, :, None], s[None, :])[0] if len(dq) else np.zeros_like(s)
    found: list[tuple[float, int]] = []
    for i in range(m):
        a, b, fa, fb = float(s[i]), float(s[i + 1]), float(v[i]), float(v[i + 1])
        if fb == 0.0:
            found.append((b, int(np.sign(fb - fa)) if fa != 0.0 else 0))
        elif fa != 0.0 and (fa < 0.0) != (fb < 0.0):
            found.append((_bisect(q, a, b, fa), 1 if fb > fa else -1))
        elif fa != 0.0 and (dv[i] < 0.0) != (dv[i + 1] < 0.0) and dv[i] != 0.0:  # a turning point
            c = _bisect(dq, a, b, float(dv[i]))
            fc = _value(q, c)
            size = float(np.sum(np.abs(q) * c ** np.arange(len(q))))
            if (fc < 0.0) != (fa < 0.0) and fc != 0.0:  # down through zero and back up
                found.append((_bisect(q, a, c, fa), 1 if fc > fa else -1))
                found.append((_bisect(q, c, b, fc), 1 if fb > fc else -1))
            elif abs(fc) <= 8.0 * max(rtol, _EPS) * size:
                found.append((c, 0))
    return found


class OdeSolution:
    """The solution between t0 and the last step as the steps' Taylor polynomials:
    ``sol(t)`` for a number gives the state (n,) (or (n, B) for an ensemble), for an array of
    times (n, len(t)) (or (n, len(t), B)). Outside the steps the nearest polynomial is
    extrapolated, as scipy's ``OdeSolution`` does. With ``variational=True``,
    ``sol.sensitivity(t)`` gives ∂y(t)/∂y0 likewise, (n, n, …): the variational equations'
    polynomials are the steps' too."""

    def __init__(self, members: list[tuple[np.ndarray, np.ndarray, np.ndarray]], n: int, forward: bool,
                 ensemble: bool, variational: bool = False) -> None:
        # per member: step starts (hi, lo) and their coefficients (steps, n [+ n²], p + 1)
        self._members = members
        self._n = n
        self._forward = forward
        self._ensemble = ensemble
        self._variational = variational

    def _one(self, member: tuple[np.ndarray, np.ndarray, np.ndarray], t: np.ndarray) -> np.ndarray:
        hi, lo, coefficients = member
        if not len(hi):
            return np.full((coefficients.shape[1], t.size), math.nan)
        key = hi if self._forward else -hi
        at = np.clip(np.searchsorted(key, t if self._forward else -t, side="right") - 1, 0, len(hi) - 1)
        tau = (t - hi[at]) - lo[at]
        return horner(np.moveaxis(coefficients[at], 0, -1), tau)

    def _rows(self, t: Any, rows: slice) -> np.ndarray:
        times = np.asarray(t, dtype=float)
        flat = times.reshape(-1)
        out = np.stack([self._one(member, flat)[rows] for member in self._members], axis=-1)
        if not self._ensemble:
            out = out[..., 0]
        return out[:, 0] if times.ndim == 0 else out

    def __call__(self, t: Any) -> np.ndarray:
        return self._rows(t, slice(0, self._n))

    def sensitivity(self, t: Any) -> np.ndarray:
        """∂y(t)/∂y0, (n, n) at a number, (n, n, len(t)) at an array of times (B last for an ensemble)."""
        if not self._variational:
            raise ValueError("OdeSolution.sensitivity: the integration had variational=False; pass variational=True "
                             "to taylor_integrate")
        out = self._rows(t, slice(self._n, None))
        return out.reshape((self._n, self._n) + out.shape[1:])
