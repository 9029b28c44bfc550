"""The C heap under NumPy's temporaries, settled once before array programs run.

glibc's malloc gives the top of its heap back to the system whenever more than its trim
threshold (128 KB at start) lies free there, and serves blocks past its mmap threshold (also
128 KB) by ``mmap``. An array program makes and frees many temporaries of tens of KB per call
(a 10 → 64 → 64 → 1 network on 128 points: 64 KB each), so a fresh process hands the same
pages back and faults them in again on every call: its gradient ran in 330 µs where 170 µs is
the arithmetic. glibc raises both thresholds itself the first time a block it mapped is freed
(the mmap threshold to its size, the trim threshold to twice that), which a process that ever
frees a large array reaches anyway; ``settle`` frees one such block up front. Elsewhere it is
one allocation and nothing more.
"""

from __future__ import annotations

import functools

import numpy as np

#: The block freed once, in bytes: past the start thresholds, under glibc's 32 MB cap on them.
BLOCK = 8 << 20


@functools.cache
def settle() -> None:
    """Free one mapped block of ``BLOCK`` bytes (once per process)."""
    np.empty(BLOCK, dtype=np.uint8)


__all__ = ["BLOCK", "settle"]
