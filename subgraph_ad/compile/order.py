"""The order a compiled program computes its nodes in (``program.build_program`` chooses):
tape order, or output by output — a depth-first walk from each output in turn — and how many
values each keeps live at once, which a program's registers and scratch columns grow with."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..core import Tape


def demand_order(tape: Tape, needed: Sequence[int], roots: Sequence[int], twins: dict[int, int]) -> list[int]:
    """The nodes in the order the outputs ask for them: a depth-first walk from each output in
    turn, every node placed right after its operands (−g(u) after g(u)), so that a value is
    computed near where it is read (iterative)."""
    nodes = tape.nodes
    order: list[int] = [i for i in needed if not nodes[i].args]  # vars and constants first
    placed = set(order)
    for root in roots:
        todo = [(root, False)]
        while todo:
            i, ready = todo.pop()
            if ready:
                order.append(i)
                continue
            if i in placed:
                continue
            placed.add(i)
            todo.append((i, True))
            operands = (twins[i],) if i in twins else nodes[i].args
            todo.extend((a, False) for a in reversed(operands) if a not in placed)
    return order


def operand_reads(tape: Tape, needed: Sequence[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The nodes that are values (not inputs or constants), and each operand read: (operand,
    reader) node pairs."""
    nodes = tape.nodes
    operand: list[int] = []
    reader: list[int] = []
    values: list[int] = []
    for i in needed:
        args = nodes[i].args
        if args:
            values.append(i)
            operand.extend(args)
            reader.extend([i] * len(args))
    return np.array(values, dtype=np.intp), np.array(operand, dtype=np.intp), np.array(reader, dtype=np.intp)


def most_live(reads: tuple[np.ndarray, np.ndarray, np.ndarray], order: Sequence[int]) -> int:
    """The most values computed and still to be read at once, the nodes computed in ``order``:
    what a program's registers and scratch columns grow with. A value lives from its step to its
    last reader's (which may write over it), one step if nothing reads it; an output is stored
    where it goes (every order stores the same outputs)."""
    values, operand, reader = reads
    if not values.size:
        return 0
    rank = np.zeros(max(order) + 1, dtype=np.intp)
    rank[np.asarray(order, dtype=np.intp)] = np.arange(len(order))
    last = np.full(rank.size, -1)
    np.maximum.at(last, operand, rank[reader])
    born = rank[values]
    change = np.zeros(len(order) + 2, dtype=np.intp)
    np.add.at(change, born, 1)
    np.add.at(change, np.maximum(last[values], born + 1), -1)
    return int(np.cumsum(change).max())


__all__ = ["demand_order", "most_live", "operand_reads"]
