"""The Numba backend: each chunk of the program as one SIMD loop over the points, in LLVM.

The program is cut into chunks (``program.chunks``); each becomes one LLVM function that loops
over a block of ``ROW`` points a vector at a time (8 doubles with AVX-512, else 4): every step
is one vector instruction, so the points fill the CPU's vector lanes, and a value read by a
later chunk passes through a scratch row of the block. The chunks read each input where it
lies (a number from a row written once a call), a driver calls them in turn on each block and
copies the outputs out, so a call is one native call per thread (ctypes releases the GIL
around it), whose addresses are read once a call (``slices``).

The IR is written as text (``llvm_ir``) and compiled here by llvmlite, the LLVM binding Numba
is built on, without Numba's own front end: that costs about 2 ms a statement (13,055 steps
took 32 s, 38,783 steps 149 s) where writing IR and LLVM's code generation cost about 0.07 ms,
linear in the chunks. Functions lower through their spelling (``llvm_ir.NATIVE``, the C
library's functions); anything else — a user's own Python scalar, a function with no
spelling — is compiled by Numba as a C callback (``numba.cfunc``). Calls go through a table of addresses passed at run time, as constants do,
so the machine code depends on the program's shape only and is kept in the persistent cache
(``compile.cache``), keyed by the IR text, the CPU and the versions.
"""

from __future__ import annotations

import ctypes
import functools
import importlib.util
import threading
import types
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from ...functions import Function
from ..cache import CACHE_MIN_STEPS, cache_key, cache_load, cache_store
from ..program import CHUNK, Program, callee, define, namespace, scalar_call
from . import llvm_args, llvm_driver, llvm_ir
from .llvm_ir import LOWERING as LOWERING  # the table the backend compiles by, written there
from .llvm_args import address
from .llvm_ir import ROW, Tables

if TYPE_CHECKING:
    from .numba_point import Point

NAME = "Numba"
#: The options of ``lambdify`` this backend takes.
OPTIONS = ("chunk", "cache")
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


def kernel_source(program: Program, scalars: tuple[bool, ...] = (), chunk: int = CHUNK,
                  width: int | None = None, row: int = ROW, point: bool = False) -> tuple[str, Tables]:
    """The LLVM IR of the program for this CPU (``llvm_ir.source``) and the tables it reads, for
    this pattern of number (``scalars``) and array inputs, or for one point; ``width`` defaults
    to the host's."""
    target = _target()
    width = width or target.width
    return llvm_ir.source(program, chunk, width, target.features, width if point else row, scalars, point)


# -- Numba callbacks: what has no IR of its own ------------------------------------------------------
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


# -- compiling, loading, running -------------------------------------------------------------------
_RUN = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * 4, ctypes.c_int64, *[ctypes.c_void_p] * 3)


@dataclass(eq=False)
class Kernel:
    """A compiled program: the native ``run``, its tables, and where each output is found."""

    run: Any
    engine: Any  # owns the machine code
    rows: int  # scratch rows: the inputs, then the columns
    inputs: int
    row: int  # points per scratch row
    constants: np.ndarray
    helpers: np.ndarray  # function addresses
    keep: tuple[Any, ...]  # the Numba callbacks whose addresses ``helpers`` holds
    output_rows: np.ndarray  # per output: its scratch row, or -1 for a constant
    in_place: np.ndarray  # per input, 1 where the code reads a number as one double where it lies
    fills: tuple[tuple[int, float], ...]  # (output, value) of the constant outputs

    @functools.cached_property
    def fixed(self) -> tuple[int, int, int]:
        """The addresses of the tables every call reads as they are: output rows, constants, helpers."""
        return address(self.output_rows), address(self.constants), address(self.helpers)

    def flags(self, number: Any) -> np.ndarray:
        """The driver's flag per input (``llvm_driver.driver``) for a call where ``number`` marks
        the numbers: 0 an array, 1 a number filled over its row, 2 one read where it lies."""
        flags: np.ndarray = np.asarray(number, dtype=np.uint8) * (1 + self.in_place)
        return flags


#: Kernels alive in this process by the hash of their IR: another program of the same shape (or
#: another pattern of numbers) reuses the machine code with its own tables.
_LIVE: weakref.WeakValueDictionary[str, Any] = weakref.WeakValueDictionary()
_LIVE_LOCK = threading.Lock()


