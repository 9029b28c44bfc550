"""``vmap``: a function over a leading batch axis by ONE call of its compiled program on the
columns of the batch (each var gets the array of its values across the batch), no Python loop
over points; nested vmaps add a batch level each. Inside another trace, the function is traced
once on one point's fresh vars, then lowered to array nodes over the batch where the batch is
data (``batched``), else each point substituted for them (``nesting``).
"""

from __future__ import annotations

import functools
import math
from typing import Any, Callable, Sequence

import numpy as np

from ..core import Tape, Term
from ..interop import dask_arrays  # Dask: the hooks marked "Dask" below
from ..interop.numpy_dispatch import TermArray
from ..pytrees import flatten, real_leaf, shown, unflatten
from .batched import assembled, batched
from .nesting import fresh_prefix, lifted, running, substitute, tracing
from .results import term_array
from .transform import Transformed, elements, outer_of, traced_leaf
from .transforms import value_transform


class _Vmapped:
    """``vmap(fn, in_axes, out_axes)``: fn over a batch, by one call of fn's compiled program on
    columns; inside another trace, fn traced once on one point's fresh vars and each point
    substituted (``unrolled``)."""

    def __init__(self, fn: Any, in_axes: Any, out_axes: Any = 0) -> None:
        self.fn = fn if isinstance(fn, (Transformed, _Vmapped)) else value_transform(fn, "vmap")
        self.in_axes, self.out_axes = in_axes, out_axes
        functools.update_wrapper(self, fn, updated=())

    def _axes(self, count: int) -> list[int | None]:
        axes = self.in_axes
        if axes is None or (isinstance(axes, int) and not isinstance(axes, bool)):
            return [axes] * count
        if isinstance(axes, (tuple, list)) and len(axes) == count and all(
                a is None or (isinstance(a, int) and not isinstance(a, bool)) for a in axes):
            return list(axes)
        raise ValueError(f"vmap: in_axes must be an int, None, or a tuple of those with one entry per positional "
                         f"argument ({count}), got {axes!r}")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.run(args, kwargs, None)

    def run(self, args: Sequence[Any], kwargs: dict[str, Any], levels: Sequence[tuple[bool, ...]] | None) -> Any:
        axes = self._axes(len(args))
        if all(a is None for a in axes):
            raise ValueError("vmap: in_axes maps over no argument; give 0 (or an axis) for at least one")
        if levels is None and self.out_axes == 0 and all(a == 0 for a in axes) and running() is None and all(
                type(a) is np.ndarray and a.dtype.kind == "f" and a.ndim for a in args):
            return self.fn.run(args, kwargs, [(True,)] * len(args))  # arrays batched along axis 0: as they are
        tape = outer_of(args, "vmap") if levels is None else None
        outer = levels if levels is not None else [()] * len(args)
        moved = []
        for k, (arg, axis, before) in enumerate(zip(args, axes, outer)):
            if axis is None:
                moved.append(arg)
                continue
            nb = sum(before)
            leaves, tree = flatten(arg, f"argument {k}", real_leaf("vmap") if tape is None else traced_leaf("vmap"))
            shifted: list[Any] = []
            for leaf in leaves:
                if tape is not None and isinstance(leaf, Term) and leaf.ndim and axis in (0, -leaf.ndim):
                    shifted.append(leaf)  # an array node batched along its first axis: kept one node
                    continue
                array = leaf.view(np.ndarray) if isinstance(leaf, TermArray) else (
                    leaf if dask_arrays.lazy(leaf) else np.asarray(leaf))  # Dask: kept lazy
                if not -(array.ndim - nb) <= axis < array.ndim - nb:
                    raise ValueError(f"vmap: in_axes {axis} is out of range for argument {k} of shape {array.shape}")
                source = nb + axis % (array.ndim - nb)
                shifted.append(array if source == nb else np.moveaxis(array, source, nb))
            moved.append(unflatten(tree, shifted))
        if tape is not None:
            return self._unrolled(tape, moved, axes, kwargs)
        inner = [tuple(before) + (axis is not None,) for before, axis in zip(outer, axes)]
        return self._out(self.fn.run(moved, kwargs, inner), len(outer[0]) if outer else 0)

    def _out(self, result: Any, level: int) -> Any:
        """The batch axis of this level (after ``level`` outer ones) moved to ``out_axes``."""
        axes = self.out_axes
        if axes == 0:
            return result
        if isinstance(result, tuple) and isinstance(axes, (tuple, list)) and len(axes) == len(result):
            return tuple(_Vmapped(self.fn, self.in_axes, a)._out(r, level) for r, a in zip(result, axes))
        if isinstance(axes, bool) or not isinstance(axes, int):
            raise ValueError(f"vmap: out_axes must be an int, or a tuple of ints with one per element of a tuple "
                             f"result, got {axes!r}")
        leaves, tree = flatten(result, "result")
        moved = []
        for leaf in leaves:
            array = leaf if dask_arrays.lazy(leaf) else np.asarray(leaf)  # Dask: kept lazy
            if not -(array.ndim - level) <= axes < array.ndim - level:
                raise ValueError(f"vmap: out_axes {axes} is out of range for a result of shape {array.shape[level:]}")
            moved.append(np.moveaxis(array, level, level + axes % (array.ndim - level)))
        return unflatten(tree, moved)

    def _unrolled(self, tape: Tape, moved: list[Any], axes: list[int | None], kwargs: dict[str, Any]) -> Any:
        """vmap inside a trace: fn on one point of fresh vars (the unmapped arguments as they
        are), then each point's values substituted for them; results stacked along axis 0."""
        prefix = fresh_prefix(tape, "vmap")
        point_args, fresh, columns = [], [], []
        sizes = set()
        for k, (arg, axis) in enumerate(zip(moved, axes)):
            if axis is None:
                point_args.append(arg)
                continue
            leaves, tree = flatten(arg, f"argument {k}", lambda value, path: (value, np.shape(value)))
            made = []
            for j, leaf in enumerate(leaves):
                sizes.add(leaf.shape[0])
                vs = [tape.var(f"{prefix}a{k}_l{j}_{n}") for n in range(math.prod(leaf.shape[1:]))]
                fresh += vs
                columns.append(leaf.reshape(leaf.shape[0], -1))
                made.append(term_array(vs, leaf.shape[1:]) if leaf.ndim > 1 else vs[0])
            point_args.append(unflatten(tree, made))
        if len(sizes) != 1:
            raise ValueError(f"vmap: the batched arguments have different batch sizes {sorted(sizes)}")
        with tracing(tape):
            out = self.fn(*point_args, **kwargs)
        leaves, tree = flatten(out, "result", lambda value, path: (value, np.shape(value)))
        flat = [lifted(tape, v) for leaf in leaves for v in elements(leaf)]
        found = batched(tape, flat, fresh, [c[:, j] for c in columns for j in range(c.shape[1])]) if self.out_axes == 0 else None
        if found is not None:  # data, not traced values: one array node per template node
            made, at = [], 0
            for leaf in leaves:
                shape = np.shape(leaf)
                made.append(assembled(found[at:at + math.prod(shape)], shape))
                at += math.prod(shape)
            return unflatten(tree, made)
        points = []
        columns = [np.asarray(c) if isinstance(c, Term) else c for c in columns]  # an array node's elements
        for i in range(sizes.pop()):
            values = [lifted(tape, v) for column in columns for v in column[i]]
            points.append(substitute(tape, flat, {v.index: t for v, t in zip(fresh, values)}))
        stacked, at = [], 0
        for leaf in leaves:
            shape = np.shape(leaf)
            size = math.prod(shape)
            stacked.append(term_array([t for p in points for t in p[at:at + size]], (len(points),) + shape))
            at += size
        return self._out(unflatten(tree, stacked), 0)

    def __repr__(self) -> str:
        return f"<vmap of {self.fn!r}>"


