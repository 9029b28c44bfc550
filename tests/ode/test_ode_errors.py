"""Bad input to taylor_integrate: a specific error naming what was given and what was expected."""

import numpy as np
import pytest

import subgraph_ad as sad


def decay(t, y):
    return -y


@pytest.mark.parametrize("y0, error, match", [
    ([1.0, np.nan], ValueError, r"y0 must be finite, got nan at index \(1,\)"),
    ([np.inf], ValueError, "y0 must be finite, got inf"),
    (np.zeros((2, 2, 2)), ValueError, r"y0 must have shape \(n,\) or \(n, B\).*got shape \(2, 2, 2\)"),
    ([], ValueError, r"got shape \(0,\)"),
    (["a"], TypeError, "y0 must be an array of real numbers, got list"),
])
def test_bad_initial_state(y0, error, match):
    with pytest.raises(error, match=match):
        sad.taylor_integrate(decay, (0.0, 1.0), y0)


@pytest.mark.parametrize("span, error, match", [
    ((0.0,), ValueError, r"t_span must be two numbers \(t0, t1\), got \(0.0,\)"),
    (1.0, ValueError, "t_span must be two numbers"),
    ((0.0, 1.0, 2.0), ValueError, "t_span must be two numbers"),
    ((0.0, "1"), TypeError, "t_span\\[1\\] must be a real number, got str '1'"),
    ((0.0, np.inf), ValueError, r"t_span\[1\] must be finite, got inf"),
])
def test_bad_span(span, error, match):
    with pytest.raises(error, match=match):
        sad.taylor_integrate(decay, span, [1.0])


@pytest.mark.parametrize("kwargs, match", [
    ({"rtol": 0.0}, "rtol must be > 0, got 0.0"),
    ({"rtol": -1e-9}, "rtol must be > 0, got -1e-09"),
    ({"atol": -1.0}, "atol must be > 0, got -1.0"),
    ({"order": 1}, "order must be an int >= 2, got 1"),
    ({"max_steps": 0}, "max_steps must be an int >= 1, got 0"),
    ({"backend": "cuda"}, "backend must be 'numpy' or 'numba', got 'cuda'"),
    ({"t_eval": [0.5, 2.0]}, r"t_eval must lie within t_span \[0.0, 1.0\]"),
    ({"t_eval": [0.5, 0.2]}, "t_eval must be strictly increasing"),
])
def test_bad_options(kwargs, match):
    with pytest.raises(ValueError, match=match):
        sad.taylor_integrate(decay, (0.0, 1.0), [1.0], **kwargs)


def test_fun_returning_the_wrong_shape():
    with pytest.raises(ValueError, match=r"fun \(<lambda>\) returned shape \(3,\) for a state of shape \(2,\); "
                                         r"expected shape \(2,\)"):
        sad.taylor_integrate(lambda t, y: np.array([y[0], y[1], y[0]]), (0.0, 1.0), [1.0, 2.0])


def test_fun_not_callable():
    with pytest.raises(TypeError, match="fun must be a callable fun\\(t, y, \\*args\\) or a non-empty list of Terms, "
                                        "got int 3"):
        sad.taylor_integrate(3, (0.0, 1.0), [1.0])


def test_event_not_callable():
    with pytest.raises(TypeError, match="event 1 must be a callable g\\(t, y\\), got float 2.0"):
        sad.taylor_integrate(decay, (0.0, 1.0), [1.0], events=[lambda t, y: y[0], 2.0])


def test_event_with_bad_attributes_or_result():
    def g(t, y):
        return y[0]
    g.terminal = -1
    with pytest.raises(ValueError, match="event 0's terminal must be a bool or a count >= 0, got -1"):
        sad.taylor_integrate(decay, (0.0, 1.0), [1.0], events=g)
    with pytest.raises(ValueError, match=r"event 0 \(<lambda>\) must return one number, got TermArray of shape \(2,\)"):
        sad.taylor_integrate(decay, (0.0, 1.0), [1.0, 2.0], events=lambda t, y: y)


def test_terms_that_do_not_match_the_state():
    tape = sad.Tape()
    x, v = tape.var("x"), tape.var("v")
    with pytest.raises(ValueError, match=r"2 right-hand sides over the vars \['x', 'v'\] \(and t\) for a state of size 3"):
        sad.taylor_integrate([v, -x], (0.0, 1.0), [1.0, 0.0, 0.0])


def test_a_right_hand_side_undefined_at_the_start_fails_with_status_minus_one():
    res = sad.taylor_integrate(lambda t, y: np.log(y - 2.0), (0.0, 1.0), [1.0])
    assert res.status == -1 and "not finite at t = 0.0" in res.message
