"""The CUDA backend: the program as one fused CuPy kernel over the points, built from ``c_body``.

Each thread computes every output of its points (a grid-stride loop), so a call reads each input
once and writes each output once: on a GPU that traffic, not the arithmetic, is the time of a
derivative program. The kernel is C from ``c_body`` wrapped in a ``RawKernel`` taking one pointer
per array (``ElementwiseKernel``'s per-array descriptors would hit CUDA's 4 KiB parameter limit
long before R1000's 2,000 arrays); an input given as one number is passed by value, never
copied to every point. NVRTC compiles with IEEE arithmetic (``OPTIONS``: no contraction into
FMA, no flush to zero, exact division and square root), so a float64 result is within the CUDA
math library's few ulps of NumPy's per elementary.

A very large program is split (``split``) into several kernels of at most ``MAX_STEPS`` steps
and ``MAX_ARRAYS`` arrays each, passing the values later kernels read through scratch arrays:
NVRTC's time grows faster than linearly with a kernel's length, and each part compiles once.

``dtype="float32"`` writes float literals and the ``f`` math functions (``expf``), so nothing
widens to double: about twice the throughput where memory bound, with results within a few
float32 ulps per elementary (CUDA: 1–4 ulp for exp, sin, log; 2^-23 ≈ 1.2e-7), which a high
derivative's cancellation can amplify to 1e-4 relative and beyond.

Without CuPy, or with CuPy but no GPU, ``function`` raises ImportError saying what to install
(``lambdify`` then warns with ``BackendWarning`` and runs NumPy); ``available()`` says whether
it would work.
"""

from __future__ import annotations

import math
import threading
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from ..devices import BackendWarning, DeviceCompiled
from ..program import Operand, Program, last_use
from .c import LOWERING as LOWERING  # CUDA is C99 (``c_body``): its table is C's
from .c import NotLowerable, c_body, ctype

NAME = "CUDA"

#: The dtypes a kernel computes in.
DTYPES = ("float64", "float32")

#: NVRTC options: IEEE arithmetic, as the CPU backends compute (its defaults would contract
#: a*b + c into one FMA, which rounds once instead of twice, and differs from NumPy).
OPTIONS = ("--fmad=false", "--ftz=false", "--prec-div=true", "--prec-sqrt=true")

#: Steps per kernel: NVRTC compiles a kernel of this length in about a second.
MAX_STEPS = 2000
#: Arrays (inputs and outputs) per kernel: 8-byte pointers well inside the 4 KiB of parameters.
MAX_ARRAYS = 256
#: Threads per block of the grid-stride loop.
THREADS = 256

#: NVRTC has no <math.h>: nan and inf as the bit patterns C99 gives them (float, which widens
#: exactly to double).
PREAMBLE = """#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fffffff)
#endif
"""

INSTALL = "pip install cupy-cuda12x (CuPy for CUDA 12)"


def available() -> bool:
    """Whether CuPy is installed and sees a CUDA GPU: what ``backend="cuda"`` needs."""
    try:
        _cupy()
    except ImportError:
        return False
    return True


def _cupy() -> Any:
    """CuPy, or ImportError saying what is missing: CuPy itself, or a GPU it can use."""
    try:
        import cupy
    except ImportError as error:
        raise ImportError(f"CuPy is not installed ({error}); {INSTALL}") from error
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as error:  # CUDARuntimeError without a driver, or CuPy's own missing-library errors
        raise ImportError(f"CuPy is installed but finds no CUDA GPU ({type(error).__name__}: {error})") from error
    if count < 1:
        raise ImportError("CuPy is installed but finds no CUDA GPU (0 devices)")
    return cupy


@dataclass(frozen=True)
class Part:
    """One kernel's share of a program, as a program of its own.

    Its inputs are ``reads``: ``("in", k)`` the call's input k, or ``("t", node)`` a value an
    earlier part wrote. Its outputs are ``writes``: ``("out", k)`` the call's output k, or
    ``("t", node)`` a scratch array that later parts read.
    """

    program: Program
    reads: tuple[Operand, ...]
    writes: tuple[tuple[str, int], ...]


