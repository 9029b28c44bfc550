"""Directional Taylor jets over array nodes: along x ↦ x + t·v every node that moves carries its
Taylor coefficients y₁ … y_K (of tᵏ; y₀ is the node itself) as K array nodes of its shape, so a
dense layer costs K matrix products whatever its width — on a batch of points, K GEMMs — where
a jet that treats the weights as series too makes (K + 1)(K + 2)/2.

The rules, keyed by op: a linear op (a product by a constant, sum, reshape, transpose, index,
place, broadcast, concatenate, stack, add, sub, neg) acts on each coefficient alike; a product
of two moving values is the Cauchy product yₖ = Σⱼ aⱼ·b₍ₖ₋ⱼ₎ (elementwise or matrix); a quotient
qₖ = (aₖ − Σ_{j≥1} bⱼ·q₍ₖ₋ⱼ₎)/b₀; every function and power the ODE recurrence
k·yₖ = Σ over moving operands u of Σ_{j=1..k} j·uⱼ·g₍ₖ₋ⱼ₎, with g = ∂f/∂u the function's own
local derivative (``Local``) — a node of the tape, whose coefficients the same pass computes, so
a user function needs no Taylor rule and tanh, exp, sin/cos close on themselves (g reuses the
output). The coefficients are computed order by order over every node, the g's included: order
k of a function needs its g only to order k − 1. A g of a g of … (a derivative chain that never
closes) is built no deeper than the order needs.

What the pass cannot do (an op it has no rule for) raises ``Unsupported``; ``taylor_graph(fn, k)``
then expands u to scalar nodes and runs Taylor mode.

>>> import numpy as np, subgraph_ad as sad
>>> tape = sad.Tape(); x = tape.array("x", [0.5, -1.0]); v = tape.array("v", [1.0, 2.0])
>>> u = sad.sin(np.array([[1.0, 1.0]]) @ x).sum()
>>> ys = jet(u, x, v, 3)      # sin(t·3 − 0.5): coefficients 3·cos, −9/2·sin, −27/6·cos at t = 0
>>> [round(float(y.eval()), 6) for y in ys] == [round(c, 6) for c in (3 * np.cos(-0.5), -4.5 * np.sin(-0.5), -4.5 * np.cos(-0.5))]
True
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from ...core import Tape, Term, dependencies
from ...core import array_build as build
from ...core.arrays import scalar_form, shape_of
from ...core.ops import OPS, Node
from ..arrays import fit, plus
from .array_laplacian import Unsupported
from .local import Local

D = Optional[Term]
#: Array ops linear in their one operand: the same op on each coefficient.
LINEAR = ("sum", "broadcast", "reshape", "transpose", "index", "place")


class _Jet:
    """The coefficients of the nodes a root needs, order by order."""

    def __init__(self, tape: Tape, x: Term, v: Term, order: int) -> None:
        self.tape, self.order = tape, order
        self.coef: dict[int, list[D]] = {x.index: [v] + [None] * (order - 1)}
        self.locals: dict[tuple, Local] = {}
        self.partials: dict[int, list[tuple[int, D]]] = {}  # a function node: (operand, g) pairs
        self.through: dict[int, int] = {}  # a function Q(g(u)) declared so: the node Q(g(u))
        self.depth: dict[int, int] = {x.index: 0}

    def term(self, i: int) -> Term:
        return Term(self.tape, i)

    def get(self, i: int, k: int) -> D:
        """Coefficient k of node i: the node for k = 0, None for a zero."""
        if k == 0:
            return self.term(i)
        found = self.coef.get(i)
        return None if found is None or k > len(found) else found[k - 1]

    def plan(self, root: int) -> list[int]:
        """The moving nodes the root needs and the g's of their functions (and theirs, as deep
        as the order needs: a node at depth m of that chain is needed to order K − m), in tape
        order."""
        todo = self._moving(dependencies(self.tape, [root]), 0)
        at = 0
        while at < len(todo):
            i = todo[at]
            at += 1
            node = self.tape.nodes[i]
            if not self._function(node):
                continue
            q = self._through(node)
            if q is not None:  # its coefficients are Q(g)'s: products of g's, which interning pairs up
                self.through[i] = q.index
                todo += self._moving(dependencies(self.tape, [q.index]), self.depth[i])
                continue
            self.partials[i] = pairs = self._partials(i, node)
            if self.depth[i] + 1 < self.order:  # the g's coefficients are needed too
                for _, g in pairs:
                    if g is not None:
                        todo += self._moving(dependencies(self.tape, [g.index]), self.depth[i] + 1)
        return sorted(self.coef)

    def _moving(self, order: list[int], depth: int) -> list[int]:
        """The nodes of ``order`` (ascending) that a moving node reaches and that have no
        coefficients yet, given them at ``depth``; a condition does not move."""
        nodes, found = self.tape.nodes, []
        for i in order:
            node = nodes[i]
            if i in self.coef or not node.args or (node.op == "fn" and node.payload.constant):
                continue
            if any(a in self.coef for a in node.args):
                self.coef[i] = [None] * self.order
                self.depth[i] = depth
                found.append(i)
        return found

    def _function(self, node: Node) -> bool:
        scalar = scalar_form(node)
        return scalar.op in ("fn", "pow") and not (scalar.op == "fn" and scalar.payload.constant)

    def _through(self, node: Node) -> D:
        """Q(g(u)) for a function of one operand declared to run through g (sech² = 1 − tanh²,
        σ′ = σ − σ²), g(u) interned with the node that is there already; else None."""
        scalar = scalar_form(node)
        fn = scalar.payload if scalar.op == "fn" else None
        declared = None if fn is None or fn.arity != 1 else fn.through
        if declared is None:
            return None
        g, q = declared
        (u,) = scalar.args
        return fit(q(g(self.term(u))), shape_of(self.tape, u))

    def _partials(self, i: int, node: Node) -> list[tuple[int, D]]:
        """(operand, ∂f/∂operand) for each distinct moving operand of function node i."""
        scalar = scalar_form(node)
        shape = shape_of(self.tape, i)
        out = []
        for k, a in enumerate(Local.operands(self.tape, scalar)):
            if a in self.coef:
                g = Local.partial(self.locals, self.tape, scalar, (k,), i)
                out.append((a, None if g is None else fit(g, shape)))
        return out


def _cauchy(p: _Jet, a: int, b: int, k: int, times: str) -> D:
    """Coefficient k of a·b (``times``: "mul" elementwise, "matmul")."""
    total: D = None
    for j in range(k + 1):
        x, y = p.get(a, j), p.get(b, k - j)
        if x is None or y is None:
            continue
        total = plus(total, x * y if times == "mul" else x @ y)
    return total


def _coefficient(p: _Jet, i: int, k: int) -> D:
    """Coefficient k ≥ 1 of node i, its operands' coefficients to k (and g's to k − 1) known."""
    tape = p.tape
    node = tape.nodes[i]
    if node.op == "var":
        return p.get(i, k)
    if node.op in LINEAR:
        (a,) = node.args
        found = p.get(a, k)
        return None if found is None else Term(tape, build.node(tape, node.op, (found.index,), node.payload))
    if node.op in ("concat", "stack"):
        parts = [p.get(a, k) for a in node.args]
        if all(t is None for t in parts):
            return None
        blocks = [t.index if t is not None else build.table(tape, np.zeros(shape_of(tape, a)))
                  for t, a in zip(parts, node.args)]
        return Term(tape, build.concat(tape, blocks, node.payload[1]) if node.op == "concat" else build.stack(tape, blocks))
    if node.op == "matmul":
        return _cauchy(p, node.args[0], node.args[1], k, "matmul")
    if node.op not in OPS and node.op != "map":
        raise Unsupported(f"no array jet rule for op {node.op!r}")
    scalar = scalar_form(node)
    shape = shape_of(tape, i)
    parts = [p.get(a, k) for a in scalar.args]
    if scalar.op in ("add", "sub"):
        first, second = parts
        second = None if second is None else (-second if scalar.op == "sub" else second)
        total = plus(first, second)
        return None if total is None else fit(total, shape)
    if scalar.op == "neg":
        return None if parts[0] is None else -parts[0]
    if scalar.op == "mul":
        found = _cauchy(p, scalar.args[0], scalar.args[1], k, "mul")
        return None if found is None else fit(found, shape)
    if scalar.op == "div":
        top, bottom = scalar.args
        total = p.get(top, k)
        for j in range(1, k + 1):
            bj, q = p.get(bottom, j), p.get(i, k - j)
            if bj is not None and q is not None:
                total = plus(total, -(bj * q))
        return None if total is None else fit(total / p.term(bottom), shape)
    if i in p.through:
        found = p.get(p.through[i], k)
        return None if found is None else fit(found, shape)
    if i not in p.partials:  # a condition, or a function too deep in a g-chain to be needed
        return None
    total = None
    for a, g in p.partials[i]:
        for j in range(1, k + 1):
            u, h = p.get(a, j), (None if g is None else p.get(g.index, k - j))
            if u is not None and h is not None:  # j·u_j: one node per (u, j), shared by every k
                total = plus(total, (u if j == 1 else float(j) * u) * h)
    return None if total is None else fit(total if k == 1 else total * (1.0 / k), shape)


def jet(u: Term, x: Term, v: Term, order: int) -> list[D]:
    """u's Taylor coefficients y₁ … y_order along x ↦ x + t·v (x an array var, v a Term of its
    shape), as array nodes of u's shape; None for a structural zero."""
    p = _Jet(u.tape, x, v, order)
    nodes = p.plan(u.index)
    for k in range(1, order + 1):
        done = {x.index}
        for i in nodes:
            if i in done or p.depth.get(i, 0) > order - k:
                continue
            if i in p.through:  # Q(g)'s new nodes come after i on the tape: theirs first
                for j in dependencies(p.tape, [p.through[i]]):
                    if j > i and j in p.coef and j not in done:
                        p.coef[j][k - 1] = _coefficient(p, j, k)
                        done.add(j)
            p.coef[i][k - 1] = _coefficient(p, i, k)
            done.add(i)
    return [p.get(u.index, k) for k in range(1, order + 1)]


__all__ = ["jet"]
