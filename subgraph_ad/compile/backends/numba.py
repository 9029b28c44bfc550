"""The Numba backend: each chunk of the program as one SIMD loop over the points, in LLVM.

The program is cut into chunks (``program.chunks``); each becomes one LLVM function that loops
over a block of ``ROW`` points a vector at a time (8 doubles with AVX-512, else 4): every step
is one vector instruction, so the points fill the CPU's vector lanes, and a value read by a
later chunk passes through a scratch row of the block. A driver copies each block of the
inputs into the scratch, calls the chunks in turn and copies the outputs out, so a call is one
native call per thread (ctypes releases the GIL around it).

The IR is written here as text and compiled by llvmlite, the LLVM binding Numba is built on,
without Numba's own front end: that costs about 2 ms a statement (13,055 steps took 32 s,
38,783 steps 149 s) where writing IR and LLVM's code generation cost about 0.07 ms, linear in
the chunks. Functions lower through their spelling: the arithmetic and selects of ``NATIVE``
for the built-in elementaries, the C library's functions (``tanh``, ``atan2``, ...) on whole
vectors where glibc's libmvec has them, else lane by lane, and anything else — a user's own
Python scalar, a function with no spelling — compiled by Numba as a C callback
(``numba.cfunc``). Calls go through a table of addresses passed at run time, as constants do,
so the machine code depends on the program's shape only and is kept in the persistent cache
(``compile.cache``), keyed by the IR text, the CPU and the versions.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import importlib.util
import struct
import threading
import types
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from ...tables import rule_table
from ...functions import Function
from ...functions.elementary import ELEMENTARY, Elementary, steps
from ..cache import CACHE_MIN_STEPS, cache_key, cache_load, cache_store
from ..program import CHUNK, Chunks, Operand, Program, callee, chunks, define, namespace, scalar_call

NAME = "Numba"
#: The options of ``lambdify`` this backend takes.
OPTIONS = ("chunk", "cache")
#: Points per scratch row, a multiple of every vector width: a block's live columns stay in cache.
ROW = 256
#: ``lambdify`` splits the points between threads in multiples of this (a block each at least).
GRAIN = ROW


# -- the target --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Target:
    llvm: Any  # llvmlite.binding
    cpu: str
    features: str
    width: int  # doubles per vector
    identity: str  # what machine code depends on besides the IR: CPU, features, versions

    def machine(self) -> Any:
        """A TargetMachine for this CPU: a new one each time, as an engine takes its machine's
        ownership (and frees it with itself)."""
        return self.llvm.Target.from_default_triple().create_target_machine(
            cpu=self.cpu, features=self.features, opt=2, codemodel="jitdefault")


def _target() -> _Target:
    """The host CPU as LLVM sees it; ImportError when Numba or a recent enough llvmlite is
    missing. Numba itself is imported only for a function that needs a callback: the rest is
    llvmlite's (its import is a second's work, and deep)."""
    try:
        found = importlib.util.find_spec("numba")
    except (ImportError, ValueError):  # ValueError: removed from sys.modules by hand
        found = None
    if found is None:
        raise ImportError("Numba is not installed (pip install numba)")
    return _host()


@functools.cache
def _host() -> _Target:
    import llvmlite
    import llvmlite.binding as llvm

    if llvm.llvm_version_info < (15,):  # opaque pointers (``ptr``) in the IR below
        raise ImportError(f"the Numba backend needs llvmlite built on LLVM 15 or later, found LLVM "
                          f"{'.'.join(map(str, llvm.llvm_version_info))}")
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    cpu, features = llvm.get_host_cpu_name(), llvm.get_host_cpu_features()
    width = 8 if features.get("avx512f") else 4
    identity = (f"{llvm.get_process_triple()} {cpu} {features.flatten()} llvm "
                f"{'.'.join(map(str, llvm.llvm_version_info))} llvmlite {llvmlite.__version__}")
    return _Target(llvm, cpu, features.flatten(), width, identity)


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


def _address(key: tuple[Any, ...]) -> int:
    """The address of a C library function of the helpers table: ``("libm", name)`` or ``("mvec", symbol)``."""
    library = _libm() if key[0] == "libm" else _libmvec()
    return ctypes.cast(getattr(library, key[1]), ctypes.c_void_p).value or 0


# -- functions: native IR, C library calls, Numba callbacks ------------------------------------------
#: The elementaries that are the C library's function of the same name and arity.
LIBM = ("exp", "expm1", "log", "log1p", "log2", "log10", "sin", "cos", "tan", "asin", "acos", "atan", "sinh",
        "cosh", "tanh", "asinh", "acosh", "atanh", "cbrt", "erf", "erfc", "atan2", "hypot", "pow")


def _sign(e: _Emitter, a: list[str]) -> str:
    """NumPy's sign: ±1, 0 for ±0 (a positive zero), nan for nan."""
    x = a[0]
    zero_or_nan = e.select(e.compare("uno", x, x), x, e.splat(0.0))
    negative = e.select(e.compare("olt", x, e.splat(0.0)), e.splat(-1.0), zero_or_nan)
    return e.select(e.compare("ogt", x, e.splat(0.0)), e.splat(1.0), negative)


