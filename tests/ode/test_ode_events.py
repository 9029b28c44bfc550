"""Events on the step polynomials against closed forms: a falling ball, directions, counts,
zeros where g only touches 0 or dips below it between samples, backward in time."""

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import subgraph_ad as sad

G = 9.81


def ball(t, y):
    return np.array([y[1], -G + 0.0 * y[0]])


def test_falling_ball_stops_at_the_ground_at_the_closed_form_time():
    def ground(t, y):
        return y[0]
    ground.terminal = True
    ground.direction = -1
    res = sad.taylor_integrate(ball, (0.0, 10.0), [10.0, 0.0], events=ground)
    hit = np.sqrt(2 * 10.0 / G)
    assert res.status == 1 and res.success and res.message == "A termination event occurred."
    assert res.t_events[0] == pytest.approx([hit], rel=4e-16)
    assert res.y_events[0][0] == pytest.approx([0.0, -G * hit], abs=1e-13)
    assert res.t[-1] == pytest.approx(hit, rel=4e-16)


def test_bounces_direction_and_terminal_count():
    # thrown up at 5 m/s from 1 m: height 3 is crossed rising at t₁ and falling at t₂
    def height(t, y):
        return y[0] - 1.5
    disc = np.sqrt(25 - 2 * G * 0.5)
    up, down = (5 - disc) / G, (5 + disc) / G
    both = sad.taylor_integrate(ball, (0.0, 2.0), [1.0, 5.0], events=height)
    assert both.t_events[0] == pytest.approx([up, down], rel=1e-15)
    height.direction = -1
    falling = sad.taylor_integrate(ball, (0.0, 2.0), [1.0, 5.0], events=height)
    assert falling.t_events[0] == pytest.approx([down], rel=1e-15)
    height.direction, height.terminal = 0, 2
    second = sad.taylor_integrate(ball, (0.0, 2.0), [1.0, 5.0], events=height)
    assert second.status == 1 and second.t[-1] == pytest.approx(down, rel=1e-15)


def test_a_zero_where_g_only_touches_is_found():
    # y' = 2(t − 1), y(0) = 1: y = (t − 1)², touching 0 at t = 1 without changing sign
    res = sad.taylor_integrate(lambda t, y: 2.0 * (t - 1.0) + 0.0 * y, (0.0, 3.0), [1.0], events=lambda t, y: y[0])
    assert res.nsteps == 1  # a polynomial solution: one step, so the touch lies inside it
    # a double zero moves by sqrt(δ) when g moves by δ: ~1e-8 for rounding-level δ
    assert res.t_events[0] == pytest.approx([1.0], abs=1e-7)


def test_two_zeros_close_together_inside_one_step_are_both_found():
    # g = (t − 1)² − 1e-8 dips below 0 between t = 1 ∓ 1e-4, far closer than the sample spacing
    res = sad.taylor_integrate(lambda t, y: 2.0 * (t - 1.0) + 0.0 * y, (0.0, 3.0), [1.0],
                               events=lambda t, y: y[0] - 1e-8)
    assert res.t_events[0] == pytest.approx([1 - 1e-4, 1 + 1e-4], rel=1e-12)


def test_events_backward_in_time_are_in_the_order_met():
    # to t = 0.5: sin's zero at t = 0 would sit on the span's end, found or not as the last step rounds
    res = sad.taylor_integrate(lambda t, y: np.array([y[1], -y[0]]), (10.0, 0.5), [np.sin(10.0), np.cos(10.0)],
                               events=lambda t, y: y[0])
    assert res.t_events[0] == pytest.approx([3 * np.pi, 2 * np.pi, np.pi], rel=1e-15)
    assert np.max(np.abs(res.y_events[0][:, 0])) < 1e-14


def test_event_with_time_and_args():
    def crossing(t, y, k):
        return t - k
    res = sad.taylor_integrate(lambda t, y, k: -y, (0.0, 2.0), [1.0], events=crossing, args=(0.75,))
    assert res.t_events[0] == pytest.approx([0.75], rel=1e-15)
    assert res.y_events[0][0, 0] == pytest.approx(np.exp(-0.75), rel=1e-14)


def test_henon_heiles_poincare_crossings_agree_with_dop853_events():
    """H = 1/8, the section x = 0 with x rising (examples/henon_heiles.py): the crossing times
    against scipy's DOP853 at its tightest rtol, whose events are brentq on its dense output."""
    def rhs(t, s):
        x, y, px, py = s
        return np.array([px, py, -x - 2.0 * x * y, -y - x * x + y * y])

    def section(t, s):
        return s[0]
    section.direction = 1
    y, py, h = 0.1, 0.1, 0.125
    s0 = np.array([0.0, y, np.sqrt(2 * (h - 0.5 * py * py - 0.5 * y * y + y ** 3 / 3.0)), py])
    ours = sad.taylor_integrate(rhs, (0.0, 300.0), s0, events=section)
    ref = solve_ivp(rhs, (0.0, 300.0), s0, method="DOP853", rtol=2.3e-14, atol=1e-16, events=section)
    theirs = ref.t_events[0][ref.t_events[0] > 0.0]  # the start lies on the section
    assert len(ours.t_events[0]) == len(theirs) > 40
    # DOP853's own error at rtol 2.3e-14 grows to ~1e-11 over this span; a crossing located on the wrong
    # polynomial, or a step's drift, would be off by far more
    assert np.max(np.abs(ours.t_events[0] - theirs)) < 1e-9
