"""The graph walks: ``dependencies`` (a scan down the tape) and ``below`` (a search from the
roots) against a plain fixed-point closure of the operand relation, on random tapes with shared
operands, leaves and stop sets; and ``below`` on a graph far above its leaves."""

from __future__ import annotations

import random

import pytest

import subgraph_ad as sad
from subgraph_ad.core import dependencies
from subgraph_ad.core.graph import below


def closure(tape: sad.Tape, roots: list[int], stop: set[int]) -> list[int]:
    """What the roots need, by repeating "add every operand of a needed, unstopped node" until
    nothing changes: no order, no scan, no stack."""
    needed = set(roots)
    while True:
        more = {a for i in needed if i not in stop for a in tape.nodes[i].args} - needed
        if not more:
            return sorted(needed)
        needed |= more


@pytest.mark.parametrize("seed", range(40))
def test_both_walks_find_the_closure(seed):
    rng = random.Random(seed)
    tape = sad.Tape()
    terms = [tape.var(f"x{k}", 0.5) for k in range(3)] + [tape.const(2.0)]
    for _ in range(rng.randrange(5, 60)):
        a, b = rng.choice(terms), rng.choice(terms)  # a and b may be one node: a - a, a * a
        terms.append(rng.choice([a + b, a * b, a - b, sad.sin(a), sad.exp(b) / (1 + a * a)]))
    roots = sorted({rng.choice(terms).index for _ in range(rng.randrange(1, 4))})
    stop = {t.index for t in rng.sample(terms, rng.randrange(0, 5))}
    want = closure(tape, roots, stop)
    assert dependencies(tape, roots, stop=stop.__contains__) == want
    assert below(tape, roots, stop=stop.__contains__) == want


def test_below_a_graph_far_above_its_leaves_visits_only_it():
    tape = sad.Tape()
    x = tape.var("x", 0.3)
    g = sad.tanh(x)
    filler = x
    for k in range(100_000):  # a long chain between g and Q(g) = 1 - g*g
        filler = filler + k
    q = 1 - g * g
    visited: list[int] = []

    def stop(i: int) -> bool:
        visited.append(i)
        return i == g.index

    assert below(tape, [q.index], stop) == closure(tape, [q.index], {g.index})
    assert len(visited) <= 5  # q, g*g, g (and the constant 1): not the 100,000 nodes between
