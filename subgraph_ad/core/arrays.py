"""Array nodes: one node for a whole array operation (a matrix product, an elementwise function
over an array, a sum over an axis, a slice), on the same tape as the scalar nodes.

A scalar graph spends a node on every multiply-add of a dense layer; an array node is one node
for the layer and one NumPy call when it is evaluated, so array-written code builds in
milliseconds. Each array op is declared once here (``ARRAY_OPS``): its shape rule, its value
under NumPy and its expansion into scalar nodes (``expand``: what the engines that know only
scalars read, and what checks an array result against its scalar twin). Forward and reverse
rules live with the other rules of their engine (``ad/arrays.py``).

An array node's payload starts with its shape; an array var is a ``var`` whose shape the tape
records by name (``Tape.array``). Values carry any batch axes in FRONT of the node's shape, as a
scalar var's batch of points is its value's whole shape.

>>> from subgraph_ad import Tape
>>> import numpy as np
>>> tape = Tape(); W = tape.array("W", np.eye(2)); x = tape.array("x", [1.0, 2.0])
>>> y = W @ x + 1.0
>>> y.shape, y.eval(), y.sum().eval()
((2,), array([2., 3.]), 5.0)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from .ops import OPS, Node

if TYPE_CHECKING:  # pragma: no cover - typing only
    from .tape import Tape
    from .term import Term

Shape = tuple[int, ...]


class ShapeError(ValueError):
    """Array operands whose shapes do not fit the operation; the message names the op and both
    shapes, and the tape is unchanged."""


class Table:
    """A constant array, hashed by its content so equal tables are one node."""

    __slots__ = ("array", "_key")

    def __init__(self, value: Any) -> None:
        try:
            array = np.array(value, dtype=float, order="C")  # C order: what a product by it broadcasts into
        except (TypeError, ValueError) as error:
            raise TypeError(f"a constant array must be a rectangular array of real numbers, got "
                            f"{type(value).__name__} {value!r:.80} ({error})") from None
        array.setflags(write=False)
        self.array = array
        self._key = (array.shape, array.tobytes())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Table) and other._key == self._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __repr__(self) -> str:
        return f"table{list(self.array.shape)}"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Table, (self.array,))


# -- shapes ---------------------------------------------------------------------------------------
def shape_of(tape: Tape, i: int) -> Shape:
    """The shape of node i: () for a scalar node."""
    node = tape.nodes[i]
    if node.op in ARRAY_OPS:
        return node.payload[0]  # type: ignore[no-any-return]
    if node.op == "var" and tape.var_shapes:
        return tape.var_shapes.get(node.payload, ())
    return ()


def is_array(tape: Tape, i: int) -> bool:
    """Whether node i holds an array (an array op of a non-empty shape, or an array var)."""
    return bool(shape_of(tape, i))


def has_arrays(tape: Tape, order: Sequence[int]) -> bool:
    """Whether any of these nodes is an array op or an array var: what an engine that knows only
    scalars must ``expand`` first."""
    if not tape.var_shapes and not tape.array_nodes:
        return False
    nodes = tape.nodes
    return any(nodes[i].op in ARRAY_OPS or (nodes[i].op == "var" and nodes[i].payload in tape.var_shapes)
               for i in order)


def broadcast(shapes: Sequence[Shape], what: str) -> Shape:
    """NumPy's broadcast of operand shapes, or a ShapeError naming the op and the shapes."""
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        listed = " and ".join(str(s) for s in shapes)
        raise ShapeError(f"{what}: shapes {listed} do not broadcast") from None


def _axis(axis: int, ndim: int, what: str) -> int:
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"{what}: an axis must be an int, got {type(axis).__name__} {axis!r}")
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(f"{what}: axis {axis} is out of range for an array of {ndim} dimension(s)")
    return int(axis) % ndim


