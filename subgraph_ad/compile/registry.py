"""``lambdify``'s backends by name: a backend is one module and one entry in ``BACKENDS``.

A backend module lowers a ``Program`` by its ``LOWERING`` table (one ``program.Lowering`` per op
and ``"fn"``), names itself in ``NAME`` (for messages) and runs in one of two ways:

- on the host, over NumPy arrays (``"numpy"``, ``"numba"``): ``kernel(program, scalars,
  **options)`` compiles the program for a pattern of number (True) and array inputs and
  ``worker(kernel, step)`` makes one thread's runner (``Host``; a backend may also offer
  ``slices(kernel, ins, outs, targets)``, runners that read every address once a call,
  ``reader()``, what reads a call's arguments for ``slices`` in one native call, and
  ``point(program, **options)``, one point of a program natively); ``lambdify``'s ``Compiled``
  splits the points over the cores, runs Dask arrays blockwise, and runs the NumPy backend
  instead, with a ``BackendWarning``, where a kernel cannot be built;
- on a device, handed the whole call (``"jax"``, ``"cuda"``): ``compiled(program, names, single,
  dtype, fallback)`` returns the callable (``Device``); ``fallback()`` makes the NumPy backend's
  ``Compiled``, for one that runs it where it cannot compute.

``DTYPES``, where a module has it, are the dtypes ``lambdify(dtype=...)`` takes for it (float64
only without). An entry is the module itself or its import path (relative to this package, or
absolute), imported on first use.

>>> from subgraph_ad.compile import registry
>>> sorted(registry.BACKENDS)
['cuda', 'jax', 'numba', 'numpy']
>>> registry.backend("numba").NAME, registry.host(registry.backend("numba")), registry.host(registry.backend("jax"))
('Numba', True, False)
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any, Callable, Protocol, Sequence, cast

import numpy as np

from . import config
from .devices import DeviceCompiled
from .program import Program

#: The backends by the name ``lambdify(backend=...)`` takes: a new one is a module and an entry here.
BACKENDS: dict[str, str | ModuleType] = {
    "numpy": ".backends.numpy",
    "numba": ".backends.numba",
    "jax": ".backends.jax",
    "cuda": ".backends.cuda",
}


class Host(Protocol):
    """A backend that ``Compiled`` runs over NumPy arrays.

    Optional: ``OPTIONS``, the names of ``lambdify``'s options its ``kernel`` takes as keywords
    (``"chunk"``: steps per compiled chunk, ``"cache"``: use the persistent cache); ``GRAIN``,
    points that its kernel blocks by itself, so that a slice of fewer than ``block`` points (a
    multiple of ``GRAIN``) can go to each core.
    """

    NAME: str

    def kernel(self, program: Program, scalars: tuple[bool, ...], /, *, chunk: int = ..., cache: bool = ...) -> Any:
        """The program compiled for this pattern of number (True) and array inputs; ImportError
        when the backend's library is missing, any other error when it cannot compile."""

    def worker(self, kernel: Any, step: int, /) -> Callable[[Sequence[Any], Sequence[np.ndarray]], None]:
        """One thread's runner: inputs (numbers, or slices of at most ``step`` points) -> outputs."""


class Device(Protocol):
    """A backend that takes the whole call to another array library."""

    NAME: str

    def compiled(self, program: Program, names: list[str], single: bool, dtype: str,
                 fallback: Callable[[], Callable[..., Any]], /) -> DeviceCompiled:
        """The callable of ``lambdify``: a value for one output, a tuple for a list."""


def names() -> tuple[str, ...]:
    """The names ``lambdify`` takes, in the order they were registered."""
    return tuple(BACKENDS)


def backend(name: str) -> ModuleType:
    """The backend module registered as ``name``; ValueError naming the registered ones."""
    entry = BACKENDS.get(name) if isinstance(name, str) else None
    if entry is None:
        raise ValueError(f"lambdify backend must be {' or '.join(map(repr, BACKENDS))}, got {name!r}")
    if not isinstance(entry, str):
        return entry
    module = _IMPORTED.get(entry)  # (import_module's lookup is ~10 µs: twice in every call of a program)
    if module is None:
        module = _IMPORTED[entry] = importlib.import_module(entry, __package__)
    return module


#: The backend modules imported, by their entry in ``BACKENDS``.
_IMPORTED: dict[str, ModuleType] = {}


def chosen(name: str | None, dtype: str | None) -> tuple[str, ModuleType, tuple[str, ...]]:
    """The backend ``lambdify`` runs (``name``, else ``config.default_backend()``), its module and
    dtypes; a ValueError for a default that names none, or a ``dtype`` it does not compute in
    (naming the backends that do)."""
    if name is None:
        name = config.default_backend()
        if name not in BACKENDS:
            raise ValueError(f"lambdify: the default backend is {name!r} (subgraph_ad.compile.config.backend, or "
                             f"the environment variable {config.ENV}), expected {' or '.join(map(repr, names()))}")
    module = backend(name)
    dtypes: tuple[str, ...] = getattr(module, "DTYPES", ("float64",))
    if dtype is not None and dtype not in dtypes:
        takers = [other for other in names() if dtype in getattr(backend(other), "DTYPES", ())]
        if not takers:
            raise ValueError(f"lambdify dtype must be one of {dtypes} for backend {name!r}, got {dtype!r}")
        raise ValueError(f"lambdify dtype={dtype!r} is for backend {' or '.join(map(repr, takers))}; "
                         f"backend {name!r} computes in {' or '.join(dtypes)}")
    return name, module, dtypes


def host(module: ModuleType) -> bool:
    """Whether ``module`` runs on the host over NumPy arrays (``kernel`` and ``worker``)."""
    return callable(getattr(module, "kernel", None)) and callable(getattr(module, "worker", None))


def as_host(module: ModuleType) -> Host:
    """``module`` as a host backend, for ``Compiled``; ValueError for a device backend."""
    if not host(module):
        raise ValueError(f"backend {getattr(module, 'NAME', module.__name__)!r} has no kernel and worker: it runs "
                         "on a device, not on NumPy arrays")
    return cast(Host, module)


def as_device(module: ModuleType) -> Device:
    """``module`` as a device backend; ValueError when it has no ``compiled``."""
    if not callable(getattr(module, "compiled", None)):
        raise ValueError(f"backend {getattr(module, 'NAME', module.__name__)!r} has neither kernel and worker "
                         "(a host backend) nor compiled (a device backend)")
    return cast(Device, module)
