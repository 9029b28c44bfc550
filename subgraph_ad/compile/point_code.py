"""A compiled program's one point as Python code: Python floats and ``math`` first, and where
that raises (1/0, log(0), an overflow), or always with ``warn=True`` (NumPy reports what it
computes), the IEEE result from NumPy scalars. Each is generated on first need, and through
the persistent cache for a large program (``compile.cache``)."""

from __future__ import annotations

import threading
from typing import Any, Callable, Sequence

import numpy as np

from ..numeric.modes import floating
from .backends import numpy as numpy_backend
from .program import Program, define


class PointCode:
    """One point of ``program`` in Python (``Compiled`` runs it below ``NATIVE_POINT`` steps,
    and wherever the backend has no kernel for one point)."""

    def __init__(self, program: Program, warn: bool, cached: bool, lock: threading.Lock) -> None:
        self.program, self.warn, self.cached, self._lock = program, warn, cached, lock
        self._fast: Callable[..., tuple[Any, ...]] | None = None
        self._fast_pure = False
        self._ieee: Callable[..., tuple[Any, ...]] | None = None

    @property
    def built(self) -> list[str]:
        """``"point"`` (Python floats) and ``"point IEEE"`` (NumPy scalars), where generated."""
        return [name for name, made in (("point", self._fast), ("point IEEE", self._ieee)) if made is not None]

    @property
    def pure(self) -> bool:
        """Whether the floats' code is Python floats only (so it cannot warn); builds it."""
        self._fast_path()
        return self._fast_pure

    def _fast_path(self) -> Callable[..., tuple[Any, ...]]:
        if self._fast is None:
            with self._lock:
                if self._fast is None:
                    source, namespace, self._fast_pure = numpy_backend.scalar_source(self.program, python=True)
                    self._fast = define(source, namespace, "point", self.cached)
        return self._fast

    def _ieee_path(self) -> Callable[..., tuple[Any, ...]]:
        if self._ieee is None:
            with self._lock:
                if self._ieee is None:
                    source, namespace, _ = numpy_backend.scalar_source(self.program)
                    self._ieee = define(source, namespace, "scalar", self.cached)
        return self._ieee

    def run(self, point: Sequence[float]) -> tuple[float, ...]:
        """The outputs at one point of floats."""
        if not self.warn:
            fast = self._fast_path()
            try:
                if self._fast_pure:
                    return tuple(map(float, fast(*point)))
                with floating(False):
                    return tuple(map(float, fast(*point)))
            except (ArithmeticError, ValueError):
                pass
        with floating(self.warn):
            results = self._ieee_path()(*(np.float64(a) for a in point))
        return tuple(float(r) for r in results)


__all__ = ["PointCode"]
