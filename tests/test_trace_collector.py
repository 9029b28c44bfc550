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


def _collections_during(call):
    """The generations of the collections that ran during ``call()``."""
    seen = []

    def note(phase, info):
        if phase == "start":
            seen.append(info["generation"])

    gc.callbacks.append(note)
    try:
        call()
    finally:
        gc.callbacks.remove(note)
    return seen


def test_the_objects_of_a_build_go_to_the_oldest_generation_without_a_collection():
    # 400 vars and a few thousand nodes: far more new objects than a young collection's
    # threshold (700), which would all be walked once the collector is back on
    x = np.linspace(0.1, 1.0, 400)
    f = sad.grad(lambda v: np.sum(np.sin(v) * v) + np.sum(v[1:] * v[:-1]))
    done = []
    assert _collections_during(lambda: done.append(f(x))) == []
    assert np.allclose(done[0], np.sin(x) + x * np.cos(x) + np.r_[x[1:], 0.0] + np.r_[0.0, x[:-1]], rtol=1e-14)
    assert gc.isenabled() and gc.get_freeze_count() == 0


def test_objects_the_user_froze_stay_frozen():
    kept = [[]]  # a tracked object: frozen ones are in no generation that get_objects lists
    gc.freeze()
    try:
        assert gc.get_freeze_count() > 0 and id(kept) not in {id(o) for o in gc.get_objects()}
        assert sad.grad(lambda v: np.sum(v ** 2))(np.array([1.0, 2.0])).tolist() == [2.0, 4.0]
        assert gc.isenabled() and gc.get_freeze_count() > 0
        assert id(kept) not in {id(o) for o in gc.get_objects()}
    finally:
        gc.unfreeze()
    assert id(kept) in {id(o) for o in gc.get_objects()}
