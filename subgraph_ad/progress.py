"""Progress of long work (SymPy checks, big renders, animations, high orders), through tqdm.

Every long loop in the package goes through ``track`` (or ``bar`` where work is counted in a
callback), the one hook: on a terminal it draws a bar on standard error, in Jupyter a widget
(``tqdm.auto``), and nothing when standard error is not a terminal, so logs and pipes stay
clean. ``enable(False)`` (the CLI's ``--quiet``) turns it off, ``enable(True)`` forces it on,
``enable(None)`` goes back to the terminal test. ``write`` prints a line without tearing a bar
that is being drawn. Depends on nothing else in the package.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from functools import cache
from typing import IO, Any, TypeVar

T = TypeVar("T")

_state: dict[str, bool | None] = {"enabled": None}


def enable(flag: bool | None = True) -> bool | None:
    """Turn progress bars on (True), off (False) or back to 'on a terminal only' (None); returns
    the previous setting, so a caller can put it back."""
    if flag is not None and not isinstance(flag, bool):
        raise TypeError(f"enable() takes True, False or None, got {type(flag).__name__} {flag!r}")
    previous = _state["enabled"]
    _state["enabled"] = flag
    return previous


def is_enabled() -> bool:
    """Whether progress is shown now: as set by ``enable``, else when standard error is a terminal."""
    flag = _state["enabled"]
    if flag is not None:
        return flag
    isatty = getattr(sys.stderr, "isatty", None)
    return bool(isatty and isatty())


@cache
def _tqdm() -> Any:
    # tqdm.auto's notebook widget needs ipywidgets; without it, it would warn on every bar
    if importlib.util.find_spec("ipywidgets") is not None:
        from tqdm.auto import tqdm
    else:
        from tqdm.std import tqdm

    class Bar(tqdm):
        # no monitor thread: a process with threads must not fork, and the SymPy budget forks
        monitor_interval = 0

    return Bar


def track(items: Iterable[T], desc: str, total: int | None = None, unit: str = "it") -> Iterator[T]:
    """Yield ``items``, drawing a progress bar labelled ``desc`` while that is enabled."""
    yield from _tqdm()(items, desc=desc, total=total, unit=unit, **_options())


@contextmanager
def bar(desc: str, total: int | None = None, unit: str = "it") -> Iterator[Callable[..., Any]]:
    """A bar advanced by calling what the block receives (``advance(n=1)``), for work that
    reports itself through a callback rather than a loop; a no-op when progress is off."""
    with _tqdm()(desc=desc, total=total, unit=unit, **_options()) as drawn:
        yield drawn.update


def _options() -> dict[str, Any]:
    flag = _state["enabled"]
    # tqdm's disable=None means: off when the stream is not a terminal (and its own choice in Jupyter)
    return {"disable": None if flag is None else not flag, "leave": False, "dynamic_ncols": True}


def write(line: str, file: IO[str] | None = None) -> None:
    """Print ``line`` (to standard output by default) at once, above any bar being drawn."""
    stream = sys.stdout if file is None else file
    _tqdm().write(line, file=stream)
    stream.flush()
