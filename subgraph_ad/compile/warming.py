"""The worker plugin of ``cluster.warm``: on every worker, now and as workers join, each
program is loaded and its kernel built before the first task (apart so that ``cluster`` loads
without Dask's distributed scheduler, which is optional for Dask arrays)."""

from __future__ import annotations

from typing import Any, Sequence

from distributed import WorkerPlugin

from .cluster import Shipped, prepare


class Warm(WorkerPlugin):
    """Loads and compiles ``programs`` (each with the pattern of number and array inputs its
    tasks pass) on a worker; ``backend`` replaces their backend there. Registered again under
    the same name (the same programs) it replaces itself."""

    def __init__(self, programs: Sequence[tuple[Shipped, tuple[bool, ...]]], backend: str | None) -> None:
        self.programs, self.backend = list(programs), backend
        self.name = "subgraph_ad-warm-" + "-".join(program.key[:16] for program, _ in self.programs)

    def setup(self, worker: Any) -> None:
        for program, pattern in self.programs:
            prepare(program, pattern, self.backend, worker.local_directory)
