"""What ``lambdify``'s backends on a device share: ``"jax"``, ``"cuda"`` (``registry.Device``).

A ``Compiled`` takes NumPy arrays, Dask arrays or numbers and splits the points over the CPU
cores; a device backend hands the whole call to another array library instead, so its callable
is its own (made by the backend module's ``compiled``), with the same face: ``DeviceCompiled``
(``backend``, ``names``, ``program``, one value for one output and a tuple for a list, pickling
by program).

- ``"jax"``: a pure function of JAX arrays (``backends/jax.py``), so ``jax.jit``, ``jax.vmap``
  and ``jax.grad`` compose with it; nothing can stand in for it, so without JAX, or for a
  function JAX cannot compute, ``lambdify`` raises (ImportError, ``NotLowerable``).
- ``"cuda"``: one fused kernel per part of the program (``backends/cuda.py``), returning CuPy
  arrays of ``dtype``; compiled at the first call. Without CuPy or a GPU, or for a function with
  no spelling, it warns (``BackendWarning``) and the NumPy backend runs instead, returning NumPy
  arrays: the values are the same, only where they live differs.

``to_host`` brings any backend's results back as NumPy arrays, for the callers that assemble
them with NumPy (``sad.grad``, ``sad.hessian``, ...).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .program import Program


#: Inputs a compiled function's repr names before it counts the rest.
SHOWN_INPUTS = 6


def described(names: list[str], program: Program, backend: str) -> str:
    """``<lambdify (x, y) -> 1 output(s), 7 steps, backend numpy>``; past ``SHOWN_INPUTS``
    inputs, the first few and a count (a 2,210-input gradient's repr was 20 KB)."""
    shown = names if len(names) <= SHOWN_INPUTS else [*names[:SHOWN_INPUTS - 1], f"… {len(names)} inputs in all"]
    return (f"<lambdify ({', '.join(shown)}) -> {len(program.outputs)} output(s), {len(program.steps)} steps, "
            f"backend {backend}>")


class BackendWarning(UserWarning):
    """A requested backend is not usable here; the NumPy backend runs instead."""


class DeviceCompiled:
    """What a device backend's callable shares: the arguments' count, one value or a tuple."""

    backend: str

    def __init__(self, program: Program, names: list[str], single: bool) -> None:
        self.program, self.names, self.single = program, names, single

    def __call__(self, *args: Any) -> Any:
        if len(args) != len(self.names):
            raise TypeError(f"expected {len(self.names)} arguments ({', '.join(self.names)}), got {len(args)}")
        return self._run(*args)

    def _run(self, *args: Any) -> Any:
        """The backend's own call, on the right number of arguments."""
        raise NotImplementedError(f"{type(self).__name__} runs nothing: a device backend's callable defines _run")

    def _shaped(self, results: tuple[Any, ...]) -> Any:
        return results[0] if self.single else results

    def __repr__(self) -> str:
        return described(self.names, self.program, self.backend)


def to_host(value: Any) -> Any:
    """A result as NumPy: a CuPy array copied from the device (``.get()``), a JAX array read
    (``np.asarray``), a NumPy array or a number as it is."""
    if isinstance(value, (float, np.ndarray, np.generic)):
        return value
    if type(value).__module__.startswith("cupy"):
        return value.get()
    return np.asarray(value)


def on_host(compiled: Callable[..., Any]) -> Callable[..., Any]:
    """``compiled`` returning NumPy whatever its backend (each result through ``to_host``)."""
    from .arrays import JaxArrayCompiled
    from .expanded import Expanded

    if isinstance(compiled, JaxArrayCompiled):  # its outputs read back as NumPy, its shapes kept
        compiled.host = True
        return compiled
    if isinstance(compiled, Expanded):  # the scalar program inside runs on the device
        compiled.inner = on_host(compiled.inner)
        return compiled
    if not isinstance(compiled, DeviceCompiled):
        return compiled

    def run(*args: Any) -> Any:
        results = compiled(*args)
        return tuple(map(to_host, results)) if isinstance(results, tuple) else to_host(results)

    return run
