"""Special functions SciPy provides, through the UnaryFn/BinaryFn door: the gamma family
(``gamma``, ``lgamma``, ``digamma``, ``polygamma(n, x)`` for a whole order n) and ``erfinv``;
and the stable log-sum-exp family (``logaddexp``, ``logaddexp2``, ``softplus``,
``logsumexp``). NumPy's normalized ``sinc`` and its derivatives are ``functions.sinc``.

Each derivative closes on the family: Γ′ = Γ·ψ, (log Γ)′ = ψ, ψ⁽ⁿ⁾′ = ψ⁽ⁿ⁺¹⁾, so every order
is a polygamma of a higher index; erfinv′ = (√π/2)·exp(erfinv²) reuses the output. Values on
arrays come from SciPy's ufuncs (gamma and lgamma fall back to ``math`` without SciPy; the
others need it: ``pip install scipy``); on one float — what the Numba backend compiles and the
one-point code runs — erfinv and the polygammas come from ``special_scalar``.

>>> import subgraph_ad as sad
>>> round(sad.polygamma(1, 1.0), 12)  # ψ′(1) = π²/6
1.644934066848
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..core.ops import PI
from ..core.term import Term
from .base import BinaryFn, UnaryFn, register
from .elementary import Elementary, Step, _scipy, _special, _sympy
from .exponential import exact, exp, log, sigmoid, sqrt
from .extrema import maximum, reduce_extremum
from .special_scalar import erfinv_at, polygamma_at
from .stop_gradient import stop_gradient


def _needs_scipy(name: str) -> Callable[..., Any]:
    """SciPy's ufunc ``name``; without SciPy, an ImportError that says how to get it."""

    def array(*v: Any) -> Any:
        found = _scipy(name)
        if found is None:
            raise ImportError(f"{name} needs SciPy for its values: pip install scipy")
        return found(*v)

    array.__name__ = name
    return array


def _logaddexp(a: float, b: float) -> float:
    """log(eᵃ + eᵇ) on floats without overflow (NumPy's np.logaddexp, infinities included)."""
    if a != a or b != b:
        return math.nan
    if a == b:  # also ±inf twice, where small − big would be nan
        return a + math.log(2.0) if abs(a) != math.inf else a
    big, small = max(a, b), min(a, b)
    return big + math.log1p(math.exp(small - big))


def _logaddexp2(a: float, b: float) -> float:
    """log₂(2ᵃ + 2ᵇ) on floats without overflow (np.logaddexp2)."""
    if a != a or b != b:
        return math.nan
    if a == b:
        return a + 1.0 if abs(a) != math.inf else a
    big, small = max(a, b), min(a, b)
    return big + math.log1p(2.0 ** (small - big)) / math.log(2.0)


def _lgamma_array(v: Any) -> Any:
    """SciPy's gammaln where it agrees with C's lgamma (math.lgamma, CUDA): at −inf C gives +inf
    (SciPy −inf), and at a subnormal v −log|v| (SciPy inf; the next term, −γv, is below its ulp)."""
    v = np.asarray(v, dtype=float)
    tiny = (v != 0) & (np.abs(v) < np.finfo(float).tiny)
    near_zero = -np.log(np.abs(np.where(tiny, v, 1.0)))
    return np.where(np.isneginf(v), np.inf, np.where(tiny, near_zero, _gammaln(v)))[()]


_gammaln = _special("gammaln", math.lgamma)


def _softplus(v: float) -> float:
    """log(1 + eᵛ) as ``_logaddexp(0, v)`` computes it, written out so that Numba compiles it
    as one function (it types no call to a plain Python function)."""
    if v != v:
        return math.nan
    return max(v, 0.0) + math.log1p(math.exp(-abs(v)))


def _sympy_logaddexp(base: int) -> Callable[..., Any]:
    def convert(a: Any, b: Any) -> Any:
        import sympy

        return sympy.log(sympy.exp(a) + sympy.exp(b)) if base == 0 else sympy.log(2**a + 2**b, 2)

    return convert


def _sympy_softplus(a: Any) -> Any:
    import sympy

    return sympy.log(1 + sympy.exp(a))


