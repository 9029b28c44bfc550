"""``taylor_integrate``: scipy's ``solve_ivp`` interface over Taylor steps (see docs/ode.md)."""

from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np

from .dense import OdeSolution
from .events import Event, events_of, zeros_in_step
from .kernel import evaluator, kernel
from .result import OdeResult
from .stepper import advance, horner, order_for, step_sizes
from .system import System
from .traced import system_of

_EPS = float(np.finfo(float).eps)
_DONE = "The solver successfully reached the end of the integration interval."
_TERMINAL = "A termination event occurred."


def _number(value: Any, what: str) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"taylor_integrate: {what} must be a real number, got {type(value).__name__} {value!r:.80}")
    if not math.isfinite(value):
        raise ValueError(f"taylor_integrate: {what} must be finite, got {value!r}")
    return float(value)


def _span(t_span: Any) -> tuple[float, float]:
    if not isinstance(t_span, (tuple, list, np.ndarray)) or len(t_span) != 2:
        raise ValueError(f"taylor_integrate: t_span must be two numbers (t0, t1), got {t_span!r:.80}")
    return _number(t_span[0], "t_span[0]"), _number(t_span[1], "t_span[1]")


def _tolerance(value: Optional[float], default: float, what: str) -> float:
    if value is None:
        return default
    found = _number(value, what)
    if found <= 0.0:
        raise ValueError(f"taylor_integrate: {what} must be > 0, got {value!r}")
    return found


def _initial(y0: Any) -> np.ndarray:
    try:
        y = np.array(y0, dtype=float)
    except (TypeError, ValueError) as error:
        raise TypeError(f"taylor_integrate: y0 must be an array of real numbers, got {type(y0).__name__} "
                        f"{y0!r:.80}") from error
    if y.ndim not in (1, 2) or y.shape[0] == 0 or (y.ndim == 2 and y.shape[1] == 0):
        raise ValueError(f"taylor_integrate: y0 must have shape (n,) or (n, B) (an ensemble), got shape {y.shape}")
    if not np.all(np.isfinite(y)):
        bad = tuple(int(i) for i in np.argwhere(~np.isfinite(y))[0])
        raise ValueError(f"taylor_integrate: y0 must be finite, got {y[bad]} at index {bad}")
    return y


def _times(t_eval: Any, t0: float, t1: float) -> Optional[np.ndarray]:
    if t_eval is None:
        return None
    t = np.asarray(t_eval, dtype=float)
    if t.ndim != 1 or not np.all(np.isfinite(t)):
        raise ValueError(f"taylor_integrate: t_eval must be a 1-D array of finite times, got {t_eval!r:.80}")
    low, high = min(t0, t1), max(t0, t1)
    if np.any((t < low) | (t > high)):
        raise ValueError(f"taylor_integrate: t_eval must lie within t_span [{low}, {high}], got values from "
                         f"{t.min()} to {t.max()}")
    steps = np.diff(t) * (1.0 if t1 >= t0 else -1.0)
    if np.any(steps <= 0.0):
        raise ValueError("taylor_integrate: t_eval must be strictly " + ("increasing" if t1 >= t0 else "decreasing")
                         + " (the direction of integration)")
    return t


def _backend(backend: Optional[str]) -> str:
    if backend is None:
        try:
            import numba  # noqa: F401
        except ImportError:
            return "numpy"
        return "numba"
    if backend not in ("numpy", "numba"):
        raise ValueError(f"taylor_integrate: backend must be 'numpy' or 'numba', got {backend!r}")
    return backend


