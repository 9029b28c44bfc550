"""NumPy's array functions on array Terms (``Tape.array``, and the arrays traced functions
get): ``np.dot``, ``np.matmul``, two-operand ``np.einsum`` that is a product, ``np.concatenate``,
``np.stack``, ``np.sum``, ``np.mean``, ``np.reshape``, ``np.transpose``, ``np.ravel`` make ONE array node each, as ``@``,
the ufuncs, ``.sum()`` and slicing do. Any other function sees the array Term as the object
array of its elements (``x[i]``, index nodes of it): the same numbers, scalar nodes.

>>> import numpy as np
>>> import subgraph_ad as sad
>>> tape = sad.Tape(); W = tape.array("W", np.eye(3)); x = tape.array("x", [1.0, 2.0, 3.0])
>>> y = np.einsum("ij,j->i", W, x)
>>> type(y).__name__, y.shape, np.concatenate([x, y]).eval()
('Term', (3,), array([1., 2., 3., 1., 2., 3.]))
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..core import array_build
from ..core.expand import indexed_elements
from ..core.term import Term


def is_array_term(value: Any) -> bool:
    return isinstance(value, Term) and bool(value.shape)


def holds_array_term(args: Any) -> bool:
    """Whether an array Term is among the arguments (or in a list or tuple of them)."""
    return any(is_array_term(a) or (isinstance(a, (list, tuple)) and holds_array_term(a)) for a in args)


def elements_of(value: Any) -> Any:
    """Array Terms (also inside lists and tuples) as object arrays of their elements."""
    if is_array_term(value):
        return indexed_elements(value)
    if isinstance(value, (list, tuple)):
        return type(value)(elements_of(v) for v in value)
    return value


def _anchor(items: Any) -> Term:
    return next(v for v in items if isinstance(v, Term))


def _dot(a: Any, b: Any, out: Any = None) -> Any:
    term = _anchor((a, b))
    a, b = term._lift(a), term._lift(b)
    if not a.shape or not b.shape:
        return a * b
    return a @ b


def _matmul(a: Any, b: Any, **kwargs: Any) -> Any:
    term = _anchor((a, b))
    return term._lift(a) @ term._lift(b)


def _einsum(subscripts: Any, *operands: Any, **kwargs: Any) -> Any:
    """Two operands of at most two axes with at most one summed letter and no letter in both
    operands and the result: transposes and one product (an outer product: a broadcast
    multiply). Anything else: NumPy's einsum on the elements."""
    if (len(operands) == 2 and not kwargs and isinstance(subscripts, str) and "->" in subscripts
            and "." not in subscripts):
        inputs, out = subscripts.replace(" ", "").split("->")
        parts = inputs.split(",")
        if len(parts) == 2:
            found = _product(parts[0], parts[1], out, *operands)
            if found is not None:
                return found
    return np.einsum(subscripts, *(elements_of(v) for v in operands), **kwargs)


def _product(sa: str, sb: str, out: str, a: Any, b: Any) -> Any:
    term = _anchor((a, b))
    a, b = term._lift(a), term._lift(b)
    if (len(a.shape), len(b.shape)) != (len(sa), len(sb)) or len(set(sa)) < len(sa) or len(set(sb)) < len(sb):
        return None
    shared = set(sa) & set(sb)
    summed = [c for c in sa if c in shared and c not in out]
    if len(summed) > 1 or shared - set(summed) or set(out) - set(sa) - set(sb) or len(set(out)) < len(out) \
            or any(c not in out and c not in shared for c in sa + sb) or not a.shape or not b.shape:
        return None
    if summed:
        (c,) = summed
        ka = [x for x in sa if x != c] + [c]
        kb = [c] + [x for x in sb if x != c]
        a2 = a.transpose([sa.index(x) for x in ka]) if len(sa) > 1 else a
        b2 = b.transpose([sb.index(x) for x in kb]) if len(sb) > 1 else b
        result, letters = a2 @ b2, ka[:-1] + kb[1:]
    else:  # an outer product: a's axes, then b's
        result = a.reshape(a.shape + (1,) * len(sb)) * b
        letters = list(sa) + list(sb)
    if len(letters) > 1 and letters != list(out):
        result = result.transpose([letters.index(x) for x in out])
    return result


def _lifted(items: Any) -> list[Term]:
    term = _anchor([v for v in items if isinstance(v, Term)] or items)
    return [term._lift(v) for v in items]


def _concatenate(arrays: Any, axis: int = 0, **kwargs: Any) -> Any:
    if kwargs or axis is None:
        return np.concatenate(elements_of(list(arrays)), axis=axis, **kwargs)
    items = _lifted(list(arrays))
    return Term(items[0].tape, array_build.concat(items[0].tape, [t.index for t in items], axis))


def _stack(arrays: Any, axis: int = 0, **kwargs: Any) -> Any:
    if kwargs:
        return np.stack(elements_of(list(arrays)), axis=axis, **kwargs)
    items = _lifted(list(arrays))
    stacked = Term(items[0].tape, array_build.stack(items[0].tape, [t.index for t in items]))
    ndim = len(stacked.shape)
    k = int(axis) % ndim
    if not k:
        return stacked
    perm = list(range(1, ndim))
    perm.insert(k, 0)
    return stacked.transpose(perm)


def _reshape(a: Any, *args: Any, **kwargs: Any) -> Any:
    shape = kwargs.pop("newshape", kwargs.pop("shape", None)) if args == () else args[0]
    return a.reshape(shape)


def _reduction(name: str) -> Callable[..., Any]:
    """``np.sum``/``np.mean`` of an array Term: its method (one sum node); of anything else
    holding one, NumPy's on the elements."""

    def reduce(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False,
               **kwargs: Any) -> Any:
        if is_array_term(a) and not kwargs:
            return getattr(a, name)(axis, dtype, out, keepdims)
        return getattr(np, name)(elements_of(a), axis=axis, dtype=dtype, out=out, keepdims=keepdims, **kwargs)

    return reduce


def _transpose(a: Any, axes: Any = None) -> Any:
    return a.transpose() if axes is None else a.transpose(tuple(axes))


#: NumPy functions that make array nodes when an array Term is among their arguments.
ARRAY_TERM_FUNCTIONS: dict[Any, Callable[..., Any]] = {
    np.dot: _dot, np.matmul: _matmul, np.einsum: _einsum, np.concatenate: _concatenate, np.stack: _stack,
    np.sum: _reduction("sum"), np.mean: _reduction("mean"), np.reshape: _reshape, np.transpose: _transpose, np.ravel: lambda a, order="C": a.reshape(-1),
}

__all__ = ["ARRAY_TERM_FUNCTIONS", "elements_of", "holds_array_term", "is_array_term"]
