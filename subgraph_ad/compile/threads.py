"""Slices of a batch shared out over every core: the NumPy backends' one way to use them.

Both kinds of work run without the GIL — a Numba kernel is ``nogil``, and NumPy releases it
inside each ufunc, ``einsum`` and BLAS call over a block (``sin`` of 10⁵ points: 1.7× faster on
two cores) — so plain threads scale. The calling thread works too and slices are handed out one
at a time: a pool thread that wakes up late (costly on a VM) takes fewer slices instead of
holding up the call.
"""

from __future__ import annotations

import functools
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Sequence


@functools.lru_cache(maxsize=None)
def cpu_count() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


@functools.lru_cache(maxsize=None)
def pool(threads: int) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(threads, thread_name_prefix="subgraph_ad")


if hasattr(os, "register_at_fork"):  # a forked child inherits the pools but none of their threads
    os.register_at_fork(after_in_child=pool.cache_clear)


def share(worker: Callable[[], Callable[[int, int], None]], slices: Sequence[tuple[int, int]],
          parallel: bool = True) -> None:
    """Run every slice (a, b), on every core where ``parallel``; ``worker()`` makes each
    thread's runner once."""
    threads = min(cpu_count(), len(slices)) if parallel else 1
    if threads <= 1:
        run = worker()
        for a, b in slices:
            run(a, b)
        return
    todo, lock = iter(slices), threading.Lock()

    def work() -> None:
        run = worker()
        while True:
            with lock:
                found = next(todo, None)
            if found is None:
                return
            run(*found)

    jobs = [pool(threads - 1).submit(work) for _ in range(threads - 1)]
    work()
    for job in jobs:
        job.result()


def step(size: int, block: int, grain: int | None, parallel: bool) -> int:
    """Points per slice of a batch of ``size``: a ``block``; for a backend with a ``grain`` (its
    own blocking inside a slice), fewer where that gives every core a slice (10⁴ points on two
    cores: two)."""
    if grain is None or not parallel:
        return min(block, size)
    share = -(-size // (cpu_count() * grain)) * grain
    return min(block, max(grain, share))


__all__ = ["cpu_count", "pool", "share", "step"]