def _sigmoid(e: _Emitter, a: list[str]) -> str:
    """1/(1 + exp(-x)) for x >= 0, exp(x)/(1 + exp(x)) below: exp of -|x| never overflows."""
    x = a[0]
    t = e.libm("exp", [e.op("fneg", e.intrinsic("fabs", [x]))])
    d = e.op("fadd", e.splat(1.0), t)
    return e.select(e.compare("oge", x, e.splat(0.0)), e.op("fdiv", e.splat(1.0), d), e.op("fdiv", t, d))


def _xlogy(e: _Emitter, a: list[str]) -> str:
    """p·log(a), 0 where p is 0 and a is not nan."""
    p, x = a
    zero = e.op("and", e.compare("oeq", p, e.splat(0.0)), e.compare("ord", x, x), kind="i1")
    return e.select(zero, e.splat(0.0), e.op("fmul", p, e.libm("log", [x])))


def _c_function(name: str) -> Callable[[_Emitter, list[str]], str]:
    return lambda e, a: e.libm(name, a)


def _reciprocal_of(name: str) -> Callable[[_Emitter, list[str]], str]:
    return lambda e, a: e.op("fdiv", e.splat(1.0), e.libm(name, a))


#: The built-in elementaries written as IR: an emitter and the operands -> the result's name.
NATIVE: dict[str, Callable[[_Emitter, list[str]], str]] = {
    **{name: _c_function(name) for name in LIBM},
    "sqrt": lambda e, a: e.intrinsic("sqrt", a),
    "fabs": lambda e, a: e.intrinsic("fabs", a),
    "neg": lambda e, a: e.op("fneg", a[0]),
    "recip": lambda e, a: e.op("fdiv", e.splat(1.0), a[0]),
    "sec": _reciprocal_of("cos"),
    "csc": _reciprocal_of("sin"),
    "cot": _reciprocal_of("tan"),
    "sign": _sign,
    "sigmoid": _sigmoid,
    "xlogy": _xlogy,
}


def _native(step: Elementary) -> bool:
    """A built-in elementary (the table's own record, not a user's of the same name) with IR here."""
    return ELEMENTARY.get(step.name) is step and step.name in NATIVE


@functools.cache
def _jit(func: types.FunctionType) -> Any:
    """A Python function as Numba code, compiled on first use and kept for the process; with
    NumPy's error model, so 1/0 is inf rather than an exception."""
    import numba

    return numba.njit(error_model="numpy")(func)


def _call(fn: Function, operands: list[str], names: dict[str, Any], key: str) -> str:
    """``fn`` on its floats as Numba source: its spelling (``scalar_call``), or ``f`` compiled by Numba."""
    if fn.spelling:
        return scalar_call(fn, operands, names, key, jit=_jit)[0]
    value = fn.f
    if isinstance(value, types.MethodType):  # a method that ignores self compiles with self=None
        return callee(_jit(value.__func__), names, key) + f"None, {', '.join(operands)})"
    return callee(_jit(value) if isinstance(value, types.FunctionType) else value, names, key) + f"{', '.join(operands)})"


_CALLBACKS: dict[Any, Any] = {}
_CALLBACKS_LOCK = threading.Lock()


