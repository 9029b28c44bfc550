"""The node budget: a generous default, LimitError naming budget and count, and rollback."""

import re

import pytest
import sympy

import subgraph_ad as sad
from subgraph_ad import Tape

#: How many nodes past what the setup built a limited tape may add: far fewer than any operation
#: below needs.
ROOM = 5


def build(limited):
    """Two vars, f, and its second derivative in x; then, if ``limited``, a budget of ROOM more nodes."""
    tape = Tape(max_nodes=None)
    x, y = tape.var("x", 0.4), tape.var("y", 1.1)
    f = sad.tanh(sad.exp(x * y) + x)
    d = f.diff(x, 2, method="graph")
    if limited:
        tape.max_nodes = len(tape) + ROOM
    return tape, x, y, f, d


OPERATIONS = {
    "diff auto": lambda tape, x, y, f, d: f.diff(x, 5),
    "diff taylor": lambda tape, x, y, f, d: f.diff(y, 9, method="taylor"),
    "diff graph": lambda tape, x, y, f, d: f.diff(y, 4, method="graph"),
    "derivatives": lambda tape, x, y, f, d: sad.derivatives(f, y, 3, x),
    "taylor_graph": lambda tape, x, y, f, d: sad.taylor_graph(f, y, 8),
    "gen_graph": lambda tape, x, y, f, d: d.gen_graph(y),
    "grad_graph": lambda tape, x, y, f, d: d.grad_graph([x, y]),
    "hessian": lambda tape, x, y, f, d: sad.hessian(f, [x, y]),
    "hvp": lambda tape, x, y, f, d: sad.hvp(d, [x, y], [1.0, y]),
    "jacobian": lambda tape, x, y, f, d: sad.jacobian([f, d], [x, y]),
    "parse": lambda tape, x, y, f, d: sad.parse(" + ".join(f"sin({k}*x + y)" for k in range(2, 12)), tape=tape),
    "from_sympy": lambda tape, x, y, f, d: tape.from_sympy(sum(sympy.cos(k * sympy.Symbol("x")) for k in range(2, 12))),
}


def state(tape):
    return list(tape.nodes), list(tape.orders), dict(tape._intern), dict(tape._vars), dict(tape.deriv_cache)


def test_a_tape_has_a_generous_default_budget_that_none_lifts():
    assert Tape().max_nodes == 10_000_000 == sad.core.MAX_NODES
    assert Tape(max_nodes=None).max_nodes is None


@pytest.mark.parametrize("name", OPERATIONS)
def test_passing_the_budget_raises_a_clear_limit_error_and_rolls_back(name):
    tape, x, y, f, d = build(limited=True)
    budget, before = tape.max_nodes, state(tape)
    with pytest.raises(sad.LimitError) as info:
        OPERATIONS[name](tape, x, y, f, d)
    message = str(info.value)
    assert f"max_nodes={budget}" in message and f"a tape of {budget} nodes" in message
    assert state(tape) == before
    assert (x * y).eval() == pytest.approx(0.44)  # the tape still works
    free = build(limited=False)
    OPERATIONS[name](*free)  # the same call needs more room than the budget left, and works without it
    assert len(free[0]) > budget


def test_one_arithmetic_call_that_folds_to_two_nodes_is_all_or_nothing():
    tape = Tape(max_nodes=4)
    x, y = tape.var("x"), tape.var("y")
    n = -y
    with pytest.raises(sad.LimitError, match=re.escape("node 5 (neg, to a tape of 4 nodes)")):
        x * n  # folds to -(x*y): a mul, then a neg
    assert [node.op for node in tape.nodes] == ["var", "var", "neg"]


@pytest.mark.parametrize("bad, error", [(-1, ValueError), (2.5, TypeError), ("100", TypeError), (True, TypeError)])
def test_a_budget_must_be_a_count_or_none(bad, error):
    with pytest.raises(error, match="max_nodes must be"):
        Tape(max_nodes=bad)
