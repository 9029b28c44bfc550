"""Chains of elementwise nodes of an array program run as one loop: the Numba backend's kernel
of the scalar program the chain is at each element.

NumPy makes one pass over memory per node: a tanh layer's Laplacian writes tanh(z), 1/cosh(z),
its square and four products as seven arrays of the batch, each read back by the next. A
*group* — elementwise nodes whose array operands all have the group's shape (no broadcasting
but by numbers) — is one scalar ``Program`` (its external operands in, the members read outside
it out), compiled by the Numba backend as for ``lambdify`` (SIMD loops, glibc's vector ``tanh``,
``cosh``…): one pass that reads the inputs and writes the outputs. The code runs a group's
kernel where its inputs have one shape of at least ``SMALLEST`` numbers (``Group.fits``), and
the members' NumPy code otherwise (small arrays, where a call's own cost outweighs the passes
saved, batches whose axes broadcast, a kernel LLVM refused); without Numba there are no groups.
The kernel's functions are glibc's vector ones, 3 ulp at most as NumPy's own SIMD functions:
values agree with NumPy's code to that, not bit for bit.
"""

from __future__ import annotations

import importlib.util
import math
import threading
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from ..core import OPS, Tape
from ..core.arrays import Shape, shape_of
from ..functions.base import Function
from .array_fusion import Fused
from .array_reuse import float_valued
from .program import POWERS, Operand, Program, Step

#: Numbers in a group's inputs below which its NumPy code runs (a kernel call costs ~10 µs of
#: Python; a NumPy pass over 16,384 doubles ~5 µs).
SMALLEST = 1 << 14
#: The fewest members worth a kernel (a single node is one NumPy pass either way).
FEWEST = 3
#: How far past its first member (in nodes written) a group looks for more.
WINDOW = 64
#: Operands named before the code runs (``array_code`` writes them first), wherever they stand.
FIXED = frozenset({"const", "table"})
#: The arithmetic a group's members may be (an array node's elementwise op by name).
ARITHMETIC = frozenset({"add", "sub", "mul", "div", "neg", "pow"})


@dataclass(frozen=True)
class Group:
    """Elementwise nodes run as one kernel: ``members`` in order, the values they read from
    outside (``inputs``: arrays of the group's shape, or numbers) and the members read outside
    it or returned (``outputs``)."""

    members: tuple[int, ...]
    anchor: int  #: the member where the group runs: every input is made before it
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    program: Program
    _kernel: list[Any] = field(default_factory=list, compare=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, compare=False)

    def fused(self) -> Fused:
        """The group as ``array_fusion`` writes a fused node: the anchor reads the inputs and
        writes every member (``array_reuse`` then knows when each input dies)."""
        return fused_at(self.members, self.anchor, self.inputs)

    def fits(self, *values: Any) -> bool:
        """Whether the kernel takes these inputs: arrays of one shape (numbers aside), of at
        least ``SMALLEST`` numbers — and the kernel compiled (on the first such call; where it
        does not, a warning, and the members' NumPy code from then on)."""
        shape = None
        for v in values:
            if type(v) is np.ndarray and v.ndim:
                if shape is None:
                    shape = v.shape
                elif v.shape != shape:
                    return False
        if shape is None or math.prod(shape) < SMALLEST:
            return False
        if not self._kernel:
            with self._lock:
                if not self._kernel:
                    self._kernel.append(self._compiled())
        return self._kernel[0] is not None

    def _compiled(self) -> Any:
        from .backends import numba as backend
        from .lambdify import BackendWarning

        try:
            return backend.kernel(self.program, (), cache=True)
        except Exception as error:  # LLVM refusing a kernel must not lose the values
            warnings.warn(f"an elementwise chain of an array program did not compile for Numba ({type(error).__name__}: "
                          f"{error}); it runs as NumPy passes", BackendWarning, stacklevel=3)
            return None

    def __call__(self, *values: np.ndarray) -> tuple[np.ndarray, ...]:
        """The outputs at inputs that ``fits`` took, each a new array."""
        from .backends import numba as backend

        shape = next(v.shape for v in values if np.ndim(v))
        flat = [np.ascontiguousarray(v).reshape(-1) if np.ndim(v) else np.float64(v) for v in values]
        outs = [np.empty(shape) for _ in self.outputs]
        backend.slices(self._kernel[0], flat, [o.reshape(-1) for o in outs])()(0, outs[0].size)
        return tuple(outs)


def fused_at(members: Sequence[int], anchor: int, inputs: tuple[int, ...]) -> Fused:
    """A chain as ``array_fusion`` writes a fused node: the anchor reads the inputs and writes
    every member (``array_reuse`` then knows when each input dies)."""
    return Fused(absorbed=tuple(m for m in members if m != anchor), reads=inputs)


def available() -> bool:
    """Whether the Numba backend can compile here (Numba and a recent llvmlite)."""
    if importlib.util.find_spec("numba") is None:
        return False
    from .backends import numba as backend

    try:
        backend._target()
    except ImportError:
        return False
    return True


