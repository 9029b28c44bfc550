"""The straight-line program every backend lowers, and the analyses they share.

``build_program`` lays out once, in tape order, the nodes some outputs need: one
``(dest, op, operands, fn)`` step per node, lowered once for every backend (``POWERS``: a power
by a constant that NumPy computes without ``pow`` is written as the op NumPy uses). A backend is
then a lowering of each step to its own statements, one ``Lowering`` per op in its ``LOWERING``
table; what does not depend on the target (which value is read last where, which values can
share a buffer, how a constant or a NumPy/math function is spelled in generated code) lives
here, so a new backend is one module over this program and one entry in ``registry.BACKENDS``.
"""

from __future__ import annotations

import functools
import heapq
import importlib.util
import marshal
import math
import sys
import types
from dataclasses import dataclass
from typing import Any, Callable, Sequence, TypeVar

import numpy as np

from ..core import Tape, Term, dependencies
from ..functions import Function, UnaryFn, sqrt
from ..functions.elementary import steps
from .cache import cache_key, cache_load, cache_store
from .order import demand_order, most_live, operand_reads

#: An operand: ``("in", k)`` the k-th input, ``("c", value)`` a constant, ``("t", node)`` a temporary.
Operand = tuple[str, Any]
#: One statement: the node it defines, its op, its operands and, for ``"fn"``, the function
#: (a UnaryFn or a BinaryFn: one operand per argument, in order).
Step = tuple[int, str, tuple[Operand, ...], Function | None]

#: What a backend writes into: an IR emitter, the namespace of generated code, a C type.
C = TypeVar("C")
#: How a backend writes one step: from its context, the step's operands as it names them and the
#: step itself, the step's value as it names it (an expression, an IR value, or for a backend
#: that writes into buffers, the statements). A backend's ``LOWERING`` has one for every op and
#: ``"fn"``, all of this one signature.
Lowering = Callable[[C, list[str], Step], str]

#: The arithmetic ops as infix expressions, the same text in every context: the rows of the
#: backends whose code writes them so (C and CUDA, JAX).
INFIX: dict[str, Lowering[Any]] = {
    "add": lambda context, a, step: f"{a[0]} + {a[1]}",
    "sub": lambda context, a, step: f"{a[0]} - {a[1]}",
    "mul": lambda context, a, step: f"{a[0]} * {a[1]}",
    "div": lambda context, a, step: f"{a[0]} / {a[1]}",
    "neg": lambda context, a, step: f"-{a[0]}",
}

#: Powers by a constant that NumPy computes without ``pow`` (``x ** k`` on an array calls
#: ``square`` for 2, ``reciprocal`` for -1 and ``sqrt`` for 0.5, and its power loop does the same
#: for a scalar exponent of 2 or 0.5), as the op every backend writes instead: the base -> the
#: step's op, operands and function. Every other power is the C library's ``pow`` in every backend
#: (NumPy's scalars and ``float_power``, Python's ``math.pow``, C, Numba, XLA on the CPU), not
#: NumPy's AVX-512 array loop, which calls SVML's ``pow`` (1 ulp from it at ~5 % of points).
#: The tape folds x ** 1 and x ** 0 before they get here.
POWERS: dict[float, Callable[[Operand], tuple[str, tuple[Operand, ...], Function | None]]] = {
    2.0: lambda x: ("mul", (x, x), None),
    -1.0: lambda x: ("div", (("c", 1.0), x), None),
    0.5: lambda x: ("fn", (x,), sqrt),
}


@dataclass(frozen=True)
class Program:
    """The straight-line program: one (dest, op, operands, fn) per node, operands first (in tape
    order or output by output: ``build_program``).

    Operands are ``("in", k)`` inputs, ``("c", value)`` constants and ``("t", node)`` temporaries;
    it holds no tape, so it pickles alone.
    """

    n_inputs: int
    steps: tuple[Step, ...]
    outputs: tuple[Operand, ...]


def _negative_of(tape: Tape, args: tuple[int, ...], fn: Function) -> int | None:
    """For f(u) with f = −g (−sin, a derivative of cos), the node g(u) where the tape has it."""
    g = fn.negative_of if isinstance(fn, UnaryFn) else None
    return None if g is None else tape.find("fn", args, g)


