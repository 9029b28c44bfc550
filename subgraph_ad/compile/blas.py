"""How many threads NumPy's BLAS (OpenBLAS) may use, set around small array programs.

OpenBLAS shares even a small matrix product out over every core, and its threads wait for work
by spinning: on a machine whose cores are busy, a (128 × 64)·(64 × 64) product then takes
milliseconds instead of microseconds (a 10 → 64 → 64 → 1 network's gradient: 16 ms against
1.7 ms on one thread, measured on a loaded 2-core machine). An array program whose largest
matrix product is small (under ``SMALL`` multiply-adds in a call) runs with one BLAS thread;
one with a larger product keeps the library's own setting, and so does code at one point whose
products are all under OpenBLAS's own bounds for threading (``threaded``): nothing to set. Where NumPy's BLAS is not an OpenBLAS that says how to set
its threads, nothing changes.
"""

from __future__ import annotations

import ctypes
import functools
import glob
import os
import threading
from typing import Any

import numpy as np

#: Multiply-adds of one matrix product below which one thread is the safe choice (about 0.3 ms
#: of one core's work: past it, the threads' share of the work outweighs waking them).
SMALL = 10_000_000

#: OpenBLAS's own bounds (``GEMM_MULTITHREAD_THRESHOLD``, 4 unless built otherwise, in its
#: interface/gemm.c and gemv.c): a matrix product of at most 4 × 65,536 multiply-adds, and a
#: matrix-vector one of fewer than 4 × 2,304, runs on one thread whatever the setting.
GEMM_ALONE = 4 * 65_536
GEMV_ALONE = 4 * 2_304


def threaded(m: int, k: int, n: int) -> bool:
    """Whether OpenBLAS may share the product of an m × k by a k × n matrix out over threads
    (m or n 1: a matrix-vector product; both: a dot, bounded as one)."""
    if m > 1 and n > 1:
        return m * k * n > GEMM_ALONE
    return m * k * n >= GEMV_ALONE


#: (set, get) of the thread count, as each OpenBLAS build names them.
NAMES = (("scipy_openblas_set_num_threads64_", "scipy_openblas_get_num_threads64_"),
         ("scipy_openblas_set_num_threads", "scipy_openblas_get_num_threads"),
         ("openblas_set_num_threads64_", "openblas_get_num_threads64_"),
         ("openblas_set_num_threads", "openblas_get_num_threads"))


@functools.cache
def _controls() -> tuple[Any, Any] | None:
    """OpenBLAS's set and get of its thread count, from the library NumPy loaded; None if none."""
    where = os.path.join(os.path.dirname(np.__file__), os.pardir, "numpy.libs")
    for path in sorted(glob.glob(os.path.join(where, "*openblas*"))):
        try:
            library = ctypes.CDLL(path)  # already loaded by NumPy: the same library, not a second copy
        except OSError:
            continue
        for set_name, get_name in NAMES:
            setter, getter = getattr(library, set_name, None), getattr(library, get_name, None)
            if setter is not None and getter is not None:
                setter.argtypes, getter.restype = [ctypes.c_int], ctypes.c_int
                return setter, getter
    return None


class _OneThread:
    """BLAS on one thread inside, its own count restored when the last such block ends (a
    class, not a generator: it runs around every call of a small program)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.inside = 0  # blocks now open, in any thread
        self.before = 0  # the thread count when the first of them began

    def __enter__(self) -> None:
        controls = _controls()
        if controls is None:
            return
        with self.lock:
            if not self.inside:
                self.before = controls[1]()
                if self.before != 1:
                    controls[0](1)
            self.inside += 1

    def __exit__(self, *exc: object) -> None:
        controls = _controls()
        if controls is None:
            return
        with self.lock:
            self.inside -= 1
            if not self.inside and self.before != 1:
                controls[0](self.before)


#: ``with one_thread:`` runs its block with BLAS on one thread.
one_thread = _OneThread()


__all__ = ["GEMM_ALONE", "GEMV_ALONE", "SMALL", "one_thread", "threaded"]
