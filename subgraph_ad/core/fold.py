"""Folding: the trivial algebra every append goes through before it is interned.

``x*1``, ``x+0``, ``--x``, constants with constants, constant factors gathered in front
(``2*(3*x)`` is ``6*x``) and a sign pulled outward. What is left is put in a canonical operand
order (constants first, then by index, for commutative ops), so equal expressions meet in the
intern table. Works on indices: the Term-free path of every builder.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Optional

import numpy as np

from .ops import OPS, Node

if TYPE_CHECKING:  # pragma: no cover - typing only
    from .tape import Tape


def fold_value(op: str, values: list[float]) -> float:
    """An op on constants, with NumPy's IEEE semantics (1/0 is inf, never an exception)."""
    with np.errstate(all="ignore"):
        return float(OPS[op].value(*(np.float64(v) for v in values)))


def _const(tape: Tape, index: int) -> Optional[float]:
    node = tape.nodes[index]
    return node.payload if node.op == "const" else None


def scale(tape: Tape, c: float, b: int) -> int:
    """``c * b`` for a constant c, without appending the constant when c is 0, 1 or -1."""
    if c == 0.0:
        return tape.constant(0.0)
    if c == 1.0:
        return b
    if c == -1.0:
        return fold(tape, "neg", (b,))
    return tape.intern(Node("mul", (tape.constant(c), b)))


def fold(tape: Tape, op: str, args: tuple[int, ...]) -> int:
    """Fold trivial algebra, then intern. Returns the index of the resulting node."""
    nodes = tape.nodes
    consts = [_const(tape, a) for a in args]
    if None not in consts:
        return tape.constant(fold_value(op, consts))  # type: ignore[arg-type]
    if op == "neg":
        (a,) = args
        inner = nodes[a]
        if inner.op == "neg":
            return inner.args[0]
        if inner.op == "sub":
            return fold(tape, "sub", (inner.args[1], inner.args[0]))
        if inner.op == "mul" and _const(tape, inner.args[0]) is not None:
            return scale(tape, -_const(tape, inner.args[0]), inner.args[1])  # type: ignore[operator]
        return tape.intern(Node("neg", args))
    a, b = args
    ca, cb = consts
    commutative = OPS[op].commutative
    if commutative and cb is not None:  # constants first: c*x, c+x
        a, b, ca, cb = b, a, cb, ca
    if op == "add":
        if ca == 0.0:
            return b
        if a == b:
            return scale(tape, 2.0, a)
        if nodes[b].op == "neg":
            return fold(tape, "sub", (a, nodes[b].args[0]))
        if nodes[a].op == "neg":
            return fold(tape, "sub", (b, nodes[a].args[0]))
    elif op == "sub":
        if cb == 0.0:
            return a
        if ca == 0.0:
            return fold(tape, "neg", (b,))
        if nodes[b].op == "neg":
            return fold(tape, "add", (a, nodes[b].args[0]))
    elif op == "mul":
        if ca is not None:
            inner = nodes[b]
            inner_c = _const(tape, inner.args[0]) if inner.op == "mul" else None
            if inner_c is not None:
                return scale(tape, ca * inner_c, inner.args[1])
            if inner.op == "neg":
                return scale(tape, -ca, inner.args[0])
            return scale(tape, ca, b)
        if nodes[a].op == "neg":
            return fold(tape, "neg", (fold(tape, "mul", (nodes[a].args[0], b)),))
        if nodes[b].op == "neg":
            return fold(tape, "neg", (fold(tape, "mul", (a, nodes[b].args[0])),))
    elif op == "div":
        if cb == 1.0:
            return a
        if ca == 0.0:
            return tape.constant(0.0)
        if cb is not None and cb != 0.0 and math.isfinite(cb):
            if abs(cb) == 1.0:
                return scale(tape, cb, a)
            return fold(tape, "mul", (tape.constant(1.0 / cb), a))
    elif op == "pow":
        if cb == 1.0:
            return a
        if cb == 0.0:
            return tape.constant(1.0)
    if commutative and a > b and ca is None:
        a, b = b, a
    return tape.intern(Node(op, (a, b)))
