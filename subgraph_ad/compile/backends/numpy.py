"""The NumPy backend: the program as ufunc calls over blocks of points, and as plain scalar code.

Over arrays, each intermediate lives in a register (a preallocated block-sized buffer) reused as
soon as its value is dead, and every ufunc writes with ``out=``: no allocation per node, and a
block's working set stays in cache. NumPy releases the GIL inside a ufunc, so threads running
different blocks scale. A single point runs a straight-line Python function instead, where
ufunc dispatch would cost more than the arithmetic.

Every op and function is one ``Lowering`` of ``LOWERING``, for all three kinds of code (Python
floats, NumPy scalars, blocks). A function lowers through its spelling: its elementaries' ufuncs
are applied in turn into the register (the first on its operands, one or two); without a
spelling its ``f`` is called and the result copied in. A power is the C library's ``pow``
(``float_power``), as in every backend.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from ...tables import rule_table
from ...functions.elementary import steps
from ..cache import CACHE_MIN_STEPS
from ..program import (CHUNK, Lowering, Operand, Program, Step, allocate, callee, chunks, define, literal, namespace,
                       read_counts, scalar_call)

NAME = "NumPy"
#: The options of ``lambdify`` this backend takes.
OPTIONS = ("chunk", "cache")


@dataclass
class _Writer:
    """What a statement is written for: the namespace of the generated code, Python floats
    (``python``: operators and ``math``) or NumPy scalars, or a block register (``out``) that a
    ufunc writes with ``out=``; and whether the code so far is Python floats only (``pure``)."""

    names: dict[str, Any]
    python: bool = False
    out: str | None = None
    pure: bool = True


def _operator(symbol: str, ufunc: str) -> Lowering[_Writer]:
    """An arithmetic op: the operator on numbers, its ufunc into a block's register."""
    def lower(w: _Writer, a: list[str], step: Step) -> str:
        if w.out is not None:
            return f"_np.{ufunc}({', '.join(a)}, out={w.out})"
        return f"{symbol}{a[0]}" if len(a) == 1 else f"{a[0]} {symbol} {a[1]}"

    return lower


def _pow(w: _Writer, a: list[str], step: Step) -> str:
    """The C library's pow (what ``build_program`` leaves as a power): ``math.pow`` on Python
    floats, NumPy's ``float_power`` (its loop over ``pow``; its ``power`` calls SVML's on AVX-512)."""
    if w.python:
        return f"_math.pow({a[0]}, {a[1]})"
    return f"_np.float_power({a[0]}, {a[1]}{'' if w.out is None else f', out={w.out}'})"


def _function(w: _Writer, a: list[str], step: Step) -> str:
    """A function by its spelling: its elementaries' ufuncs in turn into the register, or on
    Python floats its ``scalar`` steps; with no spelling (or on NumPy scalars) its ``f``."""
    dest, _, _, fn = step
    assert fn is not None  # a "fn" step carries its function
    key = f"_fn{dest}"
    if fn.spelling and w.out is not None:
        return "\n".join(_in_place(fn, a, w.out, w.names, key))
    if fn.spelling and w.python:
        text, pure = scalar_call(fn, a, w.names, key)
        w.pure = w.pure and pure
        return text
    if w.python:  # f as on the IEEE path: on NumPy scalars
        w.pure = False
        a = [f"_np.float64({x})" for x in a]
    call = f"{callee(fn.f, w.names, key)}{', '.join(a)})"
    return call if w.out is None else f"_np.copyto({w.out}, {call})"


LOWERING: dict[str, Lowering[_Writer]] = {
    "add": _operator("+", "add"),
    "sub": _operator("-", "subtract"),
    "mul": _operator("*", "multiply"),
    "div": _operator("/", "divide"),
    "pow": _pow,
    "neg": _operator("-", "negative"),
    "fn": _function,
}
rule_table("NumPy LOWERING", LOWERING)


#: The deepest a one-point statement nests the values it computes in place (``scalar_source``):
#: far below the parser's limit of 200 nested parentheses.
NESTING = 24


