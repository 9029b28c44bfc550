"""NumPy's array functions on Terms (``__array_function__``): ``np.where``, ``np.select``,
``np.clip`` and ``np.round`` build selection and rounding nodes; functions with no derivative subgraph
(``np.sort``, ``np.argmax``, ``np.linalg.solve``, ...) are a TypeError that says what to do
instead; NumPy's own implementation runs on the object array for the rest."""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping

import numpy as np

from ..functions import kinks
from .array_node_functions import ARRAY_TERM_FUNCTIONS, elements_of, holds_array_term
from .term_array import unwrapped, wrap


def _np_where(condition: Any, x: Any = None, y: Any = None) -> Any:
    if x is None or y is None:
        raise _refuse_function("where", "np.where(condition) asks for the indices where a condition holds, which "
                               "are not known until the graph is evaluated; give both branches: np.where(c, a, b)")
    return kinks.where(*(unwrapped(v) for v in (condition, x, y)))


def _np_select(condlist: Any, choicelist: Any, default: Any = 0) -> Any:
    """``np.select``: the choice of the first condition that holds, else ``default`` — nested
    selections, the last condition innermost."""
    conditions, choices = list(condlist), list(choicelist)
    if not conditions or len(conditions) != len(choices):
        raise ValueError(f"np.select takes one choice per condition, at least one of each; got {len(conditions)} "
                         f"condition(s) and {len(choices)} choice(s)")
    found = unwrapped(default)
    for condition, choice in zip(reversed(conditions), reversed(choices)):
        found = kinks.where(unwrapped(condition), unwrapped(choice), found)
    return found


def _np_clip(a: Any, a_min: Any = None, a_max: Any = None, out: Any = None, **kwargs: Any) -> Any:
    if out is not None:
        raise _refuse_function("clip", "out= cannot hold Terms; call np.clip without out=")
    lo = kwargs.pop("min", a_min)
    hi = kwargs.pop("max", a_max)
    if kwargs:
        raise _refuse_function("clip", f"keyword argument(s) {', '.join(kwargs)} are not supported on Terms")
    return kinks.clip(*(unwrapped(v) for v in (a, lo, hi)))


def _np_round(a: Any, decimals: int = 0, out: Any = None) -> Any:
    if out is not None:
        raise _refuse_function("round", "out= cannot hold Terms; call np.round without out=")
    value = unwrapped(a)
    if isinstance(value, np.ndarray):
        return np.frompyfunc(lambda v: kinks.round_(v, decimals), 1, 1)(value)
    return kinks.round_(value, decimals)


def _np_fix(x: Any, out: Any = None) -> Any:
    if out is not None:
        raise _refuse_function("fix", "out= cannot hold Terms; call np.fix without out=")
    return kinks.trunc(unwrapped(x))


#: Array functions that build nodes of their own.
ARRAY_FUNCTIONS: dict[Any, Callable[..., Any]] = {
    np.where: _np_where, np.select: _np_select, np.clip: _np_clip, np.round: _np_round, np.around: _np_round, np.fix: _np_fix,
}

_ORDER = ("the order of values is not known when the graph is traced (it is traced once, for every value); a "
          "max or a min is differentiable: use np.max, np.min, sad.maximum or sad.minimum, or sort the numbers "
          "before tracing")
_TRUTH = ("it asks whether values are true or equal, which is not known when the graph is traced; compare the "
          "values after evaluating, or build the branch-free form with np.where")
_LINALG = ("no derivative subgraph for it; write the computation with arithmetic on the array of Terms (an "
           "elimination, a fixed number of iterations), or differentiate the numbers another way")

#: Array functions with no derivative subgraph, and what to do instead.
REFUSED: dict[Any, str] = {
    **{f: _ORDER for f in (np.sort, np.argsort, np.argmax, np.argmin, np.partition, np.argpartition, np.lexsort,
                           np.median, np.percentile, np.quantile, np.nanmedian, np.nanpercentile, np.nanquantile,
                           np.unique, np.searchsorted, np.histogram, np.nanargmax, np.nanargmin, np.digitize)},
    **{f: _TRUTH for f in (np.nonzero, np.flatnonzero, np.argwhere, np.count_nonzero, np.any, np.all, np.isclose,
                           np.allclose, np.array_equal, np.array_equiv, np.extract, np.compress,
                           np.piecewise)},
    **{f: _LINALG for f in (np.linalg.solve, np.linalg.inv, np.linalg.pinv, np.linalg.det, np.linalg.slogdet,
                            np.linalg.eig, np.linalg.eigh, np.linalg.eigvals, np.linalg.eigvalsh, np.linalg.svd,
                            np.linalg.qr, np.linalg.cholesky, np.linalg.lstsq, np.linalg.matrix_rank,
                            np.linalg.matrix_power, np.linalg.cond, np.linalg.tensorsolve, np.linalg.tensorinv,
                            np.fft.fft, np.fft.ifft, np.fft.rfft, np.fft.irfft, np.fft.fft2, np.fft.fftn,
                            np.convolve, np.correlate, np.interp, np.polyfit, np.roots)},
}


def _function_name(func: Any) -> str:
    module = getattr(func, "__module__", "") or ""
    prefix = "np.linalg." if "linalg" in module else "np.fft." if "fft" in module else "np."
    return prefix + getattr(func, "__name__", repr(func))


def _refuse_function(name: str, why: str) -> TypeError:
    return TypeError(f"np.{name} is not supported on Terms: {why}")


def array_function(self: Any, func: Callable[..., Any], types: Iterable[type], args: Iterable[Any],
                   kwargs: Mapping[str, Any]) -> Any:
    """NumPy's ``__array_function__`` for Term and TermArray: the functions that build nodes of
    their own, a refusal for those with no derivative subgraph, and NumPy's own implementation
    on the object arrays for the rest (its inner ufunc calls come back through
    ``array_ufunc``)."""
    if holds_array_term(args) or holds_array_term(kwargs.values()):
        mine = ARRAY_TERM_FUNCTIONS.get(func)
        if mine is not None:
            return mine(*args, **kwargs)
        if func not in ARRAY_FUNCTIONS:  # the rest run on the elements of the array Terms
            args, kwargs = elements_of(tuple(args)), {k: elements_of(v) for k, v in kwargs.items()}
    own = ARRAY_FUNCTIONS.get(func)
    if own is not None:
        return wrap(own(*args, **kwargs))
    name = _function_name(func)
    if func in REFUSED:
        raise TypeError(f"{name} is not supported on Terms: {REFUSED[func]}")
    implementation = getattr(func, "_implementation", None)
    if implementation is None:
        raise TypeError(f"{name} is not supported on Terms: NumPy gives no implementation to run on an array of "
                        "Terms")
    try:
        return wrap(implementation(*args, **kwargs))
    except TypeError as error:
        if "Term" not in str(error):
            raise
        raise TypeError(f"{name} on Terms failed: {error}") from error
