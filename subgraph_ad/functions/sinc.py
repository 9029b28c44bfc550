"""NumPy's normalized sinc(x) = sin(πx)/(πx) and its derivatives, through the UnaryFn door.
sinc′ would be (cos(πx) − sinc(x))/x, 0/0 at x = 0, so sinc's derivatives are functions of
their own (``SincDerivative(k)``), evaluated from sinc(x) = ∫₀¹ cos(πxt) dt by a recurrence
that is stable upward for π|x| >= k and downward below: finite, and right, at 0 and to a few
ulps of their size everywhere, at every order; on one float (what the Numba backend compiles
and the one-point code runs) by the same recurrence, ``special_scalar.sinc_derivative_at``.

>>> import subgraph_ad as sad
>>> tape = sad.Tape(); x = tape.var("x", 0.0)
>>> round(sad.sinc(x).diff(x, 2).eval(), 12), round(-3.141592653589793 ** 2 / 3, 12)
(-3.289868133696, -3.289868133696)
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from .base import UnaryFn, register
from .elementary import Elementary, Step
from .special_scalar import sinc_derivative_at


def _sympy_sinc(a: Any) -> Any:
    import sympy

    return sympy.sinc(sympy.pi * a)  # SymPy's sinc is sin(x)/x; NumPy's is sin(πx)/(πx)


SINC = Elementary("sinc", 1, (np.sinc,), np.sinc,
                  "((({0}) == 0.0) ? 1.0 : sin(3.141592653589793 * ({0})) / (3.141592653589793 * ({0})))",
                  _sympy_sinc)


#: Steps of the downward recurrence past k + u: each damps the error of its zero start by
#: u/j < 1, and these many take it below 1e-20 relative for every k (at u just below k, the
#: slowest case, the damping over the first k steps is e^{-k(2 ln 2 - 1)} and then 2^{-40}).
SINC_EXTRA_STEPS = 40


def _sinc_moments(x: np.ndarray, k: int) -> np.ndarray:
    """Iₖ(u) = ∫₀¹ tᵏ e^{iut} dt at u = π|x| (x > 0), so that the k-th derivative of sin(u)/u =
    ∫₀¹ cos(ut) dt is Re(iᵏ Iₖ). Integrating by parts, iu·Iⱼ = e^{iu} − j·Iⱼ₋₁: upward from
    I₀ = (e^{iu} − 1)/(iu) where u >= k (each step multiplies an error by j/u <= 1), downward
    from I_N = 0 where u < k (each by u/j < 1). Neither cancels: every term is at most the
    size of the result, so the error is a few ulps of |Iₖ| at every k and u, with no switch
    whose two sides disagree. e^{iu} comes from x reduced mod 2 exactly, so a large x does not
    lose u·eps to the rounding of πx."""
    u = np.pi * x
    r = np.fmod(x, 2.0)  # exact: sin(πx) and cos(πx) without the rounding of πx
    e = np.cos(np.pi * r) + 1j * np.sin(np.pi * r)
    moments = np.empty(x.shape, dtype=complex)
    up = ~(u < k)  # nan and inf too: e is nan there, and so is the value (as sinc's own)
    if up.any():
        uu, eu = u[up], e[up]
        moment = (eu - 1.0) / (1j * uu)
        for j in range(1, k + 1):
            moment = (eu - j * moment) / (1j * uu)
        moments[up] = moment
    down = ~up
    if down.any():
        ud, ed = u[down], e[down]
        moment = np.zeros(ud.shape, dtype=complex)
        for j in range(k + int(np.ceil(ud.max())) + SINC_EXTRA_STEPS, k, -1):
            moment = (ed - 1j * ud * moment) / j  # I_{j-1} from I_j
        moments[down] = moment
    return moments


def sinc_derivative(v: Any, k: int) -> Any:
    """The k-th derivative of NumPy's sinc(x) = sin(πx)/(πx) at ``v``: πᵏ·Re(iᵏ Iₖ(π|x|)) times
    (−1)ᵏ for x < 0 (sinc is even), the moments by a stable recurrence (``_sinc_moments``).
    A few ulps of the oscillation's size πᵏ·min(1/(k+1), 2/(π|x|)) at every order and x."""
    x = np.asarray(v, dtype=float)
    flat = np.atleast_1d(x)
    with np.errstate(invalid="ignore"):
        moments = _sinc_moments(np.abs(flat), k)
    turned = moments * 1j ** k
    out = turned.real * np.pi ** k * np.where(flat < 0, (-1.0) ** k, 1.0)
    return out.reshape(x.shape)[()] if x.ndim else np.float64(out[0])


@functools.lru_cache(maxsize=None)
def _sinc_derivative_elementary(k: int) -> Elementary:
    """sinc⁽ᵏ⁾ as one elementary: NumPy's recurrence on arrays, the same on one float
    (``special_scalar``); C99 has no form of it (a C or CUDA program says so)."""

    def to_sympy(arg: Any) -> Any:
        import sympy

        t = sympy.Dummy("t")
        return sympy.diff(sympy.sinc(sympy.pi * t), t, k).subs(t, arg)

    def array(v: Any) -> Any:
        return sinc_derivative(v, k)

    array.__name__ = f"sinc_d{k}"
    return Elementary(f"sinc_d{k}", 1, (array,), sinc_derivative_at(k, SINC_EXTRA_STEPS), f"sinc_d{k}({{0}})", to_sympy)


@dataclass(frozen=True, repr=False)
class SincDerivative(UnaryFn):
    """The k-th derivative of sinc as a function of its own (k >= 1), finite at 0 to every
    order; its derivative is the next one."""

    k: int = 1

    @property
    def name(self) -> str:
        return f"sinc_d{self.k}"

    @property
    def spelling(self) -> tuple[Step, ...]:
        return (_sinc_derivative_elementary(self.k),)

    def fdiff(self, input: Any, output: Any) -> Any:
        return SincDerivative(self.k + 1)(input)


@dataclass(frozen=True, repr=False)
class Sinc(UnaryFn):
    """NumPy's normalized sinc(x) = sin(πx)/(πx), sinc(0) = 1; its derivatives are
    ``SincDerivative`` nodes."""

    name = "sinc"
    spelling = (SINC,)

    def fdiff(self, input: Any, output: Any) -> Any:
        return SincDerivative(1)(input)


sinc = register(Sinc())


__all__ = ["SINC_EXTRA_STEPS", "Sinc", "SincDerivative", "sinc", "sinc_derivative"]
