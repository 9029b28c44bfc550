"""The LLVM IR of a program: each chunk as one loop over a block of points, a vector at a time.

The Numba backend (``numba.py``) compiles this text with llvmlite; this module only writes it.
Each chunk (``program.chunks``) becomes one function ``@c<k>`` that runs its steps on the
vectors of a block of ``ROW`` points (every step one vector instruction, so the points fill the
lanes), reading the inputs where they lie and the block's scratch rows; a driver ``@run`` points
the chunks at each block of the inputs, calls them in turn and copies the outputs out.

Every op is one ``Lowering`` of ``LOWERING`` (an ``Emitter``, the operands' values, the step).
Functions lower through their spelling: the arithmetic and selects of ``NATIVE`` for the
built-in elementaries, the C library's functions (``tanh``, ``atan2``, ...) on whole vectors
where glibc's libmvec has them, else lane by lane, and anything else as a callback that the
backend supplies (``("fn", function, arity)`` in the helpers table). A power is the C library's
``pow`` lane by lane, never libmvec's (which differs from it at ~10 % of points): the powers
NumPy computes otherwise are other ops by now (``program.POWERS``). Constants and the functions
called are read from tables passed at run time, so the code depends on the program's shape only.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import struct
from dataclasses import dataclass, field
from typing import Any, Callable

from ...functions.elementary import ELEMENTARY, Elementary, steps
from ...tables import rule_table
from ..program import Chunks, Lowering, Operand, Program, Step, chunks
from .llvm_driver import ROW, declarations, driver, point_driver



# -- the C library: scalar and vector functions, called by address -----------------------------------
@functools.cache
def _libm() -> ctypes.CDLL:
    """The C math library (``tanh``, ``atan2``, ...), whose functions are called by address."""
    for name in (ctypes.util.find_library("m"), ctypes.util.find_library("c"), "ucrtbase"):
        if name:
            try:
                library = ctypes.CDLL(name)
                library.tanh  # noqa: B018  (raises AttributeError where it lacks the math functions)
                return library
            except (OSError, AttributeError):
                continue
    raise ImportError("the C math library (libm) was not found")


@functools.cache
def _libmvec() -> ctypes.CDLL | None:
    """glibc's vector math library (2.35 on: ``tanh``, ``atan2``, ... on whole vectors), if any."""
    name = ctypes.util.find_library("mvec")
    try:
        return ctypes.CDLL(name) if name else None
    except OSError:
        return None


def _vector_name(name: str, arity: int, width: int, features: str) -> str | None:
    """The libmvec function for ``name`` on vectors of ``width`` doubles (the x86 vector ABI's
    name for this CPU's widest variant), or None where there is none: the call goes lane by lane."""
    isa = {8: "e" if "+avx512f" in features else None,
           4: "d" if "+avx2" in features else "c" if "+avx" in features else None}.get(width)
    library = _libmvec()
    symbol = f"_ZGV{isa}N{width}{'v' * arity}_{name}"
    return symbol if isa and library is not None and hasattr(library, symbol) else None


def address(key: tuple[Any, ...]) -> int:
    """The address of a C library function of the helpers table: ``("libm", name)`` or ``("mvec", symbol)``."""
    library = _libm() if key[0] == "libm" else _libmvec()
    return ctypes.cast(getattr(library, key[1]), ctypes.c_void_p).value or 0


# -- the built-in elementaries as IR ------------------------------------------------------------------
#: The elementaries that are the C library's function of the same name and arity.
LIBM = ("exp", "expm1", "log", "log1p", "log2", "log10", "sin", "cos", "tan", "asin", "acos", "atan", "sinh",
        "cosh", "tanh", "asinh", "acosh", "atanh", "cbrt", "erf", "erfc", "atan2", "hypot", "pow")