def _twins(tape: Tape, needed: Sequence[int]) -> dict[int, int]:
    """Node −g(u) -> the node g(u), for each such pair among the nodes needed (``_negative_of``)."""
    nodes, inside = tape.nodes, set(needed)
    twins = {}
    for i in needed:
        node = nodes[i]
        if node.op == "fn":
            same = _negative_of(tape, node.args, node.payload)
            if same is not None and same in inside:
                twins[i] = same
    return twins


def build_program(tape: Tape, inputs: Sequence[Term], outputs: Sequence[Term]) -> Program:
    """Lay out the nodes the outputs need (iterative), powers lowered (``POWERS``) and −g(u)
    computed as the negation of g(u) where the program computes g(u) before it; in tape order,
    or output by output (``order.demand_order``) where that keeps fewer values live (``order.most_live``): a
    gradient or a Hessian-vector product read from a sweep over the whole tape holds every
    partial result until its output, where output by output each lives a few steps (R100's
    HVP: 104 scratch columns instead of 323, twice as fast on the Numba backend), while a
    dense Hessian's entries share so much that tape order keeps fewer (M's: 409 live against
    3,754)."""
    roots = [t.index for t in outputs]
    needed = dependencies(tape, roots)
    twins = _twins(tape, needed)
    demand = demand_order(tape, needed, roots, twins)
    reads = operand_reads(tape, needed)
    order = demand if most_live(reads, demand) < most_live(reads, needed) else needed
    return _laid_out(tape, inputs, outputs, order, twins)


def _laid_out(tape: Tape, inputs: Sequence[Term], outputs: Sequence[Term], order: Sequence[int],
              twins: dict[int, int]) -> Program:
    """The program of the nodes in ``order`` (operands before the nodes that read them)."""
    input_index = {v.index: k for k, v in enumerate(inputs)}
    refs: dict[int, Operand] = {}
    steps: list[Step] = []
    nodes = tape.nodes
    for i in order:
        op, args, payload, _ = nodes[i]  # unpacked: a NamedTuple's fields by name cost a call each
        if op == "var":
            if i not in input_index:
                raise ValueError(
                    f"an output depends on var {payload!r}, which is not among the inputs "
                    f"{[nodes[v].payload for v in input_index]}"
                )
            refs[i] = ("in", input_index[i])
        elif op == "const":
            refs[i] = ("c", float(payload))
        else:
            operands = tuple([refs[a] for a in args])
            same = twins.get(i)
            if same is not None and refs.get(same, ("c",))[0] == "t":  # −sin(u) beside sin(u): −(sin u)
                steps.append((i, "neg", (refs[same],), None))
            elif op == "pow" and operands[1][0] == "c" and operands[1][1] in POWERS:
                steps.append((i, *POWERS[operands[1][1]](operands[0])))
            else:
                steps.append((i, op, operands, payload if op == "fn" else None))
            refs[i] = ("t", i)
    return Program(len(inputs), tuple(steps), tuple(refs[t.index] for t in outputs))


# -- generated code: its starting names, constants, calls, loading --------------------------------
def namespace() -> dict[str, Any]:
    """The globals every generated function starts from: the names ``literal`` and ``callee`` use."""
    return {"_np": np, "_math": math, "_nan": np.nan, "_inf": np.inf}


def literal(value: float) -> str:
    """A constant as source text; nan and inf have no literal, so they are names."""
    if value != value:
        return "_nan"
    if value in (float("inf"), float("-inf")):
        return "_inf" if value > 0 else "(-_inf)"
    return repr(value)


def callee(value: Callable[..., Any], names: dict[str, Any], key: str) -> str:
    """The text that opens a call of ``value``, to be followed by its last arguments and ``)``.

    A NumPy or ``math`` function is spelled by its module name (``_np.exp(``), a ``partial`` of one
    over constants with them written out (``_np.logaddexp(0.0, ``): readable code with no Python
    call in between, and Numba can type it. Anything else is stored in ``names`` under ``key``.
    """
    for prefix, module in (("_np", np), ("_math", math)):
        if vars(module).get(getattr(value, "__name__", "")) is value:
            return f"{prefix}.{value.__name__}("
    if (isinstance(value, functools.partial) and not value.keywords
            and all(isinstance(a, (int, float)) for a in value.args)):
        inner = callee(value.func, names, key)
        return inner + "".join(f"{literal(float(a))}, " for a in value.args)
    names[key] = value
    return f"{key}("


