"""A compiled function generates each path on first use only: the one-point code on the first
call with numbers, its IEEE fallback only where a point raises there, each backend kernel on
the first call with its pattern of numbers and arrays. Checked on ``Compiled.built`` (the state),
with values against closed forms."""

import math
import pickle

import numpy as np

import subgraph_ad as sad
from subgraph_ad import Tape, lambdify


def _program():
    tape = Tape()
    x, y = tape.var("x"), tape.var("y")
    return x, y, [x * y + sad.sin(x), sad.log(x) * y]


def _expected(xs, ys):
    with np.errstate(all="ignore"):
        return [xs * ys + np.sin(xs), np.log(xs) * ys]


def test_nothing_is_built_before_a_call_and_each_path_on_its_first_use():
    x, y, outputs = _program()
    f = lambdify([x, y], outputs)
    assert f.built == ()
    assert np.allclose(f(0.5, 2.0), _expected(0.5, 2.0), rtol=1e-15)
    assert f.built == ("point",)  # no block kernel for a function only ever called on points
    xs = np.linspace(0.1, 2.0, 7)
    for value, want in zip(f(xs, 3.0), _expected(xs, 3.0)):
        assert np.allclose(value, want, rtol=1e-15)
    assert f.built == ("point", "numpy (array, number)")
    for value, want in zip(f(xs, xs), _expected(xs, xs)):
        assert np.allclose(value, want, rtol=1e-15)
    f(xs, xs)  # built once: a second call adds nothing
    assert f.built == ("point", "numpy (array, number)", "numpy (array, array)")


def test_the_ieee_fallback_is_built_only_when_a_point_raises_on_the_fast_path():
    x, y, outputs = _program()
    f = lambdify([x, y], outputs)
    f(0.5, 2.0)
    f(3.0, -1.0)
    assert f.built == ("point",)
    value = f(0.0, 2.0)  # math.log(0) raises: the point is rerun on NumPy scalars
    assert value == (0.0, -math.inf) and f.built == ("point", "point IEEE")


def test_warn_builds_only_the_ieee_point_path():
    x, y, outputs = _program()
    f = lambdify([x, y], outputs, warn=True)
    assert np.allclose(f(0.5, 2.0), _expected(0.5, 2.0), rtol=1e-15)
    assert f.built == ("point IEEE",)


def test_a_pickled_function_rebuilds_only_what_its_own_calls_need():
    x, y, outputs = _program()
    f = lambdify([x, y], outputs)
    xs = np.linspace(0.1, 2.0, 5)
    f(xs, xs)
    g = pickle.loads(pickle.dumps(f))
    assert g.built == ()
    assert np.allclose(g(0.7, 1.5), _expected(0.7, 1.5), rtol=1e-15) and g.built == ("point",)
    for value, want in zip(g(xs, xs), _expected(xs, xs)):
        assert np.allclose(value, want, rtol=1e-15)
