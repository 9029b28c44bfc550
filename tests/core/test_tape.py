"""The tape: nodes, interning, folding, operator overloading, transactions and limits."""

import numpy as np
import pytest

import subgraph_ad as sad
from subgraph_ad import Tape, cos, exp, log, sin, tanh


def test_var_and_const_nodes(tape):
    x = tape.var("x", 0.5)
    k = tape.const(3.0)
    assert (x.op, x.name, x.value) == ("var", "x", 0.5)
    assert k.op == "const" and k.node.payload == 3.0
    assert x.tape is tape and k.index == 1 and len(tape) == 2
    assert tape.vars == {"x": x}


def test_commutative_operands_share_one_node(tape):
    a, b = tape.var("a"), tape.var("b")
    assert (a * b).index == (b * a).index
    assert (a + b).index == (b + a).index
    assert (a - b).index != (b - a).index  # not commutative


def test_building_the_same_expression_twice_adds_no_nodes(tape):
    x, y = tape.var("x", 0.5), tape.var("y", 4.2)
    z1 = x * y + sin(x) / (1 + exp(-x))
    n = len(tape)
    z2 = x * y + sin(x) / (1 + exp(-x))
    assert z2.index == z1.index and len(tape) == n


def test_vars_are_never_merged(tape):
    x, y = tape.var("x", 1.0), tape.var("y", 1.0)
    assert x.index != y.index
    with pytest.raises(ValueError, match="already exists"):
        tape.var("x")


@pytest.mark.parametrize(
    "build, expect",
    [
        (lambda x: x + 0, "x"),
        (lambda x: 0 + x, "x"),
        (lambda x: x - 0, "x"),
        (lambda x: x * 1, "x"),
        (lambda x: 1 * x, "x"),
        (lambda x: x / 1, "x"),
        (lambda x: x**1, "x"),
        (lambda x: -(-x), "x"),
        (lambda x: +x, "x"),
    ],
)
def test_identities_fold_to_the_operand(tape, build, expect):
    x = tape.var("x", 2.0)
    n = len(tape)
    assert build(x).index == x.index
    assert len(tape) <= n + 1  # at most the constant operand itself


def test_zero_and_one_fold(tape):
    x = tape.var("x", 2.0)
    assert (x * 0).index == tape.zero.index
    assert (0 * x).index == tape.zero.index
    assert (x**0).node == sad.Node("const", (), 1.0)


def test_constant_subexpressions_fold_once_at_append_time(tape):
    x = tape.var("x")
    c = (tape.const(2.0) + 3) * 4 - sin(tape.const(0.0))
    assert c.op == "const" and c.node.payload == 20.0
    k = exp(tape.const(1.0))
    assert k.op == "const" and k.node.payload == pytest.approx(np.e, rel=1e-15)
    assert x.op == "var"


def test_zero_and_negative_zero_stay_distinct_constants(tape):
    assert tape.const(0.0).index != tape.const(-0.0).index


def test_folding_keeps_ieee_semantics_for_constants(tape):
    assert tape.const(1.0) / 0 is not None
    assert (tape.const(1.0) / 0).node.payload == float("inf")
    assert np.isnan(sad.log(tape.const(-1.0)).node.payload)


def test_reflected_operators_and_powers(tape):
    x = tape.var("x", 0.5)
    assert (2 * x).eval() == 1.0
    assert (1 / x).eval() == 2.0
    assert (3 - x).eval() == 2.5
    assert (2**x).eval() == pytest.approx(2**0.5, rel=1e-15)
    assert (x**-1).eval() == 2.0
    assert (x**0.5).eval() == pytest.approx(0.5**0.5, rel=1e-15)
    assert (np.float64(2.0) * x).eval() == 1.0  # NumPy scalars defer to Term


def test_terms_from_two_tapes_never_mix():
    t1, t2 = Tape(), Tape()
    x, y = t1.var("x"), t2.var("y")
    with pytest.raises(ValueError, match="two different tapes") as info:
        x + y
    assert "Term(0: var 'x')" in str(info.value) and "Term(0: var 'y')" in str(info.value)


@pytest.mark.parametrize("other", ["2", None, [1.0], True])
def test_combining_with_a_non_number_is_a_type_error(tape, other):
    x = tape.var("x")
    with pytest.raises(TypeError):
        x * other


def test_const_rejects_non_numbers(tape):
    with pytest.raises(TypeError, match="real number"):
        tape.const("3")


def test_transaction_rolls_back_nodes_interning_and_cache(tape):
    x = tape.var("x", 0.5)
    f = sin(x) * x
    nodes, intern = list(tape.nodes), dict(tape._intern)
    with pytest.raises(KeyboardInterrupt):
        with tape.transaction():
            f.gen_graph(x)
            exp(x) + 7
            raise KeyboardInterrupt
    assert tape.nodes == nodes and tape._intern == intern and tape.deriv_cache == {}
    assert len(tape.orders) == len(nodes)
    # the same build afterwards gets fresh, consistent nodes
    assert (exp(x) + 7).eval() == pytest.approx(np.exp(0.5) + 7)


def test_max_nodes_limit_raises_and_loses_nothing():
    tape = Tape(max_nodes=12)
    x = tape.var("x", 0.5)
    f = exp(-x * x)
    before = list(tape.nodes)
    with pytest.raises(sad.LimitError, match="max_nodes=12"):
        f.diff(x, 6)
    assert tape.nodes == before


def test_term_indexing_and_repr(tape):
    x = tape.var("x")
    y = sin(x)
    assert tape[-1] == y and tape[0] == x
    assert repr(y) == "Term(1: fn sin)"
    with pytest.raises(IndexError):
        tape[5]


