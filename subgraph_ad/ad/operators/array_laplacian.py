"""The forward Laplacian over array nodes: each node that moves carries its Jacobian block J
(its shape + (d,), d the columns of the vars ``xs``) and its Laplacian Δ (its shape), as array
nodes, so a dense layer costs a few nodes whatever its width.

The rules, keyed by op (``RULES``): a matrix product by a constant is W @ J and W @ Δ; an
elementwise op or function f(a, b, …) is J = Σₖ fₖ·Jₖ and Δ = Σₖ fₖ·Δₖ + Σₖₗ fₖₗ·(Jₖ·Jₗ), the
local partials fₖ, fₖₗ taken from the function's own ``fdiff`` (``Local``), so every built-in
and user function works; sum, reshape, index, transpose, concatenate, stack and broadcast are
linear and act on J (with its trailing axis) and on Δ alike. With weights A the pairing Jₖ·Jₗ
becomes Jₖ A Jₗᵀ. A structural zero (a node no var of ``xs`` reaches) is absent: no J, no Δ.

What the pass cannot do (a weight that is a Term, an op it has no rule for) raises
``Unsupported``; ``laplacian`` then expands u to scalar nodes and runs the scalar pass.

>>> import numpy as np, subgraph_ad as sad
>>> tape = sad.Tape(); x = tape.array("x", [0.5, -1.0])
>>> u = sad.sin(np.array([[1.0, 2.0]]) @ x).sum()
>>> lap = sad.laplacian(u, x)  # Δ sin(x₀ + 2x₁) = −5 sin(x₀ + 2x₁): J·J = 5 is a table
>>> str(lap), bool(np.isclose(lap.eval(), -5 * np.sin(0.5 - 2.0)))
('(-sin(table[1, 2] @ x)*table[1]).sum()', True)
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from ...core import Tape, Term, dependencies
from ...core import array_build as build
from ...core.arrays import ARRAY_OPS, as_index, has_arrays, shape_of
from ...core.expand import element_vars, scalar_roots
from ...core.ops import OPS, Node
from ...tables import rule_table
from ..arrays import fit
from .local import Local

D = Optional[Term]


class Unsupported(Exception):
    """The array pass has no rule for something u holds; the caller expands u to scalars."""


def holds_arrays(u: Term, xs: list[Term]) -> bool:
    """Whether u's graph or the vars hold arrays: then the Laplacian takes this pass."""
    return any(x.shape for x in xs) or has_arrays(u.tape, dependencies(u.tape, [u.index]))


class _Pass:
    """The Jacobian blocks and Laplacians of the nodes u needs, in tape order."""

    def __init__(self, tape: Tape, xs: list[Term], metric: Optional[np.ndarray]) -> None:
        self.tape = tape
        self.d = sum(max(1, x.size) for x in xs)
        self.metric = None if metric is None else Term(tape, build.table(tape, metric))
        self.jac: dict[int, Term] = {}
        self.lap: dict[int, Term] = {}
        self.locals: dict[tuple, Local] = {}
        at = 0
        for x in xs:  # a var's J: the identity on its own columns
            n = max(1, x.size)
            eye = np.zeros((n, self.d))
            eye[:, at:at + n] = np.eye(n)
            self.jac[x.index] = Term(tape, build.table(tape, eye.reshape(x.shape + (self.d,))))
            at += n

    def term(self, i: int) -> Term:
        return Term(self.tape, i)

    def pair(self, a: Term, b: Term) -> Term:
        """Σ over the columns of J_a·J_b (J_a A J_bᵀ with weights), of their broadcast shape."""
        if self.metric is not None:
            b = b @ self.metric if b.ndim == 1 else (b.reshape(-1, self.d) @ self.metric).reshape(b.shape)
        return (a * b).sum(-1)

    def local(self, i: int, scalar: Node, slots: tuple[int, ...]) -> D:
        """∂ᵏf/∂t_{slots…} of the elementwise node i (``scalar``: its op on scalar operands),
        rebuilt on the tape over i's operands (``Local``); None: a structural zero."""
        key = Local.key(self.tape, scalar)
        found = self.locals.get(key)
        if found is None:
            found = self.locals[key] = Local(self.tape, scalar)
        return found.copy(found.derivative(slots), self.tape, scalar, i)


