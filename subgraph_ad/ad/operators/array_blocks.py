"""Jacobian blocks by rows: the Laplacian pass's sparsity for layers that act on each row alike.

A node of shape (P,) + R whose row p depends only on the c columns offset + p·c … of the
pass's vars (a per-particle layer: ``x.reshape(P, 3) @ W``) holds its Jacobian block as
(c, P) + R instead of (d, P) + R, d = P·c or more: P times smaller, and a layer on it one
product of (c·P) rows where the dense block has (P·c·P). The pass's rules run on it unchanged
(the direction axis in front is c wide instead of d), where the rows stay apart: an
elementwise op of operands with the same rows, a product by a constant on the right, a sum
or transpose that keeps the rows' axis in front. A sum over the rows ends the block: its
Jacobian is the block laid out along the d columns (a transpose and a reshape). Anything
else (an index, a reshape, a product that mixes rows, weights) first makes its operands'
blocks dense: the values are the dense pass's, the cost no more than it.

A block starts at a var of two or more axes with more than one row, and at a reshape of a
var into such an array.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import numpy as np

from ...core import Term
from ...core import array_build as build
from ...core.arrays import shape_of
from ...core.ops import OPS, Node

if TYPE_CHECKING:  # pragma: no cover - typing only
    from .array_laplacian import _Pass

#: A Jacobian held by rows: (c, offset): row p's columns are offset + p·c + k, k < c.
Block = tuple[int, int]
D = Optional[Term]


def rows_of(p: "_Pass", shape: tuple[int, ...], offset: int) -> Optional[tuple[Term, Block]]:
    """The Jacobian of a var's own columns (from ``offset``) seen as an array of ``shape``, by
    rows: eye(c) on each row; None where the shape has fewer than two axes or one row, or the
    pass has weights (which pair columns of different rows)."""
    if len(shape) < 2 or shape[0] < 2 or p.metric is not None:
        return None
    c = int(np.prod(shape[1:]))
    eye = np.eye(c).reshape((c, 1) + shape[1:])
    found = build.broadcast_to(p.tape, build.table(p.tape, eye), (c,) + shape)
    return Term(p.tape, found), (c, offset)


def kept(p: "_Pass", i: int, node: Node) -> Optional[Block]:
    """The block node i's Jacobian keeps, its operands' own; None where it does not keep one,
    after making its operands' blocks dense."""
    moving = [a for a in node.args if a in p.jac]
    held = [a for a in moving if a in p.blocks]
    if not held:
        return None
    block = p.blocks[held[0]]
    if len(held) == len(moving) and all(p.blocks[a] == block for a in held) and _apart(p, node, moving, shape_of(p.tape, i)):
        return block
    for a in held:
        dense(p, a)
    return None


def _apart(p: "_Pass", node: Node, moving: list[int], shape: tuple[int, ...]) -> bool:
    """Whether node keeps its moving operands' rows apart (its rows' axis is theirs, in front)."""
    if node.op in ("map", "fn") or node.op in OPS:
        return all(len(shape_of(p.tape, a)) == len(shape) and shape_of(p.tape, a)[0] == shape[0] for a in moving)
    if node.op == "matmul":  # rows @ a constant
        a, b = node.args
        return moving == [a] and b not in p.jac and len(shape_of(p.tape, a)) == 2
    if node.op == "sum":
        return True  # over the rows: ``special`` lays the block out
    return node.op == "transpose" and node.payload[1][0] == 0


def special(p: "_Pass", i: int, node: Node, block: Optional[Block]) -> Optional[tuple[tuple[D, D], Optional[Block]]]:
    """Where blocks decide node i's (J, Δ) themselves: a var reshaped into rows starts a block,
    a sum over the rows ends one. None: the pass's own rule."""
    if node.op == "reshape" and block is None and node.args[0] in p.offsets and node.args[0] not in p.blocks:
        started = rows_of(p, node.payload[0], p.offsets[node.args[0]])
        return None if started is None else ((started[0], None), started[1])
    if node.op == "sum" and block is not None and 0 in node.payload[1]:
        (a,) = node.args
        axes = node.payload[1]
        jac = p.jac[a].sum(tuple(k + 1 for k in axes if k))  # (c, P) + the axes kept
        c, offset = block
        rows = jac.shape[1]
        perm = (1, 0) + tuple(range(2, jac.ndim))
        laid = jac.transpose(perm).reshape((rows * c,) + jac.shape[2:])
        lap = p.lap.get(a)
        return (_padded(p, laid, offset), None if lap is None else lap.sum(axes)), None
    return None


def dense(p: "_Pass", a: int) -> None:
    """Node a's Jacobian as the dense pass holds it, (d,) + its shape: row p's block placed at
    its columns, zeros elsewhere (one elementwise product by eye(P) and a reshape)."""
    c, offset = p.blocks.pop(a)
    jac = p.jac[a]  # (c, P) + R
    shape = shape_of(p.tape, a)
    rows, rest = shape[0], shape[1:]
    eye = Term(p.tape, build.table(p.tape, np.eye(rows).reshape((rows, 1, rows) + (1,) * len(rest))))
    spread = (eye * jac.reshape((1,) + jac.shape)).reshape((rows * c,) + shape)
    p.jac[a] = _padded(p, spread, offset)


def _padded(p: "_Pass", part: Term, offset: int) -> Term:
    """A block of columns offset… given the pass's d columns: zeros before and after it."""
    after = p.d - offset - part.shape[0]
    if not offset and not after:
        return part
    tape = p.tape
    pieces = [build.table(tape, np.zeros((n,) + part.shape[1:])) for n in (offset,) if n]
    pieces += [part.index] + [build.table(tape, np.zeros((n,) + part.shape[1:])) for n in (after,) if n]
    return Term(tape, build.concat(tape, pieces, 0))


__all__ = ["Block", "dense", "kept", "rows_of", "special"]
