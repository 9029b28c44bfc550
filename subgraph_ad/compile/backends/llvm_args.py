"""A call's arguments read in one native call: each float64 vector's address and stride and each
number's value, from the objects' own fields, as the Numba driver's table (``numba.slices``).

Read from Python, an argument costs about a microsecond (its checks, and its address through
the buffer protocol): R100's gradient, 100 vectors of 10⁴ points, spent ~200 µs a call there,
a fifth of the call. The fields lie where NumPy's C ABI puts them (``PyArrayObject_fields``:
the data pointer, ``nd``, the dimensions and strides pointers, ``base``, ``descr``, as every
compiled extension reads them) and CPython's (``PyFloatObject``'s double, NumPy's float64
scalar's); ``layout`` finds each offset on live objects and checks it against what NumPy and
Python report, and where any check fails there is no reader and Python reads the arguments.
Anything but an exact ``ndarray`` of native float64, one axis, its points whole doubles apart
(any stride with one point or none), a ``float`` or a ``np.float64`` makes the reader answer -1
and the call go the general way.
"""

from __future__ import annotations

import ctypes
import functools
import struct
import sys
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from .. import fastcall


#: Where ``PyArrayObject_fields`` puts what is read, in bytes after its data pointer: nd (an
#: int, padded), the dimensions and strides pointers, then (after ``base``) the dtype.
AFTER_DATA = {"nd": 8, "dims": 16, "strides": 24, "descr": 40}


@dataclass(frozen=True)
class Layout:
    """Byte offsets of the fields read, in the objects of this process's Python and NumPy."""

    type_at: int  # every object's type pointer
    data_at: int  # ndarray: data pointer, then the fields of ``AFTER_DATA``
    float_at: int  # float: its double
    scalar_at: int  # np.float64: its double

    def array(self, field: str) -> int:
        """Where an ndarray's ``field`` (one of ``AFTER_DATA``) lies."""
        return self.data_at + AFTER_DATA[field]