def _column(f: Term) -> Term:
    """f ready to scale a Jacobian block: a trailing axis of 1 (a scalar broadcasts as it is)."""
    return f.reshape(f.shape + (1,)) if f.shape else f


def _add(a: D, b: D) -> D:
    if a is None:
        return b
    return a if b is None else a + b


def _times(f: D, value: D) -> D:
    return None if f is None or value is None else f * value


def _elementwise(p: _Pass, i: int, scalar: Node, shape: tuple[int, ...]) -> tuple[D, D]:
    """J = Σₖ fₖ·Jₖ, Δ = Σₖ fₖ·Δₖ + Σₖₗ fₖₗ·(Jₖ·Jₗ) over the distinct moving operands."""
    if scalar.op == "fn" and scalar.payload.constant:  # a condition does not move
        return None, None
    operands = Local.operands(p.tape, scalar)
    moving = [k for k, a in enumerate(operands) if a in p.jac]
    jac: D = None
    lap: D = None
    for k in moving:
        f = p.local(i, scalar, (k,))
        if f is not None:
            jac = _add(jac, _column(f) * p.jac[operands[k]])
            lap = _add(lap, _times(f, p.lap.get(operands[k])))
    for n, k in enumerate(moving):
        for m in moving[n:]:
            f = p.local(i, scalar, (k, m))
            if f is not None:
                paired = p.pair(p.jac[operands[k]], p.jac[operands[m]])
                lap = _add(lap, f * (paired if k == m else 2 * paired))
    return (None if jac is None else fit(jac, shape + (p.d,)),
            None if lap is None else fit(lap, shape))


def _map(p: _Pass, i: int, node: Node) -> tuple[D, D]:
    shape, f = node.payload
    scalar = Node(f, node.args, None) if isinstance(f, str) else Node("fn", node.args, f)
    return _elementwise(p, i, scalar, shape)


def _matmul(p: _Pass, i: int, node: Node) -> tuple[D, D]:
    """y = A @ B: J = J_A⋆B + A⋆J_B, Δ = Δ_A@B + A@Δ_B + 2·Σ J_A⋆J_B, each one product over the
    blocks laid out as the operands (A's columns with the columns of J, say)."""
    a, b = node.args
    A, B = p.term(a), p.term(b)
    Ja, Jb = p.jac.get(a), p.jac.get(b)
    d, lead, k, tail = p.d, A.shape[:-1], A.shape[-1], B.shape[1:]
    jac: D = None
    if Jb is not None:
        jac = (A @ Jb.reshape(k, -1)).reshape(lead + tail + (d,))
    if Ja is not None:  # lead + (k, d) -> lead + (d, k), times B, the d axis moved last
        swapped = Ja.transpose(tuple(range(len(lead))) + (len(lead) + 1, len(lead)))
        part = (swapped.reshape(-1, k) @ B).reshape(lead + (d,) + tail)
        if tail:
            part = part.transpose(tuple(range(len(lead))) + (len(lead) + 1, len(lead)))
        jac = _add(jac, part)
    lap = _add(None if a not in p.lap else p.lap[a] @ B, None if b not in p.lap else A @ p.lap[b])
    if Ja is not None and Jb is not None:
        right = Jb if p.metric is None else (Jb.reshape(-1, d) @ p.metric).reshape(Jb.shape)
        if tail:
            right = right.transpose((0, 2, 1))
        lap = _add(lap, 2 * (Ja.reshape(lead + (k * d,)) @ right.reshape((k * d,) + tail)))
    return jac, lap


def _linear(make: Callable[[Term, Node, int], Term]) -> Callable[[_Pass, int, Node], tuple[D, D]]:
    """An op linear in its one operand: the same op on J (given its trailing axis) and on Δ."""
    def rule(p: _Pass, i: int, node: Node) -> tuple[D, D]:
        (a,) = node.args
        jac, lap = p.jac.get(a), p.lap.get(a)
        return (None if jac is None else make(jac, node, p.d),
                None if lap is None else make(lap, node, 0))
    return rule


def _with(d: int) -> tuple[int, ...]:
    """The trailing axis of a Jacobian block (d columns), none for a Laplacian (d = 0)."""
    return (d,) if d else ()


def _index(x: Term, node: Node, d: int) -> Term:
    return x[as_index(node.payload[1]) + ((slice(None),) if d else ())]