def scalar_source(program: Program, python: bool = False) -> tuple[str, dict[str, Any], bool]:
    """``_f(v0, ...)`` returning the tuple of outputs.

    By default one assignment per node, each to a name of its own (``t<node>``), and every
    function is its own ``f`` on NumPy scalars: IEEE results everywhere. ``python=True`` writes
    the fast path for Python floats: operators, ``math.pow`` (the C library's, as every
    backend's power; ``program.POWERS`` are already other ops) and each function's spelling on floats (the elementaries' ``scalar``:
    ``math`` functions, which raise (ZeroDivisionError, ValueError, OverflowError) exactly where
    the IEEE result is not a finite real of the same operation, so a caller reruns such a point
    on the default path); a function with no spelling gets its ``f`` on NumPy scalars, as on
    the default path. There, a value read once (not an output) is written into the expression
    that reads it (up to ``NESTING`` deep: ``t9 = t7 + (v0 * v3)``), and names are reused: one
    is free again once every statement that reads its value has run (that very statement may
    write it), the last freed is taken first, and a new one is named after the first node it
    holds. A dead value's float is freed at once and the working set stays in cache: a
    127k-step gradient's point runs 2.5× faster than with one statement and name per node.
    Also returns whether that code is pure Python floats (``math`` and operators only), which
    cannot warn."""
    w = _Writer(namespace(), python)
    inputs = [f"v{k}" for k in range(program.n_inputs)]
    reads = read_counts(program, output=2) if python else {}  # an output's name is kept to the end
    where: dict[int, str] = {}
    held: dict[int, tuple[str, list[int], int]] = {}  # a value not yet written: its text, the values it reads, depth
    free: list[str] = []

    def ref(r: Operand) -> str:
        kind, v = r
        if kind == "t":
            return where[v] if python else f"t{v}"
        return inputs[v] if kind == "in" else literal(v)

    lines = [f"def _f({', '.join(inputs)}):"]
    for step in program.steps:
        dest, op, args, _ = step
        read: list[int] = []  # the named values this statement reads, once per read
        depth = 0
        a = []
        for r in args:
            kind, v = r
            if kind != "t":
                a.append(inputs[v] if kind == "in" else literal(v))
            elif v in held:
                text, inner, d = held.pop(v)
                a.append(f"({text})")
                read += inner
                if d > depth:
                    depth = d
            else:
                a.append(ref(r))
                read.append(v)
        text = LOWERING[op](w, a, step)
        if not python:
            lines.append(f"    t{dest} = {text}")
            continue
        if reads.get(dest) == 1 and depth < NESTING:
            held[dest] = (text, read, depth + 1)
            continue
        for v in read:
            reads[v] -= 1
            if not reads[v]:
                free.append(where[v])
        name = where[dest] = free.pop() if free else f"t{dest}"
        lines.append(f"    {name} = {text}")
        if dest not in reads:  # never read: free after this statement
            free.append(name)
    lines.append(f"    return ({', '.join(ref(r) for r in program.outputs)},)")
    return "\n".join(lines) + "\n", w.names, w.pure