def kernel(program: Program, scalars: tuple[bool, ...], chunk: int = CHUNK, cache: bool = True,
           row: int = ROW, point: bool = False) -> Kernel:
    """The program compiled for this CPU for this pattern of numbers and arrays (or for one
    ``point``: ``Point``), from the persistent cache when ``cache`` and it holds this IR, over
    blocks of ``row`` points; ImportError without Numba."""
    target = _target()
    source, tables = kernel_source(program, scalars, chunk, target.width, row, point)
    digest = cache_key("numba", target.identity, source)
    with _LIVE_LOCK:
        code = _LIVE.get(digest)
        if code is None:
            code = _Code(*_machine_code(target, source, digest, cache and len(program.steps) >= CACHE_MIN_STEPS))
            _LIVE[digest] = code
    keep, addresses = [], []
    for key in tables.helpers:
        if key[0] != "fn":
            addresses.append(llvm_ir.address(key))
        else:
            made = _callback(key[1], key[2])
            keep.append(made)
            addresses.append(made.address)
    output_rows = np.array(llvm_ir.output_rows(program, tables.cut), dtype=np.int64)
    fills = tuple((j, float(v)) for j, (kind, v) in enumerate(program.outputs) if kind == "c")
    in_place = np.zeros(program.n_inputs, dtype=np.uint8)
    in_place[:len(tables.numbers)] = tables.numbers
    return Kernel(code.run, code, llvm_ir.rows(program, tables.cut), program.n_inputs, row, np.array(tables.values or [0.0]),
                  np.array(addresses or [0], dtype=np.uintp), tuple(keep), output_rows, in_place, fills)


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
            return _entry(_load(llvm, target, data))
        except Exception:  # an entry that does not load is rebuilt, never trusted
            pass
    data = _compile(target, source)
    if cache:
        cache_store("numba", digest, data)
    return _entry(_load(llvm, target, data))


def _entry(loaded: tuple[Any, int]) -> tuple[Any, Any]:
    """The engine and its ``run``, callable."""
    return loaded[0], _RUN(loaded[1])


def _compile(target: _Target, source: str, vectorise: bool = False) -> bytes:
    """LLVM IR text -> object code for this CPU; with ``vectorise``, after LLVM's -O2 passes
    (the loop vectoriser: IR written as scalar loops, ``fastcall``'s)."""
    llvm = target.llvm
    module = llvm.parse_assembly(source)
    module.verify()
    machine = target.machine()
    if vectorise:
        options = llvm.create_pipeline_tuning_options(speed_level=2)
        options.loop_vectorization = True
        builder = llvm.create_pass_builder(machine, options)
        builder.getModulePassManager().run(module, builder)
    code: bytes = machine.emit_object(module)  # llvmlite gives the object file as bytes
    return code


def _load(llvm: Any, target: _Target, data: bytes, name: str = "run") -> tuple[Any, int]:
    """Object code in an engine of its own (which owns it), and the address of ``name`` there."""
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), target.machine())
    engine.add_object_file(llvm.ObjectFileRef.from_data(data))
    engine.finalize_object()
    address: int = engine.get_function_address(name)
    if not address:
        raise LookupError(f"the object code has no {name} function")
    return engine, address


@functools.cache
def reader() -> llvm_args.Reader | None:
    """The native reader of a call's arguments (``llvm_args``), compiled once a process (~15 ms,
    not worth a cache entry); None where the objects' layout is not the one it reads, or
    without Numba."""
    at = llvm_args.layout()
    if at is None:
        return None
    try:
        target = _target()
    except ImportError:
        return None
    return llvm_args.Reader(lambda source, name: _load(target.llvm, target, _compile(target, source), name), at)


def aligned(size: int) -> np.ndarray:
    """Zeros, 64-byte aligned (a vector load never straddles a cache line)."""
    raw = np.zeros(size + 8)
    skip = (-raw.ctypes.data % 64) // 8
    return raw[skip:skip + size]


#: Per thread: the scratch its last kernel call used, lent to the next one that fits in it (a
#: large program's scratch is megabytes: allocating and faulting it in per call cost 0.35 ms).
_SPARE = threading.local()


def _scratch(size: int) -> np.ndarray:
    """A scratch of ``size`` doubles, 64-byte aligned: this thread's spare where it is large
    enough (taken, so a call nested in a callback gets its own), else a new one."""
    spare: np.ndarray | None = getattr(_SPARE, "buffer", None)
    if spare is not None and spare.size >= size:
        _SPARE.buffer = None
        return spare
    return aligned(size)


