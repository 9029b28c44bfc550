"""Which temporaries of an array program are dropped when, and which one an elementwise node
writes its result into (``out=``) instead of a new array.

A program written one statement per node keeps every temporary alive until it returns: a
10 → 64 → 64 → 1 network's Hessian-vector product holds ~50 arrays of 64 KB, so each pass
streams through memory instead of the cache, and NumPy allocates a fresh array per node. Here a
temporary is deleted after its last reader, and an elementwise node (arithmetic, a function
that is a chain of ufuncs) whose operand dies at it, with the result's shape, overwrites that
operand: the network's HVP ran 21 % faster (see docs/arrays.md).

What may be overwritten is decided on the graph, never guessed at run time:
- only a *fresh* value (one that arithmetic, a ufunc chain, a matrix product or a sum made, so
  no other name shares its memory) and a float one (a comparison's booleans cannot hold the
  result);
- a value that may be a view of its operands (a transpose, an index, a reshape, any op not
  known fresh) keeps them alive for as long as it lives, so they are neither deleted nor
  overwritten under it;
- an output is never overwritten; an operand is overwritten only where the result has exactly
  its shape. On a batch, two operands with batch axes may still broadcast to more than either
  (batches of (n, 1) and (1, m)): there the code checks the shapes when it runs (``into``).

A native loop at one point (``array_loops``) writes its outputs into operands that die at it,
on the same terms (``buffers``).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..core import OPS, Tape
from ..core.arrays import scalar_form, shape_of
from .array_fusion import Fused

#: Ops whose value is a new array that nothing else refers to.
FRESH = frozenset(OPS) | {"map", "matmul", "sum"}
#: Of those, the elementwise ones: ufuncs, which may write into an operand.
ELEMENTWISE = frozenset(OPS) | {"map"}


def float_valued(chain: Sequence[np.ufunc]) -> bool:
    """Whether a chain of ufuncs maps floats to floats (``np.less`` does not)."""
    sample = np.ones(1)
    with np.errstate(all="ignore"):
        for ufunc in chain:
            sample = ufunc(*[sample] * ufunc.nin)
            if not isinstance(sample, np.ndarray) or sample.dtype != np.float64:
                return False
    return True


def into(target: Any, *others: Any) -> np.ndarray | None:
    """``target`` where it is an array that the others broadcast to (it can hold the result),
    else None (NumPy makes a new array)."""
    if not isinstance(target, np.ndarray):
        return None
    return target if np.broadcast_shapes(target.shape, *(np.shape(o) for o in others)) == target.shape else None


def function_of(node: Any) -> Any:
    """The function a node applies (a function node, or an elementwise one of a function), else None."""
    scalar = scalar_form(node)
    return scalar.payload if scalar.op == "fn" else None


class Reuse:
    """The lifetimes of a program's values (``order``: its nodes in the order written) and the
    choice of an operand to overwrite. ``chain(fn)`` gives the ufuncs a function is written with
    (None: written some other way, so its value is neither known fresh nor overwritable)."""

    def __init__(self, tape: Tape, order: Sequence[int], outputs: Sequence[int],
                 chain: Callable[[Any], tuple[np.ufunc, ...] | None], fused: dict[int, Fused] | None = None) -> None:
        self.tape = tape
        nodes = tape.nodes
        fused = fused or {}
        absorbed = {a for f in fused.values() for a in f.absorbed}
        # what each node's code reads: a fused node what it reads instead, one it absorbs nothing
        self.reads = {i: () if i in absorbed else fused[i].reads if i in fused else nodes[i].args for i in order}
        self.position = {i: k for k, i in enumerate(order)}
        self.last: dict[int, int] = {}
        for k, i in enumerate(order):
            for a in self.reads[i]:
                self.last[a] = k
        for i in outputs:
            self.last[i] = len(order)  # returned: alive to the end, never overwritten
        self.ufuncs: dict[int, tuple[np.ufunc, ...] | None] = {}
        self.float: dict[int, bool] = {}
        for i in order:
            node = nodes[i]
            fn = function_of(node)
            if fn is not None:
                found = self.ufuncs[i] = chain(fn)
                self.float[i] = found is not None and float_valued(found)
            else:
                self.float[i] = node.op in ("var", "const", "table") or any(self.float.get(a, False) for a in node.args)
        self.fresh = {i for i in order if nodes[i].op in FRESH and self.ufuncs.get(i, ()) is not None}
        # a possible view keeps what it views alive as long as itself (views of views too)
        for i in reversed(order):
            if i not in self.fresh:
                for a in self.reads[i]:
                    self.last[a] = max(self.last.get(a, -1), self.last.get(i, -1))

    def dead(self, i: int, temps: set[int]) -> list[int]:
        """The temporaries whose last reader is node i."""
        k = self.position[i]
        return [a for a in dict.fromkeys(self.reads[i]) if a in temps and self.last.get(a) == k]

    def buffers(self, i: int, shape: tuple[int, ...], count: int, temps: set[int]) -> list[int]:
        """Up to ``count`` of the values that node i (a native loop, ``array_loops``) reads for
        the last time, of ``shape``, fresh and float: arrays its outputs may be written into,
        since it reads each element before it writes that element (and, checking its operands
        before it writes any, writes none where it does not take them)."""
        k = self.position[i]
        return [a for a in dict.fromkeys(self.reads[i]) if a in temps and a in self.fresh and self.float[a]
                and self.last.get(a) == k and shape_of(self.tape, a) == shape][:count]

    def target(self, i: int, temps: set[int], batched: dict[int, bool], flavour: str) -> tuple[int, bool] | None:
        """The operand that node i (elementwise) may overwrite, and whether that needs the
        run-time shape check (``into``); None where none may."""
        node = self.tape.nodes[i]
        if flavour not in ("point", "batch") or node.op not in ELEMENTWISE or i not in self.fresh or not self.float[i]:
            return None
        shape = shape_of(self.tape, i)
        k = self.position[i]
        for a in dict.fromkeys(node.args):
            if a not in temps or a not in self.fresh or not self.float[a] or self.last.get(a) != k:
                continue
            if shape_of(self.tape, a) != shape:
                continue
            if flavour == "point" or not batched[a]:
                if shape and not any(batched.get(b, False) for b in node.args):
                    return a, False
                continue
            # with batch axes it may have none when it runs (a number, where the node is one)
            return a, not shape or any(batched.get(b, False) for b in node.args if b != a)
        return None


__all__ = ["ELEMENTWISE", "FRESH", "Reuse", "float_valued", "function_of", "into"]
