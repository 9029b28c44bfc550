"""Ensembles: y0 of shape (n, B) gives each member its own steps, equal to member-by-member runs."""

import dask
import dask.array as da
import numpy as np
import pytest

import subgraph_ad as sad
from subgraph_ad.ode import chunks

_joined = chunks._joined


def pendulum(t, y):
    return np.array([y[1], -np.sin(y[0])])


def test_ensemble_equals_member_by_member_runs():
    y0 = np.array([[0.1, 1.0, 2.0, 2.5], [0.0, 0.5, 0.0, -0.2]])
    t_eval = np.linspace(0.0, 8.0, 5)
    ensemble = sad.taylor_integrate(pendulum, (0.0, 8.0), y0, t_eval=t_eval, dense_output=True)
    assert ensemble.y.shape == (2, 5, 4) and ensemble.success
    for b in range(4):
        one = sad.taylor_integrate(pendulum, (0.0, 8.0), y0[:, b], t_eval=t_eval, dense_output=True)
        assert ensemble.nsteps[b] == one.nsteps
        # each member runs through the same compiled loop alone: the same numbers
        assert np.array_equal(ensemble.y[:, :, b], one.y)
        assert np.array_equal(ensemble.sol(np.array([1.3, 6.1]))[:, :, b], one.sol(np.array([1.3, 6.1])))
    assert len(set(ensemble.nsteps.tolist())) > 1  # each member its own steps


def test_ensemble_events_and_terminal_members():
    def zero(t, y):
        return y[0]
    zero.terminal = True
    y0 = np.array([[0.5, 1.0], [1.0, 0.3]])
    res = sad.taylor_integrate(lambda t, y: np.array([y[1], -y[0]]), (0.0, 10.0), y0, events=zero)
    # x = A sin(t + φ) with A sin φ = x0, A cos φ = v0: the first zero at t = π − φ
    first = np.pi - np.arctan2(y0[0], y0[1])
    assert np.allclose([res.t_events[0][b][0] for b in range(2)], first, rtol=1e-15, atol=0)
    assert np.all(res.status == 1) and np.allclose(res.t_final, first, rtol=1e-15, atol=0)
    assert np.all(np.isnan(res.y[:, 1]))  # stopped before t1


@pytest.mark.parametrize("scheduler", ["synchronous", "threads"])
def test_a_dask_ensemble_integrates_chunk_by_chunk_with_numpys_values(scheduler, monkeypatch):
    joined = []
    monkeypatch.setattr(chunks, "_joined", lambda parts: joined.append(len(parts)) or _joined(parts))
    def crossing(t, y):
        return y[0]

    y0 = np.stack([np.linspace(0.1, 2.5, 7), np.linspace(0.5, -0.2, 7)])
    t_eval = np.linspace(0.0, 8.0, 5)
    kwargs = dict(t_eval=t_eval, dense_output=True, events=crossing, variational=True)
    want = sad.taylor_integrate(pendulum, (0.0, 8.0), y0, **kwargs)
    with dask.config.set(scheduler=scheduler):
        got = sad.taylor_integrate(pendulum, (0.0, 8.0), da.from_array(y0, chunks=(2, 3)), **kwargs)
    assert joined == [3]  # chunks of 3, 3 and 1 members
    assert got.success and got.y.shape == want.y.shape == (2, 5, 7)
    for name in ("y", "sensitivity", "nsteps", "t_final", "y_final", "status"):
        assert np.array_equal(getattr(got, name), getattr(want, name)), name
    assert all(np.array_equal(a, b) for a, b in zip(got.t_events[0], want.t_events[0]))
    assert np.array_equal(got.sol([0.7, 5.0]), want.sol([0.7, 5.0]))
    assert np.array_equal(got.sol.sensitivity(3.3), want.sol.sensitivity(3.3))


def test_dense_sensitivities_against_the_closed_form_and_finite_differences():
    """x″ = −x: ∂(x, v)(t)/∂(x0, v0) = [[cos t, sin t], [−sin t, cos t]] between the steps too;
    the pendulum's against central differences of sol(t) (step 1e-6: error ~1e-12 + 1e-16/1e-6)."""
    res = sad.taylor_integrate(lambda t, y: np.array([y[1], -y[0]]), (0.0, 6.0), [1.0, 0.0], dense_output=True,
                               variational=True)
    t = np.linspace(0.0, 6.0, 37)
    closed = np.array([[np.cos(t), np.sin(t)], [-np.sin(t), np.cos(t)]])
    assert res.sol.sensitivity(t).shape == (2, 2, 37)
    assert np.max(np.abs(res.sol.sensitivity(t) - closed)) < 1e-14
    y0, step = np.array([1.2, 0.3]), 1e-6
    res = sad.taylor_integrate(pendulum, (0.0, 5.0), y0, dense_output=True, variational=True)
    for j in range(2):
        e = np.eye(2)[j] * step
        up = sad.taylor_integrate(pendulum, (0.0, 5.0), y0 + e, dense_output=True).sol(t[:31])
        down = sad.taylor_integrate(pendulum, (0.0, 5.0), y0 - e, dense_output=True).sol(t[:31])
        assert np.max(np.abs(res.sol.sensitivity(t[:31])[:, j] - (up - down) / (2 * step))) < 1e-8
    with pytest.raises(ValueError, match="variational=True"):
        sad.taylor_integrate(pendulum, (0.0, 1.0), y0, dense_output=True).sol.sensitivity(0.5)


def test_threads_that_ask_for_one_system_at_once_trace_it_once():
    """Two threads integrating one new system at once (a Dask worker's threads, each given a
    chunk of one ensemble) trace it once: the second waits for the first's trace, then both
    give the member-by-member numbers. The first trace is held back a moment so that the
    second thread arrives while it runs."""
    import threading
    import time

    traces = []

    def spring(t, y):
        if not isinstance(y, np.ndarray) or y.dtype == object:  # (being traced)
            traces.append(threading.get_ident())
            time.sleep(0.2)
        return np.array([y[1], -y[0]])

    y0 = np.array([[0.1, 1.0], [0.0, 0.5]])
    found = {}

    def run(b):
        found[b] = sad.taylor_integrate(spring, (0.0, 3.0), y0[:, b], t_eval=np.array([3.0])).y[:, 0]

    workers = [threading.Thread(target=run, args=(b,)) for b in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert len(traces) == 1
    for b in range(2):  # the harmonic oscillator: y(t) = (y0 cos t + v0 sin t, −y0 sin t + v0 cos t)
        x0, v0 = y0[:, b]
        np.testing.assert_allclose(found[b], [x0 * np.cos(3) + v0 * np.sin(3), -x0 * np.sin(3) + v0 * np.cos(3)],
                                   rtol=1e-10, atol=1e-12)