def _callback(fn: Function, arity: int) -> Any:
    """``fn`` compiled by Numba as a C function of ``arity`` doubles, once per process."""
    try:
        found = _CALLBACKS.get(fn)
    except TypeError:  # an unhashable function object: compiled for this kernel only
        found = None
    if found is not None:
        return found
    import numba

    names = namespace()
    operands = [f"v{k}" for k in range(arity)]
    source = f"def _f({', '.join(operands)}):\n    return {_call(fn, operands, names, '_h')}\n"
    with _CALLBACKS_LOCK:
        made = numba.cfunc(numba.float64(*[numba.float64] * arity), error_model="numpy")(
            define(source, names, f"numba callback {fn.name}"))
        try:
            _CALLBACKS[fn] = made
        except TypeError:
            pass
    return made


# -- writing the IR ------------------------------------------------------------------------------------
def _hex(value: float) -> str:
    """A double as LLVM's exact hexadecimal literal (nan and inf included)."""
    return "0x%016X" % struct.unpack("<Q", struct.pack("<d", value))[0]


class _Emitter:
    """The IR of one chunk's loop body: SSA values, loads and stores of scratch rows, constants
    and calls through the kernel's tables."""

    def __init__(self, width: int, tables: _Tables) -> None:
        self.width, self.tables = width, tables
        self.vector = f"<{width} x double>"
        self.lines: list[str] = []
        self.entry: list[str] = []  # before the loop: the addresses of the functions called
        self.helpers: dict[int, str] = {}
        self.count = 0

    def fresh(self) -> str:
        self.count += 1
        return f"%u{self.count}"

    def emit(self, text: str) -> str:
        name = self.fresh()
        self.lines.append(f"  {name} = {text}")
        return name

    def address(self, row: int) -> str:
        offset = self.emit(f"add nuw nsw i64 %i, {row * ROW // self.width}")
        return self.emit(f"getelementptr inbounds {self.vector}, ptr %S, i64 {offset}")

    def load(self, row: int) -> str:
        return self.emit(f"load {self.vector}, ptr {self.address(row)}, align 8")

    def store(self, value: str, row: int) -> None:
        self.lines.append(f"  store {self.vector} {value}, ptr {self.address(row)}, align 8")

    def constant(self, value: float) -> str:
        """A program constant, read from the constants table at its use (folded into the
        instruction as a broadcast operand) rather than held in a register."""
        index = self.tables.constant(value)
        pointer = self.emit(f"getelementptr inbounds double, ptr %K, i64 {index}")
        scalar = self.emit(f"load double, ptr {pointer}, align 8")
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


def _power(e: _Emitter, a: list[str], operands: Sequence[Operand]) -> str:
    """x ** c for a constant c: 0.5 as NumPy's square root, a whole c up to 64 as multiplications
    (a negative one as 1/x**|c|), else the C library's pow."""
    kind, c = operands[1]
    if kind == "c" and c == 0.5:
        return e.intrinsic("sqrt", [a[0]])
    if kind == "c" and float(c).is_integer() and abs(c) <= 64:
        k, base, result = abs(int(c)), a[0], None
        while k:
            if k & 1:
                result = base if result is None else e.op("fmul", result, base)
            k >>= 1
            if k:
                base = e.op("fmul", base, base)
        if result is None:
            return e.splat(1.0)
        return e.op("fdiv", e.splat(1.0), result) if c < 0 else result
    return e.libm("pow", a)


def _function(e: _Emitter, a: list[str], fn: Function) -> str:
    """A function node through its spelling: the native IR of each built-in step, or the whole
    function as one Numba callback when any step (or the function, unspelled) is not native."""
    chain = steps(fn.spelling) if fn.spelling else ()
    if chain and all(_native(step) for step in chain):
        for step in chain:  # the first step takes the operands, each next one the result so far
            a = [NATIVE[step.name](e, a)]
        return a[0]
    return e.call(e.tables.helper(("fn", fn, len(a))), a)


#: An op's IR from the emitter, its operands' values and the operands themselves.
Lowering = Callable[[_Emitter, list[str], Sequence[Operand], Any], str]