def _sign(e: Emitter, a: list[str]) -> str:
    """NumPy's sign: ±1, 0 for ±0 (a positive zero), nan for nan."""
    x = a[0]
    zero_or_nan = e.select(e.compare("uno", x, x), x, e.splat(0.0))
    negative = e.select(e.compare("olt", x, e.splat(0.0)), e.splat(-1.0), zero_or_nan)
    return e.select(e.compare("ogt", x, e.splat(0.0)), e.splat(1.0), negative)


def _sigmoid(e: Emitter, a: list[str]) -> str:
    """1/(1 + exp(-x)) for x >= 0, exp(x)/(1 + exp(x)) below: exp of -|x| never overflows."""
    x = a[0]
    t = e.libm("exp", [e.op("fneg", e.intrinsic("fabs", [x]))])
    d = e.op("fadd", e.splat(1.0), t)
    return e.select(e.compare("oge", x, e.splat(0.0)), e.op("fdiv", e.splat(1.0), d), e.op("fdiv", t, d))


def _xlogy(e: Emitter, a: list[str]) -> str:
    """p·log(a), 0 where p is 0 and a is not nan."""
    p, x = a
    zero = e.op("and", e.compare("oeq", p, e.splat(0.0)), e.compare("ord", x, x), kind="i1")
    return e.select(zero, e.splat(0.0), e.op("fmul", p, e.libm("log", [x])))


def _c_function(name: str) -> Callable[[Emitter, list[str]], str]:
    return lambda e, a: e.libm(name, a)


def _reciprocal_of(name: str) -> Callable[[Emitter, list[str]], str]:
    return lambda e, a: e.op("fdiv", e.splat(1.0), e.libm(name, a))


#: The built-in elementaries written as IR: an emitter and the operands -> the result's name.
NATIVE: dict[str, Callable[[Emitter, list[str]], str]] = {
    **{name: _c_function(name) for name in LIBM},
    "sqrt": lambda e, a: e.intrinsic("sqrt", a),
    "fabs": lambda e, a: e.intrinsic("fabs", a),
    "neg": lambda e, a: e.op("fneg", a[0]),
    "recip": lambda e, a: e.op("fdiv", e.splat(1.0), a[0]),
    "sec": _reciprocal_of("cos"),
    "csc": _reciprocal_of("sin"),
    "cot": _reciprocal_of("tan"),
    "sech2": lambda e, a: (lambda r: e.op("fmul", r, r))(_reciprocal_of("cosh")(e, a)),  # tanh′, NumPy's three steps
    "sign": _sign,
    "sigmoid": _sigmoid,
    "xlogy": _xlogy,
}


def _native(step: Elementary) -> bool:
    """A built-in elementary (the table's own record, not a user's of the same name) with IR here."""
    return ELEMENTARY.get(step.name) is step and step.name in NATIVE


# -- writing the IR ------------------------------------------------------------------------------------
def _hex(value: float) -> str:
    """A double as LLVM's exact hexadecimal literal (nan and inf included)."""
    return "0x%016X" % struct.unpack("<Q", struct.pack("<d", value))[0]


