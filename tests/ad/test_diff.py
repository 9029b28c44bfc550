"""diff and derivatives: SymPy-style arguments, every method giving equal values, the orders of
a Taylor run, and method="auto" building whichever way appends fewer nodes."""

import pytest
import sympy

import subgraph_ad as sad
from subgraph_ad import Tape, exp, log, sin, tan, tanh
from subgraph_ad.benchmark_functions import BENCHMARKS  # F1–F5
from conftest import close, sympy_value


X, Y = sympy.symbols("x y")


@pytest.mark.parametrize("args, error", [((), TypeError), ((2,), TypeError), ((b"x",), TypeError), (("q",), ValueError)])
def test_diff_argument_errors(args, error):
    tape = Tape()
    x = tape.var("x")
    with pytest.raises(error):
        sin(x).diff(*args)


def test_diff_counts_follow_sympy():
    tape = Tape()
    x, y = tape.var("x", 0.4), tape.var("y", 0.9)
    f = exp(x * y)
    assert f.diff(x, 0).index == f.index
    assert close(f.diff(x, 2, y).eval(), sympy_value(sympy.diff(sympy.exp(X * Y), X, 2, Y), x=0.4, y=0.9))
    with pytest.raises(ValueError, match=">= 0"):
        f.diff(x, -1)


@pytest.mark.parametrize("name", sorted(BENCHMARKS))
@pytest.mark.parametrize("n", [1, 3, 6])
def test_methods_give_equal_values(name, n):
    tape, f, x = BENCHMARKS[name]()
    values = [f.diff(x, n, method=m).eval() for m in ("graph", "taylor", "auto")]
    assert close(values[1], values[0], rtol=1e-10) and close(values[2], values[0], rtol=1e-10)


@pytest.mark.parametrize("method", ["auto", "graph", "taylor"])
def test_derivatives_lists_every_order_with_the_nodes_made_for_it(method):
    tape = Tape()
    x, y = tape.var("x", 0.7), tape.var("y", 1.3)
    z = exp(-x * x / 2) * sin(y * x)
    start = len(tape)
    steps = sad.derivatives(z, x, 4, y, method=method)
    expr = z.to_sympy()
    X, Y = sympy.symbols("x y")
    wanted = [sympy.diff(expr, X, k) for k in range(1, 5)] + [sympy.diff(expr, X, 4, Y)]
    for step, reference in zip(steps, wanted, strict=True):
        assert close(step.term.eval(), float(reference.subs({X: 0.7, Y: 1.3})), rtol=1e-10)
    # every appended node is attributed to exactly one order, and no order claims another's
    appended = [i for step in steps for i in step.appended]
    assert sorted(appended) == list(range(start, len(tape)))
    if method != "auto":
        assert [s.method for s in steps] == [method] * 5
    assert steps[-1].method == ("taylor" if method == "taylor" else "graph")  # a run of one y
    if steps[0].method == "taylor":  # Taylor mode: the nodes of order k are tagged k
        assert all(tape.orders[i] == k for k, step in enumerate(steps[:4], 1) for i in step.appended)


def test_derivatives_refuses_bad_arguments_and_keeps_the_tape():
    tape = Tape()
    x = tape.var("x")
    z = sin(x) * x
    length = len(tape)
    with pytest.raises(ValueError, match="method must be 'auto', 'graph' or 'taylor', got 'fast'"):
        sad.derivatives(z, x, 3, method="fast")
    with pytest.raises(TypeError, match="must follow a var"):
        sad.derivatives(z, 3)
    assert len(tape) == length


AUTO_CASES = {
    "tanh(tanh(tanh(x)))": lambda x: tanh(tanh(tanh(x))),  # repeated gen_graph: fewer at order 3
    "1/(1+x^2)": lambda x: 1 / (1 + x * x),  # Taylor mode: far fewer
    "exp(x)*sin(x)": lambda x: exp(x) * sin(x),
    "tan": tan,
    "exp(-x^2/2)": lambda x: exp(-x * x / 2),
    "log(1+x^2)": lambda x: log(1 + x * x),
}


