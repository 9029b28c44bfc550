"""``Transformed``: what every traced transform is — a callable that traces ``f`` once per
signature, builds its outputs with ``build(trace)`` (flat Terms, and how to assemble their
values), compiles them (``compiled``), and runs the program on one point or, under ``vmap``, on
the columns of a batch; called inside another trace, it appends to that trace instead
(``nesting``). The transforms (``grad``, ``hessian``, …) differ only in their ``build``.

>>> import subgraph_ad as sad
>>> square = Transformed(lambda x: x * x, "square", lambda trace: ([trace.out], lambda values, batch: values[0]))
>>> square(3.0), sad.grad(square)(3.0)
(9.0, 6.0)
"""

from __future__ import annotations

import functools
import math
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

from ..compile.feed import FLOAT64
from ..core import Tape, Term
from ..interop import dask_arrays  # Dask: the hooks marked "Dask" below
from ..pytrees import Tree, flatten, leaf_shapes, real_leaf, static_key
from .compiled import Programs, call, collector_paused
from .nesting import ask_backend, lifted, outer_tape, running, substitute, terms_in
from .results import Assemble, Filled, Packed, cast, result_dtype
from .tracer import Traced, check_callable

#: The argument types of the one-point fast path: Python numbers (a bool is not one).
_NUMBERS = (float, int)

#: How a transform is built on a trace: its outputs (flat Terms) and how to assemble their values.
Build = Callable[[Traced], tuple[list[Term], Assemble]]


def traced_leaf(what: str) -> Callable[[Any, str], tuple[Any, tuple[int, ...]]]:
    """The leaf check of a nested call: Terms and arrays of them besides real numbers."""
    check = real_leaf(what)

    def leaf(value: Any, path: str) -> tuple[Any, tuple[int, ...]]:
        if type(value) is np.ndarray and value.dtype.kind in "biuf":  # the common leaf, checked at once
            return value, value.shape
        if isinstance(value, Term):
            return value, value.shape
        if isinstance(value, np.ndarray) and value.dtype == object and next(terms_in(value), None) is not None:
            return value, value.shape
        return check(value, path)

    return leaf


def elements(leaf: Any) -> list[Any]:
    """A leaf's numbers or Terms, flat in C order."""
    if isinstance(leaf, Term):
        return [leaf[where] for where in np.ndindex(*leaf.shape)] if leaf.shape else [leaf]
    return list(np.asarray(leaf, dtype=object).ravel())


def columns(leaf: Any, batched: tuple[bool, ...]) -> list[Any]:
    """The inputs of a leaf's vars: its numbers, or with batch axes in front (one per level of
    vmap where ``batched``), each var's values across the batch, with size-1 axes for the levels
    that do not batch it, so every input broadcasts to the whole batch."""
    array = np.asarray(leaf, dtype=float)
    nb = sum(batched)
    if not batched or not nb:
        points: list[float] = array.ravel().tolist()  # Python floats: the one-point code's own type
        return points
    outer = array.shape[:nb]
    full, at = [], 0
    for b in batched:
        full.append(outer[at] if b else 1)
        at += b
    if array.ndim == nb:  # a number at each point: the array itself is its one column
        return [np.ascontiguousarray(array.reshape(tuple(full)))]
    point = array.reshape(tuple(full) + (-1,))
    return list(np.ascontiguousarray(np.moveaxis(point, -1, 0)))

def whole(leaf: Any, batched: tuple[bool, ...]) -> list[Any]:
    """The input of a leaf that is one var (an array var, fed whole; a number; nothing for an
    empty array): its value, with the batch axes in front as ``columns`` lays them out."""
    array = np.asarray(leaf, dtype=float)
    if not batched:  # one point (the common call): the array as it is
        return [array] if array.ndim and array.size else [float(array)] if not array.ndim else []
    nb = sum(batched)
    point = array.shape[nb:]
    if not math.prod(point):
        return []
    if not point:
        return columns(leaf, batched)
    if not nb:
        return [array]
    outer, full, at = array.shape[:nb], [], 0
    for b in batched:
        full.append(outer[at] if b else 1)
        at += b
    return [array.reshape(tuple(full) + point)]


def batch_shape(inputs: list[Any], points: Sequence[tuple[int, ...]] | None = None) -> tuple[int, ...]:
    """The common batch of the inputs: their shapes, less each one's point shape (``points``)."""
    shapes = [np.shape(v) for v in inputs]
    if points is not None:
        shapes = [shape[:len(shape) - len(point)] for shape, point in zip(shapes, points)]
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        sizes = sorted({np.shape(v) for v in inputs if np.ndim(v)})
        raise ValueError(f"vmap: the batched arguments have different batch sizes {sizes}") from None