class Emitter:
    """The IR of one chunk's loop body: SSA values, loads and stores of scratch rows, constants
    and calls through the kernel's tables."""

    def __init__(self, width: int, tables: Tables) -> None:
        self.width, self.tables = width, tables
        self.vector = f"<{width} x double>"
        self.lines: list[str] = []
        self.entry: list[str] = []  # before the loop: the addresses of the functions called
        self.helpers: dict[int, str] = {}
        self.inputs: set[str] = set()  # the inputs' and outputs' base pointers loaded before the loop
        self.count = 0

    def fresh(self) -> str:
        self.count += 1
        return f"%u{self.count}"

    def emit(self, text: str) -> str:
        name = self.fresh()
        self.lines.append(f"  {name} = {text}")
        return name

    def address(self, row: int) -> str:
        offset = self.emit(f"add nuw nsw i64 %i, {row * self.tables.row // self.width}")
        return self.emit(f"getelementptr inbounds {self.vector}, ptr %S, i64 {offset}")

    def load(self, row: int) -> str:
        return self.emit(f"load {self.vector}, ptr {self.address(row)}, align 8")

    def load_input(self, k: int) -> str:
        """Input k where it lies: the block's points of its array, by the base pointer the
        driver wrote for the block, read once before the loop; a number (``Tables.numbers``)
        is one double there, broadcast at its use as a constant is (its row is not read: a
        row per number would crowd the block's columns out of cache)."""
        base = self.pointer("in", k, k)
        if k < len(self.tables.numbers) and self.tables.numbers[k]:
            return self.broadcast(self.emit(f"load double, ptr {base}, align 8"))
        address = self.emit(f"getelementptr inbounds {self.vector}, ptr {base}, i64 %i")
        return self.emit(f"load {self.vector}, ptr {address}, align 8")

    def pointer(self, kind: str, k: int, slot: int) -> str:
        """The address the driver wrote at ``slot`` of the block's table (an input's points, an
        output's destination), read once before the loop."""
        base = f"%{kind}{k}"
        if base not in self.inputs:
            self.entry.append(f"  %{kind}p{k} = getelementptr inbounds ptr, ptr %B, i64 {slot}")
            self.entry.append(f"  {base} = load ptr, ptr %{kind}p{k}, align 8")
            self.inputs.add(base)
        return base

    def store(self, value: str, row: int) -> None:
        self.lines.append(f"  store {self.vector} {value}, ptr {self.address(row)}, align 8")

    def store_output(self, value: str, j: int, n_inputs: int) -> None:
        """Output j's value where the driver points it for the block (its array, or its row)."""
        base = self.pointer("out", j, n_inputs + j)
        address = self.emit(f"getelementptr inbounds {self.vector}, ptr {base}, i64 %i")
        self.lines.append(f"  store {self.vector} {value}, ptr {address}, align 8")

    def constant(self, value: float) -> str:
        """A program constant, read from the constants table at its use (folded into the
        instruction as a broadcast operand) rather than held in a register."""
        index = self.tables.constant(value)
        pointer = self.emit(f"getelementptr inbounds double, ptr %K, i64 {index}")
        return self.broadcast(self.emit(f"load double, ptr {pointer}, align 8"))

    def broadcast(self, scalar: str) -> str:
        """A double in every lane."""
        first = self.emit(f"insertelement {self.vector} poison, double {scalar}, i64 0")
        return self.emit(f"shufflevector {self.vector} {first}, {self.vector} poison, <{self.width} x i32> zeroinitializer")

    def splat(self, value: float) -> str:
        """A constant of the lowering itself (1.0 in 1/x), written into the instruction."""
        return "<" + ", ".join([f"double {_hex(value)}"] * self.width) + ">"

    def op(self, name: str, *operands: str, kind: str = "double") -> str:
        vector = self.vector if kind == "double" else f"<{self.width} x {kind}>"
        return self.emit(f"{name} {vector} {', '.join(operands)}")

    def compare(self, predicate: str, a: str, b: str) -> str:
        return self.emit(f"fcmp {predicate} {self.vector} {a}, {b}")

    def select(self, condition: str, a: str, b: str) -> str:
        return self.emit(f"select <{self.width} x i1> {condition}, {self.vector} {a}, {self.vector} {b}")

    def intrinsic(self, name: str, operands: list[str]) -> str:
        """An LLVM intrinsic on whole vectors (``sqrt``, ``fabs``: one instruction each)."""
        tag = f"llvm.{name}.v{self.width}f64"
        self.tables.declarations.add(f"declare {self.vector} @{tag}({', '.join([self.vector] * len(operands))})")
        return self.emit(f"call {self.vector} @{tag}({', '.join(f'{self.vector} {a}' for a in operands)})")

    def libm(self, name: str, operands: list[str]) -> str:
        """The C library's ``name``: its vector form (libmvec: 3 ulp at most, as NumPy's own
        SIMD functions; 5-10 times faster than lane by lane) where there is one."""
        symbol = _vector_name(name, len(operands), self.width, self.tables.features)
        if symbol is None:
            return self.call(self.tables.helper(("libm", name)), operands)
        pointer = self.function(self.tables.helper(("mvec", symbol)))
        arguments = ", ".join(f"{self.vector} {a}" for a in operands)
        return self.emit(f"call {self.vector} {pointer}({arguments})")

    def function(self, helper: int) -> str:
        """The address of a function of the helpers table, loaded once before the loop."""
        if helper not in self.helpers:
            pointer = f"%hp{helper}"
            self.entry.append(f"  {pointer} = getelementptr inbounds ptr, ptr %H, i64 {helper}")
            self.entry.append(f"  %h{helper} = load ptr, ptr {pointer}, align 8")
            self.helpers[helper] = f"%h{helper}"
        return self.helpers[helper]

    def call(self, helper: int, operands: list[str]) -> str:
        """A C function of doubles from the helpers table, called on each lane."""
        pointer = self.function(helper)
        result = "poison"
        for lane in range(self.width):
            scalars = [self.emit(f"extractelement {self.vector} {a}, i64 {lane}") for a in operands]
            value = self.emit(f"call double {pointer}({', '.join(f'double {s}' for s in scalars)})")
            result = self.emit(f"insertelement {self.vector} {result}, double {value}, i64 {lane}")
        return result


