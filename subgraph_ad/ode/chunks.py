"""Ensembles on Dask: y0 a Dask array (n, B) chunked along B is integrated a chunk per task.

The system is traced and laid out once, here, before the tasks start (they share it, read
only); each task integrates its chunk as an ensemble of its own, on whatever scheduler Dask
is set to (the compiled loop releases the GIL, so threads run chunks at once), and the
chunks' results are joined along the member axis into one ``OdeResult``: the same values as
the NumPy array would give, member by member. The integrator (``fun`` and the options) is one
key of the graph that every chunk's task takes: a worker process receives it once, so its
tasks share one ``fun`` and it traces the system once, not once per task.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .dense import OdeSolution
from .result import OdeResult


def is_dask(value: Any) -> bool:
    """Whether ``value`` is a Dask array (without importing Dask)."""
    return type(value).__module__.split(".")[0] == "dask" and hasattr(value, "chunks")


def by_chunks(y0: Any, integrate: Callable[[np.ndarray], OdeResult]) -> OdeResult:
    """``integrate`` on each chunk of y0 (n, B) along B, as Dask tasks, joined."""
    import dask

    if y0.ndim != 2:
        raise ValueError(f"taylor_integrate: a Dask y0 must be an ensemble of shape (n, B), chunked along B; got "
                         f"shape {y0.shape}")
    blocks = y0.rechunk({0: -1}).to_delayed().ravel()
    shared = dask.delayed(integrate, traverse=False)  # data, not a task's function: sent to a worker once
    parts = dask.compute(*[dask.delayed(_apply)(shared, block) for block in blocks])
    return _joined(list(parts))


def _apply(integrate: Callable[[np.ndarray], OdeResult], block: np.ndarray) -> OdeResult:
    return integrate(block)


def _joined(parts: list[OdeResult]) -> OdeResult:
    first = parts[0]

    def cat(name: str, axis: int = -1) -> Any:
        return np.concatenate([getattr(p, name) for p in parts], axis=axis)

    sol = None
    if first.sol is not None:
        members = [m for p in parts for m in p.sol._members]  # type: ignore[union-attr]
        sol = OdeSolution(members, first.sol._n, first.sol._forward, True, first.sol._variational)
    t_events = y_events = None
    if first.t_events is not None:
        events = range(len(first.t_events))
        t_events = [[found for p in parts for found in p.t_events[e]] for e in events]  # type: ignore[index]
        y_events = [[found for p in parts for found in p.y_events[e]] for e in events]  # type: ignore[index]
    status = cat("status")
    failed = [p for p in parts if not p.success]
    width = status.size
    message = first.message if not failed else (
        f"{int(np.sum(status < 0))} of {width} members stopped early; first: "
        + failed[0].message.split("first: ", 1)[-1])
    return OdeResult(t=first.t, y=cat("y"), sol=sol, t_events=t_events, y_events=y_events, status=status,
                     message=message, success=not failed, nsteps=cat("nsteps"), order=first.order,
                     t_final=cat("t_final"), y_final=cat("y_final"),
                     sensitivity=None if first.sensitivity is None else cat("sensitivity"))
