"""A two-operand function node (a BinaryFn) is drawn like an ordered arithmetic op: its label is
the function's name and its incoming edges say which operand is "a" and which is "b"."""

import re

import numpy as np

import subgraph_ad as sad
from subgraph_ad import Tape

NODE = re.compile(r'^  n(\d+) \[(.*)\];$', re.M)
EDGE = re.compile(r'^  n(\d+) -> n(\d+) \[(.*)\];$', re.M)


class Scaled(sad.BinaryFn):
    """A user function, a * 2 ** b, whose operand order matters."""

    name = "scaled"

    def f(self, a, b):
        return a * np.exp2(b)


def _edges(dot: str) -> dict[tuple[int, int], str]:
    return {(int(a), int(b)): attrs for a, b, attrs in EDGE.findall(dot)}


def test_binaryfn_edges_are_labelled_by_operand_not_by_tape_order():
    tape = Tape()
    x, y = tape.var("x", 2.0), tape.var("y", 3.0)
    for fn in (sad.atan2, Scaled()):
        z = fn(y, x)  # y first: the labels follow the operands
        dot = z.to_dot()
        edges = _edges(dot)
        assert 'headlabel="a"' in edges[(y.index, z.index)]
        assert 'headlabel="b"' in edges[(x.index, z.index)]
        assert f'label="{fn.name}"' in dict(NODE.findall(dot))[str(z.index)]
        swapped = _edges(fn(x, y).to_dot())
        assert 'headlabel="a"' in swapped[(x.index, fn(x, y).index)]


def test_binaryfn_of_one_operand_twice_draws_both_edges_labelled():
    tape = Tape()
    x = tape.var("x", 1.0)
    z = sad.hypot(x, x)
    lines = [line for line in z.to_dot().splitlines() if f"-> n{z.index} " in line]
    assert lines == [f'  n{x.index} -> n{z.index} [id="e{z.index}_0", headlabel="a"];',
                     f'  n{x.index} -> n{z.index} [id="e{z.index}_1", headlabel="b"];']


def test_unary_functions_and_commutative_ops_stay_unlabelled():
    tape = Tape()
    x, y = tape.var("x"), tape.var("y")
    dot = (sad.sin(x) * sad.exp(y) + sad.atan2(x, y)).to_dot()
    labelled = [(a, b) for a, b, attrs in EDGE.findall(dot) if "headlabel" in attrs]
    assert sorted(labelled) == sorted([(str(x.index), str(sad.atan2(x, y).index)),
                                       (str(y.index), str(sad.atan2(x, y).index))])
    assert "headlabel" not in (sad.sin(x) * sad.exp(y) + x).to_dot()


def test_derivative_of_a_binaryfn_draws_with_values():
    tape = Tape()
    x, y = tape.var("x", 0.5), tape.var("y", 2.0)
    z = sad.atan2(y, x)
    d = z.diff(x)
    dot = tape.to_dot(precision=4)
    assert f'label="atan2\\n= {np.arctan2(2.0, 0.5):.4g}"' in dot
    assert d.to_dot() == d.to_dot()
