"""A traced transform's result, assembled from its program's values: the structure of an
argument (a gradient, a tangent) or of f's result filled in, float32 kept where the arguments
had it, and matrices from their distinct structural nonzeros (dense, ``scipy.sparse``, or JAX's
blocks of pytrees). Nested in another trace, the values are Terms of that trace and the result
holds them (a ``TermArray`` for an array).

>>> import numpy as np
>>> tree_values(Tree("tuple", None, (Tree("leaf", ()), Tree("leaf", (2,)))), [1.0, 2.0, 3.0], 0, ())
((1.0, array([2., 3.])), 3)
"""

from __future__ import annotations

import bisect
import itertools
import math
from typing import Any, Callable, Sequence

import numpy as np

from ..ad.matrices import Sparse, sparse_matrix
from ..core import Tape, Term
from ..core.arrays import spans
from ..interop.dask_arrays import lazy
from ..interop.numpy_dispatch import TermArray
from ..pytrees import Tree, flatten, leaf_shapes, unflatten
from .tracer import Traced

#: How a built transform turns the program's values into its result: (the outputs' values, each
#: a number or an array of the batch's shape; the batch shape) -> result.
Assemble = Callable[[list[Any], tuple[int, ...]], Any]


def block(values: list[Any], start: int, shape: tuple[int, ...], batch: tuple[int, ...]) -> Any:
    """Values start.. as one leaf of ``shape`` per batch point: a float for one number at one
    point."""
    size = math.prod(shape)
    if shape and isinstance(values, Packed):
        found = values.whole(start, size)
        if found is not None:  # an array output: as it came, no copy per number
            return found.reshape(batch + shape)
    part = values[start:start + size]
    if part and isinstance(part[0], Term):  # nested: Terms of the outer trace
        return part[0] if not shape else term_array(part, shape)
    if not batch:
        return float(part[0]) if not shape else np.array(part, dtype=float).reshape(shape)
    if not shape and not isinstance(values, Packed) and isinstance(part[0], np.ndarray) and part[0].shape == batch:
        return part[0]  # a scalar program's output: an array of its own (``Compiled`` makes each), handed over
    out = np.empty(batch + (size,))
    for k, v in enumerate(part):
        out[..., k] = v
    return out.reshape(batch + shape)


class Packed(Sequence[Any]):
    """An array program's outputs (each of the batch's shape and then its own) read as the one
    value per number that the assembling functions take: element k of an array output is its
    ``[..., k]`` number (a view), and ``whole`` hands over an array output as it is. Nothing is
    laid out per number up front: a gradient of 10⁶ numbers is one array, not 10⁶ entries."""

    def __init__(self, values: Any, shapes: Sequence[tuple[int, ...]], columns: np.ndarray | None = None) -> None:
        self.values = list(values) if isinstance(values, tuple) else [values]
        self.shapes = list(shapes)
        self.starts = [0, *itertools.accumulate(map(math.prod, self.shapes))]
        #: Every number along the last axis of one array (``Expanded.columns``; ``values`` unused),
        #: so that any run of them, an array output or many scalar ones, is one view.
        self.columns = columns

    def __len__(self) -> int:
        return self.starts[-1]

    def __getitem__(self, k: Any) -> Any:
        if isinstance(k, slice):
            return [self[i] for i in range(*k.indices(len(self)))]
        k = range(len(self))[k]  # an IndexError past the end, as a list's
        if self.columns is not None:
            return self.columns[..., k]
        j = bisect.bisect_right(self.starts, k) - 1
        value, shape = self.values[j], self.shapes[j]
        if not shape:
            return value
        where = tuple(int(i) for i in np.unravel_index(k - self.starts[j], shape))
        return value[(Ellipsis,) + where]

    def whole(self, start: int, size: int) -> Any:
        """The array output that is exactly numbers start..start+size (with ``columns``, any
        numbers start..start+size), else None."""
        if self.columns is not None:
            return self.columns[..., start:start + size] if 0 <= start and start + size <= len(self) else None
        j = bisect.bisect_left(self.starts, start)
        if j >= len(self.shapes) or self.starts[j] != start or not self.shapes[j] or self.starts[j + 1] - start != size:
            return None
        return np.asarray(self.values[j])


def term_array(terms: Sequence[Any], shape: tuple[int, ...]) -> Any:
    array = np.empty(len(terms), dtype=object)
    array[:] = list(terms)
    return array.reshape(shape).view(TermArray)


