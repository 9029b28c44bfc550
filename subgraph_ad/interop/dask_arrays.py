"""Traced transforms on Dask arrays: ``sad.vmap(sad.grad(f))(X)``, ``sad.laplacian(u)(points)``
and the rest give a lazy Dask array for a Dask batch, with NumPy's values.

The compiled program runs once per chunk of the outermost batch axis (the other axes in one
chunk), as a task that takes the program and the plan as keys of the graph (``cluster``: sent
once, compiled once per worker). What the transform returns is assembled from the program's
values by its ``assemble``, which only places them: each entry of each result leaf is one of
the values, or a structural zero. That placement is read once, on the client, by assembling
labels (value k is the number k + 1) for a batch of one; a task then gathers its chunk's values
into every leaf with one index array, and the client cuts the leaves apart lazily.
``per_point`` is the same for an operator that is not a transform's assembly (the stochastic
Laplacian): one value per point, its plan evaluating a chunk of points.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

from ..compile import cluster
from ..pytrees import flatten, unflatten

#: (the outputs' values, the batch shape) -> the transform's result (``trace.Assemble``).
Assemble = Callable[[list[Any], tuple[int, ...]], Any]
#: (a leaf, whether each batch level maps it) -> the program's inputs for its vars (``trace._columns``).
Columns = Callable[[Any, tuple[bool, ...]], list[Any]]


def lazy(value: Any) -> bool:
    """Whether ``value`` is a Dask collection."""
    return hasattr(value, "__dask_graph__")


def any_lazy(leaves: Sequence[Sequence[Any]]) -> bool:
    """Whether any of the arguments' leaves is a Dask array."""
    return any(lazy(leaf) for found in leaves for leaf in found)


def _placement(assemble: Assemble, n: int, nbatch: int) -> tuple[np.ndarray, list[tuple[int, ...]], Any]:
    """Where the result's entries come from: for every entry of every leaf (flat, in order),
    the index of its value among the ``n`` outputs, or ``n`` for a structural zero; the
    leaves' shapes (one point's) and the result's structure."""
    ones = (1,) * nbatch
    labels = [np.full(ones, k + 1.0) if nbatch else float(k + 1) for k in range(n)]
    leaves, tree = flatten(assemble(labels, ones), "result")
    gather, shapes = [], []
    for leaf in leaves:
        if not isinstance(leaf, (float, np.ndarray)):
            raise TypeError(f"a result of type {type(leaf).__name__} cannot be a Dask array; on Dask arrays give "
                            "the dense form (sparse=False)")
        found = np.asarray(leaf, dtype=float)
        entries = found.reshape(-1)
        whole = np.rint(entries)
        if not (np.array_equal(whole, entries) and whole.min(initial=0) >= 0 and whole.max(initial=0) <= n):
            raise RuntimeError("the transform's assembly computes with its values instead of placing them; it "
                               "cannot run blockwise on Dask arrays")
        gather.append(np.where(whole == 0, n, whole - 1).astype(np.intp))
        shapes.append(found.shape[nbatch:])
    return (np.concatenate(gather) if gather else np.zeros(0, np.intp)), shapes, tree


class Gathered:
    """The plan of a traced transform's chunk: each leaf's inputs by ``columns`` (a chunk's block,
    or a leaf that every chunk shares), the program's values placed into the result's leaves,
    flat along a last axis."""

    def __init__(self, program: str, sources: list[tuple[tuple[bool, ...], Any]], columns: Columns,
                 gather: np.ndarray) -> None:
        #: Per leaf: its batch levels, and its value, or (a block) the shape of one point of it.
        self.program, self.sources, self.columns, self.gather = program, sources, columns, gather

    def pattern(self) -> tuple[bool, ...]:
        found: list[bool] = []
        for levels, value in self.sources:
            probe = np.zeros((1,) * sum(levels) + value) if isinstance(value, tuple) else value
            found += [np.ndim(c) == 0 for c in self.columns(probe, levels)]
        return tuple(found)

    def evaluate(self, compiled: Callable[..., Any], blocks: Sequence[Any]) -> np.ndarray:
        found, given = [], iter(blocks)
        for levels, value in self.sources:
            found += self.columns(next(given) if isinstance(value, tuple) else value, levels)
        results = compiled(*found)
        values = np.broadcast_arrays(*(results if isinstance(results, tuple) else (results,)))
        stacked = np.stack([*values, np.zeros(values[0].shape)], axis=-1)
        return stacked[..., self.gather]


