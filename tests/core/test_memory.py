"""The node budget bounds memory: every build stops with LimitError, the tape rolled back, before
the machine runs out.

Each case runs in a subprocess whose address space is capped (``RLIMIT_AS``) a little above what
the budget allows, so a build that holds more than its budget says meets MemoryError there
instead of LimitError. What a build holds besides its nodes counts too: a Taylor build's plan
(products and coefficients), its exact scalars above order 150 (whose size grows with the order),
and derivative memo entries beyond one per node.
"""

from __future__ import annotations

import math
import textwrap

import pytest

from capped import run


def test_exact_scalars_of_a_very_high_order_stop_at_the_budget():
    """sin(x).diff(x, 100_000) in Taylor mode keeps exact scalars near 1/k! for every order k:
    about k·log2(k)/8 bytes each, 10 GB in all (auto mode builds it by gen_graph, which closes
    on sin → cos → −sin → −cos: tests/ad/test_extreme_orders.py). With 200,000 nodes of budget
    (80 MB) it must stop with LimitError long before a 400 MB cap; an order whose scalars fit
    still works."""
    out = run("""
        tape = sad.Tape(max_nodes=200_000); x = tape.var("x", 0.7); f = sad.sin(x)
        cap(400)
        d = f.diff(x, 3001, method="taylor")
        fine = d.eval() == math.cos(0.7) and len(tape) <= 4  # sin⁽³⁰⁰¹⁾ = cos
        before = snapshot(tape)
        try:
            f.diff(x, 100_000, method="taylor")
            report(raised=None)
        except sad.LimitError as error:
            report(raised="LimitError", message=str(error), unchanged=snapshot(tape) == before, fine=fine)
    """)
    assert out["raised"] == "LimitError" and out["unchanged"] and out["fine"]
    assert "max_nodes=200000" in out["message"] and "working memory" in out["message"]


def test_a_taylor_plan_larger_than_the_budget_stops_before_it_is_built():
    """The plan of a Taylor build (its products and coefficients) is made before any node is
    appended: at order 140 of a 30-level expression it holds about 250 MB. With 20,000 nodes of
    room it must stop with LimitError under a 120 MB cap."""
    out = run("""
        tape = sad.Tape(max_nodes=None); x = tape.var("x", 0.3); y = tape.var("y", 0.7)
        f = x
        for k in range(30):
            f = sad.sin(f * y + k) / (1 + f * f)
        tape.max_nodes = len(tape) + 20_000
        before = snapshot(tape)
        cap(120)
        try:
            sad.taylor_graph(f, x, 140)
            report(raised=None)
        except sad.LimitError as error:
            unchanged = snapshot(tape) == before
            d2 = sad.taylor_graph(f, x, 2)[1].eval()  # a build that fits still works
            h = 1e-4
            fd = (f.eval({x: 0.3 + h}) - 2 * f.eval() + f.eval({x: 0.3 - h})) / h**2
            report(raised="LimitError", message=str(error), unchanged=unchanged, d2=d2, fd=fd)
    """)
    assert out["raised"] == "LimitError" and out["unchanged"]
    # central differences: truncation ~h²·f⁗/12 and rounding ~4e-16·|f|/h² (4e-8 here), far below 1e-5
    assert math.isclose(out["d2"], out["fd"], rel_tol=1e-5, abs_tol=1e-5)
    assert "max_nodes=" in out["message"]


def test_memo_entries_without_nodes_count_against_the_budget():
    """gen_graph memoises d(node)/d(var) for every node it visits, also where the derivative is
    zero and nothing is appended: a 20,000-node chain in x differentiated by 300 other vars would
    hold six million entries (about 1.2 GB). With 300,000 nodes of budget it must stop with
    LimitError under a 300 MB cap, the failed call rolled back."""
    out = run("""
        tape = sad.Tape(max_nodes=300_000); x = tape.var("x", 0.1)
        others = [tape.var(f"v{i}", 1.0) for i in range(300)]
        g = x
        for _ in range(10_000):
            g = sad.sin(g) * 1.0001
        z = g + sum(others[1:], others[0])
        cap(300)
        done = 0
        try:
            for v in others:
                before = snapshot(tape)
                dz = z.gen_graph(v)
                assert dz.eval() == 1.0
                done += 1
            report(raised=None)
        except sad.LimitError as error:
            report(raised="LimitError", message=str(error), unchanged=snapshot(tape) == before, done=done)
    """)
    assert out["raised"] == "LimitError" and out["unchanged"] and out["done"] >= 5
    assert "max_nodes=300000" in out["message"]


#: Builds that grow until they meet a budget of 200,000 nodes, one of each kind.
BUILDS = {
    "arithmetic": """
        t = x
        while True:
            t = sad.sin(t) * 1.0001 + y
    """,
    "gen_graph": """
        t = sad.tanh(sad.tanh(sad.tanh(x * y)))
        while True:
            t = t.gen_graph(x)
    """,
    "grad_graph": """
        t = x
        for _ in range(20_000):
            t = sad.sin(t) * y + x
        while True:
            t = t.grad_graph(x)
    """,
    "memo by many vars": """
        vs = [tape.var(f"v{i}", 1.0) for i in range(1000)]
        g = x
        for _ in range(10_000):
            g = sad.sin(g) * 1.0001
        z = g + sum(vs[1:], vs[0])
        for v in vs:
            z.gen_graph(v)
    """,
    "taylor_graph": """
        f = x
        for k in range(30):
            f = sad.sin(f * y + k) / (1 + f * f)
        sad.taylor_graph(f, x, 150)
    """,
    "diff, exact scalars": """
        (sad.sin(x) * sad.exp(sad.cos(x)) / (1 + x * x)).diff(x, 1400)
    """,
}


@pytest.mark.parametrize("name", BUILDS)
def test_every_kind_of_build_stops_within_the_memory_its_budget_stands_for(name):
    """A budget of N nodes stands for N·NODE_BYTES of memory (400 bytes; the default ten million,
    4 GB): the measured peaks per node of budget are 240 (arithmetic) to about 400 bytes (a
    Taylor build of one order), so a cap of 1.5 times that, plus what the setup itself holds,
    must see LimitError, never MemoryError."""
    out = run(f"""
        from subgraph_ad.core.tape import NODE_BYTES
        budget = 200_000
        tape = sad.Tape(max_nodes=budget); x = tape.var("x", 0.3); y = tape.var("y", 0.7)
        cap(int(1.5 * budget * NODE_BYTES / 2**20))
        try:
{textwrap.indent(textwrap.dedent(BUILDS[name]), " " * 12)}
            report(raised=None)
        except sad.LimitError as error:
            whole = all(a < i for i, node in enumerate(tape.nodes) for a in node.args)
            report(raised="LimitError", message=str(error), nodes=len(tape), whole=whole)
    """)
    assert out["raised"] == "LimitError" and out["whole"] and out["nodes"] <= 200_000
    assert "max_nodes=200000" in out["message"]
