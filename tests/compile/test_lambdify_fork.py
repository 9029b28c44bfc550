"""A compiled function keeps working in a process forked after it ran on many points.

The NumPy backend shares blocks out over a cached thread pool; a forked child inherits the pool
object but not its threads, so without a new pool in the child its first large call would wait
forever. The oracle is NumPy's closed form of the same function.
"""

from __future__ import annotations

import numpy as np
import pytest

from subgraph_ad import Tape, exp, lambdify, sin
from subgraph_ad.compile import threads
from conftest import in_forked_child

#: More points than one block (16,384), so that a call uses the pool.
POINTS = np.linspace(-3.0, 3.0, 40_000)


def closed_form(v: np.ndarray) -> np.ndarray:
    return np.sin(v) * np.exp(v)


# Python 3.12+ warns that forking a process with threads may deadlock: that hazard is what is tested.
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_a_forked_child_runs_a_compiled_function_the_parent_ran_on_many_points(monkeypatch):
    monkeypatch.setattr(threads, "cpu_count", lambda: 4)  # a pool on any machine, even one core
    tape = Tape()
    x = tape.var("x")
    f = lambdify([x], sin(x) * exp(x))
    np.testing.assert_allclose(f(POINTS), closed_form(POINTS), rtol=1e-13)  # the parent's pool now exists

    got = in_forked_child(lambda: f(POINTS), "the forked child did not finish its compiled call: "
                                              "it waits on the parent's pool threads")
    np.testing.assert_allclose(got, closed_form(POINTS), rtol=1e-13)