def axes_of(axis: Any, ndim: int, what: str) -> tuple[int, ...]:
    """The axes a reduction names (None: all), normalised, sorted, each once."""
    if axis is None:
        return tuple(range(ndim))
    found = sorted({_axis(a, ndim, what) for a in (axis if isinstance(axis, (tuple, list)) else (axis,))})
    return tuple(found)


def matmul_shape(a: Shape, b: Shape) -> Shape:
    if not a or not b or len(a) > 2 or len(b) > 2:
        raise ShapeError(f"matmul takes 1-D or 2-D operands, got shapes {a} and {b}")
    if a[-1] != b[0]:
        raise ShapeError(f"matmul: shapes {a} and {b} do not fit ({a[-1]} != {b[0]})")
    return a[:-1] + b[1:]


def index_key(key: Any, shape: Shape) -> tuple[tuple[Any, ...], Shape]:
    """A basic NumPy index (ints, slices, None, one Ellipsis) as a hashable normal form —
    ints as ints, slices as (start, stop, step) with their bounds resolved, None as None — and
    the shape it selects. Anything else (an array of indices, a Term) is refused by name."""
    items = key if isinstance(key, tuple) else (key,)
    if sum(item is Ellipsis for item in items) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(1 for item in items if item is not None and item is not Ellipsis)
    if used > len(shape):
        raise IndexError(f"too many indices for an array of shape {shape}: {key!r}")
    if Ellipsis not in items:
        items = items + (Ellipsis,)
    out: list[Any] = []
    result: list[int] = []
    dim = 0
    for item in items:
        if item is Ellipsis:
            for _ in range(len(shape) - used):
                out.append((0, shape[dim], 1))
                result.append(shape[dim])
                dim += 1
        elif item is None:
            out.append(None)
            result.append(1)
        elif isinstance(item, slice):
            start, stop, step = item.indices(shape[dim])
            result.append(len(range(start, stop, step)))
            out.append((start, None if stop < 0 else stop, step))  # -1 from indices() is "before 0"
            dim += 1
        elif isinstance(item, (int, np.integer)) and not isinstance(item, bool):
            if not -shape[dim] <= item < shape[dim]:
                raise IndexError(f"index {item} is out of bounds for axis {dim} with size {shape[dim]}")
            out.append(int(item) % shape[dim])
            dim += 1
        else:
            raise TypeError(f"an array node takes ints, slices, None and ... as indices, got "
                            f"{type(item).__name__} {item!r:.60}")
    dim = len(shape)
    while out and out[-1] == (0, shape[dim - 1], 1):  # x[0, :] is x[0]: one node, printed as written
        out.pop()
        dim -= 1
    return tuple(out), tuple(result)


def as_index(key: tuple[Any, ...], ndim: int | None = None) -> tuple[Any, ...]:
    """The normal form of ``index_key`` back as a NumPy index; with ``ndim`` (the operand's
    axes), padded with full slices, so that it still means the same axes behind batch axes."""
    found = tuple(slice(*item) if isinstance(item, tuple) else item for item in key)
    if ndim is None:
        return found
    return found + (slice(None),) * (ndim - sum(1 for item in key if item is not None))


# -- values, with batch axes in front --------------------------------------------------------------
def batch_of(value: Any, shape: Shape) -> Shape:
    """The batch axes in front of a value of a node of ``shape``."""
    return tuple(np.shape(value)[:np.ndim(value) - len(shape)])


def aligned(value: Any, shape: Shape, ndim: int) -> Any:
    """A value of a node of ``shape`` made ready to broadcast against nodes of ``ndim`` axes:
    size-1 axes between its batch axes and its own, so batch meets batch."""
    missing = ndim - len(shape)
    if not missing or np.ndim(value) == len(shape):
        return value
    batch = batch_of(value, shape)
    return np.reshape(value, batch + (1,) * missing + shape)


def _map_value(node: Node, values: list[Any], shapes: list[Shape]) -> Any:
    ndim = len(node.payload[0])
    ready = [aligned(v, s, ndim) for v, s in zip(values, shapes)]
    p = node.payload[1]
    return OPS[p].value(*ready) if isinstance(p, str) else p.f(*ready)


