"""Nodes an array program writes as one statement, so that the value between them is never
made. Each rewrite is exact algebra on values that no other node (nor an output) reads:

- **a sum of an elementwise product** (both factors of the product's shape, at most ``most_sum``
  numbers added into each result): one ``einsum`` (``array_code._summed``);
- **a product by a constant matrix of a constant scaled by a vector**: (v ⊙ T) @ W, with v a
  vector (on a batch: one per point) that scales T's columns, is v @ C for the constant
  C[j, (i, k)] = T[i, j]·W[j, k] — one GEMM over the batch instead of a (batch, r, p) product and
  a GEMM over it. It is the first layer of every Jacobian block (a network's Laplacian, its
  Hessian), where J = σ′(W₁x + b₁) ⊙ W₁ᵀ meets W₂ᵀ. C is made when it has at most
  ``most_constant`` entries;
- **a sum of values each placed into zeros** (code for one point): one array of zeros and each
  value added in at its place — a gradient assembled from the adjoints of an array's elements
  (32 weights read one by one: 32 placed arrays and 31 sums) is one array and 32 additions;
  where the places are slices that tile a vector end to end (a flat parameter vector cut into
  a network's layers), one concatenation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ..core import Tape
from ..core.arrays import shape_of


@dataclass(frozen=True)
class Fused:
    """The nodes ``absorbed`` are written inside the fused node, whose code reads ``reads``; a
    scaled product keeps its constant C and its result's shape in ``constant`` and ``shape``; a
    sum of placed values keeps (value, place node) pairs in ``places`` (and the summands that are
    not placed values among ``reads`` after theirs)."""

    absorbed: tuple[int, ...]
    reads: tuple[int, ...]
    constant: Any = None
    shape: tuple[int, ...] = ()
    places: tuple[tuple[int, int], ...] = ()
    tiled: bool = False  # the places are slices that tile a vector, in order: one concatenation


def _product(node: Any) -> bool:
    return bool(node.op == "mul" or (node.op == "map" and node.payload[1] == "mul"))


def fusions(tape: Tape, order: Sequence[int], outputs: Sequence[int], most_sum: int,
            most_constant: int, placed: bool = False) -> dict[int, Fused]:
    """The fused nodes of a program (``order``: its nodes as written) and what each absorbs;
    sums of placed values where ``placed`` (code for one point)."""
    nodes = tape.nodes
    readers: dict[int, int] = {}
    for i in order:
        for a in set(nodes[i].args):
            readers[a] = readers.get(a, 0) + 1
    kept = set(outputs)
    found: dict[int, Fused] = {}
    taken: set[int] = set()
    for i in reversed(order):  # from the outermost sum in: an inner one is part of it
        if placed and i not in taken and _sum_node(nodes[i]):
            fused = _placed_sum(tape, i, readers, kept)
            if fused is not None:
                found[i] = fused
                taken.update(fused.absorbed)
    for i in order:
        node = nodes[i]
        if node.op not in ("sum", "matmul") or i in taken or i in found:
            continue
        m = node.args[0]
        if readers.get(m) != 1 or m in kept or not _product(nodes[m]):
            continue
        shape = shape_of(tape, m)
        factors = nodes[m].args
        if node.op == "sum":
            axes = node.payload[1]  # (a sum over no axis is its operand: nothing to fuse)
            if axes and math.prod(shape[k] for k in axes) <= most_sum and all(shape_of(tape, a) == shape for a in factors):
                found[i] = Fused((m,), factors)
            continue
        scaled = _scaled(tape, factors, node.args[1], most_constant)
        if scaled is not None:
            v, constant = scaled
            found[i] = Fused((m,), (v,), constant, shape_of(tape, i))
    return found


def _sum_node(node: Any) -> bool:
    return bool(node.op == "add" or (node.op == "map" and node.payload[1] == "add"))


def _placed_sum(tape: Tape, root: int, readers: dict[int, int], kept: set[int]) -> Fused | None:
    """The sum at ``root`` as zeros and its summands added in, where at least two summands are
    placed values: the sums and places under it that only it reads, of its shape."""
    nodes, shape = tape.nodes, shape_of(tape, root)
    if not shape:
        return None
    absorbed: list[int] = []
    places: list[tuple[int, int]] = []
    others: list[int] = []
    todo = [root]
    while todo:
        for a in nodes[todo.pop()].args:
            inner = readers.get(a) == 1 and a not in kept and shape_of(tape, a) == shape
            if inner and _sum_node(nodes[a]):
                absorbed.append(a)
                todo.append(a)
            elif inner and nodes[a].op == "place":
                absorbed.append(a)
                places.append((nodes[a].args[0], a))
            elif shape_of(tape, a) == shape:
                others.append(a)
            else:
                return None  # a summand broadcast to the sum's shape: left to the plain sum
    if len(places) < 2:
        return None
    tiles = None if others else _tiles(tape, places, shape)
    if tiles is not None:
        places = tiles
    return Fused(tuple(absorbed), tuple(v for v, _ in places) + tuple(others), places=tuple(places),
                 tiled=tiles is not None)


def _tiles(tape: Tape, places: list[tuple[int, int]], shape: tuple[int, ...]) -> list[tuple[int, int]] | None:
    """The places in order where they are slices that tile a vector of ``shape`` end to end, each
    value exactly its slice (a flat parameter vector's gradient, from its layers' slices: one
    concatenation, ~3 µs less than zeros and four additions for a 961-parameter network's 37 µs
    of NumPy code); else None."""
    if len(shape) != 1:
        return None
    spans = []
    for value, at in places:
        normal = tape.nodes[at].payload[1] or ((0, shape[0], 1),)
        item = normal[0]
        if len(normal) != 1 or not isinstance(item, tuple) or item[2] != 1 or item[1] is None:
            return None  # (an int, a step, a new axis: not a run of the vector)
        if shape_of(tape, value) != (item[1] - item[0],):
            return None  # (a value broadcast over its slice)
        spans.append((item[0], item[1], value, at))
    spans.sort()
    ends = [0] + [stop for _, stop, _, _ in spans]
    if ends[-1] != shape[0] or any(start != end for (start, _, _, _), end in zip(spans, ends)):
        return None
    return [(value, at) for _, _, value, at in spans]


def _scaled(tape: Tape, factors: Sequence[int], w: int, most: int) -> tuple[int, np.ndarray] | None:
    """(v, C) where the product's factors are a vector v and a constant T (r × p) that v's
    entries scale column by column, and w is a constant W (p × q) with at most ``most`` entries
    in C; else None."""
    nodes = tape.nodes
    if len(factors) != 2 or nodes[w].op != "table" or len(shape_of(tape, w)) != 2:
        return None
    for v, t in (factors, factors[::-1]):
        if nodes[t].op != "table" or nodes[v].op == "table" or len(shape_of(tape, t)) != 2:
            continue
        (r, p), (p2, q) = shape_of(tape, t), shape_of(tape, w)
        if shape_of(tape, v) == (p,) and p == p2 and p * r * q <= most:
            T, W = nodes[t].payload[1].array, nodes[w].payload[1].array
            return v, np.einsum("ij,jk->jik", T, W).reshape(p, r * q)
    return None


__all__ = ["Fused", "fusions"]
