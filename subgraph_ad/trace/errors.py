"""An error raised while a traced function runs, shown where the user can act on it: the
traceback ends in the user's own line, not in the frames of subgraph_ad and NumPy under it
(a LimitError from deep inside a derivative pass was 23 frames of internals), and a TypeError
says which transformation was tracing which function."""

from __future__ import annotations

import os
from types import TracebackType
from typing import Any

import numpy as np

#: Folders whose frames are not the user's code: NumPy's and this package's (two levels up: trace/errors.py).
INTERNAL = tuple(os.path.dirname(os.path.abspath(m.__file__ or "")) + os.sep for m in (np,)) + (
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep,)


def _internal(tb: TracebackType) -> bool:
    return os.path.abspath(tb.tb_frame.f_code.co_filename).startswith(INTERNAL)


def in_user_code(error: Exception, what: str, f: Any) -> Exception:
    """``error``, raised while ``what`` traced ``f``, with its traceback running from ``f``'s
    frame to the last frame of user code (the internal frames under it dropped); a TypeError
    becomes one that names ``what`` and ``f``. Raise the result ``from None``."""
    user: list[TracebackType] = []
    tb = error.__traceback__
    while tb is not None:
        if not _internal(tb):
            user.append(tb)
        tb = tb.tb_next
    if isinstance(error, ValueError) and "setting an array element with a sequence" in str(error):
        # NumPy's words for a Term written into a float array: a Term indexes (array nodes do),
        # so NumPy takes it for a sequence before it would ask for its float
        error = TypeError(f"a Term was written into a float array ({error}): a Term is a node of a graph, not a "
                          "number; to store Terms in an array, use an object array or `sad.stack`")
    if isinstance(error, TypeError):
        error = TypeError(f"{what}: tracing {getattr(f, '__name__', f)!r} failed: {error}")
    if not user:
        return error
    user[-1].tb_next = None
    return error.with_traceback(user[0])
