"""``==`` and ``!=`` on Terms never pick a branch silently.

A Term's value is not known until it is evaluated, so ``x == 1.0`` is refused like ``x < 1.0``
(today's alternative, False for every x, took the wrong branch of ``3*x if x == 1.0 else x*x``
at x = 1 and gave 2 where the derivative is 3). Two Terms are equal when they are the same node.
"""

import numpy as np
import pytest

import subgraph_ad as sad
from subgraph_ad import Tape


@pytest.mark.parametrize("other", [1.0, 0, np.float64(2.0), 1.5 + 0j])
def test_comparing_a_term_with_a_number_is_the_control_flow_error(other):
    tape = Tape()
    x = tape.var("x", 1.0)
    for compare in (lambda: x == other, lambda: x != other, lambda: other == x, lambda: x in [other]):
        with pytest.raises(TypeError, match="cannot compare a Term|np.equal|np.not_equal"):
            compare()
    assert len(tape) == 1


def test_traced_branches_on_equality_are_refused_not_taken_silently():
    with pytest.raises(TypeError, match="cannot compare a Term"):
        sad.grad(lambda x: 3 * x if x == 1.0 else x * x)(1.0)
    with pytest.raises(TypeError, match="cannot compare a Term"):
        sad.grad(lambda x: np.sum(np.where(x == 0.0, 1.0, np.sin(x) / x)))(np.array([0.0, 1.0]))


def test_terms_are_equal_when_they_are_the_same_node():
    tape = Tape()
    x, y = tape.var("x", 1.0), tape.var("y", 2.0)
    assert x * y == y * x and sad.sin(x) == np.sin(x)  # interned: one node
    assert x + y != x * y and not (x == y)
    assert (x == "x") is False and x != None  # noqa: E711 - not a number: simply not equal
    assert {x: 1.0}[tape.find_var("x")] == 1.0  # a fresh handle finds its key
