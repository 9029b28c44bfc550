"""Chains of elementwise arithmetic in the code for one point, each run as one native loop.

At one point an array program's elementwise arithmetic is many small NumPy passes, each paying a
call and, where an operand broadcasts, NumPy's iterator row by row: a tanh network's bias
addition (128 × 64 plus 64) took 5–7 µs, twice a same-shape addition. A *loop* is a chain
(``array_kernels.grown``) of add, sub, mul, div and neg nodes of one shape (one or two axes)
whose operands are arrays that broadcast to it (the shape itself, a row, a column, one number)
or constants, and of matrix products of a column by a row (an outer product: a reverse sweep's
ȳ·wᵀ through a layer of one output). Its LLVM IR is a loop nest over the shape that runs the
members in their order, each rounded once (no contraction into fused multiply-adds), so its
values are NumPy's to the bit; LLVM's own passes vectorise it.

The loop is called as a Python builtin (``METH_FASTCALL``: ~0.05 µs a call, where ctypes costs
~2.5) with its outputs (new arrays, or operands of its shape that die at it: ``array_reuse``)
and its operands, and checks them itself, before it writes anything: each operand an
exact ``ndarray`` of native float64, of its own shape, C-contiguous, or a number (``float``,
``np.float64`` or a 0-d array). Where one is not, it returns the sentinel ``MISS`` it is given
last and the code runs the members' NumPy code. It reads the objects' fields where NumPy's and
CPython's ABIs put them (``llvm_args.layout``, checked on live objects); where that layout is not
found, without Numba's llvmlite, or on a Python without the GIL, there are no loops. A loop is
compiled on its first call (milliseconds; its object code is kept in the cache).
"""

from __future__ import annotations

import ctypes
import functools
import math
import sys
import sysconfig
import threading
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from ..core import Tape
from ..core.arrays import Shape, shape_of
from ..tables import rule_table
from .array_fusion import Fused
from . import fastcall
from .backends import llvm_args, llvm_ir
from .array_kernels import fused_at, grown

#: The arithmetic a loop's members may be, as LLVM writes it: each one IEEE operation, as
#: NumPy's. A power and a function stay NumPy calls (``np.power``, ``np.tanh``: no LLVM instruction).
OPERATIONS = rule_table("array loops OPERATIONS", {"add": "fadd", "sub": "fsub", "mul": "fmul", "div": "fdiv",
                                                   "neg": "fneg"}, without=("pow", "fn"))
#: The costs (µs) the choice weighs, measured on a 2-core x86-64 VM (AVX-512): a NumPy pass's
#: call, and per number its work (same shapes) or with an operand that broadcasts; a loop's call,
#: each output's new array, and per number each whole array it reads or writes.
PASS, SAME, BROADCAST = 0.5, 0.00035, 0.0007
CALL, OUTPUT, ARRAY = 0.2, 0.4, 0.00015

#: What a loop returns for operands it does not take (the last argument it is given).
MISS = type("Miss", (), {"__repr__": lambda self: "MISS", "__slots__": ()})()

@dataclass(eq=False)
class Loop:
    """A chain run as one loop: ``members`` in order, of ``shape``; the values they read from
    outside (``inputs``, of ``shapes``: arrays, or numbers of shape ()) and the members read
    outside it or returned (``outputs``), each a new array the code makes or an input that dies
    at the loop."""

    members: tuple[int, ...]
    anchor: int  #: the member where the loop runs: every input is made before it
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    shape: Shape
    shapes: tuple[Shape, ...]
    ir: str
    _names: dict[str, Any] = field(default_factory=dict)
    _key: str = ""
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def fused(self) -> Fused:
        """The loop as ``array_fusion`` writes a fused node (``array_kernels.fused_at``)."""
        return fused_at(self.members, self.anchor, self.inputs)

    def bind(self, names: dict[str, Any], key: str) -> None:
        """Stand as ``key`` in the code's globals until the first call, which compiles the loop
        and puts the builtin there in its place."""
        self._names, self._key = names, key
        names[key] = self

    def __call__(self, *values: Any) -> Any:
        """The first call: compile, bind the builtin, run it (``MISS`` for operands it does not
        take, or where LLVM refused the loop)."""
        with self._lock:
            native = self._names[self._key]
            if native is self:
                native, self._names[f"{self._key}_code"] = _builtin(self.ir)
                self._names[self._key] = native
        return native(*values)


