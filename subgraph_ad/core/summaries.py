"""What ``repr(tape)`` and ``str(tape)`` say: a one-line summary and a longer one. A mixin of
``Tape``, which owns the tables these read."""

from __future__ import annotations

from typing import Any

import numpy as np

from .ops import Node
from .values import UNFED


def _shown(value: Any) -> str:
    """A var's value in a summary: short, and the same text for the same value."""
    if value is UNFED:
        return "<unfed>"
    array = np.asarray(value, dtype=float)
    if array.ndim:
        return f"<array {array.shape}>"
    text = repr(float(array))
    return text if len(text) <= 10 else format(float(array), ".6g")


def counted(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def _listed(items: list[str], limit: int) -> str:
    """At most ``limit`` items, then how many more."""
    more = len(items) - limit
    return ", ".join(items[:limit] + ([f"… {more} more"] if more > 0 else []))


class Summaries:
    """The summaries of ``Tape`` (its tables declared here for the type checker)."""

    nodes: list[Node]
    orders: list[int]
    max_nodes: int | None
    _values: dict[int, Any]
    _vars: dict[str, int]

    def _var_texts(self) -> list[str]:
        return [f"{name}={_shown(self._values[i])}" for name, i in self._vars.items()]

    def _order_texts(self) -> list[str]:
        counts: dict[int, int] = {}
        for order in self.orders:
            counts[order] = counts.get(order, 0) + 1
        return [f"{order}: {counts[order]}" for order in sorted(counts)]

    def __repr__(self) -> str:
        """One line: how many nodes, the vars with their values (``<unfed>`` for a placeholder
        nobody fed), and how many nodes each derivative order made.

        >>> from subgraph_ad import Tape
        >>> tape = Tape(); x = tape.var("x", 0.5); p = tape.placeholder("p")
        >>> _ = (x * p).gen_graph(x)
        >>> tape
        Tape(4 nodes; vars x=0.5, p=<unfed>; by order 0: 3, 1: 1)
        """
        parts = [counted(len(self.nodes), "node")]
        if self._vars:
            parts.append(f"vars {_listed(self._var_texts(), 6)}")
        if self.nodes:
            parts.append(f"by order {_listed(self._order_texts(), 6)}")
        return f"Tape({'; '.join(parts)})"

    def __str__(self) -> str:
        """A few lines: size and budget, every var, nodes by derivative order and by operation
        (functions by name, in the order they first appear).

        >>> import subgraph_ad as sad
        >>> tape = sad.Tape(); x = tape.var("x", 0.5)
        >>> _ = sad.sin(x).gen_graph(x)
        >>> print(tape)
        Tape of 4 nodes (budget 10,000,000)
        vars: x=0.5
        by derivative order: 0: 2, 1: 2
        by op: var 1, sin 1, const 1, cos 1
        """
        budget = "no budget" if self.max_nodes is None else f"budget {self.max_nodes:,}"
        ops: dict[str, int] = {}
        for node in self.nodes:
            what = node.payload.name if node.op == "fn" else node.op
            ops[what] = ops.get(what, 0) + 1
        lines = [f"Tape of {counted(len(self.nodes), 'node')} ({budget})"]
        if self._vars:
            lines.append(f"vars: {_listed(self._var_texts(), 20)}")
        if self.nodes:
            lines.append(f"by derivative order: {_listed(self._order_texts(), 20)}")
            lines.append(f"by op: {_listed([f'{op} {n}' for op, n in ops.items()], 20)}")
        return "\n".join(lines)