def strip(tree: Tree, nb: int) -> Tree:
    """The structure of one point: the leading ``nb`` batch axes off every leaf's shape."""
    if tree.kind == "leaf":
        return Tree("leaf", tree.meta[nb:])
    return Tree(tree.kind, tree.meta, tuple(strip(c, nb) for c in tree.children))




#: Per argument of the fast path: None and its shape for an array; for a dict, tuple or list
#: of arrays its type, its sorted keys (None for a sequence) and their shapes.
Layout = tuple[tuple[Any, Any, Any], ...]


def _plain(args: Sequence[Any], kwargs: dict[str, Any], levels: Sequence[tuple[bool, ...]] | None
           ) -> tuple[Any, list[list[Any]]] | None:
    """For arguments that are float64 arrays, or dicts, tuples or lists of them (the common
    batch, a network's parameters), outside any trace: what the signature key depends on (their
    ``Layout`` and the levels) and each one's leaves in JAX's order; else None."""
    if kwargs or not args or running() is not None:
        return None
    layout: list[tuple[Any, Any, Any]] = []
    leaves: list[list[Any]] = []
    for a in args:
        kind = type(a)
        if kind is np.ndarray:
            if a.dtype != np.float64:
                return None
            layout.append((None, None, a.shape))
            leaves.append([a])
            continue
        keys: Any = None
        if kind is dict:
            keys = tuple(sorted(a))
            items = [a[k] for k in keys]
        elif kind is tuple or kind is list:
            items = list(a)
        else:
            return None
        if not items:
            return None
        for v in items:
            if type(v) is not np.ndarray or v.dtype != np.float64:
                return None
        layout.append((kind, keys, tuple([v.shape for v in items])))
        leaves.append(items)
    return (tuple(layout), None if levels is None else tuple(levels)), leaves


def _matched(args: Sequence[Any], layout: Layout) -> list[Any] | None:
    """The leaves, in order, of arguments laid out as ``layout`` (float64 arrays of its shapes
    in containers of its types and keys); None for any others. The check ``_plain`` makes,
    without building a key: the one-point call of a transform, each time."""
    if len(args) != len(layout):
        return None
    leaves: list[Any] = []
    items: Any
    try:
        for a, (kind, keys, shapes) in zip(args, layout):
            if kind is None:
                items, shapes = (a,), (shapes,)
            elif type(a) is not kind or len(a) != len(shapes):
                return None
            else:
                items = a if keys is None else [a[k] for k in keys]
            for v, shape in zip(items, shapes):
                if type(v) is not np.ndarray or v.dtype is not FLOAT64 or v.shape != shape:
                    return None
                leaves.append(v)
    except KeyError:  # a dict of as many other keys
        return None
    return leaves


class _Lane(NamedTuple):
    """A transform's one-point call filled straight from its program's outputs, kept per layout
    of arguments: the program's key and entry (the lane holds while that entry does), its
    unchecked one-point call and the fill of the result."""

    layout: Layout
    key: Any
    entry: tuple[Any, Assemble]
    at_point: Callable[[list[Any]], Any]
    fill: Callable[[Any], Any]


def _fed_whole(compiled: Any) -> bool:
    """Whether a program takes each array argument whole: an array program over array vars, not
    one over scalar vars (a build that went to the scalar engines: ``Traced.inputs``), which
    takes one column per number as any program."""
    return hasattr(compiled, "out_shapes") and any(compiled.shapes)