def available() -> bool:
    """Whether loops can run here: llvmlite (Numba's), NumPy's and CPython's layout as
    ``llvm_args`` reads it, an object's reference count its first word (``fastcall.new_reference``),
    and the GIL (the builtin reads its arguments unlocked)."""
    from . import array_kernels

    if sys.implementation.name != "cpython" or sysconfig.get_config_var("Py_GIL_DISABLED"):
        return False
    if not array_kernels.available():
        return False
    at = llvm_args.layout()
    probe = np.empty(1)
    held = [probe] * 3  # four references in all, counted where a loop counts them
    counted = ctypes.c_ssize_t.from_address(id(probe)).value
    return at is not None and at.type_at == 8 and counted == sys.getrefcount(held[0]) - 1


def loops(tape: Tape, order: Sequence[int], outputs: Sequence[int], fused: dict[int, Fused]) -> dict[int, Loop]:
    """The loops of a program's code for one point, by their anchor: its chains (``grown``)
    that pay (``_pays``), of nodes not in ``fused``; none where loops cannot run here."""
    nodes = tape.nodes

    def member(i: int, shape: Shape) -> bool:
        node = nodes[i]
        if not 1 <= len(shape) <= 2 or not math.prod(shape) or shape_of(tape, i) != shape:
            return False
        if node.op == "matmul":
            return _outer(tape, i)
        if node.op != "map" or not isinstance(node.payload[1], str) or node.payload[1] not in OPERATIONS:
            return False
        return all(nodes[a].op == "const" or _broadcasts(shape_of(tape, a), shape) for a in node.args)

    found = {}
    for members, anchor, inputs, outs in grown(tape, order, outputs, fused, member, functools.partial(_pays, tape)):
        shape = shape_of(tape, members[0])
        shapes = tuple(shape_of(tape, a) for a in inputs)
        found[anchor] = Loop(members, anchor, inputs, outs, shape, shapes, "")
    if not found or not available():
        return {}
    at = llvm_args.layout()
    assert at is not None  # (``available``)
    for loop in found.values():
        loop.ir = _ir(tape, loop, at)
    return found


def _outer(tape: Tape, i: int) -> bool:
    """Whether node i is a matrix product of a column by a row, (m × 1)·(1 × n): each element
    one product, as the loop's ``fmul`` rounds it (BLAS's too, with nothing to add)."""
    node = tape.nodes[i]
    if node.op != "matmul":
        return False
    a, b = (shape_of(tape, k) for k in node.args)
    return len(a) == 2 and len(b) == 2 and a[1] == 1 and b[0] == 1


def _broadcasts(own: Shape, shape: Shape) -> bool:
    """Whether an operand of shape ``own`` broadcasts to ``shape`` by NumPy's rules."""
    return len(own) <= len(shape) and all(o in (1, s) for o, s in zip(own[::-1], shape[::-1]))


def _pays(tape: Tape, members: Sequence[int], outputs: Sequence[int]) -> bool:
    """Whether the members' NumPy passes cost more than one loop (``PASS``…``ARRAY``)."""
    shape = shape_of(tape, members[0])
    size, inside = math.prod(shape), set(members)
    passes = 0.0
    for i in members:
        wide = _outer(tape, i) or any(shape_of(tape, a) not in ((), shape) for a in tape.nodes[i].args)
        passes += PASS + size * (BROADCAST if wide else SAME)
    whole = {a for i in members for a in tape.nodes[i].args if a not in inside and shape_of(tape, a) == shape}
    return passes > CALL + OUTPUT * len(outputs) + size * ARRAY * (len(whole) + len(outputs))


