"""``lambdify``'s backends whose arrays are not NumPy's: ``"jax"`` and ``"cuda"``.

A ``Compiled`` takes NumPy arrays, Dask arrays or numbers and splits the points over the CPU
cores; these two hand the whole call to another array library instead, so they are their own
callables with the same face (``backend``, ``names``, ``program``, one value for one output and
a tuple for a list, pickling by program).

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

import threading
import warnings
from typing import Any, Callable

import numpy as np

from .backends import cuda as cuda_backend
from .backends import jax as jax_backend
from .backends.c import NotLowerable
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


class _Device:
    """What both share: the arguments' count, one value or a tuple, pickling by program."""

    backend: str

    def __init__(self, program: Program, names: list[str], single: bool) -> None:
        self.program, self.names, self.single = program, names, single

    def _checked(self, args: tuple[Any, ...]) -> None:
        if len(args) != len(self.names):
            raise TypeError(f"expected {len(self.names)} arguments ({', '.join(self.names)}), got {len(args)}")

    def _shaped(self, results: tuple[Any, ...]) -> Any:
        return results[0] if self.single else results

    def __repr__(self) -> str:
        return described(self.names, self.program, self.backend)


class JaxCompiled(_Device):
    """The program as a function of JAX arrays or numbers, broadcast like NumPy."""

    backend = "jax"

    def __init__(self, program: Program, names: list[str], single: bool) -> None:
        super().__init__(program, names, single)
        self._function = jax_backend.function(program)

    def __call__(self, *args: Any) -> Any:
        self._checked(args)
        return self._shaped(self._function(*args))

    def __reduce__(self) -> tuple[Any, ...]:
        return (JaxCompiled, (self.program, self.names, self.single))


class CudaCompiled(_Device):
    """The program as fused CUDA kernels, compiled at the first call; ``fallback()`` makes the
    NumPy backend's ``Compiled`` that runs instead where CUDA cannot."""

    def __init__(self, program: Program, names: list[str], single: bool, dtype: str,
                 fallback: Callable[[], Callable[..., Any]]) -> None:
        if dtype not in cuda_backend.DTYPES:
            raise ValueError(f"lambdify dtype must be one of {cuda_backend.DTYPES} for backend 'cuda', got {dtype!r}")
        super().__init__(program, names, single)
        self.dtype, self._fallback = dtype, fallback
        #: "cuda", or "numpy" once CUDA turned out unusable here.
        self.backend = "cuda"
        self._function: Callable[..., Any] | None = None
        self._lock = threading.Lock()

    def _built(self) -> Callable[..., Any]:
        if self._function is None:
            with self._lock:
                if self._function is None:
                    try:
                        kernels = cuda_backend.function(self.program, self.dtype)
                        self._function = lambda *args: self._shaped(kernels(*args))
                    except (ImportError, NotLowerable) as error:
                        warnings.warn(f"lambdify(backend='cuda'): {error}; using the NumPy backend", BackendWarning,
                                      stacklevel=4)
                        self.backend, self._function = "numpy", self._fallback()
        return self._function

    def __call__(self, *args: Any) -> Any:
        self._checked(args)
        return self._built()(*args)

    def __reduce__(self) -> tuple[Any, ...]:
        return (CudaCompiled, (self.program, self.names, self.single, self.dtype, self._fallback))


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
    if not isinstance(compiled, _Device):
        return compiled

    def run(*args: Any) -> Any:
        results = compiled(*args)
        return tuple(map(to_host, results)) if isinstance(results, tuple) else to_host(results)

    return run
