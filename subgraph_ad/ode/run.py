"""One integration of B members: the steps, what they record, and the result.

Two drivers take the same steps (``stepper.py``'s rule, the compensated state and time):

- compiled (``backend="numba"`` and every value native to the kernel): each member in turn
  through ``compiled.run``, many steps a call, back in Python to empty its output buffers, to
  isolate an event's zeros in a step that may hold one, to cut a step at a condition's switch,
  and at the end;
- NumPy: every active member a step at a time, vectorised over the members, the values of
  any function through its ``f`` (the coefficients by the compiled kernel with Numba).

Neither takes a step over a switch of a condition (``switches.py``): such a step ends at the
switch, and a condition that switches back and forth within the resolution of t ``CHATTER``
times in a row (a sliding mode: no classical solution goes on) stops the member.
"""

from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np

from .dense import OdeSolution
from .events import Event, zeros_in_step
from .kernel import fill_numpy, values
from .result import OdeResult
from .pairs import advance
from .stepper import factor, horner, increment, step_sizes
from .switches import CHATTER, Values, at_offset, changed, conditions, locate
from .system import System

_EPS = float(np.finfo(float).eps)
_DONE = "The solver successfully reached the end of the integration interval."
_TERMINAL = "A termination event occurred."
#: Steps per call of the compiled loop, and the points and step polynomials its buffers hold.
_CHUNK, _PATH, _DENSE = 1 << 16, 4096, 256