def split(program: Program, max_steps: int = MAX_STEPS, max_arrays: int = MAX_ARRAYS) -> tuple[Part, ...]:
    """The program as kernels of at most ``max_steps`` steps and ``max_arrays`` arrays (a single
    step with more arrays than that still gets a kernel of its own), in program order.

    A part grows one step at a time while it fits; the values it defines that a later step
    reads leave it in scratch arrays, an output straight in the output's array. The outputs
    that are an input or a constant are written by the last part. One part when it all fits.
    """
    if not (isinstance(max_steps, int) and max_steps > 0 and isinstance(max_arrays, int) and max_arrays > 0):
        raise ValueError(f"max_steps and max_arrays must be positive ints, got {max_steps!r} and {max_arrays!r}")
    if len(program.steps) <= max_steps and program.n_inputs + len(program.outputs) <= max_arrays:
        return (Part(program, tuple(("in", k) for k in range(program.n_inputs)),
                     tuple(("out", k) for k in range(len(program.outputs)))),)
    program = Program(program.n_inputs, tuple(program.steps[s] for s in _local_order(program)), program.outputs)
    last = last_use(program)
    targets: dict[int, list[int]] = {}
    for k, (kind, v) in enumerate(program.outputs):
        if kind == "t":
            targets.setdefault(v, []).append(k)
    #: ("s", step index) or ("o", output k) for an output that is an input or a constant
    items = [("s", s) for s in range(len(program.steps))]
    items += [("o", k) for k, (kind, _) in enumerate(program.outputs) if kind != "t"]
    parts: list[Part] = []
    i = 0
    while i < len(items):
        reads: dict[Operand, None] = {}  # insertion-ordered sets: deterministic code
        alive: dict[int, None] = {}
        copies: list[int] = []
        start, count = i, 0
        while i < len(items):
            what, j = items[i]
            operands = program.steps[j][2] if what == "s" else (program.outputs[j],)
            new = {r: None for r in operands if r[0] == "in" or (r[0] == "t" and r[1] not in alive)}
            after = dict(alive)
            if what == "s":
                for kind, v in operands:
                    if kind == "t" and v in after and last[v] == j:
                        del after[v]
                dest = program.steps[j][0]
                if last.get(dest, -1) > j:
                    after[dest] = None
            arrays = (len(reads | new) + sum(len(targets.get(v, ())) or 1 for v in after)
                      + len(copies) + (what == "o"))
            if i > start and (arrays > max_arrays or count + (what == "s") > max_steps):
                break
            reads |= new
            alive = after
            if what == "s":
                count += 1
            else:
                copies.append(j)
            i += 1
        parts.append(_part(program, items[start:i], reads, alive, copies, targets))
    return tuple(parts)


def _local_order(program: Program) -> list[int]:
    """The steps in an order that computes each output's cone just before it (depth first from
    the outputs, in their order): a value is read soon after it is written, so a part hands few
    on. Tape order is forward pass then backward pass, where R1000's gradient would hand 1,900
    values through memory instead of a few hundred."""
    index = {dest: s for s, (dest, _, _, _) in enumerate(program.steps)}
    done: set[int] = set()
    order: list[int] = []
    for kind, v in program.outputs:
        if kind != "t":
            continue
        stack = [(index[v], False)]
        while stack:
            s, expanded = stack.pop()
            if expanded:
                order.append(s)
            elif s not in done:
                done.add(s)
                stack.append((s, True))
                stack.extend((index[a], False) for kind, a in reversed(program.steps[s][2])
                             if kind == "t" and index[a] not in done)
    return order


def _part(program: Program, items: Sequence[tuple[str, int]], reads: dict[Operand, None], alive: dict[int, None],
          copies: list[int], targets: dict[int, list[int]]) -> Part:
    """The program of one part: its reads renamed its inputs, the values it hands on its outputs."""
    index: dict[Operand, Operand] = {r: ("in", k) for k, r in enumerate(reads)}

    def ref(r: Operand) -> Operand:
        return index.get(r, r)

    steps = tuple((dest, op, tuple(ref(a) for a in args), fn)
                  for dest, op, args, fn in (program.steps[j] for what, j in items if what == "s"))
    outputs: list[Operand] = []
    writes: list[tuple[str, int]] = []
    for v in alive:
        for target in [("out", k) for k in targets.get(v, ())] or [("t", v)]:
            outputs.append(("t", v))
            writes.append(target)
    for k in copies:
        outputs.append(ref(program.outputs[k]))
        writes.append(("out", k))
    return Part(Program(len(reads), steps, tuple(outputs)), tuple(reads), tuple(writes))