def over_batch(compiled: Any, assemble: Assemble, leaves: list[list[Any]],
               levels: Sequence[tuple[bool, ...]] | None, columns: Columns) -> Any:
    """A traced transform's result on arguments with Dask arrays among their leaves: a pytree of
    lazy Dask arrays chunked along the outermost batch axis (``levels``: per argument, whether
    each level of vmap maps it; None: one point, one task)."""
    import dask.array as da

    program = cluster.shipped(compiled)
    n = len(cluster.unwrapped(compiled).program.outputs)
    nbatch = len(levels[0]) if levels else 0
    gather, shapes, tree = _placement(assemble, n, nbatch)
    per_leaf = [(tuple(levels[k]) if levels else (), leaf) for k, found in enumerate(leaves) for leaf in found]
    batch = _batch(per_leaf, nbatch)
    rows = cluster.chunk_rows(compiled, batch[0] if batch else 1, max(1, math.prod(batch[1:])))
    sources: list[tuple[tuple[bool, ...], Any]] = []
    pairs: list[Any] = []
    letter = 0
    for lv, leaf in per_leaf:
        mapped = bool(lv) and lv[0]
        if not (mapped or lazy(leaf)):
            sources.append((lv, leaf))  # the same for every chunk: in the plan, shipped once
            continue
        array = da.asarray(leaf, dtype=float)
        index = tuple(f"axis{j}" for j in range(letter, letter + array.ndim))
        letter += array.ndim
        if mapped:
            array, index = array.rechunk((rows,) + array.shape[1:]), ("batch",) + index[1:]
        else:
            array = array.rechunk(array.shape)
        sources.append((lv, tuple(array.shape[sum(lv):])))
        pairs += [array, index]
    plan = Gathered(program.key, sources, columns, gather)
    out = ("batch",) * bool(nbatch) + tuple(f"inner{j}" for j in range(1, nbatch)) + ("entries",)
    new = {f"inner{j}": batch[j] for j in range(1, nbatch)} | {"entries": len(gather)}
    flat = da.blockwise(cluster.run, out, *cluster.keys(program, plan), *pairs, new_axes=new, concatenate=True,
                        dtype=float, meta=np.empty((0,) * len(out)))
    parts, at = [], 0
    for shape in shapes:
        size = math.prod(shape)
        parts.append(flat[..., at:at + size].reshape(batch + shape))
        at += size
    return unflatten(tree, parts)


def per_point(compiled: Any, points: Any, plan: Callable[[str], cluster.Plan], evaluations: int = 1) -> Any:
    """One value per row of ``points`` (a Dask array (n, d)), lazily: a task per chunk of rows,
    which ``plan`` (made from the program's key) evaluates; ``evaluations``: the program's
    evaluations a point costs (a stochastic operator's probes), which the chunks are sized by."""
    import dask.array as da

    program = cluster.shipped(compiled)
    rows = cluster.chunk_rows(compiled, points.shape[0], evaluations)
    array = points.rechunk((rows, points.shape[1]))
    return da.blockwise(cluster.run, "i", *cluster.keys(program, plan(program.key)), array, "ij", concatenate=True,
                        dtype=float, meta=np.empty((0,)))


def _batch(per_leaf: list[tuple[tuple[bool, ...], Any]], nbatch: int) -> tuple[int, ...]:
    """The batch shape: per level, the size of the axis of the leaves it maps."""
    sizes: list[set[int]] = [set() for _ in range(nbatch)]
    for levels, leaf in per_leaf:
        shape = np.shape(leaf)
        mapped = [j for j in range(nbatch) if levels[j]]
        for axis, j in enumerate(mapped):
            sizes[j].add(shape[axis])
    if any(len(s) != 1 for s in sizes):
        raise ValueError(f"vmap: the batched arguments have different batch sizes {[sorted(s) for s in sizes]}")
    return tuple(s.pop() for s in sizes)