def scalar_call(fn: Function, operands: Sequence[str], names: dict[str, Any], key: str,
                jit: Callable[[Any], Any] | None = None) -> tuple[str, bool]:
    """``fn`` applied to the operand texts as code on floats, from its spelling: each step's
    ``scalar`` (an expression template, or a ``math``/NumPy/Python function, passed through
    ``jit`` when given: Numba compiles a plain Python function), or, with no spelling, ``fn.f``
    (None when that cannot be spelled). Also whether it uses only ``math`` and operators."""
    chain = steps(fn.spelling)
    if not chain:
        raise LookupError(f"{fn.kind} {fn.name!r} has no spelling")
    text, pure = ", ".join(operands), True
    for s, step in enumerate(chain):
        value = step.scalar
        if isinstance(value, str):
            text = value.format(*([text] if s else operands))
            continue
        pure = pure and vars(math).get(getattr(value, "__name__", "")) is value
        if jit is not None and not _library(value):
            value = jit(value)
        text = callee(value, names, f"{key}_{s}") + f"{text})"
    return text, pure


def _library(value: Any) -> bool:
    """A NumPy or ``math`` function (Numba types these as they are)."""
    name = getattr(value, "__name__", "")
    return vars(np).get(name) is value or vars(math).get(name) is value


def define(source: str, names: dict[str, Any], label: str, cache: bool = False) -> Callable[..., Any]:
    """Run generated source (our own code, never user text) and return the ``_f`` it defines.

    With ``cache``, the compiled code object is kept in the persistent cache (``compile.cache``:
    ``marshal`` data keyed by the source and the Python version): a new process skips Python's
    compiler, about 15 µs a line. The names it calls are looked up in ``names`` at run time, so the cached code runs
    this process's functions.
    """
    filename = f"<subgraph_ad.lambdify:{label}>"
    key = cache_key(f"python {sys.version} {importlib.util.MAGIC_NUMBER!r} {filename}", source)
    code = None
    data = cache_load("python", key) if cache else None
    if data is not None:
        try:
            code = marshal.loads(data)
        except (EOFError, ValueError, TypeError):
            code = None
    if not isinstance(code, types.CodeType):
        code = compile(source, filename, "exec")
        if cache:
            cache_store("python", key, marshal.dumps(code))
    exec(code, names)
    f: Callable[..., Any] = names["_f"]  # the generated source defines _f as a function
    return f


# -- analyses --------------------------------------------------------------------------------------
def last_use(program: Program) -> dict[int, int]:
    """Temporary -> index of the last step that reads it; an output is read after every step
    (``len(program.steps)``). A temporary missing here is never read."""
    last: dict[int, int] = {}
    for s, (_, _, args, _) in enumerate(program.steps):
        for kind, v in args:
            if kind == "t":
                last[v] = s
    for kind, v in program.outputs:
        if kind == "t":
            last[v] = len(program.steps)
    return last


def read_counts(program: Program, output: int = 1) -> dict[int, int]:
    """Temporary -> how many times it is read: once per step operand, ``output`` times per output
    (a count above what the steps can use up keeps an output's value alive to the end). A
    temporary missing here is never read."""
    reads: dict[int, int] = {}
    for _, _, args, _ in program.steps:
        for kind, v in args:
            if kind == "t":
                reads[v] = reads.get(v, 0) + 1
    for kind, v in program.outputs:
        if kind == "t":
            reads[v] = reads.get(v, 0) + output
    return reads


def _output_chains(program: Program) -> dict[int, int]:
    """Node -> the output k whose buffer it can be computed in: each output node, and walking
    back from it, one operand that is a temporary read only by that step. Such a value dies
    exactly where the next one of its chain is written over it (elementwise operations), so
    a chain needs no register and its values never leave the output buffer."""
    reads = read_counts(program)
    step_of = {dest: args for dest, _, args, _ in program.steps}
    chain: dict[int, int] = {}
    for k, (kind, v) in enumerate(program.outputs):
        if kind != "t" or v in chain:
            continue
        chain[v] = k
        while True:
            links = [a for kind, a in step_of[v] if kind == "t" and reads[a] == 1 and a not in chain]
            if not links:
                break
            v = links[0]
            chain[v] = k
    return chain