@pytest.mark.parametrize("name", sorted(AUTO_CASES))
@pytest.mark.parametrize("n", [3, 5, 8])
def test_auto_builds_whichever_appends_fewer_nodes(name, n):
    sizes, values = {}, {}
    for method in ("graph", "taylor", "auto"):
        tape = Tape()
        x = tape.var("x", 0.6)
        f = AUTO_CASES[name](x)
        start, seen = len(tape), []
        d = f.diff(x, n, method=method, callback=lambda t: seen.append(t.index))
        assert seen == list(range(start, len(tape)))  # trials are neither seen nor left on the tape
        sizes[method], values[method] = len(tape) - start, d.eval()
    assert sizes["auto"] == (sizes["taylor"] if n >= 8 else min(sizes["graph"], sizes["taylor"]))
    assert close(values["auto"], values["graph"], rtol=1e-10) and close(values["taylor"], values["graph"], rtol=1e-10)


def test_auto_sizes_differ_both_ways_and_a_tape_limit_picks_what_fits():
    sizes = {}
    for name, n in (("tanh(tanh(tanh(x)))", 3), ("1/(1+x^2)", 5)):
        for method in ("graph", "taylor"):
            tape = Tape()
            x = tape.var("x", 0.6)
            f = AUTO_CASES[name](x)
            start = len(tape)
            f.diff(x, n, method=method, closed_form=False)
            sizes[name, method] = len(tape) - start
    assert sizes["tanh(tanh(tanh(x)))", "graph"] < sizes["tanh(tanh(tanh(x)))", "taylor"]
    assert sizes["1/(1+x^2)", "taylor"] < sizes["1/(1+x^2)", "graph"]
    # room for the gen_graph passes only (three passes, each kept whole, before diff drops what
    # the last order does not need): auto takes them; Taylor mode alone passes the limit
    tape = Tape()
    x = tape.var("x", 0.6)
    f = AUTO_CASES["tanh(tanh(tanh(x)))"](x)
    start = len(tape)
    f.gen_graph(x).gen_graph(x).gen_graph(x)
    passes = len(tape) - start
    tape = Tape()
    x = tape.var("x", 0.6)
    f = AUTO_CASES["tanh(tanh(tanh(x)))"](x)
    tape.max_nodes = start + passes
    with pytest.raises(sad.LimitError):
        f.diff(x, 3, method="taylor")
    assert len(tape) == start
    X = sympy.Symbol("x")
    expected = sympy_value(sympy.diff(sympy.tanh(sympy.tanh(sympy.tanh(X))), X, 3), x=0.6)
    assert close(f.diff(x, 3).eval(), expected, rtol=1e-12)

def test_derivatives_display_as_a_table_and_stay_a_list_of_steps():
    tape = Tape()
    x, y = tape.var("x", 1.5), tape.var("y", 2.0)
    steps = sad.derivatives(x**3 * y, x, 2, y, method="graph")
    assert isinstance(steps, list) and all(isinstance(s, sad.ad.diff.Step) for s in steps) and len(steps) == 3
    assert steps == list(steps) and steps[1:] == [steps[1], steps[2]]
    # 3x²y = 13.5, 6xy = 18, 6x = 9 at (1.5, 2)
    lines = str(steps).splitlines()
    assert lines[0].split() == ["order", "derivative", "wrt", "method", "new", "nodes", "node", "value"]
    rows = [line.split() for line in lines[2:]]
    assert [r[:4] for r in rows] == [["1", "df/dx", "x", "graph"], ["2", "d²f/dx²", "x", "graph"],
                                     ["3", "d³f/dx²dy", "y", "graph"]]
    assert [float(r[-1]) for r in rows] == [13.5, 18.0, 9.0]
    assert [int(r[4]) for r in rows] == [len(s.appended) for s in steps]
    assert [int(r[5]) for r in rows] == [s.term.index for s in steps]
    page = steps._repr_html_()
    assert page.count("<tr>") == 4 and "<th>derivative</th>" in page and "<td>d³f/dx²dy</td>" in page
    assert ">18.0</td>" in page
    p = tape.placeholder("p")
    unfed = str(sad.derivatives(p * x, x))
    assert "unfed placeholder 'p'" in unfed and "df/dx" in unfed