def taylor_integrate(fun: Any, t_span: Any, y0: Any, rtol: Optional[float] = None, atol: Optional[float] = None,
                     t_eval: Any = None, dense_output: bool = False, events: Any = None, args: tuple = (),
                     order: Optional[int] = None, max_steps: Optional[int] = None, backend: Optional[str] = None,
                     variational: bool = False) -> OdeResult:
    """Integrate y′ = fun(t, y, *args) from t_span[0] to t_span[1] by Taylor steps, as scipy's
    ``solve_ivp`` does by Runge–Kutta ones (the same names and result fields; see docs/ode.md).

    ``rtol``/``atol`` default to machine ε (``atol`` to ``rtol``); ``order`` overrides the order
    the tolerance chooses; ``max_steps`` bounds the steps (per ensemble member);
    ``backend`` runs the coefficient kernel with ``"numba"`` (the default where Numba imports)
    or ``"numpy"``; ``variational=True`` adds ``res.sensitivity`` = ∂y(t)/∂y0.

    >>> import numpy as np
    >>> res = taylor_integrate(lambda t, y: np.array([y[1], -y[0]]), (0.0, np.pi), [0.0, 1.0])
    >>> bool(abs(res.y[0, -1]) < 1e-14), res.status, res.order
    (True, 0, 20)
    """
    t0, t1 = _span(t_span)
    y = _initial(y0)
    rtol_ = _tolerance(rtol, _EPS, "rtol")
    atol_ = _tolerance(atol, rtol_, "atol")
    if order is not None and (isinstance(order, bool) or not isinstance(order, (int, np.integer)) or order < 2):
        raise ValueError(f"taylor_integrate: order must be an int >= 2, got {order!r}")
    if max_steps is not None and (isinstance(max_steps, bool) or not isinstance(max_steps, (int, np.integer))
                                  or max_steps < 1):
        raise ValueError(f"taylor_integrate: max_steps must be an int >= 1, got {max_steps!r}")
    if not isinstance(args, tuple):
        raise TypeError(f"taylor_integrate: args must be a tuple, got {type(args).__name__} {args!r:.80}")
    times = _times(t_eval, t0, t1)
    specs = events_of(events)
    name = _backend(backend)
    n = y.shape[0]
    p = int(order) if order is not None else order_for(min(rtol_, atol_))
    system = system_of(fun, n, specs, args, bool(variational), p, name)
    ensemble = y.ndim == 2
    members = y if ensemble else y[:, None]
    if variational:  # Φ(t0) = I for each member
        eye = np.broadcast_to(np.eye(n).reshape(n * n, 1), (n * n, members.shape[1]))
        members = np.concatenate([members, eye], axis=0)
    run = _Run(system, specs, p, rtol_, atol_, t0, t1, times, dense_output, max_steps, name)
    run.loop(members)
    return run.result(n, ensemble, bool(variational))


