"""Two sides' calls timed in turns, each side in its own warm process.

On a shared machine the speed of a core drifts by tens of per cent over seconds: two timings
taken one after the other can compare two machines. Here each side is set up once in a
process of its own (one side's threads and caches never run in the other's), then both are
timed in short batches taken in turns (ABBA order), and the ratio is taken per pair of
batches, so drift slower than a batch cancels out.

A side is ``"module:function"`` (a module of this folder); the function returns what the
parent reads once (first-call times, node counts, checks: JSON) and the calls to time, by name::

    def ours() -> tuple[dict[str, Any], dict[str, Callable[[], Any]]]: ...

    with Pair("arrays:mlp_ours", "arrays:mlp_jax") as pair:
        ours, jax = pair.info
        found = pair.time("grad", rounds=20)  # per-call seconds per round, and their ratios
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))

#: How long one batch of calls runs: long enough for the timer, short beside the drift.
BATCH_SECONDS = 0.02
#: The pause before a batch, for the other side's worker threads to stop spinning.
PAUSE = 0.02


def serve(side: str) -> None:
    """A side's process: sets the side up, writes its info, then times batches of its calls
    as the parent asks (a line ``name count``; an empty line ends it)."""
    reply = os.fdopen(os.dup(1), "w", buffering=1)  # the protocol's own stream:
    os.dup2(2, 1)  # anything the side prints goes to stderr
    module, function = side.split(":")
    info, calls = getattr(__import__(module), function)()
    reply.write(json.dumps(info) + "\n")
    for line in sys.stdin:
        if not line.strip():
            break
        name, count = line.split()
        call = calls[name]
        start = time.perf_counter()
        for _ in range(int(count)):
            call()
        reply.write(f"{time.perf_counter() - start!r}\n")


class _Side:
    def __init__(self, side: str) -> None:
        code = f"import sys; sys.path.insert(0, {HERE!r}); import paired; paired.serve({side!r})"
        self.side = side
        self.process = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        text=True, bufsize=1, cwd=HERE)
        self.info: dict[str, Any] = json.loads(self._line())

    def _line(self) -> str:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"{self.side}: its process ended (exit {self.process.wait()})")
        return line

    def seconds(self, name: str, count: int) -> float:
        """Per-call seconds of ``count`` calls of ``name`` in a row."""
        assert self.process.stdin is not None
        self.process.stdin.write(f"{name} {count}\n")
        return float(self._line()) / count

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait()


@dataclass
class Timed:
    """Per-call seconds of each side, one per round, and their ratio per round."""

    ours: list[float]
    theirs: list[float]

    @property
    def ratios(self) -> list[float]:
        return [a / b for a, b in zip(self.ours, self.theirs)]

    def summary(self) -> str:
        ms = 1e3
        lo, hi = min(self.ratios), max(self.ratios)
        return (f"ours {statistics.median(self.ours) * ms:8.3f} ms   theirs {statistics.median(self.theirs) * ms:8.3f} ms"
                f"   ratio {statistics.median(self.ratios):.2f}x (rounds {lo:.2f}–{hi:.2f})")


class Pair:
    """Two sides (see the module), each in its own process, timed in turns."""

    def __init__(self, ours: str, theirs: str) -> None:
        self.sides = [_Side(ours)]
        try:
            self.sides.append(_Side(theirs))
        except BaseException:
            self.close()
            raise
        self.info = [side.info for side in self.sides]

    def time(self, name: str, rounds: int) -> Timed:
        """``rounds`` pairs of batches of ``name``'s calls, the first side first in even rounds;
        a batch runs about ``BATCH_SECONDS`` on the slower side."""
        slowest = max(min(side.seconds(name, 1) for _ in range(3)) for side in self.sides)
        count = max(1, round(BATCH_SECONDS / slowest))
        found: list[list[float]] = [[], []]
        for r in range(rounds):
            order = (0, 1) if r % 2 == 0 else (1, 0)
            for k in order:
                time.sleep(PAUSE)
                found[k].append(self.sides[k].seconds(name, count))
        return Timed(*found)

    def close(self) -> None:
        for side in self.sides:
            side.close()

    def __enter__(self) -> Pair:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