class Run:
    """The steps of B members from t0 to t1 and what they record."""

    def __init__(self, system: System, events: list[Event], p: int, rtol: float, atol: float, t0: float, t1: float,
                 times: Optional[np.ndarray], dense: bool, max_steps: Optional[int], backend: str,
                 ensemble: bool) -> None:
        self.system, self.events, self.p = system, events, p
        self.rtol, self.atol, self.t0, self.t1 = rtol, atol, t0, t1
        self.times, self.dense, self.max_steps = times, dense, max_steps
        self.backend, self.ensemble = backend, ensemble
        self.sign = 1.0 if t1 >= t0 else -1.0
        self.resolution = 4.0 * _EPS * max(abs(t0), abs(t1))

    def loop(self, y: np.ndarray) -> None:
        width, size = y.shape[1], y.shape[0]
        self.start = y.copy()
        self.hi, self.lo = np.full(width, self.t0), np.zeros(width)
        self.y, self.low = y.copy(), np.zeros_like(y)
        self.status = np.zeros(width, dtype=int)
        self.messages = [_DONE] * width
        self.nsteps = np.zeros(width, dtype=int)
        self.path_t: list[list[float]] = [[self.t0] for _ in range(width)]
        self.path_y: list[list[np.ndarray]] = [[y[:, b].copy()] for b in range(width)]
        self.at_times = np.full((width, size, 0 if self.times is None else len(self.times)), math.nan)
        self.next_time = np.zeros(width, dtype=np.int64)
        if self.times is not None:
            start = self.times == self.t0
            self.at_times[:, :, start] = y.T[:, :, None]
            self.next_time[:] = int(np.sum(start))
        self.steps: list[list[tuple[float, float, np.ndarray]]] = [[] for _ in range(width)]
        self.found_t = [[[] for _ in range(width)] for _ in self.events]  # type: list[list[list[float]]]
        self.found_y = [[[] for _ in range(width)] for _ in self.events]  # type: list[list[list[np.ndarray]]]
        self.counts = np.zeros((len(self.events), width), dtype=int)
        self.last_event = np.full((len(self.events), width), math.nan)
        self.chatter = np.zeros(width, dtype=int)  # switches in a row within the resolution of t
        self.switch_step = np.full(width, -2)  # the step number of the last such switch
        if self.t1 == self.t0:
            return
        if self.backend == "numba" and self.system.native:
            for b in range(width):
                self._compiled(b)
            return
        active = np.ones(width, dtype=bool)
        while active.any():
            idx = np.flatnonzero(active)
            active[idx[~self._step(idx)]] = False

    # -- the compiled driver -------------------------------------------------------------------
    def _compiled(self, b: int) -> None:
        """Member b through the compiled loop (``compiled.run``) to its end."""
        from . import compiled as cc

        s, p = self.system, self.p
        n = self.y.shape[0]
        c = np.zeros((s.rows, p + 1))
        if s.time >= 0:
            c[s.time, 1] = 1.0
        y, low = self.y[:, b].copy(), self.low[:, b].copy()
        clock = np.array([self.t0, 0.0])
        tol = min(self.rtol, self.atol)
        real = np.array([self.t1, self.sign, self.rtol / tol, self.atol / tol, factor(p, tol), self.resolution,
                         16.0 * max(self.rtol, _EPS), 0.0])
        count = np.zeros(6, dtype=np.int64)
        count[cc.NEXT_TIME] = self.next_time[b]
        times = self.times if self.times is not None else np.zeros(0)
        at_times = self.at_times[b]
        path = _PATH if self.times is None and not self.ensemble else 0
        path_t, path_y = np.zeros(path), np.zeros((path, n))
        dense = _DENSE if self.dense else 0
        dense_t, dense_c = np.zeros((dense, 2)), np.zeros((dense, n, p + 1))
        buffers = (times, at_times, path_t, path_y, dense_t, dense_c)
        states, events = s.states.astype(np.int64), s.events.astype(np.int64)
        switches, ahead = s.switches.astype(np.int64), np.zeros((s.rows, 1))

        def values(system: System, c: np.ndarray) -> None:
            cc.values(system.values, system.constants, c)

        while True:
            left = _CHUNK if self.max_steps is None else min(_CHUNK, self.max_steps - int(count[cc.STEPS]))
            count[cc.BUDGET_] = left
            reason = cc.run(s.code, s.scalars, s.segments, s.values, s.constants, states, s.time, events, switches,
                            ahead, c, y, low, clock, real, count, *buffers)
            last = reason == cc.DONE
            chattering = False
            if reason in (cc.EVENT, cc.SWITCH):
                self.hi[b], self.lo[b] = clock
                h, last = float(real[cc.STEP]), bool(count[cc.LAST])
                if reason == cc.SWITCH:
                    h, last, chattering = self._switch(b, values, c, y, low, h, last, int(count[cc.STEPS]))
                stop = False
                if self.events:
                    h, stop = self._events(b, c, c[s.states], h)
                last = last and not stop
                cc.apply(c, states, h, last, y, low, clock, real, count, *buffers)
                if stop:
                    self.status[b], self.messages[b] = 1, _TERMINAL
                    last = True
            self._collect(b, count, path_t, path_y, dense_t, dense_c)
            t = float(clock[0] + clock[1])
            if chattering and not last:
                self._fail(b, _chatters(t))
            elif reason == cc.NONFINITE:
                self._fail(b, _nonfinite(t))
            elif reason == cc.TOO_SMALL:
                self._fail(b, _too_small(float(real[cc.STEP]), t))
            elif not last and self.max_steps is not None and count[cc.STEPS] >= self.max_steps:
                self._fail(b, _spent(self.max_steps, t))
            elif not last:
                continue
            break
        self.y[:, b], self.low[:, b] = y, low
        self.hi[b], self.lo[b] = clock
        self.nsteps[b] = count[cc.STEPS]
        self.next_time[b] = count[cc.NEXT_TIME]

    def _collect(self, b: int, count: np.ndarray, path_t: np.ndarray, path_y: np.ndarray, dense_t: np.ndarray,
                 dense_c: np.ndarray) -> None:
        """Move what the buffers hold to member b's records and empty them."""
        from .compiled import DENSE, PATH

        q, d = int(count[PATH]), int(count[DENSE])
        self.path_t[b] += path_t[:q].tolist()
        self.path_y[b] += list(path_y[:q].copy())
        self.steps[b] += [(float(dense_t[j, 0]), float(dense_t[j, 1]), dense_c[j].copy()) for j in range(d)]
        count[PATH] = count[DENSE] = 0

    # -- the NumPy driver -----------------------------------------------------------------------
    def _coefficients(self, idx: np.ndarray) -> np.ndarray:
        s = self.system
        c = np.zeros((s.rows, self.p + 1, len(idx)))
        c[s.states, 0] = self.y[:, idx]
        if s.time >= 0:
            c[s.time, 0] = self.hi[idx] + self.lo[idx]
            c[s.time, 1] = 1.0
        with np.errstate(all="ignore"):
            values(s, c)
            if self.backend == "numba":
                from .compiled import fill

                for j in range(len(idx)):
                    member = np.ascontiguousarray(c[:, :, j])
                    fill(s.code, s.scalars, s.segments, member, self.p)
                    c[:, :, j] = member
            else:
                fill_numpy(s.code, s.scalars, c, self.p)
        return c

    def _step(self, idx: np.ndarray) -> np.ndarray:
        """One step of the members idx; False for those that are done."""
        c = self._coefficients(idx)
        coefficients = c[self.system.states]
        remaining = (self.t1 - self.hi[idx]) - self.lo[idx]
        size = step_sizes(coefficients, self.rtol, self.atol)
        last = size >= np.abs(remaining)
        h = np.where(last, remaining, self.sign * size)
        finite = np.all(np.isfinite(coefficients), axis=(0, 1)) & np.isfinite(h)
        go = np.ones(len(idx), dtype=bool)
        for j, b in enumerate(map(int, idx)):
            t = float(self.hi[b] + self.lo[b])
            if not finite[j]:
                self._fail(b, _nonfinite(t))
                go[j] = False
            elif not last[j] and abs(h[j]) <= self.resolution:
                self._fail(b, _too_small(float(h[j]), t))
                go[j] = False
        chattering = np.zeros(len(idx), dtype=bool)
        if len(self.system.switches):
            chattering = self._switches(idx, c, h, last, go)
        stop = np.zeros(len(idx), dtype=bool)
        if self.events:
            for j in map(int, np.flatnonzero(go)):
                h[j], stop[j] = self._events(int(idx[j]), c[:, :, j], coefficients[:, :, j], float(h[j]))
        with np.errstate(all="ignore"):
            y, low = increment(coefficients, h, self.y[:, idx], self.low[:, idx])
        for j in map(int, np.flatnonzero(go)):
            b = int(idx[j])
            self._record(b, coefficients[:, :, j], float(h[j]), bool(last[j] and not stop[j]))
            self.y[:, b], self.low[:, b] = y[:, j], low[:, j]
            if self.times is None:
                self.path_y[b].append(self.y[:, b].copy())
            if stop[j]:
                self.status[b], self.messages[b] = 1, _TERMINAL
                go[j] = False
            elif last[j]:
                go[j] = False
            elif chattering[j]:
                self._fail(b, _chatters(float(self.hi[b] + self.lo[b])))
                go[j] = False
            elif self.max_steps is not None and self.nsteps[b] >= self.max_steps:
                self._fail(b, _spent(self.max_steps, float(self.hi[b] + self.lo[b])))
                go[j] = False
        return go

    def _switches(self, idx: np.ndarray, c: np.ndarray, h: np.ndarray, last: np.ndarray, go: np.ndarray
                  ) -> np.ndarray:
        """Cut the steps h of the members idx that go (in place, with ``last``) at a condition's
        switch; True for those whose condition chatters."""
        s = self.system
        with np.errstate(all="ignore"):
            y, _ = increment(c[s.states], h, self.y[:, idx], self.low[:, idx])
        t_hi, t_lo = advance(self.hi[idx], self.lo[idx], h)
        moved = changed(c[s.switches, 0], conditions(s, values, y, t_hi + t_lo)) & go
        chattering = np.zeros(len(idx), dtype=bool)
        for j in map(int, np.flatnonzero(moved)):
            b = int(idx[j])
            h[j], last[j], chattering[j] = self._switch(b, values, c[:, :, j], self.y[:, b], self.low[:, b],
                                                        float(h[j]), bool(last[j]), int(self.nsteps[b]))
        return chattering

    def _switch(self, b: int, values: Values, c: np.ndarray, y: np.ndarray, low: np.ndarray, h: float, last: bool,
                steps: int) -> tuple[float, bool, bool]:
        """Member b's step h (its ``steps``-th), over which a condition switches, cut at the switch:
        the new step, whether it is still the last, and whether the condition chatters."""
        s = self.system
        hi, lo = float(self.hi[b]), float(self.lo[b])
        tau = locate(lambda at: at_offset(s, values, c[s.states], hi, lo, y, low, at), c[s.switches, 0], h)
        if abs(tau) > self.resolution:
            self.chatter[b] = 0
        else:
            self.chatter[b] = self.chatter[b] + 1 if self.switch_step[b] == steps - 1 else 1
            self.switch_step[b] = steps
        return tau, last and tau == h, bool(self.chatter[b] >= CHATTER)

    def _record(self, b: int, coefficients: np.ndarray, h: float, to_end: bool) -> None:
        """Advance member b's time by the step h, recording dense output and t_eval points."""
        if self.dense:
            self.steps[b].append((float(self.hi[b]), float(self.lo[b]), coefficients.copy()))
        hi, lo = advance(self.hi[b:b + 1], self.lo[b:b + 1], np.array([h]))
        if to_end:
            hi, lo = np.array([self.t1]), np.array([0.0])
        if self.times is not None:
            k = int(self.next_time[b])
            end = hi[0] + lo[0]
            stop = k
            while stop < len(self.times) and (self.times[stop] - end) * self.sign <= 0.0:
                stop += 1
            if stop > k:
                tau = (self.times[k:stop] - self.hi[b]) - self.lo[b]
                self.at_times[b, :, k:stop] = horner(coefficients[:, :, None], tau[None, :]) + self.low[:, b, None]
                self.next_time[b] = stop
        self.hi[b], self.lo[b] = hi[0], lo[0]
        self.nsteps[b] += 1
        if self.times is None:
            self.path_t[b].append(float(hi[0] + lo[0]))

    # -- shared ---------------------------------------------------------------------------------
    def _fail(self, b: int, message: str) -> None:
        self.status[b], self.messages[b] = -1, "Stopped: " + message + "."

    def _events(self, b: int, c: np.ndarray, coefficients: np.ndarray, h: float) -> tuple[float, bool]:
        """Record the events' zeros in this step of member b; the step cut at a terminal one."""
        zeros = []
        t = self.hi[b] + self.lo[b]
        cooldown = 100.0 * _EPS * max(1.0, abs(t), abs(h))
        for e, event in enumerate(self.events):
            for tau in zeros_in_step(event, c[self.system.events[e]], h, self.rtol):
                if not abs(t + tau - self.last_event[e, b]) <= cooldown:  # nan: none yet
                    zeros.append((abs(tau), e, tau))
        for _, e, tau in sorted(zeros):
            at = self.hi[b] + (tau + self.lo[b])
            self.found_t[e][b].append(at)
            self.found_y[e][b].append(horner(coefficients, np.array(tau)))
            self.last_event[e, b] = at
            self.counts[e, b] += 1
            if self.events[e].terminal and self.counts[e, b] >= self.events[e].terminal:
                return tau, True
        return h, False

    def result(self, n: int, variational: bool) -> OdeResult:
        width = self.y.shape[1]
        ensemble = self.ensemble
        if self.times is not None:
            t, y = self.times, np.moveaxis(self.at_times, 0, -1)
        elif ensemble:
            t = np.array([self.t0, self.t1])
            y = np.full((self.y.shape[0], 2, width), math.nan)
            y[:, 0] = self.start
            reached = self.hi + self.lo == self.t1
            y[:, 1, reached] = self.y[:, reached]
        else:
            t, y = np.array(self.path_t[0]), np.stack(self.path_y[0], axis=-1)[:, :, None]
        sensitivity = y[n:].reshape((n, n) + y.shape[1:]) if variational else None
        y = y[:n]
        if not ensemble:
            y = y[..., 0]
            sensitivity = None if sensitivity is None else sensitivity[..., 0]
        sol = None
        if self.dense:
            members = [(np.array([s[0] for s in steps]), np.array([s[1] for s in steps]),
                        np.array([s[2] for s in steps]).reshape(len(steps), self.y.shape[0], self.p + 1))
                       for steps in self.steps]
            sol = OdeSolution(members, n, self.sign > 0, ensemble, variational)
        t_events: Optional[list[Any]] = None
        y_events: Optional[list[Any]] = None
        if self.events:
            times = [[np.array(found) for found in per] for per in self.found_t]
            states = [[np.array(found).reshape(-1, self.y.shape[0])[:, :n] for found in per] for per in self.found_y]
            t_events, y_events = ((times, states) if ensemble
                                  else ([per[0] for per in times], [per[0] for per in states]))
        failed = self.status < 0
        message = self.messages[0] if not ensemble else (
            _DONE if not failed.any() else f"{int(failed.sum())} of {width} members stopped early; first: "
            + self.messages[int(np.flatnonzero(failed)[0])])
        t_final = self.hi + self.lo
        return OdeResult(t=t, y=y, sol=sol, t_events=t_events, y_events=y_events,
                         status=self.status if ensemble else int(self.status[0]), message=message,
                         success=bool(not failed.any()), nsteps=self.nsteps if ensemble else int(self.nsteps[0]),
                         order=self.p, t_final=t_final if ensemble else float(t_final[0]),
                         y_final=self.y[:n] if ensemble else self.y[:n, 0], sensitivity=sensitivity)


def _nonfinite(t: float) -> str:
    return f"the Taylor coefficients are not finite at t = {t!r} (a singularity, or fun is not defined there)"


def _too_small(h: float, t: float) -> str:
    return (f"the step size {h:.3g} needed for the tolerance at t = {t!r} is below the resolution of t "
            "(a singularity near there?)")


def _chatters(t: float) -> str:
    return (f"a condition switches back and forth at t = {t!r} ({CHATTER} switches in a row within the resolution "
            "of t: a sliding mode, which has no classical solution past there)")


def _spent(max_steps: int, t: float) -> str:
    return f"max_steps = {max_steps} steps taken, stopped at t = {t!r}"