class Transformed:
    """The transform ``build`` of ``f`` (see the module), compiled with ``backend``; ``cache``
    holds its program per signature."""

    #: Whether an array argument is traced as one array var (a transform whose build knows
    #: array nodes, or expands them) rather than as scalar vars.
    ARRAYS = True

    def __init__(self, f: Callable[..., Any], what: str, build: Build, backend: str | None = None) -> None:
        check_callable(f, what)
        self.f, self.what, self.build = f, what, build
        self._numbers: dict[int, Any] = {}  # the signature key of k Python numbers
        self._plain: dict[Any, Any] = {}  # the signature key of float64 arrays (``_plain``)
        self._lanes: dict[Any, _Lane] = {}  # per ``_plain`` key of one point
        self._last: _Lane | None = None  # the lane of the last call that took one
        # array arguments are one array var each: NumPy code on them builds array nodes
        self.cache: Programs[Assemble] = Programs(f, what, self._program, backend, arrays=self.ARRAYS)
        functools.update_wrapper(self, f, updated=())

    def _program(self, trace: Traced) -> tuple[list[Term], Term | list[Term], Assemble]:
        terms, assemble = self.build(trace)
        return trace.inputs(), terms or [trace.tape.zero], assemble

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.run(args, kwargs, None)

    def _signature(self, args: Sequence[Any], kwargs: dict[str, Any],
                   levels: Sequence[tuple[bool, ...]] | None) -> tuple[list[list[Any]], list[Tree], Any]:
        """Each argument's leaves and per-point structure (batch axes taken off), and the key;
        outside vmap, Terms pass the check (a call nested in a trace: ``run`` inlines it)."""
        check = real_leaf(self.what) if levels is not None else traced_leaf(self.what)
        leaves, trees = [], []
        for k, arg in enumerate(args):
            found, tree = flatten(arg, f"argument {k}", check)
            nb = sum(levels[k]) if levels is not None else 0
            if nb:
                for shape in leaf_shapes(tree):
                    if len(shape) < nb:
                        raise ValueError(f"vmap: argument {k} has a leaf of shape {shape}, with no batch axis to map "
                                         "over; give in_axes=None for an argument that is not batched")
                tree = strip(tree, nb)
            leaves.append(found)
            trees.append(tree)
        return leaves, trees, (tuple(trees), static_key(kwargs, self.what))

    def run(self, args: Sequence[Any], kwargs: dict[str, Any], levels: Sequence[tuple[bool, ...]] | None) -> Any:
        """The transform at ``args``; ``levels``: per argument, whether each level of vmap (the
        outermost first) batches it along a leading axis. Inside another trace, the transform's
        Terms on that trace's tape (``inline``)."""
        if (levels is None and not kwargs and args and type(args[0]) in _NUMBERS and all(type(a) in _NUMBERS for a in args)
                and running() is None):
            entry = self.cache.get(self._numbers_key(len(args)))  # Python numbers: no pytrees to walk
            if entry is not None:
                return self._run(entry, [float(a) for a in args], ())
        last = self._last
        if last is not None and levels is None and not kwargs and running() is None:
            flat = _matched(args, last.layout)  # the arguments of the call before: its lane again
            if flat is not None and self.cache.get(last.key) is last.entry:
                found = last.at_point(flat)
                if found is not None:
                    return last.fill(found)
        plain = _plain(args, kwargs, levels)
        if plain is not None:  # float64 arrays
            shapes, plain_leaves = plain
            lane = self._lanes.get(shapes)
            if lane is not None and self.cache.get(lane.key) is lane.entry:  # filled straight before: so again
                found = lane.at_point([leaf for leaves in plain_leaves for leaf in leaves])
                if found is not None:
                    self._last = lane
                    return lane.fill(found)
            known = self._plain.get(shapes)
            if known is not None:  # seen before: no pytrees to walk
                key, sized = known
                entry = self.cache.get(key)
                if entry is not None:
                    if sized and levels is None and _fed_whole(entry[0]):  # one point: the leaves are the inputs
                        return self._at_point(shapes, key, entry, [leaf for leaves in plain_leaves for leaf in leaves])
                    return self._call(entry, plain_leaves, levels, False)
        leaves, trees, key = self._signature(args, kwargs, levels)
        tape = outer_tape([leaf for found in leaves for leaf in found], self.what) if levels is None else None
        if tape is not None:
            return self.inline(tape, args, kwargs)
        dtype = result_dtype(leaves)
        lazy = dask_arrays.any_lazy(leaves)
        cache = self._scalar_cache() if self.ARRAYS and lazy else self.cache  # Dask
        if plain is not None:
            self._plain[plain[0]] = key, all(leaf.ndim and leaf.size for found in leaves for leaf in found)
        entry = cache.get(key)
        if entry is not None:
            return cast(self._call(entry, leaves, levels, lazy), dtype)
        with collector_paused():  # the first call too: it writes and compiles the code
            return cast(self._call(cache.make(key, trees, kwargs), leaves, levels, lazy), dtype)

    def _numbers_key(self, count: int) -> Any:
        """The signature key of ``count`` Python numbers, as ``_signature`` makes it."""
        key = self._numbers.get(count)
        if key is None:
            key = self._numbers[count] = (tuple(Tree("leaf", ()) for _ in range(count)), static_key({}, self.what))
        return key

    def _scalar_cache(self) -> Programs[Assemble]:
        """Programs traced on scalar vars: what a cluster ships (Dask), one per transform."""
        found: Programs[Assemble] | None = getattr(self, "_scalars", None)
        if found is None:
            found = self._scalars = Programs(self.f, self.what, self._program, self.cache.backend, arrays=False)
        return found

    def inline(self, tape: Tape, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        """The transform inside the trace of ``tape``: f traced on fresh vars of that tape, the
        transform built on them, and the arguments (Terms of the outer trace, or numbers as its
        constants) substituted for the fresh vars (``nesting``). Nothing is compiled."""
        leaves, trees = [], []
        for k, arg in enumerate(args):
            found, tree = flatten(arg, f"argument {k}", traced_leaf(self.what))
            leaves.append(found)
            trees.append(tree)
        ask_backend(tape, self.cache.backend)
        trace = Traced(self.f, trees, self.what, kwargs, tape)
        terms, assemble = self.build(trace)
        mapping = {}
        for vars_, found in zip(trace.vars, leaves):
            values = [lifted(tape, v) for leaf in found for v in elements(leaf)]
            mapping.update({v.index: value for v, value in zip(vars_, values)})
        return assemble(substitute(tape, terms, mapping), ())

    @staticmethod
    def _call(entry: tuple[Any, Assemble], leaves: list[list[Any]], levels: Sequence[tuple[bool, ...]] | None,
              lazy: bool) -> Any:
        """The compiled program run on the arguments' leaves (``lazy``: some are Dask arrays),
        its values assembled."""
        compiled, assemble = entry
        if lazy:  # Dask: lazily, one task per chunk of the batch
            return dask_arrays.over_batch(compiled, assemble, leaves, levels, columns)
        inputs: list[Any] = []
        points: list[tuple[int, ...]] = []
        fed_whole = _fed_whole(compiled)
        feed = whole if fed_whole else columns
        if levels is None:  # one point: no batch to find
            return Transformed._run(entry, [v for found in leaves for leaf in found for v in feed(leaf, ())], ())
        for k, found in enumerate(leaves):
            batched = tuple(levels[k])
            for leaf in found:
                fed = feed(leaf, batched)
                inputs += fed
                points += [np.shape(leaf)[sum(batched):] if fed_whole else ()] * len(fed)
        return Transformed._run(entry, inputs, batch_shape(inputs, points))

    def _at_point(self, plain: Any, key: Any, entry: tuple[Any, Assemble], inputs: list[Any]) -> Any:
        """One point of whole float64 arrays: a result that is one tree of the outputs in order
        filled straight from their numbers where the program gives them at once (its
        ``at_point``; the way kept for the next call of this ``plain`` key, while ``key``'s
        program stays), else the program's values assembled."""
        compiled, assemble = entry
        at_point = getattr(compiled, "at_point", None)
        if at_point is not None and type(assemble) is Filled:
            found = at_point(inputs)
            if found is not None:
                fill = assemble.way(tuple(g.shape for g in found))
                lane = _Lane(plain[0], key, entry, getattr(compiled, "at_known_point", at_point), fill)
                self._lanes[plain] = self._last = lane
                return fill(found)
        return Transformed._run(entry, inputs, ())

    @staticmethod
    def _run(entry: tuple[Any, Assemble], inputs: list[Any], batch: tuple[int, ...]) -> Any:
        """The compiled program run on its inputs, its values assembled for ``batch``."""
        compiled, assemble = entry
        columns = getattr(compiled, "columns", None)  # an array program expanded for Numba: one array
        found = columns(*inputs) if columns is not None and batch else None
        if found is not None:
            return assemble(Packed((), compiled.out_shapes, found), batch)  # type: ignore[arg-type]
        values = call(compiled, inputs)
        shapes = getattr(compiled, "out_shapes", None)
        if shapes is not None:  # an array program: its outputs read as one value per number
            return assemble(Packed(values, shapes), batch)  # type: ignore[arg-type]
        return assemble(list(values), batch)

    def __repr__(self) -> str:
        return f"<{self.what} of {getattr(self.f, '__name__', self.f)!r}>"


def outer_of(args: Sequence[Any], what: str) -> Tape | None:
    """The tape of the trace a call is nested in: of the Terms among the arguments, or of the
    trace running; None for a call from plain Python."""
    found: list[Any] = []
    for arg in args:
        found += flatten(arg, "argument", lambda value, path: (value, ()))[0]
    return outer_tape(found, what)



__all__ = ["Build", "Transformed", "batch_shape", "columns", "elements", "whole", "outer_of", "strip", "traced_leaf"]
