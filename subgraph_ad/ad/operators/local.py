"""The local partial derivatives of one kind of node to any order (``Local``), built once on a
scratch tape and copied onto the real one wherever a node of that kind needs them."""

from __future__ import annotations

from typing import Any, Optional

from ...core import Tape, Term, dependencies
from ...core.ops import exact_value
from ..forward import gen_graph


class Local:
    """The local partial derivatives of one kind of node (an op or function applied to operands
    of a pattern) to any order, built on a scratch tape where every operand that is not a
    constant is a var, by ``gen_graph``. On the real tape an operand is a node that folding
    may dissolve in a derivative's graph (2·(0.5·s) is s), so a sweep seeded at that node would
    miss it; a var cannot be dissolved. ``copy`` puts the operands back."""

    def __init__(self, tape: Tape, node: Any) -> None:
        self.scratch = Tape(max_nodes=None)
        operands = Local.operands(tape, node)
        self.vars = [self.scratch.var(f"t{k}") for k in range(len(operands))]
        args = tuple(self.vars[operands.index(a)].index if a in operands else
                     self.scratch.constant(tape.nodes[a].payload, exact_value(tape.nodes[a])) for a in node.args)
        self.output = Term(self.scratch, self.scratch.append(node.op, args, node.payload))
        self.found: dict[tuple[int, ...], Optional[Term]] = {(): self.output}

    @staticmethod
    def operands(tape: Tape, node: Any) -> list[int]:
        """The distinct operands of a node that are not constants: the scratch vars t0, t1."""
        return list(dict.fromkeys(a for a in node.args if tape.nodes[a].op != "const"))

    @staticmethod
    def key(tape: Tape, node: Any) -> tuple:
        """Nodes of one op and function whose operands repeat alike and whose constants are the
        same share their local derivatives."""
        distinct = Local.operands(tape, node)
        pattern = tuple(("var", distinct.index(a)) if tape.nodes[a].op != "const" else
                        ("const", float(tape.nodes[a].payload).hex(), tape.nodes[a].exact) for a in node.args)
        return (node.op, node.payload, pattern)

    @staticmethod
    def partial(cache: dict[tuple, "Local"], tape: Tape, node: Any, slots: tuple[int, ...],
                index: int) -> Optional[Term]:
        """∂ᵏf/∂t_{slots…} of node ``index`` (``node``: its op on scalar operands), on ``tape``
        over its operands, the ``Local`` of its kind kept in ``cache``; None: a structural zero."""
        key = Local.key(tape, node)
        found = cache.get(key)
        if found is None:
            found = cache[key] = Local(tape, node)
        return found.copy(found.derivative(slots), tape, node, index)

    def derivative(self, slots: tuple[int, ...]) -> Optional[Term]:
        """∂ᵏf/∂t_{slots[0]}… on the scratch tape (None: a structural zero)."""
        if slots not in self.found:
            done = max(k for k in range(len(slots)) if slots[:k] in self.found)
            for k in range(done + 1, len(slots) + 1):
                previous = self.found[slots[:k - 1]]
                d = None if previous is None else gen_graph(previous, self.vars[slots[k - 1]])
                self.found[slots[:k]] = None if d is None or d == self.scratch.zero else d
        return self.found[slots]

    def copy(self, term: Optional[Term], tape: Tape, node: Any, index: int) -> Optional[Term]:
        """A scratch Term rebuilt on ``tape`` with each var t_k the operand node it stands for
        and the scratch output the node ``index`` itself."""
        if term is None:
            return None
        scratch = self.scratch
        mapped = {v.index: a for v, a in zip(self.vars, Local.operands(tape, node))}
        mapped[self.output.index] = index
        for j in dependencies(scratch, [term.index], stop=lambda j: j in mapped):
            if j in mapped:
                continue
            other = scratch.nodes[j]
            if other.op == "const":
                mapped[j] = tape.constant(other.payload, exact_value(other))
            else:
                mapped[j] = tape.append(other.op, tuple(mapped[a] for a in other.args), other.payload)
        return Term(tape, mapped[term.index])
