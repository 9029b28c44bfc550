"""The forward Laplacian over array nodes: each node that moves carries its Jacobian block J
((d,) + its shape, d the columns of the vars ``xs``) and its Laplacian Δ (its shape), as array
nodes, so a dense layer costs a few nodes whatever its width.

The direction axis of J comes FIRST: a batch of points puts its axes in front of it, so a
batch of J is one contiguous block (points·d, n) and a product by a constant matrix, J @ Wᵀ,
is one matrix product with no copy; an elementwise factor f′ (the node's shape) broadcasts
against J as it is, and Σ_d J² is a sum over that leading axis.

The rules, keyed by op (``RULES``): a matrix product by a constant W is J @ Wᵀ and W @ Δ; an
elementwise op or function f(a, b, …) is J = Σₖ fₖ·Jₖ and Δ = Σₖ fₖ·Δₖ + Σₖₗ fₖₗ·(Jₖ·Jₗ), the
local partials fₖ, fₖₗ taken from the function's own ``fdiff`` (``Local``), so every built-in
and user function works; sum, reshape, index, transpose, concatenate, stack and broadcast are
linear and act on J (on its axes behind the direction axis) and on Δ alike. With weights A the
pairing Jₖ·Jₗ becomes Jₖᵀ A Jₗ over the direction axis. A structural zero (a node no var of
``xs`` reaches) is absent: no J, no Δ.

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
from ...core.arrays import ARRAY_OPS, as_index, has_arrays, scalar_form, shape_of
from ...core.expand import element_vars, scalar_roots
from ...core.ops import OPS, Node
from ...tables import rule_table
from ..arrays import fit, plus
from ..reverse import grad_graph
from . import array_blocks as blocks
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
        self.blocks: dict[int, blocks.Block] = {}  # the nodes whose J is held by rows (``array_blocks``)
        self.offsets: dict[int, int] = {}  # each var's first column
        self.cols = self.d  # the direction axis of the J in hand: d, or a block's c
        at = 0
        for x in xs:  # a var's J: the identity on its own columns (by rows, where it has them)
            n = max(1, x.size)
            self.offsets[x.index] = at
            started = blocks.rows_of(self, x.shape, at)
            if started is not None:
                self.jac[x.index], self.blocks[x.index] = started
            else:
                eye = np.zeros((self.d, n))
                eye[at:at + n] = np.eye(n)
                self.jac[x.index] = Term(tape, build.table(tape, eye.reshape((self.d,) + x.shape)))
            at += n

    def term(self, i: int) -> Term:
        return Term(self.tape, i)

    def pair(self, a: Term, b: Term) -> Term:
        """Σ over the direction axis of J_a·J_b (J_aᵀ A J_b with weights), of their broadcast
        shape (both given as many axes, ``lifted``)."""
        return (a * self.weighed(b)).sum(0)

    def weighed(self, b: Term) -> Term:
        """Aᵀ J_b over the direction axis (J_b itself without weights)."""
        if self.metric is None:
            return b
        return self.metric.T @ b if b.ndim == 1 else (self.metric.T @ b.reshape(self.d, -1)).reshape(b.shape)

    def local(self, i: int, scalar: Node, slots: tuple[int, ...]) -> D:
        """∂ᵏf/∂t_{slots…} of the elementwise node i (``scalar``: its op on scalar operands),
        rebuilt on the tape over i's operands (``Local``); None: a structural zero."""
        return Local.partial(self.locals, self.tape, scalar, slots, i)


def _lifted(jac: Term, ndim: int) -> Term:
    """A Jacobian block of an operand of fewer than ``ndim`` axes given size-1 axes behind its
    direction axis, so that it broadcasts as its operand does against the node's other operands."""
    missing = ndim + 1 - jac.ndim
    return jac.reshape(jac.shape[:1] + (1,) * missing + jac.shape[1:]) if missing else jac


def _times(f: D, value: D) -> D:
    return None if f is None or value is None else f * value


