"""Progress of long work (SymPy checks, big renders, animations, high orders), through tqdm.

Every long loop in the package goes through ``track``, the one hook: on a terminal it draws a
bar on standard error, in Jupyter a widget (``tqdm.auto``), and nothing when standard error is
not a terminal, so logs and pipes stay clean. ``enable(False)`` (the CLI's ``--quiet``) turns
it off, ``enable(True)`` forces it on, ``enable(None)`` goes back to the terminal test.
Depends on nothing else in the package.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")

_state: dict[str, bool | None] = {"enabled": None}


def enable(flag: bool | None = True) -> None:
    """Turn progress bars on (True), off (False) or back to 'on a terminal only' (None)."""
    if flag is not None and not isinstance(flag, bool):
        raise TypeError(f"enable() takes True, False or None, got {type(flag).__name__} {flag!r}")
    _state["enabled"] = flag


def track(items: Iterable[T], desc: str, total: int | None = None, unit: str = "it") -> Iterator[T]:
    """Yield ``items``, drawing a progress bar labelled ``desc`` while that is enabled."""
    from tqdm.auto import tqdm

    flag = _state["enabled"]
    # tqdm's disable=None means: off when the stream is not a terminal
    yield from tqdm(items, desc=desc, total=total, unit=unit, disable=None if flag is None else not flag,
                    leave=False, dynamic_ncols=True)