def vmap(fn: Callable[..., Any], in_axes: Any = 0, out_axes: Any = 0) -> Callable[..., Any]:
    """``jax.vmap``: ``vmap(fn)(batch)`` is fn at each entry of the batch's leading axis (``in_axes``:
    an axis, or None, per positional argument; keyword arguments are static, not mapped), stacked
    along a new axis ``out_axes`` (0: leading; a tuple: one per element of a tuple result).
    ``fn`` is a transform (``grad``, ``hessian``, ``value_and_grad``, ...), another vmap, or a
    plain function of Terms and NumPy; either way it is traced for one point and its compiled
    program runs once on the columns of the batch.

    >>> import numpy as np
    >>> import subgraph_ad as sad
    >>> sad.vmap(sad.hessian(lambda x: x[0] ** 2 * x[1]))(np.array([[1.0, 2.0], [3.0, 4.0]]))[1]
    array([[8., 6.],
           [6., 0.]])
    >>> sad.vmap(lambda w, x: np.dot(w, x), in_axes=(None, 0))(np.ones(2), np.eye(2))
    array([1., 1.])
    >>> sad.vmap(lambda x: x * np.arange(3.0), out_axes=1)(np.array([1.0, 2.0]))
    array([[0., 0.],
           [1., 2.],
           [2., 4.]])
    """
    if not callable(fn):
        raise TypeError(f"vmap() takes a function to map, got {shown(fn)}")
    return _Vmapped(fn, in_axes, out_axes)


__all__ = ["vmap"]