def test_terms_are_usable_as_dict_keys(tape):
    x, y = tape.var("x"), tape.var("y")
    d = {x: 1, y: 2}
    assert d[tape.vars["x"]] == 1 and d[tape[1]] == 2


def test_pruned_keeps_only_what_the_roots_need_renumbered_and_interned(tape):
    x = tape.var("x", 0.5)
    heard = []

    def build():
        sin(x)  # needed by nothing
        return [(exp(x) + 1).index]

    with tape.transaction(lambda t: heard.append(t.index), order=3):
        (root,) = tape.pruned(build)
    assert [n.op for n in tape.nodes] == ["var", "fn", "const", "add"]  # sin(x) is gone
    assert tape.nodes[1].payload is exp and root == 3 and heard == [1, 2, 3]
    assert tape.orders == [0, 3, 3, 3]
    assert (exp(x) + 1).index == root and len(tape) == 4  # equal nodes still intern to the kept ones
    assert (exp(x) + 1).eval() == pytest.approx(np.exp(0.5) + 1)


def test_pruned_never_drops_a_new_var(tape):
    x = tape.var("x", 0.5)

    def build():
        sin(x), tape.var("y", 2.5)
        return []

    tape.pruned(build)
    assert [n.op for n in tape.nodes] == ["var", "var"]
    assert tape.find_var("y").value == 2.5 and tape.find_var("y").index == 1


def test_pruned_moves_memo_entries_with_their_nodes(tape):
    x = tape.var("x", 0.5)

    def build():
        junk = sin(x)
        kept = exp(x)
        tape.remember(junk.index, x.index, junk.index)
        tape.remember(kept.index, x.index, kept.index)
        return [kept.index]

    (root,) = tape.pruned(build)
    assert tape.deriv_cache == {(root, x.index): root} and tape.nodes[root].payload is exp


def test_trial_always_rolls_back_and_counts(tape):
    x = tape.var("x", 0.5)
    heard = []
    with tape.transaction(heard.append):
        with tape.trial() as trial:
            sin(x) * x
        assert trial.appended == 2 and len(tape) == 1 and heard == []
        with pytest.raises(ValueError):
            with tape.trial() as trial:
                exp(x)
                raise ValueError("stop")
        assert trial.appended == 1 and len(tape) == 1


def test_pruned_keeps_the_intern_table_exact_when_new_keys_meet_old_ones(tape):
    """Moving nodes down renames operands: a moved node's new key can equal the old key of a
    node moved after it. Every node must still intern to itself afterwards."""
    x = tape.var("x", 0.5)

    def build():
        sin(x), cos(x)  # nodes 1, 2: dropped, so every node after them moves down by two
        a, b, c = exp(x), tanh(x), log(x)  # 3, 4, 5 -> 1, 2, 3
        late = c * c  # mul(5, 5) -> mul(3, 3): the old key of ...
        early = a * a  # ... mul(3, 3), appended after it
        return [(late + early + b).index]

    (root,) = tape.pruned(build)
    assert [n.op for n in tape.nodes].count("fn") == 3
    for i, node in enumerate(tape.nodes):
        if node.op != "var":
            assert tape.intern(node) == i
    assert len(tape) == root + 1


def test_pruned_renames_a_memo_entry_taken_with_respect_to_a_var_it_moved(tape):
    x = tape.var("x", 0.5)

    def build():
        sin(x)  # dropped: everything after it moves down one place
        w = tape.var("w", 2.0)
        tape.remember(x.index, w.index, None)  # dx/dw = 0, keyed by the var that moves
        return []

    tape.pruned(build)
    assert tape.find_var("w").index == 1 and tape.deriv_cache == {(0, 1): None}


def test_a_failed_pruned_build_outside_any_transaction_leaves_nothing(tape):
    x = tape.var("x", 0.5)
    before = list(tape.nodes)

    def build():
        exp(x) * x
        tape.remember(0, 0, 0)
        raise ValueError("stop")

    with pytest.raises(ValueError, match="stop"):
        tape.pruned(build)
    assert tape.nodes == before and tape.deriv_cache == {} and len(tape.orders) == 1


def test_repr_is_a_one_line_summary_of_nodes_vars_and_orders():
    tape = Tape()
    x, _, p = tape.var("x", 0.5), tape.var("a", np.zeros(3)), tape.placeholder("p")
    (sin(x) * p).diff(x, 2, method="graph")
    # order 0: x, a, p, sin(x), sin(x)*p; order 1: 1, cos(x), cos(x)*p; order 2: -sin(x), -sin(x)*p
    assert repr(tape) == "Tape(10 nodes; vars x=0.5, a=<array (3,)>, p=<unfed>; by order 0: 5, 1: 3, 2: 2)"
    assert repr(Tape()) == "Tape(0 nodes)"


def test_repr_caps_a_long_var_list_and_str_lists_every_var_and_op():
    tape = Tape(max_nodes=None)
    vs = [tape.var(f"v{k}", k / 3) for k in range(8)]
    exp(vs[0] * vs[1]) + vs[2]
    assert repr(tape) == ("Tape(11 nodes; vars v0=0.0, v1=0.333333, v2=0.666667, v3=1.0, v4=1.33333, v5=1.66667, "
                          "… 2 more; by order 0: 11)")
    assert str(tape) == ("Tape of 11 nodes (no budget)\n"
                         "vars: v0=0.0, v1=0.333333, v2=0.666667, v3=1.0, v4=1.33333, v5=1.66667, v6=2.0, v7=2.33333\n"
                         "by derivative order: 0: 11\n"
                         "by op: var 8, mul 1, exp 1, add 1")