def _words(obj: Any) -> list[int]:
    """The object's own struct (``__basicsize__`` bytes, never past it) as 8-byte words."""
    raw = ctypes.string_at(id(obj), type(obj).__basicsize__ // 8 * 8)
    return list(struct.unpack(f"{len(raw) // 8}Q", raw))


def _word_at(obj: Any, offset: int) -> int:
    return ctypes.c_uint64.from_address(id(obj) + offset).value


def _double_at(obj: Any) -> int | None:
    """Where a number's double lies in its object, or None."""
    raw = ctypes.string_at(id(obj), type(obj).__basicsize__)
    at = raw.find(struct.pack("d", float(obj)))
    return at if at >= 0 and at % 8 == 0 else None


@functools.cache
def layout() -> Layout | None:
    """The offsets, found and checked on a strided view, a 2-D array and two numbers; None where
    anything disagrees (another ABI), or off CPython (whose ``id`` is where an object lies)."""
    if sys.implementation.name != "cpython":
        return None
    base = np.arange(6.0)
    view, grid = base[::2], np.zeros((2, 3))
    try:
        words = _words(view)
        type_at, data_at = 8 * words.index(id(np.ndarray)), 8 * words.index(view.ctypes.data)
    except ValueError:
        return None
    float_at, scalar_at = _double_at(0.7853981633974483), _double_at(np.float64(2.718281828459045))
    if float_at is None or scalar_at is None:
        return None
    found = Layout(type_at, data_at, float_at, scalar_at)

    def agrees(a: np.ndarray) -> bool:
        nd = ctypes.c_int.from_address(id(a) + found.array("nd")).value
        dims, strides = _word_at(a, found.array("dims")), _word_at(a, found.array("strides"))
        return (_word_at(a, found.type_at) == id(np.ndarray) and _word_at(a, found.data_at) == a.ctypes.data
                and nd == a.ndim and _word_at(a, found.array("descr")) == id(a.dtype)
                and all(ctypes.c_int64.from_address(dims + 8 * k).value == a.shape[k] for k in range(nd))
                and all(ctypes.c_int64.from_address(strides + 8 * k).value == a.strides[k] for k in range(nd)))

    return found if agrees(view) and agrees(grid) and agrees(base) else None


def source(at: Layout) -> str:
    """``@read(objs, n, known, table, values, numbers)``: the ``n`` objects at ``objs`` — each
    an exact ndarray of ``known[1]`` (float64), one axis, of one length, its points a positive
    whole number of doubles apart (1 recorded for one point or none, whatever NumPy says), or
    a ``float`` (``known[2]``) or ``np.float64`` (``known[3]``) — as the driver's table (each address, then the doubles between its points:
    0 for a number, whose value goes to ``values[k]`` and its address there), ``numbers[k]`` 1
    for a number; returns the vectors' length, -2 with none, -1 for anything else."""
    return "\n".join([
        "define i64 @read(ptr %objs, i64 %n, ptr %known, ptr %table, ptr %values, ptr %numbers) {",
        "entry:", "  %ndarray = load ptr, ptr %known, align 8",
        "  %f64p = getelementptr inbounds ptr, ptr %known, i64 1", "  %f64 = load ptr, ptr %f64p, align 8",
        "  %floatp = getelementptr inbounds ptr, ptr %known, i64 2", "  %float = load ptr, ptr %floatp, align 8",
        "  %scalarp = getelementptr inbounds ptr, ptr %known, i64 3", "  %scalar = load ptr, ptr %scalarp, align 8",
        "  br label %loop",
        "loop:", "  %k = phi i64 [0, %entry], [%k.next, %next]", "  %len = phi i64 [-2, %entry], [%len.next, %next]",
        "  %more = icmp slt i64 %k, %n", "  br i1 %more, label %body, label %done",
        "body:", "  %objp = getelementptr inbounds ptr, ptr %objs, i64 %k", "  %obj = load ptr, ptr %objp, align 8",
        *field("type", "ptr", at.type_at), "  %strp = getelementptr inbounds i64, ptr %table, i64 %k",
        "  %stride.at = add nuw nsw i64 %k, %n", "  %stridep = getelementptr inbounds i64, ptr %table, i64 %stride.at",
        "  %flagp = getelementptr inbounds i8, ptr %numbers, i64 %k",
        "  %is.array = icmp eq ptr %type, %ndarray", "  br i1 %is.array, label %array, label %number",
        # the dtype and the axes first: a 0-d array's dimensions and strides may not be there
        "array:", *field("descr", "ptr", at.array("descr")), *field("nd", "i32", at.array("nd")),
        "  %is.f64 = icmp eq ptr %descr, %f64", "  %one.axis = icmp eq i32 %nd, 1", "  %vector = and i1 %is.f64, %one.axis",
        "  br i1 %vector, label %axis, label %fail",
        "axis:", *field("dims", "ptr", at.array("dims")), *field("strides", "ptr", at.array("strides")), *field("data", "ptr", at.data_at),
        "  %size = load i64, ptr %dims, align 8", "  %bytes = load i64, ptr %strides, align 8",
        "  %ahead = icmp sgt i64 %bytes, 0", "  %whole = and i64 %bytes, 7", "  %doubles = icmp eq i64 %whole, 0",
        "  %address = ptrtoint ptr %data to i64", "  %misaligned = and i64 %address, 7", "  %aligned = icmp eq i64 %misaligned, 0",
        "  %first = icmp eq i64 %len, -2", "  %same = icmp eq i64 %size, %len", "  %length = or i1 %first, %same",
        "  %steps = and i1 %ahead, %doubles", "  %few = icmp ule i64 %size, 1", "  %ok1 = or i1 %steps, %few",
        "  %ok2 = and i1 %aligned, %length", "  %ok = and i1 %ok1, %ok2", "  br i1 %ok, label %array.ok, label %fail",
        # (with one point or none the stride is never used, and may be anything: 1 then)
        "array.ok:", "  store i64 %address, ptr %strp, align 8", "  %doubles.apart = lshr i64 %bytes, 3",
        "  %apart = select i1 %few, i64 1, i64 %doubles.apart", "  store i64 %apart, ptr %stridep, align 8", "  store i8 0, ptr %flagp, align 1", "  br label %next",
        "number:", "  %is.float = icmp eq ptr %type, %float", "  %is.scalar = icmp eq ptr %type, %scalar",
        "  %is.number = or i1 %is.float, %is.scalar", "  br i1 %is.number, label %number.ok, label %fail",
        "number.ok:", f"  %value.at = select i1 %is.float, i64 {at.float_at}, i64 {at.scalar_at}",
        "  %valuep = getelementptr inbounds i8, ptr %obj, i64 %value.at", "  %value = load double, ptr %valuep, align 8",
        "  %slot = getelementptr inbounds double, ptr %values, i64 %k", "  store double %value, ptr %slot, align 8",
        "  store ptr %slot, ptr %strp, align 8", "  store i64 0, ptr %stridep, align 8", "  store i8 1, ptr %flagp, align 1",
        "  br label %next",
        "next:", "  %len.next = phi i64 [%size, %array.ok], [%len, %number.ok]", "  %k.next = add nuw nsw i64 %k, 1",
        "  br label %loop",
        "fail:", "  ret i64 -1",
        "done:", "  ret i64 %len", "}", ""])


def field(name: str, kind: str, offset: int, obj: str = "%obj") -> list[str]:
    """``%name``: the ``kind`` at ``offset`` bytes into the object ``obj``."""
    return [f"  %{name}.p = getelementptr inbounds i8, ptr {obj}, i64 {offset}",
            f"  %{name} = load {kind}, ptr %{name}.p, align {4 if kind == 'i32' else 8}"]


def address(array: np.ndarray) -> int:
    """Where an array's numbers start: through the buffer protocol, a third of ``ctypes.data``'s
    cost (0.27 µs against 0.8), or that for an array that lends no writable buffer (read-only,
    empty)."""
    try:
        return ctypes.addressof(ctypes.c_char.from_buffer(array))  # type: ignore[arg-type]  # (NumPy lends it)
    except (TypeError, ValueError):
        return int(array.ctypes.data)


@dataclass(frozen=True)
class Read:
    """A call's arguments as the driver reads them."""

    table: np.ndarray  # uintp: each input's address, then the doubles between its points
    values: np.ndarray  # float64: each number's value (where the table points)
    numbers: np.ndarray  # uint8: 1 where the input is a number
    size: int  # the vectors' length
    held: Sequence[Any]  # the arguments, alive while the table points into them

    def arguments(self) -> list[Any]:
        """The arguments as a backend that takes no table takes them: numbers as np.float64,
        contiguous vectors."""
        return [np.float64(a) if number else np.ascontiguousarray(a) for a, number in zip(self.held, self.numbers)]


_READ = ctypes.CFUNCTYPE(ctypes.c_int64, *[ctypes.c_void_p] * 6)


class Reader:
    """The compiled ``read`` and what it is given: one native call per call of a program."""

    def __init__(self, compile_ir: Callable[[str, str], tuple[Any, int]], at: Layout) -> None:
        self.engine, entry = compile_ir(source(at), "read")  # (the engine owns the machine code)
        self.read = _READ(entry)
        self.known = np.array(fastcall.known(), dtype=np.uintp)
        self.types = address(self.known)

    def __call__(self, args: Sequence[Any]) -> Read | None:
        """The arguments read, or None where one is not a float64 vector or a float (or no
        vector is among them)."""
        n = len(args)
        objs = np.fromiter(map(id, args), np.uintp, n)
        table, values, numbers = np.empty(2 * n, np.uintp), np.empty(n), np.empty(n, np.uint8)
        size = self.read(address(objs), n, self.types, address(table), address(values), address(numbers))
        return Read(table, values, numbers, size, args) if size >= 0 else None


__all__ = ["AFTER_DATA", "Layout", "Read", "Reader", "address", "field", "layout", "source"]