LOWERING: dict[str, Lowering] = {
    "add": lambda e, a, operands, fn: e.op("fadd", *a),
    "sub": lambda e, a, operands, fn: e.op("fsub", *a),
    "mul": lambda e, a, operands, fn: e.op("fmul", *a),
    "div": lambda e, a, operands, fn: e.op("fdiv", *a),
    "pow": lambda e, a, operands, fn: _power(e, a, operands),
    "neg": lambda e, a, operands, fn: e.op("fneg", a[0]),
    "fn": lambda e, a, operands, fn: _function(e, a, fn),
}
rule_table("Numba LOWERING", LOWERING)


@dataclass
class _Tables:
    """What a kernel reads at run time, by index: its constants and the functions it calls
    (``("libm", name)``, ``("mvec", symbol)`` or ``("fn", function, arity)``); and the chunks' scratch columns."""

    cut: Chunks
    features: str  # the CPU's, for the vector functions it has
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


def kernel_source(program: Program, scalars: tuple[bool, ...] = (), chunk: int = CHUNK,
                  width: int | None = None) -> tuple[str, _Tables]:
    """The LLVM IR of the program: a function ``@c<k>(S, K, H, vectors)`` per chunk and the
    driver ``@run``, with the tables of constants and functions it reads. The same code serves
    every pattern of number and array inputs (the driver broadcasts a number), so ``scalars``
    changes nothing; ``width`` defaults to the host's."""
    target = _target()
    width = width or target.width
    n_inputs = program.n_inputs
    cut = chunks(program, chunk)
    tables = _Tables(cut, target.features)
    functions = []
    for k, (a, b) in enumerate(cut.bounds):
        e = _Emitter(width, tables)
        local: dict[int, str] = {}
        loaded: dict[Operand, str] = {}

        def value(r: Operand) -> str:
            kind, v = r
            if kind == "c":
                return e.constant(float(v))
            if kind == "t" and v in local:
                return local[v]
            if r not in loaded:
                loaded[r] = e.load(v if kind == "in" else n_inputs + cut.column[v])
            return loaded[r]

        stored = set(cut.stores[k])
        for dest, op, args, fn in program.steps[a:b]:
            local[dest] = LOWERING[op](e, [value(r) for r in args], args, fn)
            if dest in stored:
                e.store(local[dest], n_inputs + cut.column[dest])
        functions.append(_chunk_function(k, e))
    functions.append(_driver(len(cut.bounds), n_inputs, len(program.outputs), width))
    text = "\n".join(sorted(tables.declarations) + functions)
    return text, tables


def _chunk_function(k: int, e: _Emitter) -> str:
    return "\n".join([
        f"define void @c{k}(ptr noalias nocapture %S, ptr noalias nocapture readonly %K, "
        f"ptr noalias nocapture readonly %H, i64 %n) noinline nounwind {{",
        "entry:", *e.entry,
        "  %go = icmp sgt i64 %n, 0", "  br i1 %go, label %loop, label %done",
        "loop:", "  %i = phi i64 [0, %entry], [%next, %loop]", *e.lines,
        "  %next = add nuw nsw i64 %i, 1", "  %more = icmp slt i64 %next, %n",
        "  br i1 %more, label %loop, label %done", "done:", "  ret void", "}", ""])