#: The elementaries of this module.
SPECIAL: dict[str, Elementary] = {e.name: e for e in (
    # equal arguments first, as NumPy's: ±inf twice is ±inf (inf − inf would be nan); ln 2 and
    # log₂e written out (M_LN2 is POSIX, not C99)
    Elementary("logaddexp", 2, (np.logaddexp,), _logaddexp,
               "((({0}) == ({1})) ? ({0}) + 0.6931471805599453 : fmax({0}, {1}) + log1p(exp(-fabs(({0}) - ({1})))))",
               _sympy_logaddexp(0)),
    Elementary("logaddexp2", 2, (np.logaddexp2,), _logaddexp2,
               "((({0}) == ({1})) ? ({0}) + 1.0 : fmax({0}, {1}) + log1p(exp2(-fabs(({0}) - ({1})))) * 1.4426950408889634)",
               _sympy_logaddexp(2)),
    Elementary("softplus", 1, (functools.partial(np.logaddexp, 0.0),),
               _softplus, "(fmax({0}, 0.0) + log1p(exp(-fabs({0}))))", _sympy_softplus),
    Elementary("erfinv", 1, (_needs_scipy("erfinv"),), erfinv_at, "erfinv({0})", _sympy("erfinv")),
    Elementary("tgamma", 1, (_special("gamma", math.gamma),), math.gamma, "tgamma({0})", _sympy("gamma"),
               ("gamma",)),
    Elementary("lgamma", 1, (_lgamma_array,), math.lgamma, "lgamma({0})", _sympy("loggamma"),
               ("gammaln", "loggamma")),
)}


@dataclass(frozen=True, repr=False)
class LogAddExp(BinaryFn):
    """log(eᵃ + eᵇ) (``base=2``: log₂(2ᵃ + 2ᵇ)) without overflow; its partials are the softmax
    weights σ(a − b) and σ(b − a) (times ln 2 inside for base 2)."""

    base: int = 0

    @property
    def name(self) -> str:
        return "logaddexp2" if self.base == 2 else "logaddexp"

    @property
    def spelling(self) -> tuple[Step, ...]:
        return (SPECIAL[self.name],)

    def fdiff(self, lhs: Any, rhs: Any, output: Any) -> tuple[Any, Any]:
        scale = exact(lhs, lambda k: log(k(2))) if self.base == 2 else 1
        return sigmoid((lhs - rhs) * scale), sigmoid((rhs - lhs) * scale)


logaddexp = register(LogAddExp())
logaddexp2 = register(LogAddExp(2))


@dataclass(frozen=True, repr=False)
class Softplus(UnaryFn):
    """log(1 + eˣ) without overflow; softplus′ = σ(x)."""

    name = "softplus"
    spelling = (SPECIAL["softplus"],)

    def fdiff(self, input: Any, output: Any) -> Any:
        return sigmoid(input)


softplus = register(Softplus())


@dataclass(frozen=True, repr=False)
class Erfinv(UnaryFn):
    """The inverse error function on (−1, 1); erfinv′ = √π/2·exp(erfinv²), from the output."""

    name = "erfinv"
    spelling = (SPECIAL["erfinv"],)

    def fdiff(self, input: Any, output: Any) -> Any:
        return exact(output, lambda k: sqrt(k(PI)) / 2) * exp(output * output)


erfinv = register(Erfinv())


def _polygamma_array(n: int) -> Callable[..., Any]:
    """ψ⁽ⁿ⁾ on arrays: SciPy's digamma for n = 0, its polygamma above."""

    def array(v: Any) -> Any:
        return _needs_scipy("digamma")(v) if n == 0 else _needs_scipy("polygamma")(n, v)

    array.__name__ = "digamma" if n == 0 else f"polygamma{n}"
    return array


@functools.lru_cache(maxsize=None)
def _polygamma_elementary(n: int) -> Elementary:
    """ψ⁽ⁿ⁾ as one elementary: SciPy on arrays, ``special_scalar.polygamma_at`` on one float
    (what Numba compiles); C99 has no form of it (a C or CUDA program says so)."""
    name = "digamma" if n == 0 else f"polygamma{n}"

    def to_sympy(arg: Any) -> Any:
        import sympy

        return sympy.polygamma(n, arg)

    return Elementary(name, 1, (_polygamma_array(n),), polygamma_at(n), f"{name}({{0}})", to_sympy)


