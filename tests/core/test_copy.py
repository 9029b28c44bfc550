"""copy.copy, copy.deepcopy and pickle of tapes and terms: an independent tape, equal in content."""

import copy
import pickle
from fractions import Fraction

import numpy as np
import pytest

import subgraph_ad as sad
from subgraph_ad import Tape
from subgraph_ad.core.tape import UNFED

from conftest import Softplus

softplus = Softplus()


def content(tape: Tape) -> tuple:
    """Everything a copy must reproduce: nodes, orders, interning, vars, values, memo, budget."""
    return (list(tape.nodes), list(tape.orders), dict(tape._intern), dict(tape._vars), dict(tape._values),
            dict(tape.deriv_cache), tape.max_nodes)


def tables(tape: Tape) -> list:
    return [tape.nodes, tape.orders, tape._intern, tape._vars, tape._values, tape.deriv_cache]


def example() -> tuple:
    tape = Tape(max_nodes=5000)
    x, y = tape.var("x", 0.5), tape.var("y", 1.5)
    z = sad.sin(x) * y + softplus(x * y)
    z.gen_graph(x)  # a memo to copy
    return tape, x, y, z


@pytest.mark.parametrize("duplicate", [copy.copy, copy.deepcopy, lambda t: pickle.loads(pickle.dumps(t))],
                         ids=["copy", "deepcopy", "pickle"])
def test_a_copied_tape_is_equal_in_content_and_independent_both_ways(duplicate):
    tape, x, y, z = example()
    before = content(tape)
    twin = duplicate(tape)
    if duplicate is copy.copy or duplicate is copy.deepcopy:
        assert content(twin) == before
    assert all(mine is not theirs for mine, theirs in zip(tables(twin), tables(tape)))
    # the reported bug: a var made on the copy appeared on the original
    w = twin.var("w", 2.0)
    assert tape.find_var("w") is None and content(tape) == before
    twin[x.index].set(9.0)
    assert x.value == 0.5
    d2z_dy2 = twin[z.index].diff(twin[y.index], 2, method="graph")
    assert content(tape) == before
    # and the other way: what the original builds stays off the copy
    size = len(twin)
    tape.var("v", 1.0)
    z.diff(x, 3)
    assert len(twin) == size and twin.find_var("v") is None and (w * 2).eval() == 4.0
    s = 1.0 / (1.0 + np.exp(-9.0 * 1.5))  # z = sin(x)·y + softplus(x·y): d²z/dy² = x²·σ(xy)·(1 − σ(xy))
    assert d2z_dy2.eval() == pytest.approx(81.0 * s * (1.0 - s), rel=1e-12)


def test_a_pickled_tape_keeps_every_builtin_function_working():
    tape = Tape()
    x, y = tape.var("x", 0.3), tape.var("y", 0.4)
    terms = {name: fn(x) if fn.arity == 1 else fn(x + 1, y + 1) for name, fn in sorted(sad.FUNCTIONS.items())}
    terms["exact third"] = tape.const(Fraction(1, 3)) * x
    derivatives = {name: term.diff(x).eval() for name, term in terms.items()}
    twin = pickle.loads(pickle.dumps(tape))
    assert twin.nodes == tape.nodes and twin._intern == tape._intern
    tx, ty = twin.vars["x"], twin.vars["y"]
    for name, term in terms.items():
        copied = twin[term.index]
        assert copied.eval() == pytest.approx(term.eval(), rel=0, nan_ok=True), name
        assert copied.diff(tx).eval() == pytest.approx(derivatives[name], rel=1e-15, nan_ok=True), name
    # equal functions still intern to the nodes the pickle brought back
    size = len(twin)
    assert sad.sin(tx).index == terms["sin"].index and sad.atan2(tx + 1, ty + 1).index == terms["atan2"].index
    assert len(twin) == size


def test_a_pickled_placeholder_is_still_unfed():
    tape = Tape()
    p = tape.placeholder("p")
    twin = pickle.loads(pickle.dumps(tape))
    assert twin._values[p.index] is UNFED
    with pytest.raises(sad.UnfedPlaceholder, match="'p'"):
        twin[p.index].value  # noqa: B018 - the read that raises


def test_deepcopy_copies_array_values_and_shares_the_functions():
    tape = Tape()
    a = tape.var("a", np.array([1.0, 2.0]))
    f = softplus(a)
    shallow, deep = copy.copy(tape), copy.deepcopy(tape)
    assert shallow._values[a.index] is a.value  # copy.copy: new tables, the same value objects
    deep._values[a.index][0] = 7.0
    assert a.value[0] == 1.0
    assert deep.nodes[f.index].payload is softplus
    assert softplus(deep.vars["a"]).index == f.index  # a user function (equal only to itself) still interns


def test_terms_copy_with_their_tape_as_documented():
    tape, x, y, z = example()
    assert copy.copy(z).tape is tape and copy.copy(z).index == z.index
    d2z = z.diff(x, 2, method="graph").eval()
    before = content(tape)
    for cx, cz in (copy.deepcopy([x, z]), pickle.loads(pickle.dumps([x, z]))):
        assert cx.tape is cz.tape and cz.tape is not tape  # copied together: one new tape
        assert [str(node.payload) for node in cz.tape.nodes] == [str(node.payload) for node in tape.nodes]
        assert cz.eval() == z.eval() and cz.diff(cx, 2, method="taylor").eval() == pytest.approx(d2z, rel=1e-14)
        assert content(tape) == before and len(cz.tape) > len(tape)


def test_a_copy_taken_inside_a_transaction_has_no_scope_open():
    tape, x, y, z = example()
    heard = []
    with tape.transaction(heard.append, order=4):
        twin = copy.copy(tape)
        twin[x.index] * 5.0
        assert heard == [] and twin.orders[-1] == 0