def _spare(buffer: np.ndarray) -> None:
    """Keep ``buffer`` as this thread's spare (the larger of it and the one kept)."""
    kept: np.ndarray | None = getattr(_SPARE, "buffer", None)
    if kept is None or kept.size < buffer.size:
        _SPARE.buffer = buffer


def read(ins: Sequence[Any]) -> llvm_args.Read:
    """The driver's table of inputs (numbers, or float64 vectors of the points, contiguous or
    not) read from Python, where the native ``reader`` does not take them."""
    count = len(ins)
    arrays = [type(v) is np.ndarray and v.ndim > 0 for v in ins]
    values = np.array([0.0 if array else v for v, array in zip(ins, arrays)], dtype=float)
    table = np.array([address(v) if array else 0 for v, array in zip(ins, arrays)]
                     + [_apart(v) if array else 0 for v, array in zip(ins, arrays)], dtype=np.uintp)
    numbers = np.logical_not(arrays).astype(np.uint8)
    table[:count][numbers == 1] = address(values) + 8 * np.flatnonzero(numbers).astype(np.uintp)
    size = next((len(v) for v, array in zip(ins, arrays) if array), 0)
    return llvm_args.Read(table, values, numbers, size, (ins, values))


def _apart(vector: np.ndarray) -> int:
    """Doubles between a vector's points; any for one point, which NumPy calls contiguous
    whatever its stride (a one-point view of a reversed vector: -1)."""
    return vector.strides[0] // 8 if len(vector) > 1 else 1


def slices(kernel: Kernel, ins: Sequence[Any] | llvm_args.Read, outs: Sequence[np.ndarray],
           targets: np.ndarray | None = None) -> Callable[[], Callable[[int, int], None]]:
    """The runners of slices of one call (the inputs: numbers, or float64 vectors of the points,
    contiguous or not, or those already ``read``; the outputs' vectors): every address is read
    once per call, and a slice (a, b) moves them by a points with one vector addition, so a
    program of hundreds of inputs costs microseconds a slice, not a Python step per input
    (``targets``: the outputs' addresses and then the doubles between their points, where the
    caller knows them: ``feed.outputs``). Each runner has its own scratch."""
    given = ins if isinstance(ins, llvm_args.Read) else read(ins)
    count, table = len(given.numbers), given.table
    numbers = kernel.flags(given.numbers)
    moves = np.zeros(2 * count, dtype=np.uintp)
    moves[:count] = table[count:] * np.uintp(8)  # bytes a point moves each input (0: a number)
    if targets is None:
        targets = table_of(outs)
    out_moves = np.zeros(len(targets), dtype=np.uintp)
    out_moves[:len(outs)] = targets[len(outs):] * np.uintp(8)

    size = llvm_driver.scratch(kernel.rows, kernel.inputs, kernel.row, len(kernel.output_rows))
    flags, (rows, constants, helpers) = address(numbers), kernel.fixed

    def runner() -> Callable[[int, int], None]:
        def run(a: int, b: int, _held: tuple[Any, ...] = (given, numbers)) -> None:  # (alive while it runs)
            pointers, at = table + moves * np.uintp(a), targets + out_moves * np.uintp(a)
            scratch = _scratch(size)
            kernel.run(address(pointers), flags, address(at), rows, b - a, address(scratch), constants, helpers)
            _spare(scratch)
            for j, value in kernel.fills:
                outs[j][a:b] = value

        return run

    return runner


def table_of(outs: Sequence[np.ndarray]) -> np.ndarray:
    """The driver's table of vectors of points: their addresses, then the doubles between
    their points."""
    return np.array([address(o) for o in outs] + [o.strides[0] // 8 for o in outs], dtype=np.uintp)


def point(program: Program, chunk: int = CHUNK, cache: bool = True) -> Point:
    """The program on one point: its kernel for one vector (``llvm_driver.point_driver``), run
    by a ``numba_point.Point``."""
    from .numba_point import Point

    return Point(kernel(program, (), chunk, cache, point=True), program, _target().width)


def worker(kernel: Kernel, step: int) -> Callable[[Sequence[Any], Sequence[np.ndarray]], None]:
    """A thread's runner (``registry.Host``): inputs (numbers, or slices of the points) -> outputs."""

    def run(ins: Sequence[Any], outs: Sequence[np.ndarray]) -> None:
        slices(kernel, ins, outs)()(0, len(outs[0]))

    return run