@dataclass(frozen=True, repr=False)
class Polygamma(UnaryFn):
    """ψ⁽ⁿ⁾(x), the n-th derivative of the digamma function ψ = Γ′/Γ, for a whole order n >= 0 (a
    parameter, as JAX and SciPy take it: not a variable); its derivative is ψ⁽ⁿ⁺¹⁾, the next
    member. ``digamma`` is n = 0."""

    n: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.n, bool) or not isinstance(self.n, (int, np.integer)) or self.n < 0:
            raise TypeError(f"polygamma's order n must be a whole number >= 0, got {self.n!r}")
        object.__setattr__(self, "n", int(self.n))

    @property
    def name(self) -> str:
        return "digamma" if self.n == 0 else f"polygamma{self.n}"

    @property
    def spelling(self) -> tuple[Step, ...]:
        return (_polygamma_elementary(self.n),)

    def fdiff(self, input: Any, output: Any) -> Any:
        return Polygamma(self.n + 1)(input)


digamma = register(Polygamma(0))


def polygamma(n: Any, x: Any) -> Any:
    """ψ⁽ⁿ⁾(x) for a whole order n (a number, as in ``scipy.special.polygamma(n, x)``) and x a
    Term, an array of Terms or numbers.

    >>> import subgraph_ad as sad
    >>> round(sad.polygamma(1, 1.0), 12)  # ψ′(1) = π²/6
    1.644934066848
    """
    if isinstance(n, Term) or (isinstance(n, np.ndarray) and n.ndim):
        raise TypeError(f"polygamma(n, x) takes a whole number n (the order, not differentiated), got "
                        f"{type(n).__name__} {n!r:.60}")
    order = float(n)
    if not order.is_integer():
        raise TypeError(f"polygamma(n, x) takes a whole number n >= 0, got {n!r}")
    return Polygamma(int(order))(x)


@dataclass(frozen=True, repr=False)
class Gamma(UnaryFn):
    """Γ(x); Γ′ = Γ·ψ, from the output."""

    name = "gamma"
    spelling = (SPECIAL["tgamma"],)

    def fdiff(self, input: Any, output: Any) -> Any:
        return output * digamma(input)


gamma = register(Gamma())


@dataclass(frozen=True, repr=False)
class Lgamma(UnaryFn):
    """log|Γ(x)| (SciPy's gammaln, JAX's lgamma); its derivative is ψ(x)."""

    name = "lgamma"
    spelling = (SPECIAL["lgamma"],)

    def fdiff(self, input: Any, output: Any) -> Any:
        return digamma(input)


lgamma = register(Lgamma())


def logsumexp(a: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """log Σ exp(aᵢ) over ``axis`` (all entries by default), stably: m + log Σ exp(aᵢ − m) with
    m the largest entry held constant (its derivative cancels, so it is not differentiated, as in
    JAX). Terms, arrays of Terms, or numbers (then SciPy's value).

    >>> import numpy as np
    >>> import subgraph_ad as sad
    >>> round(float(sad.logsumexp(np.array([1000.0, 1000.0]))), 6)
    1000.693147
    """
    values = np.asarray(a, dtype=object) if not isinstance(a, np.ndarray) else a
    if values.dtype != object:
        with np.errstate(all="ignore"):
            m = np.max(values, axis=axis, keepdims=True)
            m = np.where(np.isfinite(m), m, 0.0)
            out = np.log(np.sum(np.exp(values - m), axis=axis, keepdims=True)) + m
        return (out if keepdims else np.squeeze(out, axis=axis))[()]
    if axis is None:
        out = _logsumexp_flat(values.ravel())
        return np.full((1,) * values.ndim, out, dtype=object) if keepdims else out
    if not isinstance(axis, (int, np.integer)):
        raise TypeError(f"logsumexp of an array of Terms takes one axis or None, got {axis!r}")
    reduced = np.apply_along_axis(_logsumexp_flat, int(axis), values)
    return np.expand_dims(reduced, int(axis)) if keepdims else reduced


def _logsumexp_flat(items: Any) -> Any:
    items = list(items)
    if not items:
        raise ValueError("logsumexp of an empty array")
    m = stop_gradient(reduce_extremum(items, maximum))
    total = exp(items[0] - m)
    for item in items[1:]:
        total = total + exp(item - m)
    return log(total) + m

