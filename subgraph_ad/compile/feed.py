"""How a compiled program's call is laid out for its kernels: the arguments as floats (numbers,
or arrays of points), the common batch in one pass, and the outputs allocated where whole-vector
stores want them."""

from __future__ import annotations

import ctypes
from typing import Any, Callable, Sequence

import numpy as np

from . import heap

#: Argument types that are one number: they take the one-point path directly.
NUMBERS = frozenset((float, int, np.float64))
#: Arguments of these types go to the one-point code as they are.
FLOAT = frozenset((float,))


def numbers(value: Any, name: str) -> np.ndarray | np.float64:
    """An argument as floats: a number or an array of numbers (not None, text or objects, which
    NumPy would quietly read as nan or parse)."""
    if type(value) is np.ndarray and value.dtype == np.float64:  # the common argument: as it is
        return value
    if type(value) in NUMBERS:  # a number beside arrays (a direction's entries): no array made
        number: np.float64 = np.float64(value)
        return number
    array = np.asarray(value)
    if array.dtype.kind not in "biuf":
        raise TypeError(f"argument {name} must be a number or an array of numbers, got {type(value).__name__} "
                        f"{value!r:.80}")
    return array.astype(float, copy=False)


#: NumPy's own float64 dtype, the one object every float64 array NumPy makes carries: the fast
#: paths compare a dtype with it by identity (any other float64 takes the general path).
FLOAT64 = np.dtype(np.float64)
_STEP = (8,)


def fed(args: Sequence[Any]) -> tuple[list[Any], tuple[int], tuple[bool, ...]] | None:
    """The arguments of the common batch — numbers, and float64 vectors of one length, each
    contiguous or a column of a (points × n) array — as ``Compiled._arrays`` takes them (numbers
    as np.float64, vectors as they are), their shape and which are numbers, in one pass (R100's
    HVP, 200 arguments: ~100 µs less than the general path's); None for any other call."""
    flat: list[Any] = []
    flags: list[bool] = []
    shape = None
    for a in args:
        if type(a) is np.ndarray:
            if a.dtype is not FLOAT64:
                return None
            apart = a.strides
            if apart != _STEP and (len(apart) != 1 or apart[0] <= 0 or apart[0] % 8):
                return None  # (one axis, its points whole doubles apart: next to each other the common case)
            if shape is None:
                shape = a.shape
            elif a.shape != shape:
                return None
            flat.append(a)
            flags.append(False)
        elif type(a) in NUMBERS:
            flat.append(np.float64(a))
            flags.append(True)
        else:
            return None
    return None if shape is None else (flat, shape, tuple(flags))


def outputs(count: int, size: int) -> tuple[list[np.ndarray], np.ndarray]:
    """``count`` outputs of ``size`` points and the kernels' table of them (their addresses,
    then the doubles between their points: 1), each starting on a cache line
    (64 bytes) so that the Numba kernels' whole-vector stores never straddle two (R100's HVP:
    0.78 → 0.70 ms): rows of one block (a hundred outputs: ~60 µs of Python less than one by
    one) up to ``heap.BLOCK`` bytes, which glibc serves from its heap once settled; past it
    one allocation each, as a block that large would be mapped and faulted in afresh on
    every call (R1000's HVP: 1,000 outputs of 10⁴ points, 80 MB)."""
    stride = -(-size // 8) * 8
    if 8 * count * stride <= heap.BLOCK:
        heap.settle()
        raw = np.empty(count * stride + 8)
        at = ctypes.addressof(ctypes.c_char.from_buffer(raw.data))
        skip = (-at % 64) // 8
        table = np.ones(2 * count, dtype=np.uintp)
        table[:count] = np.uintp(at + 8 * skip) + np.uintp(8 * stride) * np.arange(count, dtype=np.uintp)
        return list(raw[skip:skip + count * stride].reshape(count, stride)[:, :size]), table  # (rows: half a slice each's cost)
    outs, addresses = [], []
    for _ in range(count):
        raw = np.empty(size + 8)
        at = ctypes.addressof(ctypes.c_char.from_buffer(raw.data))
        skip = (-at % 64) // 8
        outs.append(raw[skip:skip + size])
        addresses.append(at + 8 * skip)
    return outs, np.array(addresses + [1] * count, dtype=np.uintp)


def columns(block: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
    """The columns of a (points × outputs) array as the outputs, and the kernels' table of them:
    their addresses, a double apart, then the doubles between their points (a row's)."""
    count = block.shape[1]
    first = np.uintp(block.ctypes.data) + np.uintp(8) * np.arange(count, dtype=np.uintp)
    return list(block.T), np.concatenate([first, np.full(count, count, dtype=np.uintp)])


def part(values: np.ndarray, start: int, stop: int) -> np.ndarray:
    """Points start..stop of an input; a single number is the same for every slice."""
    return values if values.ndim == 0 else values[start:stop]


def sliced(run: Callable[[Sequence[Any], Sequence[np.ndarray]], None], flat: Sequence[Any],
           outs: list[np.ndarray]) -> Callable[[int, int], None]:
    """A backend's runner on whole inputs and outputs, as one on points a..b of them."""
    return lambda a, b: run([part(v, a, b) for v in flat], [o[a:b] for o in outs])


__all__ = ["FLOAT", "FLOAT64", "NUMBERS", "columns", "fed", "numbers", "outputs", "part", "sliced"]
