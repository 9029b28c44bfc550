"""Order, step size and time keeping of the Taylor step (Jorba & Zou 2005; Biscani & Izzo 2021).

- Order: p = ⌈−ln(tol)/2 + 1⌉ (20 at machine ε): the order that minimises the work per unit
  time for the step rule below, the number of orders growing with the digits asked for.
- Step: h = ρ·r·e^{−0.7/(p−1)}, ρ = min_{k ∈ {p−1, p}} (s / ‖y_k‖∞)^{1/k} the radius of
  convergence the last two coefficients estimate, s = max(atol, rtol·‖y_0‖∞)/tol (max(1, ‖y‖∞)
  when rtol = atol = tol: absolute error control where the state is small, relative where it
  is large), r = e^{−2}: the terms then fall as e^{−2k}, below tol past the order the
  tolerance chose (heyoka's rule, Jorba & Zou's h = ρ/e²); for an ``order`` lower than that,
  r = tol^{1/p}. e^{−0.7/(p−1)} is Jorba & Zou's safety factor.
- Time: the sum t0 + Σh kept as an unevaluated pair (hi, lo) (``pairs.py``), so that 10⁶ steps do
  not drift by 10⁶ roundings; the state likewise (y, y_lo), so that each step adds the
  rounding of its increment Σ_{k≥1} y_k·h^k, not of y.
"""

from __future__ import annotations

import math

import numpy as np

from .pairs import add_increment

#: The highest order the tolerance may choose (tol = 1e-50 would ask for 59).
MAX_ORDER = 60


def order_for(tol: float) -> int:
    """p = ⌈−ln(tol)/2 + 1⌉, at least 2 and at most ``MAX_ORDER``."""
    return int(min(MAX_ORDER, max(2, math.ceil(-math.log(tol) / 2.0 + 1.0))))


def factor(p: int, tol: float) -> float:
    """r·e^{−0.7/(p−1)}: the step's fraction of the radius of convergence."""
    return float(min(math.exp(-2.0), tol ** (1.0 / p)) * math.exp(-0.7 / (p - 1)))


def step_sizes(y: np.ndarray, rtol: float, atol: float) -> np.ndarray:
    """|h| per ensemble member from the state's coefficients y (n, p + 1, B); inf where both
    last coefficients are zero (the solution is a polynomial of lower degree)."""
    p = y.shape[1] - 1
    tol = min(rtol, atol)
    size = np.max(np.abs(y[:, 0]), axis=0)
    scale = np.maximum(atol / tol, rtol / tol * size)
    with np.errstate(divide="ignore", over="ignore", under="ignore"):
        rho = np.minimum((scale / np.max(np.abs(y[:, p - 1]), axis=0)) ** (1.0 / (p - 1)),
                         (scale / np.max(np.abs(y[:, p]), axis=0)) ** (1.0 / p))
    return rho * factor(p, tol)  # type: ignore[no-any-return]


def increment(coefficients: np.ndarray, h: np.ndarray, y: np.ndarray, low: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray]:
    """(y, low) + Σ_{k≥1} y_k·h^k as a pair, coefficients (n, p + 1, …): Horner's rule down to
    order 2 in floats, then ``add_increment``."""
    return add_increment(horner(coefficients[:, 2:], h), coefficients[:, 1], h, y, low)


def horner(coefficients: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """Σ_k c_k·τ^k over axis 1 of (n, p + 1, …), τ broadcast against the trailing axes."""
    acc = coefficients[:, -1].copy()
    for k in range(coefficients.shape[1] - 2, -1, -1):
        acc = acc * tau + coefficients[:, k]
    return np.asarray(acc)