def _driver(n_chunks: int, n_inputs: int, n_outputs: int, width: int) -> str:
    """``@run(ins, numbers, outs, rows, n, S, K, H)``: for each block of ``ROW`` points, copy
    input k (``ins[k]``, one value when ``numbers[k]``) into scratch row k, run the chunks on
    the block's vectors, copy the row ``rows[j]`` of output j into ``outs[j]`` (none when -1)."""
    calls = [f"  call void @c{k}(ptr %S, ptr %K, ptr %H, i64 %vectors)" for k in range(n_chunks)]
    return "\n".join([
        "define void @run(ptr %ins, ptr %numbers, ptr %outs, ptr %rows, i64 %n, ptr noalias %S, ptr %K, ptr %H) {",
        "entry:", "  %any = icmp sgt i64 %n, 0", "  br i1 %any, label %block, label %end",
        "block:", "  %a = phi i64 [0, %entry], [%a.next, %block.end]",
        "  %left = sub i64 %n, %a", f"  %short = icmp slt i64 %left, {ROW}",
        f"  %m = select i1 %short, i64 %left, i64 {ROW}", "  br label %in",
        "in:", "  %k = phi i64 [0, %block], [%k.next, %in.end]",
        "  %srcp = getelementptr inbounds ptr, ptr %ins, i64 %k", "  %src = load ptr, ptr %srcp, align 8",
        "  %flagp = getelementptr inbounds i8, ptr %numbers, i64 %k", "  %flag = load i8, ptr %flagp, align 1",
        "  %number = icmp ne i8 %flag, 0", "  %from.a = getelementptr inbounds double, ptr %src, i64 %a",
        "  %from = select i1 %number, ptr %src, ptr %from.a", f"  %in.row = mul nuw nsw i64 %k, {ROW}",
        "  %to = getelementptr inbounds double, ptr %S, i64 %in.row", "  br label %in.copy",
        "in.copy:", "  %p = phi i64 [0, %in], [%p.next, %in.copy]", "  %p.src = select i1 %number, i64 0, i64 %p",
        "  %xp = getelementptr inbounds double, ptr %from, i64 %p.src", "  %x = load double, ptr %xp, align 8",
        "  %yp = getelementptr inbounds double, ptr %to, i64 %p", "  store double %x, ptr %yp, align 8",
        "  %p.next = add nuw nsw i64 %p, 1", "  %p.more = icmp slt i64 %p.next, %m",
        "  br i1 %p.more, label %in.copy, label %in.end",
        "in.end:", "  %k.next = add nuw nsw i64 %k, 1", f"  %k.more = icmp slt i64 %k.next, {n_inputs}",
        "  br i1 %k.more, label %in, label %compute",
        "compute:", f"  %m.up = add nuw nsw i64 %m, {width - 1}", f"  %vectors = udiv i64 %m.up, {width}",
        *calls, "  br label %out",
        "out:", "  %j = phi i64 [0, %compute], [%j.next, %out.end]",
        "  %rowp = getelementptr inbounds i64, ptr %rows, i64 %j", "  %row = load i64, ptr %rowp, align 8",
        "  %skip = icmp slt i64 %row, 0", "  br i1 %skip, label %out.end, label %out.start",
        "out.start:", "  %dstp = getelementptr inbounds ptr, ptr %outs, i64 %j", "  %dst = load ptr, ptr %dstp, align 8",
        "  %dst.a = getelementptr inbounds double, ptr %dst, i64 %a", f"  %out.row = mul nuw nsw i64 %row, {ROW}",
        "  %from.row = getelementptr inbounds double, ptr %S, i64 %out.row", "  br label %out.copy",
        "out.copy:", "  %q = phi i64 [0, %out.start], [%q.next, %out.copy]",
        "  %zp = getelementptr inbounds double, ptr %from.row, i64 %q", "  %z = load double, ptr %zp, align 8",
        "  %wp = getelementptr inbounds double, ptr %dst.a, i64 %q", "  store double %z, ptr %wp, align 8",
        "  %q.next = add nuw nsw i64 %q, 1", "  %q.more = icmp slt i64 %q.next, %m",
        "  br i1 %q.more, label %out.copy, label %out.end",
        "out.end:", "  %j.next = add nuw nsw i64 %j, 1", f"  %j.more = icmp slt i64 %j.next, {n_outputs}",
        "  br i1 %j.more, label %out, label %block.end",
        "block.end:", f"  %a.next = add nuw nsw i64 %a, {ROW}", "  %a.more = icmp slt i64 %a.next, %n",
        "  br i1 %a.more, label %block, label %end",
        "end:", "  ret void", "}", ""])


# -- compiling, loading, running -------------------------------------------------------------------
_RUN = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * 4, ctypes.c_int64, *[ctypes.c_void_p] * 3)


@dataclass(eq=False)
class Kernel:
    """A compiled program: the native ``run``, its tables, and where each output is found."""

    run: Any
    engine: Any  # owns the machine code
    rows: int  # scratch rows: the inputs, then the columns
    constants: np.ndarray
    helpers: np.ndarray  # function addresses
    keep: tuple[Any, ...]  # the Numba callbacks whose addresses ``helpers`` holds
    output_rows: np.ndarray  # per output: its scratch row, or -1 for a constant
    fills: tuple[tuple[int, float], ...]  # (output, value) of the constant outputs


#: Kernels alive in this process by the hash of their IR: another program of the same shape (or
#: another pattern of numbers) reuses the machine code with its own tables.
_LIVE: weakref.WeakValueDictionary[str, Any] = weakref.WeakValueDictionary()
_LIVE_LOCK = threading.Lock()