def kernel_source(program: Program, scalars: Sequence[bool], dtype: str = "float64", name: str = "subgraph_ad") -> str:
    """A CUDA kernel ``name(n, …)`` running ``c_body`` over ``n`` points: input k from the array
    ``p<k>``, or where ``scalars[k]`` the number ``in<k>`` itself, passed by value (one number
    for every point needs no device memory); output k into the array ``q<k>``."""
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {DTYPES}, got {dtype!r}")
    t = ctype(dtype)
    params = (["const long long n"]
              + [f"const {t} in{k}" if scalars[k] else f"const {t}* __restrict__ p{k}" for k in range(program.n_inputs)]
              + [f"{t}* __restrict__ q{k}" for k in range(len(program.outputs))])
    lines = [PREAMBLE, f'extern "C" __global__ void {name}({", ".join(params)}) {{',
             "    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;",
             "         i += (long long)blockDim.x * gridDim.x) {"]
    lines += [f"        const {t} in{k} = p{k}[i];" for k in range(program.n_inputs) if not scalars[k]]
    lines += [f"        {t} out{k};" for k in range(len(program.outputs))]
    lines += [f"        {line}" for line in c_body(program, t).splitlines()]
    lines += [f"        q{k}[i] = out{k};" for k in range(len(program.outputs))]
    lines += ["    }", "}", ""]
    return "\n".join(lines)


#: Runs part p on its read arrays into its write arrays.
Launch = Callable[[int, Sequence[Any], Sequence[Any]], None]


def schedule(parts: Sequence[Part], inputs: Sequence[Any], outputs: Sequence[Any], scratch: Callable[[], Any],
             launch: Launch) -> None:
    """Run the parts in order, on any array library: ``inputs`` and ``outputs`` are the call's
    arrays, ``scratch()`` makes an array for a value that later parts read (dropped after its
    last reader, so a long program holds only the values still live)."""
    location: dict[int, Any] = {}
    last_reader = {v: p for p, part in enumerate(parts) for kind, v in part.reads if kind == "t"}
    for p, part in enumerate(parts):
        reads = [inputs[v] if kind == "in" else location[v] for kind, v in part.reads]
        writes = [outputs[v] if kind == "out" else scratch() for kind, v in part.writes]
        launch(p, reads, writes)
        for (kind, v), array in zip(part.program.outputs, writes):
            if kind == "t":
                location.setdefault(v, array)
        for v in [v for v, reader in last_reader.items() if reader == p]:
            location.pop(v, None)


