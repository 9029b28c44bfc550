"""vmap inside a trace over data, as array nodes: the function traced once on one point of fresh
scalar vars, then lowered to elementwise array nodes over the batch — each fresh var becomes its
column of the data (one table), each node above it an array node of the batch's length — where
``vmap._unrolled`` appends one copy of the graph per point.

A physics-informed loss calls ``laplacian(u)`` on 10³ collocation points inside ``grad``: one
copy per point made the first step a graph of 10⁶ scalar nodes (10 s to build and compile);
lowered, it is a few thousand array nodes whatever the number of points. The outer trace's array
vars (the network's weights) enter by their elements (``W[i, j]``: ``expand_many(indexed=True)``),
so the gradient in them runs back through indexing, and the batch's sums are the adjoints of
broadcasting.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from ..core import Tape, Term
from ..core import array_build as build
from ..core.expand import expand_many


def batched(tape: Tape, flat: Sequence[Term], fresh: Sequence[Term], columns: Sequence[Any]) -> Optional[list[Term]]:
    """The templates ``flat`` (Terms of one point's ``fresh`` vars) at every point of the batch:
    one Term of shape (points,) each. ``columns`` holds, per fresh var, its values at the points
    (``_column``). None where they are traced values (the caller unrolls)."""
    leaves: dict[int, Term] = {}
    for v, c in zip(fresh, columns):
        found = _column(tape, c)
        if found is None:
            return None
        leaves[v.index] = found
    if not leaves:
        return None
    size = next(iter(leaves.values())).shape[0]
    out = []
    for part in expand_many(tape, [t.index for t in flat], leaves, indexed=True):
        if isinstance(part, np.ndarray):  # an array template cannot come from scalar Terms
            return None
        out.append(part if part.shape == (size,) else Term(tape, build.broadcast_to(tape, part.index, (size,))))
    return out


def _column(tape: Tape, column: Any) -> Optional[Term]:
    """A fresh var's values at the points as one Term of shape (points,): a column of an array
    node (a traced argument: its data stay live), or of plain numbers (a table); None for
    scalar Terms (traced values: the caller unrolls)."""
    if isinstance(column, Term):
        return column
    if column.ndim != 1 or (column.dtype == object and any(isinstance(v, Term) for v in column)):
        return None
    return Term(tape, build.table(tape, np.ascontiguousarray(column, dtype=float)))


def assembled(points: Sequence[Term], shape: tuple[int, ...]) -> Term:
    """The (points,)-shaped Terms of one result leaf's elements (C order) as one array Term of
    shape (points,) + shape."""
    if not shape:
        (only,) = points
        return only
    tape = points[0].tape
    stacked = Term(tape, build.stack(tape, [t.index for t in points]))  # (elements, points)
    return stacked.T.reshape((stacked.shape[1],) + shape)


__all__ = ["assembled", "batched"]