def native(fn: Any) -> bool:
    """Whether a function is written in IR here (every step of its spelling a built-in with IR),
    not called back."""
    chain = steps(fn.spelling) if fn.spelling else ()
    return bool(chain) and all(_native(elementary) for elementary in chain)


def _function(e: Emitter, a: list[str], step: Step) -> str:
    """A function node through its spelling: the native IR of each built-in step, or the whole
    function as one callback when any step (or the function, unspelled) is not native."""
    fn = step[3]
    assert fn is not None  # a "fn" step carries its function
    if native(fn):
        for elementary in steps(fn.spelling):  # the first takes the operands, each next one the result so far
            a = [NATIVE[elementary.name](e, a)]
        return a[0]
    return e.call(e.tables.helper(("fn", fn, len(a))), a)


LOWERING: dict[str, Lowering[Emitter]] = {
    "add": lambda e, a, step: e.op("fadd", *a),
    "sub": lambda e, a, step: e.op("fsub", *a),
    "mul": lambda e, a, step: e.op("fmul", *a),
    "div": lambda e, a, step: e.op("fdiv", *a),
    "pow": lambda e, a, step: e.call(e.tables.helper(("libm", "pow")), a),
    "neg": lambda e, a, step: e.op("fneg", a[0]),
    "fn": _function,
}
rule_table("Numba LOWERING", LOWERING)


@dataclass
class Tables:
    """What a kernel reads at run time, by index: its constants and the functions it calls
    (``("libm", name)``, ``("mvec", symbol)`` or ``("fn", function, arity)``); and the chunks' scratch columns."""

    cut: Chunks
    features: str  # the CPU's, for the vector functions it has
    row: int  # points per scratch row (``llvm_driver.ROW``; one vector for the one-point kernel)
    numbers: tuple[bool, ...] = ()  # per input: a number on every call, read as one double (``in_place``)
    constants: dict[str, int] = field(default_factory=dict)  # by exact hex text: nan and -0.0 as themselves
    values: list[float] = field(default_factory=list)
    helpers: list[tuple[Any, ...]] = field(default_factory=list)
    index: dict[tuple[Any, ...], int] = field(default_factory=dict)
    declarations: set[str] = field(default_factory=set)

    def constant(self, value: float) -> int:
        key = _hex(value)
        if key not in self.constants:
            self.constants[key] = len(self.values)
            self.values.append(value)
        return self.constants[key]

    def helper(self, key: tuple[Any, ...]) -> int:
        ident = key if key[0] != "fn" else ("fn", id(key[1]), key[2])
        if ident not in self.index:
            self.index[ident] = len(self.helpers)
            self.helpers.append(key)
        return self.index[ident]