def _place(x: Term, node: Node, d: int) -> Term:
    shape, normal = node.payload
    return Term(x.tape, build.place(x.tape, x.index, shape + _with(d), normal + (((0, d, 1),) if d else ())))


def _transpose(x: Term, node: Node, d: int) -> Term:
    perm = node.payload[1]
    return x.transpose(perm + ((len(perm),) if d else ()))


def _join(p: _Pass, i: int, node: Node) -> tuple[D, D]:
    """concatenate / stack: the blocks joined alike, a structural zero as zeros."""
    def joined(parts: dict[int, Term], d: int) -> D:
        if not any(a in parts for a in node.args):
            return None
        tape = p.tape
        blocks = [parts[a].index if a in parts else build.table(tape, np.zeros(shape_of(tape, a) + _with(d)))
                  for a in node.args]
        found = build.concat(tape, blocks, node.payload[1]) if node.op == "concat" else build.stack(tape, blocks)
        return Term(tape, found)
    return joined(p.jac, p.d), joined(p.lap, 0)


#: The array ops' rules: (pass, node index, node) -> (J, Δ) of the node, None for a zero.
RULES: dict[str, Callable[[_Pass, int, Node], tuple[D, D]]] = rule_table("array LAPLACIAN", {
    "table": lambda p, i, node: (None, None),
    "map": _map,
    "matmul": _matmul,
    "sum": _linear(lambda x, node, d: x.sum(node.payload[1])),
    "broadcast": _linear(lambda x, node, d: Term(x.tape, build.broadcast_to(x.tape, x.index,
                                                                              node.payload[0] + _with(d)))),
    "reshape": _linear(lambda x, node, d: x.reshape(node.payload[0] + _with(d))),
    "transpose": _linear(_transpose),
    "index": _linear(_index),
    "place": _linear(_place),
    "concat": _join,
    "stack": _join,
}, keys=lambda: list(ARRAY_OPS))


def _pass(p: _Pass, root: int) -> D:
    """Δ of root, by one sweep over the nodes it needs that a var of the pass reaches."""
    nodes = p.tape.nodes
    for i in dependencies(p.tape, [root]):
        node = nodes[i]
        if not node.args or not any(a in p.jac for a in node.args):
            continue
        if node.op in RULES:
            jac, lap = RULES[node.op](p, i, node)
        elif node.op == "fn" or node.op in OPS:
            jac, lap = _elementwise(p, i, node, shape_of(p.tape, i))
        else:
            raise Unsupported(f"no array Laplacian rule for op {node.op!r}")
        if jac is not None:
            p.jac[i] = jac
        if lap is not None:
            p.lap[i] = lap
    return p.lap.get(root)


def _metric(entries: Optional[dict[tuple[int, int], Any]], d: int) -> Optional[np.ndarray]:
    if entries is None:
        return None
    if any(isinstance(v, Term) for v in entries.values()):
        raise Unsupported("weights that are Terms")
    metric = np.zeros((d, d))
    for (i, j), value in entries.items():
        metric[i, j] = float(value)
    return metric


def columns(xs: list[Term]) -> int:
    """d: one column per element of each var of ``xs``."""
    return sum(max(1, x.size) for x in xs)


def laplacian(u: Term, xs: list[Term], entries: Optional[dict[tuple[int, int], Any]]) -> Term:
    """Δu (Σ aᵢⱼ∂ᵢⱼu with the weights' ``entries``) by the array pass, inside the caller's
    transaction; ``Unsupported`` where it has no rule."""
    if u.shape:
        raise TypeError(f"laplacian takes a scalar Term; {u!r} is an array of shape {u.shape}: index or sum it first")
    tape = u.tape
    p = _Pass(tape, xs, _metric(entries, columns(xs)))
    found = _pass(p, u.index)
    return tape.zero if found is None else found


def scalar_twin(u: Term, xs: list[Term]) -> tuple[Term, list[Term]]:
    """u expanded to scalar nodes and xs to the scalar vars of their elements, for the scalar
    pass where the array pass has no rule."""
    tape = u.tape
    (root,) = scalar_roots(tape, [u.index], "laplacian")
    flat = [t for x in xs for t in (list(element_vars(tape, x.node.payload).ravel()) if x.shape else [x])]
    return Term(tape, root), flat


__all__ = ["RULES", "Unsupported", "columns", "holds_arrays", "laplacian", "scalar_twin"]
