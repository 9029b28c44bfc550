"""TermArray, the object array of Terms that keeps NumPy's hooks, ``stack``, which builds one,
and the conversions between it and the plain object arrays NumPy's own loops run on."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core import array_build
from ..core.term import Term


class TermArray(np.ndarray):
    """An object array of Terms (and numbers) that keeps NumPy's hooks: ``np.max``, ``np.where``,
    ``np.sort`` and the ufuncs reach ``array_ufunc``/``array_function`` even where no element is
    asked (a plain object array would compare its elements and fail on ``bool``). Traced array
    arguments are TermArrays; slicing, arithmetic and NumPy functions keep them so. The hooks are
    set by ``numpy_dispatch``, which loads with the package."""

    def __getitem__(self, index: Any) -> Any:
        if _holds_terms(index):
            raise IndexError(f"x[mask] with a mask of Terms ({_shown(index)}): a mask that depends on the traced "
                             "values is a data-dependent shape; use `sad.where`: sad.where(mask, x, 0.0) keeps "
                             "every entry and zeroes the others")
        return super().__getitem__(index)

    @property
    def at(self) -> Any:
        """JAX's functional update ``x.at[i].set(v)`` has no place here: said as an error."""
        raise AttributeError("x.at[...] is JAX's functional update: NumPy arrays are updated in place here; "
                             "write `x[i] = …` on a copy (y = x.copy(); y[i] = value)")

    def eval(self, values: Any = None) -> np.ndarray:
        """The values of every element, as a float array of this shape."""
        from ..numeric.modes import evaluate

        return np.array([evaluate(t, values) if isinstance(t, Term) else float(t) for t in self.ravel()],
                        dtype=float).reshape(self.shape)


def _holds_terms(index: Any) -> bool:
    """An index that depends on Terms: a Term, an object array or list holding one, or a tuple
    with such a part."""
    parts = index if isinstance(index, tuple) else (index,)
    for part in parts:
        if isinstance(part, Term):
            return True
        if isinstance(part, list) and any(isinstance(p, Term) for p in part):
            return True
        if isinstance(part, np.ndarray) and part.dtype == object and any(isinstance(p, Term) for p in part.flat):
            return True
    return False


def _shown(index: Any) -> str:
    shape = getattr(index, "shape", None)
    return f"an array of shape {shape}" if shape is not None else f"{type(index).__name__} {index!r:.60}"


def stack(items: Any, axis: int = 0) -> Any:
    """Terms (and numbers, and arrays of them) joined into one array along a new ``axis``: how a
    traced function builds an array of results, where writing a Term into a float array
    (``np.zeros(3)``) cannot work. Terms of one shape (numbers among them) along the first axis
    become ONE array node (its element k is item k again); anything else, an object array.

    >>> import subgraph_ad as sad
    >>> tape = sad.Tape(); x = tape.var("x", 2.0)
    >>> v = sad.stack([x**2, 1.0, sad.sin(x)])
    >>> v.shape, v.eval(), v[0] is not None and v[0].index == (x**2).index
    ((3,), array([4.        , 1.        , 0.90929743]), True)
    """
    if isinstance(items, (str, bytes)) or not hasattr(items, "__len__") or len(items) == 0:
        raise TypeError(f"stack() takes a non-empty sequence of Terms, numbers or arrays of them, got "
                        f"{type(items).__name__} {items!r:.80}")
    terms = [item for item in items if isinstance(item, Term)]
    if axis == 0 and terms and not any(isinstance(item, np.ndarray) for item in items):
        lifted = [terms[0]._lift(item).index for item in items]
        return Term(terms[0].tape, array_build.stack(terms[0].tape, lifted))
    parts = []
    for item in items:
        part = np.empty((), dtype=object)
        part[()] = item
        parts.append(item if isinstance(item, np.ndarray) else part)
    return np.stack([np.asarray(p, dtype=object) for p in parts], axis=axis).view(TermArray)


def plain(value: Any) -> Any:
    """A TermArray as the plain object array it views, a Term as a 0-d object array: operands
    NumPy runs its own loops on, without coming back here."""
    if isinstance(value, TermArray):
        return value.view(np.ndarray)
    if isinstance(value, Term):
        array = np.empty((), dtype=object)
        array[()] = value
        return array
    return value


def unwrapped(value: Any) -> Any:
    """A TermArray as a plain object array; anything else as it is."""
    return value.view(np.ndarray) if isinstance(value, TermArray) else value


def wrap(value: Any) -> Any:
    """An object array from NumPy as a TermArray (nested in tuples and lists too); a 0-d one as
    its element, as NumPy gives a scalar for a 0-d result."""
    if isinstance(value, np.ndarray) and value.dtype == object:
        return value.view(TermArray) if value.ndim else value[()]
    if isinstance(value, tuple):
        return tuple(wrap(v) for v in value)
    if isinstance(value, list):
        return [wrap(v) for v in value]
    return value


def into(result: Any, outs: tuple[Any, ...] | None) -> Any:
    """Write ``result`` into ``out`` (an object array) where NumPy asked for it; return what NumPy
    returns then."""
    if not outs:
        return result
    results = result if isinstance(result, tuple) else (result,)
    for o, r in zip(outs, results):
        o[...] = r
    wrapped = tuple(o.view(TermArray) if isinstance(o, np.ndarray) and o.ndim else o for o in outs)
    return wrapped if isinstance(result, tuple) else wrapped[0]