def block_source(program: Program, scalars: tuple[bool, ...] = (), chunk: int = CHUNK) -> tuple[str, dict[str, Any], int]:
    """``_f(v0, ..., _O, _n, _B, _R)``: the program over the ``_n`` points in blocks of ``_B``,
    temporaries in registers ``_R[k]`` (block-sized buffers), outputs written into ``_O[k]``.
    The inputs flagged in ``scalars`` are one number for every point.

    The statements are cut into functions of ``chunk`` steps each (``_c0``, ``_c1``, ...), which
    ``_f`` calls in turn on every block: Python compiles many small functions faster than one
    huge one, and a chunk costs one call per block, not per statement. The registers are the
    chunks' scratch: a value read by a later chunk stays in its register. Where each value lives
    is ``allocate``'s: output nodes and their single-use chains in the output block, other
    temporaries in reused registers. Inputs are never written. Returns the source, its
    namespace and the number of registers.
    """
    location, count = allocate(program)
    where = {v: f"{kind}{j}" for v, (kind, j) in location.items()}
    w = _Writer(namespace())

    def scalar(k: int) -> bool:
        return k < len(scalars) and scalars[k]

    def ref(r: Operand) -> str:
        kind, v = r
        if kind == "in":
            return f"v{v}" if scalar(v) else f"b{v}"
        return literal(v) if kind == "c" else where[v]

    parts: list[tuple[list[str], set[str]]] = []  # each chunk's statements and the names they use
    for a, b in chunks(program, chunk).bounds:
        body: list[str] = []
        used: set[str] = set()
        parts.append((body, used))
        for step in program.steps[a:b]:
            dest, op, args, _ = step
            x = [ref(y) for y in args]
            w.out = where[dest]
            used.update(x + [w.out])
            body += LOWERING[op](w, x, step).split("\n")
    for k, output in enumerate(program.outputs):  # inputs, constants, a node listed twice
        if ref(output) != f"o{k}":
            parts[-1][0].append(f"o{k}[...] = {ref(output)}")
            parts[-1][1].update((f"o{k}", ref(output)))
    lines: list[str] = []
    for c, (body, used) in enumerate(parts):
        lines.append(f"def _c{c}(_I, _O, _R):")
        names_used = sorted((u for u in used if u[0] in _GROUP and u[1:].isdigit()), key=lambda u: (u[0], int(u[1:])))
        lines += [f"    {u} = {_GROUP[u[0]]}[{u[1:]}]" for u in names_used]
        lines += [f"    {line}" for line in body] or ["    pass"]
    ins = [f"v{k}" for k in range(program.n_inputs)]
    lines += [f"def _f({', '.join(ins + ['_O', '_n', '_B', '_R'])}):",
              "    for _a in range(0, _n, _B):", "        _b = _a + _B",
              "        if _b > _n:  # the last, shorter block", "            _b = _n",
              "            _R = [r[:_b - _a] for r in _R]",
              "        _I = (" + "".join(f"v{k}, " if scalar(k) else f"v{k}[_a:_b], " for k in range(program.n_inputs)) + ")",
              "        _Ob = [o[_a:_b] for o in _O]"]
    lines += [f"        _c{c}(_I, _Ob, _R)" for c in range(len(parts))]
    return "\n".join(lines) + "\n", w.names, count


#: Where a chunk finds each name it uses (constants are literals): inputs (numbers ``v``,
#: blocks ``b``), outputs, registers.
_GROUP = {"v": "_I", "b": "_I", "o": "_O", "r": "_R"}


def _ufunc(u: Any) -> bool:
    """Whether ``u`` takes ``out=``: a ufunc, or a ``partial`` of one over constants."""
    return isinstance(u, np.ufunc) or (isinstance(u, functools.partial) and isinstance(u.func, np.ufunc))


def _in_place(fn: Any, a: list[str], r: str, names: dict[str, Any], key: str) -> list[str]:
    """A function's spelling as NumPy statements into the register ``r``: each elementary's
    ufuncs applied in turn with ``out=r`` (the first on the operands, the rest on ``r``), a
    plain array function's result copied in."""
    lines, operands = [], ", ".join(a)
    for s, step in enumerate(steps(fn.spelling)):
        for j, u in enumerate(step.numpy):
            call = callee(u, names, f"{key}_{s}_{j}")
            lines.append(f"{call}{operands}, out={r})" if _ufunc(u) else f"_np.copyto({r}, {call}{operands}))")
            operands = r
    return lines


@dataclass(frozen=True)
class Blocks:
    """A compiled block program, the number of registers it needs, and its source."""

    run: Callable[..., None]
    registers: int
    source: str


def kernel(program: Program, scalars: tuple[bool, ...], chunk: int = CHUNK, cache: bool = True) -> Blocks:
    """The block program for this pattern of numbers (``scalars``) and arrays among the inputs,
    in functions of ``chunk`` steps; its code object from the persistent cache when ``cache``
    (programs of ``CACHE_MIN_STEPS`` or more)."""
    source, names, registers = block_source(program, scalars, chunk)
    cached = cache and len(program.steps) >= CACHE_MIN_STEPS
    return Blocks(define(source, names, "block", cached), registers, source)


def worker(blocks: Blocks, step: int) -> Callable[[Sequence[Any], Sequence[np.ndarray]], None]:
    """One thread's runner, with its own registers of ``step`` points; call it on slices of at
    most ``step`` points."""
    own = [np.empty(step) for _ in range(blocks.registers)]

    def run(ins: Sequence[Any], outs: Sequence[np.ndarray]) -> None:
        blocks.run(*ins, outs, outs[0].shape[0], step, own)

    return run