def source(program: Program, chunk: int, width: int, features: str, row: int = ROW,
           numbers: tuple[bool, ...] = (), point: bool = False) -> tuple[str, Tables]:
    """The IR of the program for vectors of ``width`` doubles on a CPU of these ``features``: a
    function ``@c<k>(S, K, H, vectors)`` per chunk of ``chunk`` steps and the driver ``@run``
    over blocks of ``row`` points, with the tables of constants and functions it reads. An input
    that ``numbers`` marks is read as one double, so such code serves that pattern of numbers
    only; the rest read a vector of points, which also serves a number (the driver writes it
    over a row). ``point``: code for one point (``llvm_driver.point_driver``), every input a
    number where it lies and every output written into a vector's slot (``row``: one vector)."""
    n_inputs = program.n_inputs
    cut = chunks(program, chunk)
    tables = Tables(cut, features, row, (True,) * n_inputs if point else in_place(program, numbers))
    outputs: dict[int, list[int]] = {}  # a step's value -> the outputs that are it
    for j, (kind, v) in enumerate(program.outputs):
        if kind == "t":
            outputs.setdefault(v, []).append(j)
    functions = []
    for k, (a, b) in enumerate(cut.bounds):
        e = Emitter(width, tables)
        local: dict[int, str] = {}
        loaded: dict[Operand, str] = {}

        def value(r: Operand) -> str:
            kind, v = r
            if kind == "c":
                return e.constant(float(v))
            if kind == "t" and v in local:
                return local[v]
            if r not in loaded:
                loaded[r] = e.load_input(v) if kind == "in" else e.load(n_inputs + cut.column[v])
            return loaded[r]

        stored = set(cut.stores[k])
        for step in program.steps[a:b]:
            dest, op, args, _ = step
            local[dest] = LOWERING[op](e, [value(r) for r in args], step)
            if dest in stored:
                e.store(local[dest], n_inputs + cut.column[dest])
            for j in outputs.get(dest, ()):
                e.store_output(local[dest], j, n_inputs)
        functions.append(_chunk_function(k, e))
    functions.append(point_driver(len(cut.bounds)) if point else
                     driver(len(cut.bounds), n_inputs, len(program.outputs), width, rows(program, cut), row))
    if not point:
        tables.declarations.update(declarations(width))
    text = "\n".join(sorted(tables.declarations) + functions)
    return text, tables


def in_place(program: Program, numbers: tuple[bool, ...]) -> tuple[bool, ...]:
    """The number inputs the code reads as one double where it lies: all but those that are
    outputs too (copied out from a row of the number)."""
    copied = {v for kind, v in program.outputs if kind == "in"}
    return tuple(number and k not in copied for k, number in enumerate(numbers))


def rows(program: Program, cut: Chunks) -> int:
    """Scratch rows: the inputs' (a number written over its row), the columns, then a row per
    output (written there in a block that ends inside a vector, and copied out)."""
    return program.n_inputs + cut.columns + len(program.outputs)


def output_rows(program: Program, cut: Chunks) -> list[int]:
    """Per output, the scratch row the driver copies it from: an input's, its own row (a
    step's value), or -1 (a constant)."""
    own = program.n_inputs + cut.columns
    return [v if kind == "in" else own + j if kind == "t" else -1 for j, (kind, v) in enumerate(program.outputs)]


def _chunk_function(k: int, e: Emitter) -> str:
    return "\n".join([
        f"define void @c{k}(ptr noalias nocapture %S, ptr noalias nocapture readonly %K, "
        f"ptr noalias nocapture readonly %H, i64 %n, ptr noalias nocapture readonly %B) noinline nounwind {{",
        "entry:", *e.entry,
        "  %go = icmp sgt i64 %n, 0", "  br i1 %go, label %loop, label %done",
        "loop:", "  %i = phi i64 [0, %entry], [%next, %loop]", *e.lines,
        "  %next = add nuw nsw i64 %i, 1", "  %more = icmp slt i64 %next, %n",
        "  br i1 %more, label %loop, label %done", "done:", "  ret void", "}", ""])
