"""A traced call pauses Python's cyclic garbage collector while it traces, builds and compiles
a signature (~10⁶ objects that all stay alive), and leaves it as it found it."""

import gc

import numpy as np
import pytest

import subgraph_ad as sad


def test_the_collector_is_off_while_a_signature_is_built_and_as_it_was_after():
    seen = []

    def f(x):
        seen.append(gc.isenabled())
        return np.sum(x ** 3)

    assert gc.isenabled()
    x = np.array([1.0, 2.0])
    assert np.array_equal(sad.grad(f)(x), 3.0 * x ** 2)
    assert seen == [False] and gc.isenabled()
    gc.disable()
    try:
        assert np.array_equal(sad.value_and_grad(f)(x)[1], 3.0 * x ** 2)
        assert seen == [False, False] and not gc.isenabled()  # not switched on behind the user's back
    finally:
        gc.enable()


def test_the_collector_is_back_on_after_a_trace_that_fails():
    def f(x):
        if x > 0:  # control flow on a traced value: a TypeError
            return x
        return -x

    with pytest.raises(TypeError, match="tracing"):
        sad.grad(f)(1.0)
    assert gc.isenabled()
    with pytest.raises(TypeError, match="tracing"):
        sad.derivative(f)(1.0)
    assert gc.isenabled()
