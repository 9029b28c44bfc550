"""Walks over the node list: what a set of roots depends on, and how much of it is new.

Operands always precede their node on the tape, so one downward scan over a byte array marks
everything a root needs: no recursion, no visited set, results in tape (topological) order.
"""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:  # pragma: no cover - typing only
    from .tape import Tape


def dependencies(tape: Tape, roots: list[int], stop: Callable[[int], bool] | None = None) -> list[int]:
    """Indices of every node the roots depend on (roots included), in ascending (topological) order.

    ``stop(i)`` true means node i is needed but its operands are not.

    >>> from subgraph_ad import Tape
    >>> tape = Tape(); x = tape.var("x"); y = tape.var("y")
    >>> dependencies(tape, [(x * 2).index])
    [0, 2, 3]
    """
    if not roots:
        return []
    top = max(roots)
    needed = bytearray(top + 1)
    for r in roots:
        needed[r] = 1
    nodes = tape.nodes
    out: list[int] = []
    leaves: set[int] = set()  # operands with no operands of their own: output, never scanned for
    pending = len(set(roots))  # marked nodes the downward scan has yet to reach: it stops at none
    i = top
    while pending:
        if needed[i]:
            pending -= 1
            out.append(i)
            if stop is None or not stop(i):
                for a in nodes[i].args:
                    if needed[a] or a in leaves:
                        continue
                    if nodes[a].args:
                        needed[a] = 1
                        pending += 1
                    else:
                        leaves.add(a)
        i -= 1
    out.reverse()
    return list(heapq.merge(out, sorted(leaves))) if leaves else out


def below(tape: Tape, roots: list[int], stop: Callable[[int], bool]) -> list[int]:
    """``dependencies`` of the roots, found by a search from them rather than a scan down the tape:
    its cost is the size of the graph, not the distance to its lowest node. For a small graph
    far above its leaves, such as Q(g) = 1 − g·g built long after g (``dependencies`` scans
    every node between them, and a Laplacian's reverse sweep asks once per tanh).

    >>> from subgraph_ad import Tape
    >>> tape = Tape(); x = tape.var("x"); g = (x * 2).sin()
    >>> q = (1 - g * g).index
    >>> below(tape, [q], stop=lambda i: i == g.index) == dependencies(tape, [q], stop=lambda i: i == g.index)
    True
    """
    nodes = tape.nodes
    seen = set(roots)
    stack = list(seen)
    while stack:
        i = stack.pop()
        if stop(i):
            continue
        for a in nodes[i].args:
            if a not in seen:
                seen.add(a)
                stack.append(a)
    return sorted(seen)


def appended(tape: Tape, root: int, mark: int) -> int:
    """How many of the nodes from ``mark`` on the root needs."""
    return sum(1 for i in dependencies(tape, [root], stop=lambda i: i < mark) if i >= mark)


def live_since(tape: Tape, mark: int, roots: list[int]) -> bytearray:
    """Which of the nodes appended since ``mark`` the roots need (a var always counts)."""
    nodes = tape.nodes
    live = bytearray(len(nodes) - mark)
    for r in roots:
        if r >= mark:
            live[r - mark] = 1
    for index in range(len(nodes) - 1, mark - 1, -1):
        node = nodes[index]
        if node.op == "var":
            live[index - mark] = 1
        if live[index - mark]:
            for a in node.args:
                if a >= mark:
                    live[a - mark] = 1
    return live