def _elementwise(p: _Pass, i: int, scalar: Node, shape: tuple[int, ...]) -> tuple[D, D]:
    """J = Σₖ fₖ·Jₖ, Δ = Σₖ fₖ·Δₖ + Σₖₗ fₖₗ·(Jₖ·Jₗ) over the distinct moving operands."""
    if scalar.op == "fn" and scalar.payload.constant:  # a condition does not move
        return None, None
    operands = Local.operands(p.tape, scalar)
    moving = [k for k, a in enumerate(operands) if a in p.jac]
    jacs = {k: _lifted(p.jac[operands[k]], len(shape)) for k in moving}
    jac: D = None
    lap: D = None
    for k in moving:
        f = p.local(i, scalar, (k,))
        if f is not None:
            jac = plus(jac, f * jacs[k])
            lap = plus(lap, _times(f, p.lap.get(operands[k])))
    for n, k in enumerate(moving):
        for m in moving[n:]:
            f = p.local(i, scalar, (k, m))
            if f is not None:
                paired = p.pair(jacs[k], jacs[m])
                lap = plus(lap, f * (paired if k == m else 2 * paired))
    return (None if jac is None else fit(jac, (p.cols,) + shape),
            None if lap is None else fit(lap, shape))


def _map(p: _Pass, i: int, node: Node) -> tuple[D, D]:
    return _elementwise(p, i, scalar_form(node), node.payload[0])


def _matmul(p: _Pass, i: int, node: Node) -> tuple[D, D]:
    """y = A @ B: J = J_A⋆B + A⋆J_B, Δ = Δ_A@B + A@Δ_B + 2·Σ_d J_A⋆J_B, each one product. With
    the direction axis in front, J_A @ B is J_A's rows times B and A @ J_B (B a vector) is
    J_B @ Aᵀ: no axis moves; only a moving matrix B has its contracted axis moved in front."""
    a, b = node.args
    A, B = p.term(a), p.term(b)
    Ja, Jb = p.jac.get(a), p.jac.get(b)
    d, lead, k, tail = p.cols, A.shape[:-1], A.shape[-1], B.shape[1:]
    jac: D = None
    if Jb is not None:
        if not tail:
            jac = Jb @ (A.T if lead else A)
        else:  # (d, k) + tail -> (k, d) + tail: A's columns meet J_B's rows
            part = (A @ Jb.transpose((1, 0, 2)).reshape(k, -1)).reshape(lead + (d,) + tail)
            jac = part.transpose((1, 0, 2)) if lead else part
    if Ja is not None:
        rows = Ja.reshape(-1, k) if lead else Ja
        jac = plus(jac, (rows @ B).reshape((d,) + lead + tail))
    lap = plus(None if a not in p.lap else p.lap[a] @ B, None if b not in p.lap else A @ p.lap[b])
    if Ja is not None and Jb is not None:  # Σ_d J_A[d] @ J_B[d]: one product over (d, k) pairs
        left = Ja.transpose((1, 0, 2)).reshape(lead + (d * k,)) if lead else Ja.reshape(d * k)
        lap = plus(lap, 2 * (left @ p.weighed(Jb).reshape((d * k,) + tail)))
    return jac, lap


def _linear(make: Callable[[Term, Node, int], Term]) -> Callable[[_Pass, int, Node], tuple[D, D]]:
    """An op linear in its one operand: the same op on J (given its leading direction axis) and
    on Δ."""
    def rule(p: _Pass, i: int, node: Node) -> tuple[D, D]:
        (a,) = node.args
        jac, lap = p.jac.get(a), p.lap.get(a)
        return (None if jac is None else make(jac, node, p.cols),
                None if lap is None else make(lap, node, 0))
    return rule


def _with(d: int) -> tuple[int, ...]:
    """The leading axis of a Jacobian block (d columns), none for a Laplacian (d = 0)."""
    return (d,) if d else ()


def _index(x: Term, node: Node, d: int) -> Term:
    return x[((slice(None),) if d else ()) + as_index(node.payload[1])]


def _place(x: Term, node: Node, d: int) -> Term:
    shape, normal = node.payload
    return Term(x.tape, build.place(x.tape, x.index, _with(d) + shape, (((0, d, 1),) if d else ()) + normal))


def _transpose(x: Term, node: Node, d: int) -> Term:
    perm = node.payload[1]
    return x.transpose(((0,) + tuple(k + 1 for k in perm)) if d else perm)


def _sum(x: Term, node: Node, d: int) -> Term:
    return x.sum(tuple(k + 1 if d else k for k in node.payload[1]))


def _broadcast(x: Term, node: Node, d: int) -> Term:
    target = node.payload[0]
    if d:  # its own axes behind the direction axis, aligned to the target's last ones
        x = _lifted(x, len(target))
    return Term(x.tape, build.broadcast_to(x.tape, x.index, _with(d) + target))