def _matmul_value(node: Node, values: list[Any], shapes: list[Shape]) -> Any:
    (a, b), (sa, sb) = values, shapes
    batched_a, batched_b = np.ndim(a) > len(sa), np.ndim(b) > len(sb)
    if batched_a and batched_b:
        subscripts = {(1, 1): "...k,...k->...", (2, 1): "...ik,...k->...i", (1, 2): "...k,...kj->...j",
                      (2, 2): "...ik,...kj->...ij"}[(len(sa), len(sb))]
        return np.einsum(subscripts, a, b)
    if batched_a:
        return batched_times(a, sa, b)
    if batched_b:
        return times_batched(a, b, sb)
    return a @ b


def batched_times(a: Any, sa: Shape, b: Any) -> Any:
    """A batch of vectors or matrices ``a`` (of shape ``sa`` behind the batch) times one matrix
    or vector ``b``: ONE matrix product, the batch folded into the rows (``np.matmul`` would loop
    over the batch, one small product per point)."""
    if a.ndim == 2:  # already one matrix: BLAS reads it in either memory order, no copy
        return a @ b
    batch = a.shape[:a.ndim - len(sa)]
    found = np.reshape(a, (-1, sa[-1])) @ b
    return np.reshape(found, batch + sa[:-1] + b.shape[1:])


def times_batched(a: Any, b: Any, sb: Shape) -> Any:
    """One matrix or vector ``a`` times a batch of vectors or matrices ``b`` (of shape ``sb``
    behind the batch): ONE matrix product, the contracted axis moved in front and the batch
    folded into the columns. The result is a view in the product's memory order (the batch
    behind the rows), which the next such product reads back without a copy."""
    nb = b.ndim - len(sb)
    if len(sb) == 1:  # a · b_p = b_p · aᵀ for every point p: the batch is the rows
        return batched_times(b, sb, np.transpose(a))
    columns = np.reshape(np.moveaxis(b, nb, 0), (sb[0], -1))  # (n, batch × k)
    found = np.reshape(a @ columns, a.shape[:-1] + b.shape[:nb] + sb[1:])
    return np.moveaxis(found, 0, nb) if a.ndim == 2 else found


def _sum_value(node: Node, values: list[Any], shapes: list[Shape]) -> Any:
    (a,), (s,) = values, shapes
    return np.sum(a, axis=tuple(axis - len(s) for axis in node.payload[1]))


def _full(value: Any, shape: Shape, target: Shape) -> Any:
    """A value of a node of ``shape`` broadcast to ``target`` (its batch axes kept)."""
    batch = batch_of(value, shape)
    return np.broadcast_to(aligned(value, shape, len(target)), batch + target)


def _common(values: list[Any], shapes: list[Shape]) -> list[Any]:
    """Values given one common batch (the broadcast of theirs), each in its own shape."""
    batch = np.broadcast_shapes(*(batch_of(v, s) for v, s in zip(values, shapes)))
    return [np.broadcast_to(v, batch + s) for v, s in zip(values, shapes)]


def _place_value(node: Node, values: list[Any], shapes: list[Shape]) -> Any:
    (a,), (s,) = values, shapes
    out = np.zeros(batch_of(a, s) + node.payload[0])
    out[(Ellipsis,) + as_index(node.payload[1], len(node.payload[0]))] = a
    return out


def _transpose_value(node: Node, values: list[Any], shapes: list[Shape]) -> Any:
    (a,), (s,) = values, shapes
    nb = np.ndim(a) - len(s)
    return np.transpose(a, tuple(range(nb)) + tuple(nb + p for p in node.payload[1]))


# -- expansion into scalar nodes ------------------------------------------------------------------
def scalar_form(node: Node) -> Node:
    """An elementwise array node (``map``) as its op or function on scalar operands; any other
    node as it is: what the local derivatives and the passes over array nodes read."""
    if node.op != "map":
        return node
    p = node.payload[1]
    return Node(p, node.args, None) if isinstance(p, str) else Node("fn", node.args, p)