def _ir(tape: Tape, loop: Loop, at: Any) -> str:
    """``@loop(self, args, nargs)``, a ``METH_FASTCALL`` builtin: ``args`` the outputs, the
    inputs and ``MISS``; ``self`` an array of the addresses of ``ndarray``, float64's dtype,
    ``float`` and ``np.float64`` (``fastcall.known``). Checks each input (``_check``), then a loop nest
    over the shape (rows × columns; one flat loop where no operand is a row or a column of it)
    that reads each input where it broadcasts from, runs the members in order and stores the
    outputs; returns the first output (a new reference), or ``MISS`` (its ``self`` where the
    count of arguments is not its own)."""
    nodes = tape.nodes
    n_out, n_in = len(loop.outputs), len(loop.inputs)
    rows, cols = (1, *loop.shape) if len(loop.shape) == 1 else loop.shape
    size = rows * cols
    flat = all(math.prod(s) in (1, size) for s in loop.shapes)
    lines = ["define ptr @loop(ptr %self, ptr %args, i64 %nargs) {", "entry:",
             f"  %known.p = getelementptr inbounds i8, ptr %self, i64 {at.data_at}",
             "  %known = load ptr, ptr %known.p, align 8"]
    for k, name in enumerate(("ndarray", "f64", "float", "scalar")):
        lines += [f"  %{name}.p = getelementptr inbounds ptr, ptr %known, i64 {k}",
                  f"  %{name} = load ptr, ptr %{name}.p, align 8"]
    lines += [f"  %count = icmp eq i64 %nargs, {n_out + n_in + 1}", "  br i1 %count, label %c0, label %wrong"]
    for k, own in enumerate(loop.shapes):
        lines += _check(k, n_out + k, own, at)
    lines.append(f"c{n_in}:")
    for j in range(n_out):
        lines += [f"  %o{j}.p = getelementptr inbounds ptr, ptr %args, i64 {j}", f"  %o{j} = load ptr, ptr %o{j}.p, align 8",
                  f"  %o{j}.dp = getelementptr inbounds i8, ptr %o{j}, i64 {at.data_at}",
                  f"  %o{j}.d = load ptr, ptr %o{j}.dp, align 8"]
    value: dict[int, str] = {}
    for k, (a, own) in enumerate(zip(loop.inputs, loop.shapes)):
        if not own:  # a number: read once
            lines.append(f"  %x{k} = load double, ptr %a{k}.d, align 8")
            value[a] = f"%x{k}"
    if flat:
        lines += ["  br label %body", "body:", "  %k = phi i64 [0, %" + f"c{n_in}" + "], [%k.next, %body]"]
    else:
        lines += ["  br label %outer", "outer:", f"  %i = phi i64 [0, %c{n_in}], [%i.next, %outer.end]",
                  f"  %row = mul nuw nsw i64 %i, {cols}", "  br label %body", "body:",
                  "  %j = phi i64 [0, %outer], [%j.next, %body]", "  %k = add nuw nsw i64 %row, %j"]
    for k, (a, own) in enumerate(zip(loop.inputs, loop.shapes)):
        if not own:
            continue
        r, c = (1,) * (2 - len(own)) + own  # each 1 or the loop's own: it broadcasts to the shape
        where = "%k" if flat and math.prod(own) == size or r > 1 and c > 1 else (
            "0" if flat or r == c == 1 else "%i" if r > 1 else "%j")
        lines += [f"  %a{k}.e = getelementptr inbounds double, ptr %a{k}.d, i64 {where}",
                  f"  %v.in{k} = load double, ptr %a{k}.e, align 8, !llvm.access.group !1"]
        value[a] = f"%v.in{k}"
    for i in loop.members:
        node = nodes[i]
        operands = [value[a] if a in value else llvm_ir._hex(float(nodes[a].payload)) for a in node.args]
        operation = "fmul" if node.op == "matmul" else OPERATIONS[node.payload[1]]
        lines.append(f"  %v{i} = {operation} double {', '.join(operands)}")
        value[i] = f"%v{i}"
    for j, o in enumerate(loop.outputs):
        lines += [f"  %o{j}.e = getelementptr inbounds double, ptr %o{j}.d, i64 %k",
                  f"  store double {value[o]}, ptr %o{j}.e, align 8, !llvm.access.group !1"]
    if flat:
        lines += ["  %k.next = add nuw nsw i64 %k, 1", f"  %k.more = icmp slt i64 %k.next, {size}",
                  "  br i1 %k.more, label %body, label %done, !llvm.loop !0"]
    else:
        lines += ["  %j.next = add nuw nsw i64 %j, 1", f"  %j.more = icmp slt i64 %j.next, {cols}",
                  "  br i1 %j.more, label %body, label %outer.end, !llvm.loop !0", "outer.end:",
                  "  %i.next = add nuw nsw i64 %i, 1", f"  %i.more = icmp slt i64 %i.next, {rows}",
                  "  br i1 %i.more, label %outer, label %done"]
    lines += ["done:", "  %first = load ptr, ptr %args, align 8", *fastcall.new_reference("%first", "first"), "  ret ptr %first",
              "fail:", f"  %miss.p = getelementptr inbounds ptr, ptr %args, i64 {n_out + n_in}",
              "  %miss = load ptr, ptr %miss.p, align 8", *fastcall.new_reference("%miss", "miss"), "  ret ptr %miss",
              # called with another count of arguments (never by the code): no argument read, nothing run
              "wrong:", *fastcall.new_reference("%self", "self"), "  ret ptr %self", "}",
              # every access of an iteration touches its own element (an output is a new array, or an
              # input read at the same element first): no iteration depends on another, and the
              # vectoriser needs no checks of overlap
              '!0 = distinct !{!0, !2}', "!1 = distinct !{}", '!2 = !{!"llvm.loop.parallel_accesses", !1}', ""]
    return "\n".join(lines)