def _member(tape: Tape, i: int, shape: tuple[int, ...], batched: dict[int, bool], native: Any, chain: Any) -> bool:
    """Whether node i can be a member of a group of this shape: an elementwise op the kernel
    writes natively (a float-valued chain of built-in ufuncs), each operand an array of the
    shape with the node's batch axes, or a number."""
    node = tape.nodes[i]
    if node.op != "map" or node.payload[0] != shape or not shape:
        return False
    p = node.payload[1]
    if isinstance(p, str):
        if p not in ARITHMETIC:
            return False
        if p == "pow":  # a constant power NumPy computes otherwise (``program.POWERS``), else not at all
            exponent = tape.nodes[node.args[1]]
            if exponent.op != "const" or float(exponent.payload) not in POWERS:
                return False
    elif not (isinstance(p, Function) and native(p) and (found := chain(p)) is not None and float_valued(found)):
        return False
    for a in node.args:
        own = shape_of(tape, a)
        if own == ():
            if batched.get(a, False):  # a number per point: broadcast against the arrays
                return False
        elif own != shape or batched.get(a, False) != batched.get(i, False):
            return False
    return True


def groups(tape: Tape, order: Sequence[int], outputs: Sequence[int], fused: dict[int, Fused],
           batched: dict[int, bool], native: Any, chain: Any, point: bool = False) -> dict[int, Group]:
    """The groups of a program (``order``: its nodes as written), by their anchor (``grown``);
    at least ``FEWEST`` members each; in code for one ``point``, none of fewer than ``SMALLEST``
    numbers (a batch's size is known when it runs: ``fits``)."""

    def member(i: int, shape: Shape) -> bool:
        return not (point and math.prod(shape) < SMALLEST) and _member(tape, i, shape, batched, native, chain)

    return {anchor: Group(members, anchor, inputs, outs, _program(tape, members, inputs, outs))
            for members, anchor, inputs, outs in grown(tape, order, outputs, fused, member, lambda m, _: len(m) >= FEWEST)}


def grown(tape: Tape, order: Sequence[int], outputs: Sequence[int], fused: dict[int, Fused],
          member: Callable[[int, Shape], bool], enough: Callable[[list[int], tuple[int, ...]], bool]
          ) -> list[tuple[tuple[int, ...], int, tuple[int, ...], tuple[int, ...]]]:
    """Chains of elementwise nodes that may run as one loop: (members, anchor, inputs, outputs)
    each, grown from each free node that is a ``member`` of its own shape forward, a node joining
    where it is a member of that shape and its operands are members, constants, or values made
    before the chain runs — which may move later (the anchor), past nodes that read no member;
    kept where some member is read outside it or returned and ``enough`` (of the members and
    those outputs). A node of ``fused`` (or absorbed by one) is no member, and runs, reading its
    operands, where the node that absorbs it runs."""
    nodes = tape.nodes
    taken = {a for f in fused.values() for a in f.absorbed} | set(fused)
    position = {i: k for k, i in enumerate(order)}
    position.update({a: position[anchor] for anchor, f in fused.items() for a in f.absorbed})  # made, and read, there
    readers: dict[int, list[int]] = {}
    for i in order:
        for a in dict.fromkeys(nodes[i].args):
            readers.setdefault(a, []).append(position[i])
    kept = set(outputs)
    found = []
    used: set[int] = set()
    for start, first in enumerate(order):
        if first in used or first in taken:
            continue
        shape = shape_of(tape, first)
        if not member(first, shape):
            continue
        members, inside, runs = [first], {first}, start
        for k in range(start + 1, min(len(order), start + WINDOW)):
            i = order[k]
            if i in used or i in taken or not member(i, shape):
                continue
            ready = all(a in inside or nodes[a].op in FIXED or position[a] < runs for a in nodes[i].args)
            if not ready and all(a in inside or nodes[a].op in FIXED or position[a] < k for a in nodes[i].args) and not any(
                    runs < r < k and order[r] not in inside and order[r] != i for m in members for r in readers.get(m, ())):
                ready, runs = True, k  # the chain runs at i now: no other node reads a member before it
            if ready:
                members.append(i)
                inside.add(i)
        outs = tuple(m for m in members if m in kept or any(order[r] not in inside for r in readers.get(m, ())))
        if not outs or not enough(members, outs):
            continue
        inputs = tuple(dict.fromkeys(a for i in members for a in nodes[i].args
                                     if a not in inside and nodes[a].op != "const"))
        found.append((tuple(members), order[runs], inputs, outs))
        used.update(members)
    return found


def _program(tape: Tape, members: Sequence[int], inputs: Sequence[int], outputs: Sequence[int]) -> Program:
    """The scalar program of a group at one element: input k is ``inputs[k]``."""
    nodes = tape.nodes
    refs: dict[int, Operand] = {a: ("in", k) for k, a in enumerate(inputs)}
    steps: list[Step] = []
    for i in members:
        node = nodes[i]
        operands = tuple(refs.get(a) or ("c", float(nodes[a].payload)) for a in node.args)
        p = node.payload[1]
        if p == "pow":
            steps.append((i, *POWERS[float(operands[1][1])](operands[0])))
        elif isinstance(p, str):
            steps.append((i, p, operands, None))
        else:
            steps.append((i, "fn", operands, p))
        refs[i] = ("t", i)
    assert all(op in OPS or op == "fn" for _, op, _, _ in steps)
    return Program(len(inputs), tuple(steps), tuple(refs[o] for o in outputs))


__all__ = ["FEWEST", "SMALLEST", "Group", "available", "fused_at", "groups", "grown"]
