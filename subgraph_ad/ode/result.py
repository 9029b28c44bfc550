"""The result of ``taylor_integrate``: scipy's ``OdeResult`` fields and a few of its own."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from .dense import OdeSolution


@dataclass
class OdeResult:
    """``t``, ``y`` (n, len(t)), ``sol`` (an ``OdeSolution`` with ``dense_output=True``, else None),
    ``t_events``/``y_events`` (one entry per event), ``status`` (0: reached the end, 1: a
    terminal event, −1: failed), ``message``, ``success``, plus ``nsteps`` (steps taken),
    ``order`` (the Taylor order), ``sensitivity`` (∂y(t)/∂y0, (n, n, len(t)), with
    ``variational=True``, else None) and ``t_final``/``y_final`` (where the integration stopped).

    For an ensemble (y0 of shape (n, B)) ``y`` is (n, len(t), B) at ``t`` = ``t_eval`` or the
    ends (t0, t1), NaN where a member had stopped; ``status``, ``nsteps`` and ``t_final`` are
    arrays over the members, ``t_events[i]``/``y_events[i]`` lists over them."""

    t: np.ndarray
    y: np.ndarray
    sol: Optional[OdeSolution]
    t_events: Optional[list[Any]]
    y_events: Optional[list[Any]]
    status: Any
    message: str
    success: bool
    nsteps: Any
    order: int
    t_final: Any
    y_final: np.ndarray
    sensitivity: Optional[np.ndarray] = field(default=None)

    def __getitem__(self, key: str) -> Any:
        """res["y"] as for scipy's OdeResult (a dict)."""
        return getattr(self, key)
