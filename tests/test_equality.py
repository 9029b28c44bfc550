"""``==`` and ``!=`` on Terms never pick a branch silently.

A Term's value is not known until it is evaluated, so ``x == 1.0`` is a condition Term (value 1
or 0, derivative zero) whose truth value is refused like ``x < 1.0``'s (the old answer, False
for every x, took the wrong branch of ``3*x if x == 1.0 else x*x`` at x = 1). Two Terms are equal
when they are the same node.
"""

import numpy as np
import pytest

import subgraph_ad as sad
from subgraph_ad import Tape


def test_a_branch_on_equality_is_refused_not_taken_silently():
    with pytest.raises(TypeError, match="truth value"):
        sad.grad(lambda x: 3 * x if x == 1.0 else x * x)(1.0)
    tape = Tape()
    x = tape.var("x", 1.0)
    condition = x == 1.0
    assert condition.eval() == 1.0 and condition.eval({x: 2.0}) == 0.0
    with pytest.raises(TypeError, match="truth value"):
        bool(x != 2.0)


def test_terms_are_equal_when_they_are_the_same_node():
    tape = Tape()
    x, y = tape.var("x", 1.0), tape.var("y", 2.0)
    assert x * y == y * x and sad.sin(x) == np.sin(x)  # interned: one node
    assert x + y != x * y and not (x == y)
    assert {x: 1.0}[tape.find_var("x")] == 1.0  # a fresh handle finds its key
