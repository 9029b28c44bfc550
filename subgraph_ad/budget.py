"""A time budget for work that cannot be interrupted (SymPy cannot be, inside a thread): the work
runs in a worker process that is killed when the time is up, and what it yielded by then is
kept."""

from __future__ import annotations

import multiprocessing
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

#: How a budgeted worker starts: "fork" is cheap and needs nothing pickled; where the platform
#: has no fork (Windows), "spawn" pickles the terms (a Tape pickles with its nodes).
START_METHOD = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"


def _child(conn: Any, func: Callable[..., Iterator[Any]], args: tuple[Any, ...]) -> None:
    try:
        for item in func(*args):
            conn.send(("item", item))
        conn.send(("done", None))
    except BaseException as exc:  # reported to the parent, which raises it there
        try:
            conn.send(("error", exc))
        except Exception:  # an exception that does not pickle
            conn.send(("error", RuntimeError(f"{type(exc).__name__}: {exc}")))
    finally:
        conn.close()


def budgeted(func: Callable[..., Iterator[Any]], args: tuple[Any, ...],
             timeout: float | None) -> tuple[list[Any], bool]:
    """Run the generator function ``func(*args)`` for at most ``timeout`` seconds and return what
    it yielded so far and whether it finished. SymPy cannot be interrupted inside a thread, so
    with a budget it runs in a worker process that is killed when the time is up; yielding
    partial results keeps whatever was ready. ``timeout=None``: in this process, no budget. An
    exception in ``func`` is raised here.

    >>> def squares(n):
    ...     for k in range(n):
    ...         yield k * k
    >>> budgeted(squares, (4,), timeout=10)
    ([0, 1, 4, 9], True)
    """
    if timeout is None:
        return list(func(*args)), True
    context: Any = multiprocessing.get_context(START_METHOD)  # typeshed's BaseContext lacks Process
    receive, send = context.Pipe(duplex=False)
    # a forked child flushes the streams it inherited: pending output would appear twice
    sys.stdout.flush()
    sys.stderr.flush()
    process = context.Process(target=_child, args=(send, func, args), daemon=True)
    process.start()
    send.close()
    items: list[Any] = []
    finished = False
    deadline = time.monotonic() + timeout
    try:
        while receive.poll(max(0.0, deadline - time.monotonic())):
            try:
                kind, value = receive.recv()
            except EOFError:  # the worker died without a word (killed by the system, out of memory)
                raise RuntimeError(f"the worker process ended unexpectedly (exit code {process.exitcode})") from None
            if kind == "error":
                raise value
            if kind == "done":
                finished = True
                break
            items.append(value)
    finally:
        if process.is_alive():
            process.terminate()
            process.join(1.0)
            if process.is_alive():
                process.kill()
        process.join()
        receive.close()
    return items, finished
