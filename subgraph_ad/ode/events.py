"""Events as scipy's ``solve_ivp`` has them: functions g(t, y) whose zeros are wanted, with the
attributes ``terminal`` (False; True or a count: stop at that many zeros) and ``direction``
(0: every zero; > 0: where g rises; < 0: where g falls). A zero where g only touches 0 has no
direction and is reported for ``direction == 0`` only."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

import numpy as np

from .dense import roots


@dataclass(frozen=True)
class Event:
    """One event function and its attributes, checked."""

    fn: Callable[..., Any]
    terminal: int  # the count of zeros that stops the integration; 0: never
    direction: float


def events_of(events: Any) -> list[Event]:
    """The events as given (None, one callable, or a sequence of callables), checked."""
    if events is None:
        return []
    items = [events] if callable(events) else events
    if not isinstance(items, (list, tuple)):
        raise TypeError(f"taylor_integrate: events must be a callable g(t, y) or a list of them, got "
                        f"{type(events).__name__} {events!r:.80}")
    out = []
    for k, g in enumerate(items):
        if not callable(g):
            raise TypeError(f"taylor_integrate: event {k} must be a callable g(t, y), got {type(g).__name__} {g!r:.80}")
        terminal = getattr(g, "terminal", False)
        if isinstance(terminal, (bool, np.bool_)):
            count = int(bool(terminal))
        elif isinstance(terminal, (int, np.integer)) and terminal >= 0:
            count = int(terminal)
        else:
            raise ValueError(f"taylor_integrate: event {k}'s terminal must be a bool or a count >= 0, got {terminal!r}")
        direction = getattr(g, "direction", 0.0)
        if isinstance(direction, bool) or not isinstance(direction, (int, float, np.integer, np.floating)) \
                or not np.isfinite(direction):
            raise ValueError(f"taylor_integrate: event {k}'s direction must be a finite number, got {direction!r}")
        out.append(Event(g, count, float(direction)))
    return out


def zeros_in_step(event: Event, g: np.ndarray, h: float, rtol: float) -> list[float]:
    """The offsets τ in (0, h] (h < 0 backward) where g's step polynomial (coefficients g_k in
    the time offset) has a zero that the event's direction counts, in the order met."""
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        q = g * h ** np.arange(len(g))
    if not np.all(np.isfinite(q)):
        return []
    wanted: Optional[int] = None if event.direction == 0 else (1 if event.direction > 0 else -1)
    sign = 1 if h > 0 else -1
    out = []
    for s, rising in roots(q, rtol):
        if wanted is None or (rising != 0 and rising * sign == wanted):
            out.append(s * h)
    return out


def check_shapes(values: Sequence[Any], what: str) -> None:
    """Each event returns one number."""
    for k, value in enumerate(values):
        if np.ndim(value) != 0:
            raise ValueError(f"taylor_integrate: event {k} must return one number, got shape {np.shape(value)} "
                             f"({what})")