def kernel(program: Program, scalars: tuple[bool, ...], chunk: int = CHUNK, cache: bool = True) -> Kernel:
    """The program compiled for this CPU (every pattern of numbers and arrays alike), from the
    persistent cache when ``cache`` and it holds this IR; ImportError without Numba."""
    target = _target()
    source, tables = kernel_source(program, scalars, chunk, target.width)
    digest = cache_key("numba", target.identity, source)
    with _LIVE_LOCK:
        code = _LIVE.get(digest)
        if code is None:
            code = _Code(*_machine_code(target, source, digest, cache and len(program.steps) >= CACHE_MIN_STEPS))
            _LIVE[digest] = code
    keep, addresses = [], []
    for key in tables.helpers:
        if key[0] != "fn":
            addresses.append(_address(key))
        else:
            made = _callback(key[1], key[2])
            keep.append(made)
            addresses.append(made.address)
    n_inputs, column = program.n_inputs, tables.cut.column
    output_rows = np.array([k if kind == "in" else n_inputs + column[k] if kind == "t" else -1
                            for kind, k in program.outputs], dtype=np.int64)
    fills = tuple((j, float(v)) for j, (kind, v) in enumerate(program.outputs) if kind == "c")
    return Kernel(code.run, code, n_inputs + tables.cut.columns, np.array(tables.values or [0.0]),
                  np.array(addresses or [0], dtype=np.uintp), tuple(keep), output_rows, fills)


class _Code:
    """Machine code loaded into its own engine, and its entry point."""

    def __init__(self, engine: Any, run: Any) -> None:
        self.engine, self.run = engine, run


def _machine_code(target: _Target, source: str, digest: str, cache: bool) -> tuple[Any, Any]:
    """Load the object code of ``source`` from the cache, or compile and store it."""
    llvm = target.llvm
    data = cache_load("numba", digest) if cache else None
    if data is not None:
        try:
            return _load(llvm, target, data)
        except Exception:  # an entry that does not load is rebuilt, never trusted
            pass
    data = _compile(target, source)
    if cache:
        cache_store("numba", digest, data)
    return _load(llvm, target, data)


def _compile(target: _Target, source: str) -> bytes:
    """LLVM IR text -> object code for this CPU."""
    module = target.llvm.parse_assembly(source)
    module.verify()
    code: bytes = target.machine().emit_object(module)  # llvmlite gives the object file as bytes
    return code


def _load(llvm: Any, target: _Target, data: bytes) -> tuple[Any, Any]:
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), target.machine())
    engine.add_object_file(llvm.ObjectFileRef.from_data(data))
    engine.finalize_object()
    address = engine.get_function_address("run")
    if not address:
        raise LookupError("the object code has no run function")
    return engine, _RUN(address)


def _aligned(size: int) -> np.ndarray:
    """Zeros, 64-byte aligned (a vector load never straddles a cache line)."""
    raw = np.zeros(size + 8)
    skip = (-raw.ctypes.data % 64) // 8
    return raw[skip:skip + size]


def worker(kernel: Kernel, step: int) -> Callable[[Sequence[Any], Sequence[np.ndarray]], None]:
    """A thread's runner, with its own scratch: inputs (numbers, or contiguous slices) -> outputs."""
    scratch = _aligned(kernel.rows * ROW)

    def run(ins: Sequence[Any], outs: Sequence[np.ndarray]) -> None:
        numbers = np.array([np.ndim(v) == 0 for v in ins], dtype=np.uint8)
        values = np.array([v if flag else 0.0 for v, flag in zip(ins, numbers)], dtype=float)
        pointers = np.array([values.ctypes.data + 8 * k if flag else v.ctypes.data
                             for k, (v, flag) in enumerate(zip(ins, numbers))], dtype=np.uintp)
        targets = np.array([o.ctypes.data for o in outs], dtype=np.uintp)
        kernel.run(pointers.ctypes.data, numbers.ctypes.data, targets.ctypes.data, kernel.output_rows.ctypes.data,
                   outs[0].shape[0], scratch.ctypes.data, kernel.constants.ctypes.data, kernel.helpers.ctypes.data)
        for j, value in kernel.fills:
            outs[j][...] = value

    return run
