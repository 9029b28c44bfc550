"""One point on a Numba kernel of one vector (``numba.point``): the numbers packed where the
kernel reads them in place and each output read back from its vector's slot, through buffers and
a table of addresses made once per thread."""

from __future__ import annotations

import struct
import threading
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ..program import Program
from . import llvm_driver
from .numba import Kernel, aligned


class Point:
    """A kernel of one point, run through buffers and a table of addresses made once per
    thread: the numbers packed into one array read where they lie, each output written into
    a vector's slot of another and read back from lane 0 — a few microseconds of Python
    whatever the program's size (R100's HVP, 200 numbers in and 100 out: ~4 µs, the kernel 1.4
    of them), where the one-point Python code runs a statement per step."""

    def __init__(self, compiled: Kernel, program: Program, width: int) -> None:
        self.compiled = compiled
        self.n_in, self.n_out = program.n_inputs, len(program.outputs)
        self._width = width  # doubles per vector: the size of an output's slot
        self._packed = struct.Struct(f"{self.n_in}d")
        self._size = llvm_driver.scratch(compiled.rows, 0, compiled.row)
        # outputs the kernel does not write: an input's number (copied after the run) and constants (set once)
        self._inputs = [(j, v) for j, (kind, v) in enumerate(program.outputs) if kind == "in"]
        self._local = threading.local()

    def _made(self) -> _PointCall:
        compiled, n_in, n_out, width = self.compiled, self.n_in, self.n_out, self._width
        given = np.zeros(n_in + width)  # a number read as a vector (an output too) reads past it
        slots = aligned(max(1, n_out) * width).reshape(max(1, n_out), width)
        for j, value in compiled.fills:
            slots[j, 0] = value
        table = np.concatenate([np.arange(n_in, dtype=np.uintp) * np.uintp(8) + np.uintp(given.ctypes.data),
                                np.arange(n_out, dtype=np.uintp) * np.uintp(8 * width) + np.uintp(slots.ctypes.data)])
        scratch = aligned(self._size)
        arguments = (table.ctypes.data, 0, 0, 0, 1, scratch.ctypes.data, compiled.constants.ctypes.data,
                     compiled.helpers.ctypes.data)
        return _PointCall(given, given[:n_in], slots[:n_out, 0], arguments, (table, scratch, slots, compiled))

    def _lent(self) -> _PointCall:
        """This thread's buffers, lent out: a call nested in a callback makes its own."""
        call: _PointCall | None = getattr(self._local, "spare", None)
        self._local.spare = None
        return call if call is not None else self._made()

    def _run(self, call: _PointCall) -> None:
        self.compiled.run(*call.arguments)
        for j, k in self._inputs:
            call.found[j] = call.given[k]

    def __call__(self, values: Sequence[float]) -> tuple[float, ...]:
        call = self._lent()
        self._packed.pack_into(call.given.data, 0, *values)
        self._run(call)
        found: tuple[float, ...] = tuple(call.found.tolist())
        self._local.spare = call
        return found

    def on_array(self, values: np.ndarray | Sequence[np.ndarray]) -> np.ndarray:
        """The point given as one float64 vector of the inputs' numbers, or as its parts end to
        end (each copied in place: no vector joined first); the outputs' as one new vector (what
        an expanded array program calls: no number goes through Python)."""
        call = self._lent()
        if type(values) is np.ndarray:
            np.copyto(call.head, values)
        else:
            at = 0
            for part in values:
                call.head[at:at + part.size] = part
                at += part.size
        self._run(call)
        found: np.ndarray = call.found.copy()
        self._local.spare = call
        return found


@dataclass(frozen=True)
class _PointCall:
    """A thread's buffers for one-point calls: the numbers given, the outputs found, and the
    kernel's arguments (addresses into them and into what ``keep`` holds alive)."""

    given: np.ndarray
    head: np.ndarray  # the inputs' part of ``given``
    found: np.ndarray
    arguments: tuple[int, ...]
    keep: tuple[Any, ...]


__all__ = ["Point"]