class _Run:
    """One integration of B members: the loop and what it records."""

    def __init__(self, system: System, events: list[Event], p: int, rtol: float, atol: float, t0: float, t1: float,
                 times: Optional[np.ndarray], dense: bool, max_steps: Optional[int], backend: str) -> None:
        self.system, self.events, self.p = system, events, p
        self.rtol, self.atol, self.t0, self.t1 = rtol, atol, t0, t1
        self.times, self.dense, self.max_steps = times, dense, max_steps
        self.fill, self.evaluate = kernel(backend), evaluator(backend)
        self.sign = 1.0 if t1 >= t0 else -1.0
        self.resolution = 4.0 * _EPS * max(abs(t0), abs(t1))

    def loop(self, y: np.ndarray) -> None:
        width = y.shape[1]
        n_total = y.shape[0]
        self.hi, self.lo = np.full(width, self.t0), np.zeros(width)
        self.y = y.copy()
        self.status = np.zeros(width, dtype=int)
        self.messages = [_DONE] * width
        self.nsteps = np.zeros(width, dtype=int)
        self.path_t: list[list[float]] = [[self.t0] for _ in range(width)]
        self.path_y: list[list[np.ndarray]] = [[y[:, b].copy()] for b in range(width)]
        self.at_times = None
        self.next_time = np.zeros(width, dtype=int)
        if self.times is not None:
            self.at_times = np.full((n_total, len(self.times), width), math.nan)
            start = self.times == self.t0
            self.at_times[:, start] = y[:, None, :]
            self.next_time[:] = int(np.sum(start))
        self.steps: list[list[tuple[float, float, np.ndarray]]] = [[] for _ in range(width)]
        self.found_t = [[[] for _ in range(width)] for _ in self.events]  # type: list[list[list[float]]]
        self.found_y = [[[] for _ in range(width)] for _ in self.events]  # type: list[list[list[np.ndarray]]]
        self.counts = np.zeros((len(self.events), width), dtype=int)
        self.last_event = np.full((len(self.events), width), math.nan)
        active = np.full(width, self.t1 != self.t0)
        while active.any():
            idx = np.flatnonzero(active)
            active[idx[~self._step(idx)]] = False

    def _coefficients(self, idx: np.ndarray) -> np.ndarray:
        s = self.system
        inputs = ([self.hi[idx] + self.lo[idx]] if s.timed else []) + list(self.y[:, idx])
        c = np.zeros((s.rows, self.p + 1, len(idx)))
        with np.errstate(all="ignore"):
            if len(idx) == 1:  # one point: lambdify's Python-float path, no array machinery
                c[:, 0, 0] = s.values(*(float(v[0]) for v in inputs))
            else:
                for r, value in enumerate(s.values(*inputs)):
                    c[r, 0] = value
            if s.time >= 0:
                c[s.time, 1] = 1.0
            self.fill(s.code, s.scalars, c, self.p)
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
            t = self.hi[b] + self.lo[b]
            if not finite[j]:
                self._fail(b, f"the Taylor coefficients are not finite at t = {float(t)!r} (a singularity, or fun is not "
                              "defined there)")
                go[j] = False
            elif not last[j] and abs(h[j]) <= self.resolution:
                self._fail(b, f"the step size {h[j]:.3g} needed for the tolerance at t = {float(t)!r} is below the "
                              "resolution of t (a singularity near there?)")
                go[j] = False
        stop = np.zeros(len(idx), dtype=bool)
        if self.events:
            for j in map(int, np.flatnonzero(go)):
                h[j], stop[j] = self._events(int(idx[j]), c[:, :, j], coefficients[:, :, j], float(h[j]))
        y_new = np.empty((coefficients.shape[0], len(idx)))
        self.evaluate(coefficients, h, y_new)
        for j in map(int, np.flatnonzero(go)):
            b = int(idx[j])
            self._record(b, coefficients[:, :, j], float(h[j]), y_new[:, j], bool(last[j] and not stop[j]))
            if stop[j]:
                self.status[b], self.messages[b] = 1, _TERMINAL
                go[j] = False
            elif last[j]:
                go[j] = False
            elif self.max_steps is not None and self.nsteps[b] >= self.max_steps:
                self._fail(b, f"max_steps = {self.max_steps} steps taken, stopped at t = {float(self.hi[b] + self.lo[b])!r}")
                go[j] = False
        return go

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

    def _record(self, b: int, coefficients: np.ndarray, h: float, y_new: np.ndarray, to_end: bool) -> None:
        """Advance member b by the step h to y_new, recording dense output and t_eval points."""
        if self.dense:
            self.steps[b].append((float(self.hi[b]), float(self.lo[b]), coefficients.copy()))
        hi, lo = advance(self.hi[b:b + 1], self.lo[b:b + 1], np.array([h]))
        if to_end:
            hi, lo = np.array([self.t1]), np.array([0.0])
        if self.times is not None and self.at_times is not None:
            k = self.next_time[b]
            end = hi[0] + lo[0]
            stop = k
            while stop < len(self.times) and (self.times[stop] - end) * self.sign <= 0.0:
                stop += 1
            if stop > k:
                tau = (self.times[k:stop] - self.hi[b]) - self.lo[b]
                self.at_times[:, k:stop, b] = horner(coefficients[:, :, None], tau[None, :])
                self.next_time[b] = stop
        self.hi[b], self.lo[b] = hi[0], lo[0]
        self.y[:, b] = y_new
        self.nsteps[b] += 1
        if self.times is None:
            self.path_t[b].append(float(hi[0] + lo[0]))
            self.path_y[b].append(y_new.copy())

    def result(self, n: int, ensemble: bool, variational: bool) -> OdeResult:
        width = self.y.shape[1]
        if self.times is not None and self.at_times is not None:
            t, y = self.times, self.at_times
        elif ensemble:
            t = np.array([self.t0, self.t1])
            y = np.full((self.y.shape[0], 2, width), math.nan)
            y[:, 0] = np.stack([path[0] for path in self.path_y], axis=-1)
            for b in range(width):
                if self.path_t[b][-1] == self.t1:
                    y[:, 1, b] = self.path_y[b][-1]
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
            sol = OdeSolution(members, n, self.sign > 0, ensemble)
        t_events: Optional[list[Any]] = None
        y_events: Optional[list[Any]] = None
        if self.events:
            times = [[np.array(found) for found in per] for per in self.found_t]
            states = [[np.array(found).reshape(-1, self.y.shape[0])[:, :n] for found in per] for per in self.found_y]
            t_events, y_events = (times, states) if ensemble else ([per[0] for per in times], [per[0] for per in states])
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
