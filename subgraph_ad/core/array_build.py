"""The builders of array nodes: each checks its operands' shapes (a ShapeError naming the op and
the shapes, the tape unchanged), folds what needs no node (a reshape to the same shape, an op on
constant tables only) and interns the rest.

>>> from subgraph_ad import Tape
>>> tape = Tape(); x = tape.array("x", [1.0, 2.0, 3.0])
>>> (x * 2).index == (2 * x).index, x[1:].shape, (x @ x).shape
(False, (2,), ())
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from .arrays import (ARRAY_OPS, Shape, ShapeError, Table, axes_of, broadcast, index_key, matmul_shape,
                     shape_of)
from .ops import Node

if TYPE_CHECKING:  # pragma: no cover - typing only
    from ..functions.base import Function
    from .tape import Tape


def _constant(tape: Tape, i: int) -> Any:
    """The value of a constant or a table node, else None."""
    node = tape.nodes[i]
    if node.op == "const":
        return node.payload
    if node.op == "table":
        return node.payload[1].array
    return None


def table(tape: Tape, value: Any) -> int:
    """A constant array; equal contents are one node (a 0-d value is a scalar constant)."""
    found = Table(value)
    if not found.array.ndim:
        return tape.constant(float(found.array))
    return node(tape, "table", (), (found.array.shape, found))


def zeros(tape: Tape, shape: Shape) -> int:
    """A structural zero of ``shape``: the tape's 0 for a number, a table of zeros for an array
    (what a derivative that is zero gives for an array output)."""
    return table(tape, np.zeros(shape)) if shape else tape.zero.index


def node(tape: Tape, op: str, args: tuple[int, ...], payload: tuple[Any, ...]) -> int:
    """Intern the array node; an op on constants only is folded to its value (a table)."""
    consts = [_constant(tape, a) for a in args]
    if args and all(c is not None for c in consts):
        shapes = [shape_of(tape, a) for a in args]
        with np.errstate(all="ignore"):
            value = ARRAY_OPS[op].value(Node(op, args, payload), [np.asarray(c, dtype=float) for c in consts], shapes)
        return table(tape, value)
    tape.array_nodes = True
    return tape.intern(Node(op, args, payload))


def elementwise(tape: Tape, p: str | Function, args: tuple[int, ...]) -> int:
    """An arithmetic op (by name) or a function applied elementwise, with NumPy broadcasting."""
    name = p if isinstance(p, str) else p.name
    shape = broadcast([shape_of(tape, a) for a in args], name)
    if p in ("add", "sub", "mul", "div", "pow") and len(args) == 2:
        a, b = args
        ca, cb = _constant(tape, a), _constant(tape, b)
        unit = 0.0 if p in ("add", "sub") else 1.0
        if cb is not None and np.all(np.asarray(cb) == unit) and shape_of(tape, a) == shape:
            return a  # x + 0, x * 1, x / 1, x ** 1: the operand, when it has the result's shape
        if ca is not None and p in ("add", "mul") and np.all(np.asarray(ca) == unit) and shape_of(tape, b) == shape:
            return b
        if p == "pow" and cb is not None and np.all(np.asarray(cb) == 0.0):
            return table(tape, np.ones(shape))  # x ** 0 (the derivative of x ** 1)
    folded = _signs(tape, p, args)
    return node(tape, "map", args, (shape, p)) if folded is None else folded


def _scaled(tape: Tape, i: int) -> tuple[float, int]:
    """An array node as c · x, for a scalar constant c: c·x, x·c and −x read so, else 1 · x."""
    found = tape.nodes[i]
    if found.op == "map" and found.payload[1] == "neg":
        return -1.0, found.args[0]
    if found.op == "map" and found.payload[1] == "mul":
        for k in (0, 1):
            c = tape.nodes[found.args[k]]
            if c.op == "const":
                return float(c.payload), found.args[1 - k]
    return 1.0, i


def _signs(tape: Tape, p: str | Function, args: tuple[int, ...]) -> int | None:
    """Constant factors and signs gathered, as the scalar fold gathers them: −(c·x) is (−c)·x,
    c·(d·x) is (cd)·x, x + x is 2·x (−2·tanh·sech², tanh″'s factor, is one pass, not three)."""
    if p == "neg":
        c, x = _scaled(tape, args[0])
        return None if x == args[0] else scaled(tape, -c, x)
    if p == "add" and args[0] == args[1]:
        return scaled(tape, 2.0, args[0])
    if p == "mul":
        for k in (0, 1):
            factor = tape.nodes[args[k]]
            if factor.op == "const":
                d, x = _scaled(tape, args[1 - k])
                return None if x == args[1 - k] else scaled(tape, float(factor.payload) * d, x)
        for k in (0, 1):  # (c·x)·T for a table T and c = ±2ⁿ: x·(cT), exactly the same numbers, one pass less
            if tape.nodes[args[k]].op == "table":
                d, x = _scaled(tape, args[1 - k])
                if x != args[1 - k] and abs(math.frexp(d)[0]) == 0.5:
                    shape = broadcast([shape_of(tape, a) for a in args], "mul")
                    return node(tape, "map", (x, table(tape, d * _constant(tape, args[k]))), (shape, "mul"))
    return None


def scaled(tape: Tape, c: float, x: int) -> int:
    """c · x for a scalar constant c: x itself for 1, −x for −1."""
    shape = shape_of(tape, x)
    if c == 1.0:
        return x
    if c == -1.0:
        return node(tape, "map", (x,), (shape, "neg"))
    return node(tape, "map", (tape.constant(c), x), (shape, "mul"))


def matmul(tape: Tape, a: int, b: int) -> int:
    return node(tape, "matmul", (a, b), (matmul_shape(shape_of(tape, a), shape_of(tape, b)),))


def reduce_sum(tape: Tape, a: int, axis: Any = None) -> int:
    shape = shape_of(tape, a)
    axes = axes_of(axis, len(shape), "sum")
    if not axes:
        return a
    return node(tape, "sum", (a,), (tuple(n for k, n in enumerate(shape) if k not in axes), axes))


def broadcast_to(tape: Tape, a: int, shape: Shape) -> int:
    if broadcast([shape_of(tape, a), shape], "broadcast_to") != shape:
        raise ShapeError(f"broadcast_to: shape {shape_of(tape, a)} does not broadcast to {shape}")
    return a if shape_of(tape, a) == shape else node(tape, "broadcast", (a,), (shape,))


def reshape(tape: Tape, a: int, shape: Any) -> int:
    old = shape_of(tape, a)
    try:
        new = tuple(int(n) for n in np.empty(old, dtype=np.bool_).reshape(shape).shape)
    except (TypeError, ValueError) as error:
        raise ShapeError(f"reshape: cannot reshape an array of shape {old} into {shape!r} ({error})") from None
    return a if new == old else node(tape, "reshape", (a,), (new,))


def transpose(tape: Tape, a: int, axes: Sequence[int] | None = None) -> int:
    shape = shape_of(tape, a)
    perm = tuple(range(len(shape)))[::-1] if axes is None else tuple(axes_of(k, len(shape), "transpose")[0] for k in axes)
    if sorted(perm) != list(range(len(shape))):
        raise ValueError(f"transpose: axes {axes!r} are not a permutation of the {len(shape)} axes of shape {shape}")
    if perm == tuple(range(len(shape))):
        return a
    return node(tape, "transpose", (a,), (tuple(shape[k] for k in perm), perm))


def index(tape: Tape, a: int, key: Any) -> int:
    shape = shape_of(tape, a)
    normal, out = index_key(key, shape)
    if out == shape and all(item == (0, n, 1) for item, n in zip(normal, shape)):
        return a
    stacked = tape.nodes[a]
    if stacked.op == "stack" and len(normal) == 1 and isinstance(normal[0], int):
        return stacked.args[normal[0]]  # item k of a stack is what was stacked there
    return node(tape, "index", (a,), (out, normal))


def place(tape: Tape, a: int, shape: Shape, normal: tuple[Any, ...]) -> int:
    """The array of ``shape`` that is ``a`` at the index ``normal`` (an ``index_key`` form) and 0
    elsewhere: the adjoint of an index."""
    return node(tape, "place", (a,), (shape, normal))


def concat(tape: Tape, args: Sequence[int], axis: int = 0) -> int:
    shapes = [shape_of(tape, a) for a in args]
    if not args or not all(shapes):
        raise ShapeError(f"concatenate takes one or more arrays of at least one axis, got shapes {shapes}")
    ndim = len(shapes[0])
    if any(len(s) != ndim for s in shapes):
        raise ShapeError(f"concatenate: the arrays have different numbers of axes: shapes {shapes}")
    k = axes_of(axis, ndim, "concatenate")[0]
    if any(s[:k] + s[k + 1:] != shapes[0][:k] + shapes[0][k + 1:] for s in shapes):
        raise ShapeError(f"concatenate along axis {k}: shapes {shapes} differ on another axis")
    if len(args) == 1:
        return args[0]
    shape = shapes[0][:k] + (sum(s[k] for s in shapes),) + shapes[0][k + 1:]
    return node(tape, "concat", tuple(args), (shape, k))


def stack(tape: Tape, args: Sequence[int]) -> int:
    shapes = {shape_of(tape, a) for a in args}
    if not args or len(shapes) != 1:
        raise ShapeError(f"stack takes one or more operands of one shape, got shapes {sorted(shapes)}")
    return node(tape, "stack", tuple(args), ((len(args),) + shapes.pop(),))


__all__ = ["broadcast_to", "concat", "elementwise", "index", "matmul", "node", "place", "reduce_sum",
           "reshape", "stack", "table", "transpose"]