def result_dtype(leaves: list[list[Any]]) -> Any:
    """The float dtype a result keeps: float32 (or float16) where every floating array among the
    arguments (NumPy or Dask arrays alike) has it, None (float64) otherwise — as JAX keeps
    float32, Python numbers weak."""
    kinds = {leaf.dtype for found in leaves for leaf in found
             if (isinstance(leaf, (np.ndarray, np.floating)) or lazy(leaf)) and leaf.dtype.kind == "f"}
    if not kinds:
        return None
    kept = np.result_type(*kinds)
    return kept if kept.itemsize < 8 else None


def cast(result: Any, dtype: Any) -> Any:
    """Every float leaf of a result as ``dtype`` (a Dask array's lazily)."""
    if dtype is None:
        return result
    leaves, tree = flatten(result, "result")
    return unflatten(tree, [dtype.type(v) if isinstance(v, float) else v.astype(dtype)
                            if (isinstance(v, np.ndarray) or lazy(v)) and v.dtype.kind == "f" else v for v in leaves])


def tree_values(tree: Tree, values: list[Any], start: int, batch: tuple[int, ...]) -> tuple[Any, int]:
    """The pytree ``tree`` filled from the stack at ``start``; and where the next values start."""
    leaves = []
    for shape in leaf_shapes(tree):
        leaves.append(block(values, start, shape, batch))
        start += math.prod(shape)
    return unflatten(tree, leaves), start


class Filled:
    """The assembly of a result that is one pytree filled with every output in order (a
    gradient, an HVP, f's value): ``at_point`` fills it from a point's output numbers as the
    program gives them, each array leaf the array given or a view of it — the one-point call of
    a transform, with nothing laid out per number (``Transformed.run``)."""

    def __init__(self, tree: Tree) -> None:
        self.tree = tree
        self._parts = spans(leaf_shapes(tree))

    def __call__(self, values: list[Any], batch: tuple[int, ...]) -> Any:
        return tree_values(self.tree, values, 0, batch)[0]

    def at_point(self, given: Sequence[np.ndarray]) -> Any:
        """The result from ``given``, new arrays of the outputs' numbers end to end: one a leaf
        (an array program's outputs), or any other split (one vector: an expanded program's)."""
        return self.way(tuple(g.shape for g in given))(given)

    def way(self, given: tuple[tuple[int, ...], ...]) -> Callable[[Sequence[np.ndarray]], Any]:
        """``at_point`` for outputs of these shapes, the split decided once (a transform keeps it
        with its program, whose outputs' shapes are fixed)."""
        tree, parts = self.tree, self._parts
        shapes = [shape for _, _, shape in parts]

        def leaf(g: np.ndarray, shape: tuple[int, ...]) -> Any:
            return g.reshape(shape) if shape else float(g.reshape(-1)[0])

        if given == tuple(shapes) and all(shapes):  # each output a leaf as it is: nothing to reshape
            return (lambda found: found[0]) if tree.kind == "leaf" else lambda found: unflatten(tree, found)
        if tuple(math.prod(shape) for shape in given) == tuple(to - at for at, to, _ in parts):  # an output a leaf
            if tree.kind == "leaf":
                return lambda given: leaf(given[0], shapes[0])
            return lambda given: unflatten(tree, [leaf(g, shape) for g, shape in zip(given, shapes)])

        def split(given: Sequence[np.ndarray]) -> Any:
            found = given[0].reshape(-1) if len(given) == 1 else np.concatenate([g.reshape(-1) for g in given])
            leaves = [leaf(found[at:to], shape) for at, to, shape in parts]
            return leaves[0] if tree.kind == "leaf" else unflatten(tree, leaves)

        return split


def leafwise(trace: Traced, k: int, values: list[Any], start: int, batch: tuple[int, ...]) -> tuple[Any, int]:
    """Argument k's structure filled from the stack (a gradient, a tangent)."""
    return tree_values(trace.trees[k], values, start, batch)


def shaped(shape: tuple[int, ...]) -> Assemble:
    return lambda values, batch: block(values, 0, shape, batch)


def _nonzeros(matrix: Sparse, tape: Tape) -> tuple[list[Term], np.ndarray]:
    """The distinct Terms of a sparse matrix (a symmetric pair is one Term, compiled once), and
    for each entry the position of its Term among them. No nonzero at all still compiles one
    Term, the 0, of which nothing is taken."""
    distinct: dict[int, Term] = {}
    for t in matrix.terms:
        distinct.setdefault(t.index, t)
    position = {i: k for k, i in enumerate(distinct)}
    terms = list(distinct.values()) or [tape.zero]
    return terms, np.array([position[t.index] for t in matrix.terms], dtype=np.intp)