def function(program: Program, dtype: str = "float64", max_steps: int = MAX_STEPS,
             max_arrays: int = MAX_ARRAYS) -> Callable[..., tuple[Any, ...]]:
    """The program on the GPU: a function of CuPy arrays, NumPy arrays (copied to the device)
    or numbers, broadcast like NumPy, returning a tuple of CuPy arrays of ``dtype``.

    The kernels for array inputs compile here (a failure raises now, not at the first call);
    one taking some inputs as single numbers compiles on first use. ImportError without CuPy
    or a GPU; ``c.NotLowerable`` for a function without a spelling or whose spelling calls a
    function C99 lacks (erfinv)."""
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {DTYPES}, got {dtype!r}")
    parts = split(program, max_steps, max_arrays)
    # written before CuPy is asked for: a function without a spelling says so on any machine
    arrays_only = [kernel_source(part.program, (False,) * part.program.n_inputs, dtype, _name(p))
                   for p, part in enumerate(parts)]
    cupy = _cupy()
    kernels: dict[tuple[int, tuple[bool, ...]], Any] = {}

    def kernel(p: int, scalars: tuple[bool, ...]) -> Any:
        if (p, scalars) not in kernels:
            source = kernel_source(parts[p].program, scalars, dtype, _name(p)) if any(scalars) else arrays_only[p]
            compiled = cupy.RawKernel(source, _name(p), options=OPTIONS)
            compiled.compile()
            kernels[p, scalars] = compiled
        return kernels[p, scalars]

    for p, part in enumerate(parts):
        kernel(p, (False,) * part.program.n_inputs)

    def call(*args: Any) -> tuple[Any, ...]:
        if len(args) != program.n_inputs:
            raise TypeError(f"expected {program.n_inputs} arguments, got {len(args)}")
        values = [_argument(cupy, a, dtype, k) for k, a in enumerate(args)]
        shape = np.broadcast_shapes(*(np.shape(a) for a in values))
        size = math.prod(shape)
        flat = [a if isinstance(a, np.generic) else cupy.ascontiguousarray(cupy.broadcast_to(a, shape)).reshape(size)
                for a in values]
        outs = [cupy.empty(size, dtype) for _ in program.outputs]
        if size:
            blocks = min(-(-size // THREADS), 2**31 - 1)

            def launch(p: int, reads: Sequence[Any], writes: Sequence[Any]) -> None:
                scalars = tuple(isinstance(a, np.generic) for a in reads)
                kernel(p, scalars)((blocks,), (THREADS,), (np.int64(size), *reads, *writes))

            schedule(parts, flat, outs, lambda: cupy.empty(size, dtype), launch)
        return tuple(o.reshape(shape) for o in outs)

    return call


def _name(p: int) -> str:
    return f"subgraph_ad_part{p}"


def _argument(cupy: Any, value: Any, dtype: str, k: int) -> Any:
    """An argument as the kernel takes it: one number as a NumPy scalar of ``dtype`` (passed by
    value; a 0-d CuPy array is read back once), an array as a CuPy array of ``dtype`` (NumPy
    arrays copied over, CuPy arrays cast only if need be); not text, None or objects."""
    if isinstance(value, cupy.ndarray):
        if value.dtype.kind not in "biuf":
            raise TypeError(f"argument {k} must be a real array, got a CuPy array of {value.dtype}")
        return np.dtype(dtype).type(value.item()) if value.ndim == 0 else value.astype(dtype, copy=False)
    array = np.asarray(value)
    if array.dtype.kind not in "biuf":
        raise TypeError(f"argument {k} must be a number or an array of numbers, got {type(value).__name__} "
                        f"{value!r:.80}")
    return np.dtype(dtype).type(array) if array.ndim == 0 else cupy.asarray(array, dtype=dtype)


class CudaCompiled(DeviceCompiled):
    """The program as fused CUDA kernels, compiled at the first call; ``fallback()`` makes the
    NumPy backend's ``Compiled`` that runs instead where CUDA cannot."""

    def __init__(self, program: Program, names: list[str], single: bool, dtype: str,
                 fallback: Callable[[], Callable[..., Any]]) -> None:
        if dtype not in DTYPES:
            raise ValueError(f"lambdify dtype must be one of {DTYPES} for backend 'cuda', got {dtype!r}")
        super().__init__(program, names, single)
        self.dtype, self._fallback = dtype, fallback
        #: "cuda", or "numpy" once CUDA turned out unusable here.
        self.backend = "cuda"
        self._function: Callable[..., Any] | None = None
        self._lock = threading.Lock()

    def _built(self) -> Callable[..., Any]:
        if self._function is None:
            with self._lock:
                if self._function is None:
                    try:
                        kernels = function(self.program, self.dtype)
                        self._function = lambda *args: self._shaped(kernels(*args))
                    except (ImportError, NotLowerable) as error:
                        warnings.warn(f"lambdify(backend='cuda'): {error}; using the NumPy backend", BackendWarning,
                                      stacklevel=5)
                        self.backend, self._function = "numpy", self._fallback()
        return self._function

    def _run(self, *args: Any) -> Any:
        return self._built()(*args)

    def __reduce__(self) -> tuple[Any, ...]:
        return (CudaCompiled, (self.program, self.names, self.single, self.dtype, self._fallback))


#: ``lambdify``'s callable (``registry.Device``).
compiled = CudaCompiled