def _check(k: int, position: int, own: Shape, at: Any) -> list[str]:
    """Blocks ``c{k}``: input k (argument ``position``) read into ``%a{k}.d``, its numbers'
    address — an exact ndarray of float64 of shape ``own``, C-contiguous (a number: a ``float``,
    an ``np.float64`` or a 0-d array) — or a branch to ``%fail``."""
    def field_(name: str, kind: str, offset: int) -> str:
        return "\n".join(llvm_args.field(f"a{k}.{name}", kind, offset, f"%a{k}"))

    lines = [f"c{k}:", f"  %a{k}.p = getelementptr inbounds ptr, ptr %args, i64 {position}",
             f"  %a{k} = load ptr, ptr %a{k}.p, align 8", field_("type", "ptr", at.type_at),
             f"  %a{k}.is = icmp eq ptr %a{k}.type, %ndarray"]
    if not own:
        lines += [f"  br i1 %a{k}.is, label %c{k}.array, label %c{k}.number",
                  f"c{k}.number:", f"  %a{k}.float = icmp eq ptr %a{k}.type, %float",
                  f"  %a{k}.scalar = icmp eq ptr %a{k}.type, %scalar", f"  %a{k}.num = or i1 %a{k}.float, %a{k}.scalar",
                  f"  %a{k}.at = select i1 %a{k}.float, i64 {at.float_at}, i64 {at.scalar_at}",
                  f"  %a{k}.np = getelementptr inbounds i8, ptr %a{k}, i64 %a{k}.at",
                  f"  br i1 %a{k}.num, label %c{k}.done, label %fail",
                  f"c{k}.array:", field_("descr", "ptr", at.array("descr")), field_("nd", "i32", at.array("nd")),
                  f"  %a{k}.f = icmp eq ptr %a{k}.descr, %f64", f"  %a{k}.n = icmp eq i32 %a{k}.nd, 0",
                  f"  %a{k}.ok = and i1 %a{k}.f, %a{k}.n", field_("data", "ptr", at.data_at),
                  f"  br i1 %a{k}.ok, label %c{k}.done, label %fail",
                  f"c{k}.done:", f"  %a{k}.d = phi ptr [%a{k}.np, %c{k}.number], [%a{k}.data, %c{k}.array]",
                  f"  br label %c{k + 1}"]
        return lines
    lines += [f"  br i1 %a{k}.is, label %c{k}.array, label %fail", f"c{k}.array:",
              field_("descr", "ptr", at.array("descr")), field_("nd", "i32", at.array("nd")),
              f"  %a{k}.f = icmp eq ptr %a{k}.descr, %f64", f"  %a{k}.n = icmp eq i32 %a{k}.nd, {len(own)}",
              f"  %a{k}.ok = and i1 %a{k}.f, %a{k}.n", f"  br i1 %a{k}.ok, label %c{k}.axes, label %fail",
              f"c{k}.axes:", field_("dims", "ptr", at.array("dims")), field_("strides", "ptr", at.array("strides")),
              field_("data", "ptr", at.data_at), f"  %a{k}.d = getelementptr inbounds i8, ptr %a{k}.data, i64 0"]
    tests = []
    for d, n in enumerate(own):
        lines += [f"  %a{k}.dim{d}.p = getelementptr inbounds i64, ptr %a{k}.dims, i64 {d}",
                  f"  %a{k}.dim{d} = load i64, ptr %a{k}.dim{d}.p, align 8",
                  f"  %a{k}.is{d} = icmp eq i64 %a{k}.dim{d}, {n}"]
        tests.append(f"%a{k}.is{d}")
        if n > 1:  # (the stride of an axis of one is never used: NumPy's contiguity ignores it too)
            lines += [f"  %a{k}.st{d}.p = getelementptr inbounds i64, ptr %a{k}.strides, i64 {d}",
                      f"  %a{k}.st{d} = load i64, ptr %a{k}.st{d}.p, align 8",
                      f"  %a{k}.c{d} = icmp eq i64 %a{k}.st{d}, {8 * math.prod(own[d + 1:])}"]
            tests.append(f"%a{k}.c{d}")
    held = tests[0]
    for t, test in enumerate(tests[1:]):
        lines.append(f"  %a{k}.all{t} = and i1 {held}, {test}")
        held = f"%a{k}.all{t}"
    lines.append(f"  br i1 {held}, label %c{k + 1}, label %fail")
    return lines


def _builtin(ir: str) -> tuple[Callable[..., Any], fastcall.Code | None]:
    """The loop of ``ir`` as a builtin, and its machine code (which must outlive it) — or, where
    LLVM refuses the IR, a warning and a function that always answers ``MISS``."""
    try:
        return fastcall.builtin(ir, "loop")
    except Exception as error:  # LLVM refusing a loop must not lose the values
        from .lambdify import BackendWarning

        warnings.warn(f"an elementwise chain of an array program did not compile ({type(error).__name__}: {error}); "
                      "it runs as NumPy passes", BackendWarning, stacklevel=3)
        return (lambda *values: values[-1]), None


__all__ = ["MISS", "Loop", "OPERATIONS", "available", "loops"]