def sparse_result(matrix: Sparse, tape: Tape) -> tuple[list[Term], Assemble]:
    """A traced sparse matrix: its distinct nonzero Terms, and their values as a ``scipy.sparse``
    CSR matrix (a dense ndarray without SciPy); one point only."""
    terms, take = _nonzeros(matrix, tape)

    def assemble(values: list[Any], batch: tuple[int, ...]) -> Any:
        if values and isinstance(values[0], Term):
            raise TypeError("sparse=True cannot nest inside another transform: a scipy.sparse matrix holds numbers, "
                            "not the Terms of the outer trace; use sparse=False there")
        if batch:
            raise TypeError("a sparse matrix (sparse=True) is one point's; vmap a dense one (sparse=False)")
        return sparse_matrix(matrix.rows, matrix.cols, np.array(values, dtype=float)[take], matrix.shape)

    return terms, assemble


def _dense(matrix: Sparse, tape: Tape, shape: tuple[int, ...]) -> tuple[list[Term], Assemble]:
    """A traced dense matrix from its structural nonzeros only, scattered into zeros of
    ``shape``: a Hessian of n vars compiles its distinct nonzeros, not n² entries that are
    mostly the constant 0 (Rosenbrock-1000: 1,999 distinct Terms compiled, not 1,000,000)."""
    terms, take = _nonzeros(matrix, tape)
    flat = np.array(matrix.rows, dtype=np.intp) * matrix.shape[1] + np.array(matrix.cols, dtype=np.intp)

    def scatter(values: list[Any], batch: tuple[int, ...]) -> Any:
        if values and isinstance(values[0], Term):  # nested: Terms of the outer trace, zeros its 0
            entries = [values[0].tape.zero] * (matrix.shape[0] * matrix.shape[1])
            for k, t in zip(flat, take):
                entries[k] = values[t]
            return entries[0] if not shape else term_array(entries, shape)
        out = np.zeros(batch + (matrix.shape[0] * matrix.shape[1],))
        if batch:
            for k, t in zip(flat, take):  # one column per entry: no stack of all the values first
                out[..., k] = values[t]
        else:
            out[flat] = np.array(values, dtype=float)[take]
        if not batch and not shape:
            return float(out[0])
        return out.reshape(batch + shape)

    return terms, scatter

def argument_tree(trace: Traced, argnums: int | tuple[int, ...], nums: tuple[int, ...]) -> Tree:
    """The structure the derivative takes of the arguments: argument argnums's, or a tuple of them."""
    if isinstance(argnums, int):
        return trace.trees[nums[0]]
    return Tree("tuple", None, tuple(trace.trees[k] for k in nums))


def result_tree(trace: Traced, what: str) -> tuple[list[Term], Tree]:
    """f's result: a pytree where it is a tuple, dict or namedtuple (JAX's layout), else one array
    (a list of numbers or Terms reads as np.asarray reads it)."""
    if isinstance(trace.out, (tuple, dict)):
        return trace.tree_outputs(trace.out, what)
    outs, shape = trace.outputs(what)
    return outs, Tree("leaf", shape)


def blocks(matrix: Sparse, tape: Tape, out_tree: Tree, in_tree: Tree) -> tuple[list[Term], Assemble]:
    """A Jacobian of pytrees in JAX's layout: the result's structure, each leaf of it the
    arguments' structure, each leaf of that a block of shape out_leaf.shape + in_leaf.shape —
    from the distinct structural nonzeros only (``_dense``)."""
    rows, cols = matrix.shape
    terms, dense = _dense(matrix, tape, (rows, cols))
    out_shapes, in_shapes = leaf_shapes(out_tree), leaf_shapes(in_tree)

    def assemble(values: list[Any], batch: tuple[int, ...]) -> Any:
        full = dense(values, batch)
        parts, r = [], 0
        for so in out_shapes:
            row, c = [], 0
            for si in in_shapes:
                block = full[..., r:r + math.prod(so), c:c + math.prod(si)].reshape(batch + so + si)
                row.append(block if block.ndim else block[()] if block.dtype == object else float(block))
                c += math.prod(si)
            parts.append(unflatten(in_tree, row))
            r += math.prod(so)
        return unflatten(out_tree, parts)

    return terms, assemble


def single(out_tree: Tree, in_tree: Tree, what: str) -> None:
    if out_tree.kind != "leaf" or in_tree.kind != "leaf":
        raise TypeError(f"{what}(..., sparse=True) is one matrix: of one array result by one array argument; for "
                        "pytrees use sparse=False")




__all__ = ["Assemble", "Filled", "Packed", "argument_tree", "block", "blocks", "cast", "leafwise", "result_dtype", "result_tree", "shaped",
           "single", "sparse_result", "term_array", "tree_values"]
