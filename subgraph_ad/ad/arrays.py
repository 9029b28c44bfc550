"""The forward and reverse rules of the array ops (``core/arrays.py``), written with Terms so that
a derivative of an array node is array nodes again: d(W @ h) = W @ dh, and the adjoints of
W @ x are bar ⊗ x (an outer product, one broadcast multiply) and bar @ W.

An elementwise node follows the scalar rule of its op or function (``forward.RULES``,
``reverse.VJPS``) on whole arrays, so every built-in and user function works on arrays with no
rule of its own; ``fit`` then gives each result its node's shape (summing over the axes an
operand was broadcast along, or broadcasting a smaller derivative), which is all that
broadcasting adds.

>>> import numpy as np, subgraph_ad as sad
>>> tape = sad.Tape(); W = tape.array("W", np.ones((2, 3))); x = tape.array("x", [1.0, 2.0, 3.0])
>>> loss = sad.tanh(W @ x).sum()
>>> gW = loss.grad_graph(W)
>>> gW.shape, np.allclose(gW.eval(), np.outer(1 - np.tanh(W.value @ x.value) ** 2, x.value))
((2, 3), True)
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

import numpy as np

from ..core import Term
from ..core import array_build as build
from ..core.arrays import Shape, as_index
from ..core.ops import Node
from ..tables import rule_table

D = Optional[Term]


def _term(t: Term, index: int) -> Term:
    return Term(t.tape, index)


def plus(a: Optional[Term], b: Optional[Term]) -> Optional[Term]:
    """a + b where either may be a structural zero (None)."""
    if a is None:
        return b
    return a if b is None else a + b


def fit(part: Term, shape: Shape) -> Term:
    """``part`` given exactly ``shape``: summed over the axes it has beyond it or where the shape
    has 1 (the adjoint of broadcasting), then broadcast to it (a derivative smaller than its
    node: a constant, or a scalar's share)."""
    tape, have = part.tape, part.shape
    if have == shape:
        return part
    lead = len(have) - len(shape)
    if lead > 0:
        part = part.sum(tuple(range(lead)))
        have = part.shape
    offset = len(shape) - len(have)
    ones = tuple(k for k, n in enumerate(have) if n != 1 and shape[offset + k] == 1)
    if ones:
        part = part.sum(ones).reshape(tuple(1 if k in ones else n for k, n in enumerate(have)))
    return part if part.shape == shape else _term(part, build.broadcast_to(tape, part.index, shape))


def zeros(tape: Any, shape: Shape) -> Term:
    """A structural zero of ``shape``, where an op needs every operand (stack, concatenate)."""
    return tape.zero if not shape else Term(tape, build.table(tape, np.zeros(shape)))


def _mm(a: D, b: D) -> D:
    return None if a is None or b is None else a @ b


def _plus(a: D, b: D) -> D:
    if a is None:
        return b
    return a if b is None else a + b


def _linear(make: Callable[[Term, Node], int]) -> Callable[..., D]:
    """The forward rule of an op linear in its one operand: the same op on the derivative."""
    return lambda node, operands, out, d: None if d[0] is None else _term(out, make(d[0], node))


def _map_forward(node: Node, operands: list[Term], out: Term, d: list[D]) -> D:
    from .forward import RULES

    p = node.payload[1]
    found = RULES[p](*operands, out, *d) if isinstance(p, str) else RULES["fn"](p, *operands, out, *d)
    return None if found is None else fit(found, node.payload[0])


def _join_forward(node: Node, operands: list[Term], out: Term, d: list[D]) -> D:
    if all(x is None for x in d):
        return None
    parts = [zeros(out.tape, t.shape) if x is None else x for x, t in zip(d, operands)]
    joined = build.concat(out.tape, [p.index for p in parts], node.payload[1]) if node.op == "concat" \
        else build.stack(out.tape, [p.index for p in parts])
    return _term(out, joined)


#: The forward rules of the array ops: (node, operands, output, operand derivatives) -> derivative.
FORWARD: dict[str, Callable[..., D]] = rule_table("array forward", {
    "table": lambda node, operands, out, d: None,
    "map": _map_forward,
    "matmul": lambda node, operands, out, d: _plus(_mm(d[0], operands[1]), _mm(operands[0], d[1])),
    "sum": _linear(lambda x, node: build.reduce_sum(x.tape, x.index, node.payload[1])),
    "broadcast": _linear(lambda x, node: build.broadcast_to(x.tape, x.index, node.payload[0])),
    "reshape": _linear(lambda x, node: build.reshape(x.tape, x.index, node.payload[0])),
    "transpose": _linear(lambda x, node: build.transpose(x.tape, x.index, node.payload[1])),
    "index": _linear(lambda x, node: build.index(x.tape, x.index, as_index(node.payload[1]))),
    "place": _linear(lambda x, node: build.place(x.tape, x.index, node.payload[0], node.payload[1])),
    "concat": _join_forward,
    "stack": _join_forward,
}, keys=lambda: _array_ops())


def _array_ops() -> list[str]:
    from ..core.arrays import ARRAY_OPS

    return list(ARRAY_OPS)


A = Optional[Term]


def _map_reverse(node: Node, operands: list[Term], out: Term, bar: Term, need: tuple[bool, ...]) -> Sequence[A]:
    from .reverse import VJPS

    p = node.payload[1]
    parts = VJPS[p](*operands, out, bar, need) if isinstance(p, str) else VJPS["fn"](p, *operands, out, bar, need)
    return [None if part is None else fit(part, t.shape) for part, t in zip(parts, operands)]


def _matmul_reverse(node: Node, operands: list[Term], out: Term, bar: Term, need: tuple[bool, ...]) -> Sequence[A]:
    a, b = operands
    sa, sb = a.shape, b.shape
    if len(sa) == 1 and len(sb) == 1:
        return [bar * b if need[0] else None, bar * a if need[1] else None]
    if len(sa) == 2 and len(sb) == 1:  # y = A x: Ā = ȳ ⊗ x, x̄ = ȳ A
        return [bar.reshape(sa[0], 1) * b.reshape(1, sb[0]) if need[0] else None, bar @ a if need[1] else None]
    if len(sa) == 1:  # y = x B: x̄ = B ȳ, B̄ = x ⊗ ȳ
        return [b @ bar if need[0] else None, a.reshape(sa[0], 1) * bar.reshape(1, sb[1]) if need[1] else None]
    return [bar @ b.T if need[0] else None, a.T @ bar if need[1] else None]


def _sum_reverse(node: Node, operands: list[Term], out: Term, bar: Term, need: tuple[bool, ...]) -> Sequence[A]:
    shape = operands[0].shape
    kept = tuple(1 if k in node.payload[1] else n for k, n in enumerate(shape))
    return [fit(_term(bar, build.reshape(bar.tape, bar.index, kept)), shape)]


def _concat_reverse(node: Node, operands: list[Term], out: Term, bar: Term, need: tuple[bool, ...]) -> Sequence[A]:
    axis, at, parts = node.payload[1], 0, []
    for t, wanted in zip(operands, need):
        width = t.shape[axis]
        parts.append(bar[(slice(None),) * axis + (slice(at, at + width),)] if wanted else None)
        at += width
    return parts


#: The reverse rules of the array ops: (node, operands, output, its adjoint, which operands need
#: one) -> each operand's adjoint contribution, of that operand's shape.
REVERSE: dict[str, Callable[..., Sequence[A]]] = rule_table("array reverse", {
    "table": lambda node, operands, out, bar, need: [],
    "map": _map_reverse,
    "matmul": _matmul_reverse,
    "sum": _sum_reverse,
    "broadcast": lambda node, operands, out, bar, need: [fit(bar, operands[0].shape)],
    "reshape": lambda node, operands, out, bar, need: [bar.reshape(operands[0].shape)],
    "transpose": lambda node, operands, out, bar, need: [
        _term(bar, build.transpose(bar.tape, bar.index, tuple(np.argsort(node.payload[1]).tolist())))],
    "index": lambda node, operands, out, bar, need: [
        _term(bar, build.place(bar.tape, bar.index, operands[0].shape, node.payload[1]))],
    "place": lambda node, operands, out, bar, need: [bar[as_index(node.payload[1])]],
    "concat": _concat_reverse,
    "stack": lambda node, operands, out, bar, need: [bar[k] if wanted else None for k, wanted in enumerate(need)],
}, keys=lambda: _array_ops())


__all__ = ["FORWARD", "REVERSE", "fit", "zeros"]