def allocate(program: Program) -> tuple[dict[int, tuple[str, int]], int]:
    """Where each temporary lives, for a backend that writes every step into a buffer: node ->
    ``("o", k)`` (output k's buffer, ``_output_chains``) or ``("r", j)`` (register j), and the
    number of registers.

    A register is freed after the step that reads its value last, and that very step may write
    over it (elementwise operations); a new value takes the lowest free register, so the working
    set stays small and the code is deterministic. A value never read is freed at once.
    """
    last = last_use(program)
    location: dict[int, tuple[str, int]] = {v: ("o", k) for v, k in _output_chains(program).items()}
    free: list[int] = []  # a heap, with ``freed`` for membership: O(log n) a step
    freed: set[int] = set()

    def release(register: int) -> None:
        if register not in freed:
            freed.add(register)
            heapq.heappush(free, register)

    count = 0
    for s, (dest, _, args, _) in enumerate(program.steps):
        for kind, v in args:  # operands dying here may be overwritten by this very step
            if kind == "t" and last[v] == s and location[v][0] == "r":
                release(location[v][1])
        if dest not in location:
            if free:
                register = heapq.heappop(free)
                freed.discard(register)
            else:
                register, count = count, count + 1
            location[dest] = ("r", register)
            if dest not in last:  # never read: free after this statement
                release(register)
    return location, count



# -- chunks ----------------------------------------------------------------------------------------
#: Steps per chunk: the unit a backend compiles on its own, so that compiling is linear in the
#: program's size (a compiler's cost per function grows faster than its length; Numba's did
#: from a few hundred steps on) and a chunk's working set stays in registers and cache. LLVM's
#: time per chunk grows with the values live across it: R1000's Hessian-vector product (13,985
#: steps, 2,000 inputs) took 1.7 CPU-s at 250 steps a chunk, 7.1 at 500 and 107 s at 1,000, while
#: a tanh network's Laplacian evaluates within 11% of its 1,000-step chunks' speed.
CHUNK = 250


@dataclass(frozen=True)
class Chunks:
    """A program cut into chunks of consecutive steps that pass values on through scratch columns.

    A chunk reads its operands from the inputs, constants, its own steps, or the column where
    an earlier chunk stored them; it stores each value it defines that a later chunk reads. A column is reused once the last chunk that reads its value is done, so the
    scratch holds what is live across chunk boundaries, not every value.
    """

    bounds: tuple[tuple[int, int], ...]  #: each chunk's steps, ``program.steps[a:b]``
    reads: tuple[tuple[int, ...], ...]  #: per chunk: values it reads from columns, by first use
    stores: tuple[tuple[int, ...], ...]  #: per chunk: values it stores, in step order
    column: dict[int, int]  #: value (node) -> its scratch column
    columns: int


def chunks(program: Program, size: int = CHUNK) -> Chunks:
    """Cut ``program`` into chunks of at most ``size`` steps and give every value read across a
    chunk boundary a scratch column: the lowest one free when its chunk starts. (Outputs are
    written where the backend puts them, not into columns.)"""
    steps = program.steps
    bounds = tuple((a, min(a + size, len(steps))) for a in range(0, len(steps), size)) or ((0, 0),)
    owner = {dest: k for k, (a, b) in enumerate(bounds) for dest, _, _, _ in steps[a:b]}
    last: dict[int, int] = {}  # value -> last chunk reading it from a column
    reads: list[dict[int, None]] = [{} for _ in bounds]
    for k, (a, b) in enumerate(bounds):
        for _, _, args, _ in steps[a:b]:
            for kind, v in args:
                if kind == "t" and owner[v] != k:
                    reads[k][v] = None
                    last[v] = k
    freed_after: dict[int, list[int]] = {}
    for v, k in last.items():
        freed_after.setdefault(k, []).append(v)
    column: dict[int, int] = {}
    free: list[int] = []
    stores: list[tuple[int, ...]] = []
    count = 0
    for k, (a, b) in enumerate(bounds):
        for v in freed_after.get(k - 1, ()):  # read for the last time by the previous chunk
            heapq.heappush(free, column[v])
        stored = tuple(dest for dest, _, _, _ in steps[a:b] if dest in last)
        for dest in stored:
            if free:
                column[dest] = heapq.heappop(free)
            else:
                column[dest], count = count, count + 1
        stores.append(stored)
    return Chunks(bounds, tuple(tuple(r) for r in reads), tuple(stores), column, count)