def _map_expand(tape: Tape, node: Node, parts: list[Any]) -> Any:
    p = node.payload[1]
    if isinstance(p, str):
        op = OPS[p].apply
        return np.frompyfunc(op, len(parts), 1)(*parts)
    return np.frompyfunc(lambda *a: tape.apply(p, *(_term(tape, v) for v in a)), len(parts), 1)(*parts)


def _term(tape: Tape, value: Any) -> Term:
    from .term import Term

    return value if isinstance(value, Term) else tape.const(float(value))


def _place_expand(tape: Tape, node: Node, parts: list[Any]) -> Any:
    out = np.full(node.payload[0], tape.zero, dtype=object)
    out[as_index(node.payload[1])] = parts[0]
    return out


@dataclass(frozen=True)
class ArrayOp:
    """An array operation: its value under NumPy (operand values with batch axes in front, and
    the operands' shapes) and its expansion (operands as object arrays of scalar Terms)."""

    name: str
    value: Callable[[Node, list[Any], list[Shape]], Any]
    expand: Callable[[Tape, Node, list[Any]], Any]


ARRAY_OPS: dict[str, ArrayOp] = {op.name: op for op in (
    ArrayOp("table", lambda node, v, s: node.payload[1].array,
            lambda tape, node, parts: np.frompyfunc(lambda c: tape.const(float(c)), 1, 1)(node.payload[1].array)),
    ArrayOp("map", _map_value, _map_expand),
    ArrayOp("matmul", _matmul_value, lambda tape, node, parts: np.matmul(parts[0], parts[1])),
    ArrayOp("sum", _sum_value, lambda tape, node, parts: np.sum(parts[0], axis=node.payload[1])),
    ArrayOp("broadcast", lambda node, v, s: _full(v[0], s[0], node.payload[0]),
            lambda tape, node, parts: np.broadcast_to(parts[0], node.payload[0])),
    ArrayOp("reshape", lambda node, v, s: np.reshape(v[0], batch_of(v[0], s[0]) + node.payload[0]),
            lambda tape, node, parts: np.reshape(parts[0], node.payload[0])),
    ArrayOp("transpose", _transpose_value, lambda tape, node, parts: np.transpose(parts[0], node.payload[1])),
    ArrayOp("index", lambda node, v, s: np.asarray(v[0])[(Ellipsis,) + as_index(node.payload[1], len(s[0]))],
            lambda tape, node, parts: parts[0][as_index(node.payload[1])]),
    ArrayOp("place", _place_value, _place_expand),
    ArrayOp("concat", lambda node, v, s: np.concatenate(_common(v, s), axis=node.payload[1] - len(s[0])),
            lambda tape, node, parts: np.concatenate(parts, axis=node.payload[1])),
    ArrayOp("stack", lambda node, v, s: np.stack(_common(v, s), axis=-len(node.payload[0])),
            lambda tape, node, parts: _stacked(parts)),
)}


def _stacked(parts: list[Any]) -> Any:
    out = np.empty((len(parts),) + np.shape(parts[0]), dtype=object)
    for k, part in enumerate(parts):
        out[k] = part
    return out


def spans(shapes: Sequence[Shape]) -> list[tuple[int, int, Shape]]:
    """Where values of these shapes lie, one after another, in a flat run of their numbers:
    (start, end, shape) each."""
    found, at = [], 0
    for shape in shapes:
        size = math.prod(shape)
        found.append((at, at + size, shape))
        at += size
    return found


__all__ = ["ARRAY_OPS", "ArrayOp", "Shape", "ShapeError", "Table", "aligned", "as_index", "axes_of",
           "batch_of", "broadcast", "has_arrays", "index_key", "is_array", "matmul_shape", "scalar_form", "shape_of",
           "spans"]