def _join(p: _Pass, i: int, node: Node) -> tuple[D, D]:
    """concatenate / stack: the blocks joined alike, a structural zero as zeros."""
    def joined(parts: dict[int, Term], d: int) -> D:
        if not any(a in parts for a in node.args):
            return None
        tape = p.tape
        blocks = [parts[a].index if a in parts else build.table(tape, np.zeros(_with(d) + shape_of(tape, a)))
                  for a in node.args]
        if not d:
            return Term(tape, build.concat(tape, blocks, node.payload[1]) if node.op == "concat"
                        else build.stack(tape, blocks))
        if node.op == "stack":  # stacked behind the direction axis: each block given an axis of 1 there
            blocks = [build.reshape(tape, j, (d, 1) + shape_of(tape, j)[1:]) for j in blocks]
            return Term(tape, build.concat(tape, blocks, 1))
        return Term(tape, build.concat(tape, blocks, node.payload[1] + 1))
    return joined(p.jac, p.d), joined(p.lap, 0)


#: The array ops' rules: (pass, node index, node) -> (J, Δ) of the node, None for a zero.
RULES: dict[str, Callable[[_Pass, int, Node], tuple[D, D]]] = rule_table("array LAPLACIAN", {
    "table": lambda p, i, node: (None, None),
    "map": _map,
    "matmul": _matmul,
    "sum": _linear(_sum),
    "broadcast": _linear(_broadcast),
    "reshape": _linear(lambda x, node, d: x.reshape(_with(d) + node.payload[0])),
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
        block = blocks.kept(p, i, node)
        p.cols = p.d if block is None else block[0]
        decided = blocks.special(p, i, node, block)
        if decided is not None:
            (jac, lap), block = decided
        elif node.op in RULES:
            jac, lap = RULES[node.op](p, i, node)
        elif node.op == "fn" or node.op in OPS:
            jac, lap = _elementwise(p, i, node, shape_of(p.tape, i))
        else:
            raise Unsupported(f"no array Laplacian rule for op {node.op!r}")
        if jac is not None:
            p.jac[i] = jac
            if block is not None:
                p.blocks[i] = block
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


def jacobian_block(g: Term, xs: list[Term]) -> Term:
    """The Jacobian of g in ``xs`` as one array node of shape (d,) + g's shape, by the same
    sweep's blocks: a Hessian is the block of a gradient (jacfwd∘jacrev over array nodes), one
    product per layer where d² scalar entries would each be a sum over the layer's width.
    ``Unsupported`` where the pass has no rule."""
    tape = g.tape
    p = _Pass(tape, xs, None)
    _pass(p, g.index)
    if g.index in p.blocks:
        blocks.dense(p, g.index)
    found = p.jac.get(g.index)
    return Term(tape, build.table(tape, np.zeros((p.d,) + g.shape))) if found is None else found


def hessian_block(u: Term, x: Term) -> Optional[Term]:
    """∇²u in the array var x as one array node of shape (x.size,) + x.shape: the Jacobian block
    of u's gradient (jacfwd∘jacrev over array nodes). None where the pass has no rule (the
    caller takes the scalar form)."""
    try:
        return jacobian_block(grad_graph(u, x), [x])  # type: ignore[arg-type]
    except Unsupported:
        return None


def dense(u: Term) -> bool:
    """Whether u has a matrix product (a dense layer): where the array pass wins, one product
    per layer over [value | J | Δ]. Code without one (elementwise functions of slices, sums)
    keeps the scalar pass, whose per-element structural zeros the array pass would fill in (a
    Jacobian block per element, dense in d)."""
    nodes = u.tape.nodes
    return any(nodes[i].op == "matmul" for i in dependencies(u.tape, [u.index]))


def scalar_twin(u: Term, xs: list[Term]) -> tuple[Term, list[Term]]:
    """u expanded to scalar nodes and xs to the scalar vars of their elements, for the scalar
    pass where the array pass has no rule."""
    tape = u.tape
    (root,) = scalar_roots(tape, [u.index], "laplacian")
    flat = [t for x in xs for t in (list(element_vars(tape, x.node.payload).ravel()) if x.shape else [x])]
    return Term(tape, root), flat


__all__ = ["RULES", "Unsupported", "columns", "dense", "hessian_block", "holds_arrays", "jacobian_block", "laplacian",
           "scalar_twin"]
