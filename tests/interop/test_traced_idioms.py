"""Everyday NumPy idioms in a traced function: what works (a constant boolean mask, an object
array, ``sad.stack``, writing into a copy) is checked against closed-form gradients; what cannot
work says the idiom to use instead, in an error whose traceback ends in the user's own line."""

import traceback

import numpy as np
import pytest

import subgraph_ad as sad

POINT = np.array([1.5, -2.0, 0.5])


def raised(fn, *args):
    """The error ``fn(*args)`` raises, and the frames of its traceback as (file, function)."""
    with pytest.raises(Exception) as info:
        fn(*args)
    return info.value, [(frame.filename, frame.name) for frame in traceback.extract_tb(info.value.__traceback__)]


def ends_in(frames, name):
    """The traceback's last frame is the user's function ``name`` in this file: nothing of
    subgraph_ad or NumPy under it."""
    return frames[-1] == (__file__, name)


def test_a_constant_boolean_mask_selects_as_numpy_does():
    mask = np.array([True, False, True])
    gradient = sad.grad(lambda x: np.sum(x[mask] ** 3))(POINT)
    np.testing.assert_allclose(gradient, np.where(mask, 3 * POINT**2, 0.0), rtol=1e-15)


def test_a_mask_of_the_traced_values_says_to_use_where():
    def positive_part(x):
        return np.sum(x[x > 0] ** 2)

    error, frames = raised(sad.grad(positive_part), POINT)
    assert isinstance(error, IndexError)
    assert "a mask that depends on the traced values is a data-dependent shape; use `sad.where`" in str(error)
    assert ends_in(frames, "positive_part")

    def with_where(x):  # the advice, taken: the same sum, its shape fixed
        return np.sum(sad.where(x > 0, x, 0.0) ** 2)

    np.testing.assert_allclose(sad.grad(with_where)(POINT), np.where(POINT > 0, 2 * POINT, 0.0), rtol=1e-15)


def test_a_term_written_into_a_float_array_says_to_use_an_object_array_or_stack():
    def into_floats(x):
        y = np.zeros(3)
        y[1] = x[0] ** 2
        return np.sum(y)

    error, frames = raised(sad.grad(into_floats), POINT)
    assert isinstance(error, TypeError) and "use an object array or `sad.stack`" in str(error)
    assert ends_in(frames, "into_floats")

    def stacked(x):
        return np.sum(sad.stack([0.0, x[0] ** 2, x[1] * x[2]]))

    def objects(x):
        y = np.zeros(3, dtype=object)
        y[1] = x[0] ** 2
        y[2] = x[1] * x[2]
        return np.sum(y)

    expected = [2 * POINT[0], POINT[2], POINT[1]]  # d/dx of x0² + x1·x2
    np.testing.assert_allclose(sad.grad(stacked)(POINT), expected, rtol=1e-15)
    np.testing.assert_allclose(sad.grad(objects)(POINT), expected, rtol=1e-15)


def test_stack_refuses_what_is_not_a_sequence():
    with pytest.raises(TypeError, match="non-empty sequence of Terms.*got float 2.0"):
        sad.stack(2.0)
    with pytest.raises(TypeError, match="got list"):
        sad.stack([])


def test_jax_style_at_says_numpy_updates_in_place():
    def jax_style(x):
        return np.sum(x.at[0].set(1.0) ** 2)

    error, frames = raised(sad.grad(jax_style), POINT)
    assert isinstance(error, AttributeError)
    assert "NumPy arrays are updated in place here; write `x[i] = …` on a copy" in str(error)
    assert ends_in(frames, "jax_style")

    def on_a_copy(x):
        y = x.copy()
        y[0] = 1.0
        return np.sum(y**2)

    np.testing.assert_allclose(sad.grad(on_a_copy)(POINT), [0.0, 2 * POINT[1], 2 * POINT[2]], rtol=1e-15)


def test_an_error_deep_inside_the_package_ends_in_the_users_line():
    """A LimitError from deep inside a derivative pass (the traced tape's budget, set here),
    and a ValueError from an argument check, each end in the user's frame, their message intact."""
    def too_big(x):
        x.flat[0].tape.max_nodes = 40
        return sad.exp(sad.sin(x[0]) * x[1]).diff(x[0], 12)

    error, frames = raised(sad.grad(too_big), POINT)
    assert isinstance(error, sad.LimitError) and "max_nodes" in str(error)
    assert ends_in(frames, "too_big")

    def bad_order(x):
        return sad.exp(x[0]).diff(x[0], -1)

    error, frames = raised(sad.grad(bad_order), POINT)
    assert isinstance(error, ValueError) and ends_in(frames, "bad_order")
    # only the user's frames below the trace's own entry: the test, the trace's calls, the function
    assert [name for _, name in frames].index("bad_order") == len(frames) - 1
