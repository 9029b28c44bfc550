"""Derivatives in the tails keep their digits where the problem is well conditioned.

A rule that reuses the output can lose everything where the output rounds to a constant:
expm1 + 1 is 0 below u ≈ −37 where e^u is not. The oracle is mpmath at 50 digits.
"""


import mpmath
import pytest

import subgraph_ad as sad
from subgraph_ad import Tape

mpmath.mp.dps = 50


@pytest.mark.parametrize("u", [-40.0, -100.0, -700.0])
@pytest.mark.parametrize("order", [1, 2, 3])
def test_expm1_derivatives_far_left_are_e_to_the_u(u, order):
    tape = Tape()
    x = tape.var("x", u)
    found = sad.expm1(x).diff(x, order).eval()
    assert found == pytest.approx(float(mpmath.exp(u)), rel=1e-14, abs=0)
    assert sad.expm1(x).derive(x) == pytest.approx(float(mpmath.exp(u)), rel=1e-14, abs=0)
