"""``lambdify``: straight-line code for the nodes some outputs need, like ``sympy.lambdify``.

The nodes are laid out once, at compile time, into a program with one statement per node, so a
call does no per-node Python dispatch. Two backends run that program:

- ``"numpy"`` (default): NumPy ufuncs over blocks of points. Each intermediate lives in a
  register (a preallocated block-sized buffer) that is reused as soon as its value is dead
  (liveness over the straight-line order), and every ufunc writes with ``out=``: no allocation
  per node, and a block's working set stays in cache. Blocks are shared out over the cores
  (NumPy releases the GIL inside a ufunc).
- ``"numba"``: the same statements as scalar code inside one loop over the points (run on
  slices of them by every core), compiled by Numba (``pip install 'subgraph_ad[numba]'``). Without Numba, or for a user
  ``UnaryFn`` whose ``f`` Numba cannot compile, it warns (``BackendWarning``) and uses
  ``"numpy"``: results are the same, only speed differs. An input passed as one number stays
  one number (no array of copies); the kernel for all-array inputs is compiled by ``lambdify``,
  one for another mix of numbers and arrays on its first call.

A compiled function works elementwise on NumPy arrays, and on Dask arrays blockwise
(``dask.array.map_blocks`` under the hood; the result is a lazy Dask array). It pickles, so
Dask's distributed workers can run it.

>>> import numpy as np
>>> from subgraph_ad import Tape, lambdify, sin
>>> tape = Tape(); x = tape.var("x"); y = tape.var("y")
>>> f = lambdify([x, y], x * y + sin(x))
>>> round(f(0.5, 4.2), 6)
2.579426
>>> f(np.array([0.0, 1.0]), 2.0)
array([0.        , 2.84147098])
"""

from __future__ import annotations

import functools
import math
import os
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from ..functions import Exp, Log, Sigmoid, SinFn, Sqrt, Tan, Tanh, UnaryFn
from ..core import Tape, Term, dependencies

#: Points per block of the NumPy backend: 16384 float64 = 128 KiB per register (measured best).
BLOCK = 16384

_INFIX = {"add": "+", "sub": "-", "mul": "*", "div": "/"}
_UFUNC = {"add": "_np.add", "sub": "_np.subtract", "mul": "_np.multiply", "div": "_np.divide",
          "pow": "_np.power"}


@functools.lru_cache(maxsize=None)
def _cpu_count() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


@functools.lru_cache(maxsize=None)
def _pool(threads: int) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(threads, thread_name_prefix="subgraph_ad")


class BackendWarning(UserWarning):
    """A requested backend is not usable here; the NumPy backend runs instead."""


def _as_list(items: Any, what: str) -> tuple[list[Term], bool]:
    if isinstance(items, Term):
        return [items], True
    if isinstance(items, (list, tuple)) and items and all(isinstance(t, Term) for t in items):
        return list(items), False
    raise TypeError(f"lambdify {what} must be a Term or a non-empty list of Terms, got {items!r}")


def _const(value: float) -> str:
    if value != value:
        return "_nan"
    if value in (float("inf"), float("-inf")):
        return "_inf" if value > 0 else "(-_inf)"
    return repr(value)


@dataclass(frozen=True)
class Program:
    """The straight-line program: one (dest, op, operands, fn) per node, in tape order.

    Operands are ``("in", k)`` inputs, ``("c", value)`` constants and ``("t", node)`` temporaries;
    it holds no tape, so it pickles alone.
    """

    n_inputs: int
    steps: tuple[tuple[int, str, tuple[tuple[str, Any], ...], UnaryFn | None], ...]
    outputs: tuple[tuple[str, Any], ...]


def build_program(tape: Tape, inputs: Sequence[Term], outputs: Sequence[Term]) -> Program:
    """Lay out the nodes the outputs need (iterative, in tape order)."""
    input_index = {v.index: k for k, v in enumerate(inputs)}
    refs: dict[int, tuple[str, Any]] = {}
    steps = []
    for i in dependencies(tape, [t.index for t in outputs]):
        node = tape.nodes[i]
        if node.op == "var":
            if i not in input_index:
                raise ValueError(
                    f"an output depends on var {node.payload!r}, which is not among the inputs "
                    f"{[tape.nodes[v].payload for v in input_index]}"
                )
            refs[i] = ("in", input_index[i])
        elif node.op == "const":
            refs[i] = ("c", float(node.payload))
        else:
            steps.append((i, node.op, tuple(refs[a] for a in node.args),
                          node.payload if node.op == "fn" else None))
            refs[i] = ("t", i)
    return Program(len(inputs), tuple(steps), tuple(refs[t.index] for t in outputs))


# -- expression code: scalars, and the body of the Numba loop ------------------------------------
def _scalar_fn(fn: UnaryFn, arg: str, name: str, numba: bool) -> tuple[str, Any]:
    """A scalar call for ``fn``: math functions for the built-ins, else fn.f itself."""
    if numba:
        if type(fn) is SinFn:
            base = f"_math.{'sin' if fn.n % 2 == 0 else 'cos'}({arg})"
            return (f"-{base}" if fn.n >= 2 else base), None
        simple = {Exp: "exp", Log: "_log", Tan: "tan", Sqrt: "_sqrt", Tanh: "tanh"}
        if type(fn) in simple:
            f = simple[type(fn)]
            return (f"_math.{f}({arg})" if not f.startswith("_") else f"{f}({arg})"), None
        if type(fn) is Sigmoid:
            return f"_sigmoid({arg})", None
        func = getattr(fn.f, "__func__", None)
        if func is not None:  # a method that ignores self compiles with self=None
            return f"{name}(None, {arg})", func
    return f"{name}({arg})", fn.f


def expression_source(program: Program, numba: bool = False,
                      scalars: tuple[bool, ...] = ()) -> tuple[str, dict[str, Any]]:
    """``_f(v0, ...)`` as one assignment per node (``numba``: a loop over points writing outs,
    where the inputs flagged in ``scalars`` are one number for every point)."""
    namespace: dict[str, Any] = {"_np": np, "_nan": np.nan, "_inf": np.inf}
    ins = [f"v{k}" for k in range(program.n_inputs)]

    def ref(r: tuple[str, Any]) -> str:
        kind, v = r
        if kind == "in":
            return f"a{v}" if numba else f"v{v}"
        return _const(v) if kind == "c" else f"t{v}"

    body = []
    for dest, op, args, fn in program.steps:
        a = [ref(r) for r in args]
        if op == "fn":
            expr, value = _scalar_fn(fn, a[0], f"_fn{dest}", numba)
            if value is not None:
                namespace[f"_fn{dest}"] = value
        elif op == "neg":
            expr = f"-{a[0]}"
        elif op == "pow" and numba and args[1][0] == "c" and float(args[1][1]).is_integer():
            # an int power: multiplications, not a pow() call; a negative one as 1/(x ** k),
            # since Numba's int power raises for 0 ** -k where 1/0 gives inf
            e = int(args[1][1])
            expr = f"{a[0]} ** {e}" if e >= 0 else f"1.0 / ({a[0]} ** {-e})"
        elif op == "pow":
            expr = f"{a[0]} ** {a[1]}" if numba else f"_np.power({a[0]}, {a[1]})"
        else:
            expr = f"{a[0]} {_INFIX[op]} {a[1]}"
        body.append(f"t{dest} = {expr}")
    outs = [ref(r) for r in program.outputs]
    if not numba:
        lines = [f"def _f({', '.join(ins)}):"] + [f"    {b}" for b in body]
        lines.append(f"    return ({', '.join(outs)},)")
        return "\n".join(lines) + "\n", namespace
    out_args = [f"o{k}" for k in range(len(outs))]
    lines = [f"def _f({', '.join(ins + out_args)}):", f"    for _p in range({out_args[0]}.shape[0]):"]
    lines += [f"        a{k} = v{k}" + ("" if k < len(scalars) and scalars[k] else "[_p]")
              for k in range(program.n_inputs)]
    lines += [f"        {b}" for b in body]
    lines += [f"        {o}[_p] = {e}" for o, e in zip(out_args, outs)]
    return "\n".join(lines) + "\n", namespace


# -- block code with register reuse: the NumPy backend --------------------------------------------
def _ufunc_fn(fn: UnaryFn, a: str, r: str, name: str) -> tuple[list[str], Any]:
    if type(fn) is SinFn:
        lines = [f"_np.{'sin' if fn.n % 2 == 0 else 'cos'}({a}, out={r})"]
        return lines + ([f"_np.negative({r}, out={r})"] if fn.n >= 2 else []), None
    simple = {Exp: "exp", Log: "log", Tan: "tan", Sqrt: "sqrt", Tanh: "tanh"}
    if type(fn) in simple:
        return [f"_np.{simple[type(fn)]}({a}, out={r})"], None
    if type(fn) is Sigmoid:  # exp(-logaddexp(0, -v)): no overflow for large -v
        return [f"_np.negative({a}, out={r})", f"_np.logaddexp(0.0, {r}, out={r})",
                f"_np.negative({r}, out={r})", f"_np.exp({r}, out={r})"], None
    return [f"_np.copyto({r}, {name}({a}))"], fn.f


def _output_chains(program: Program) -> dict[int, int]:
    """Node -> the output k whose buffer it can be computed in: each output node, and walking
    back from it, one operand that is a temporary read only by that step. Such a value dies
    exactly where the next one of its chain is written over it (ufuncs work elementwise), so
    a chain needs no register and its values never leave the output block."""
    reads: dict[int, int] = {}
    for _, _, args, _ in program.steps:
        for kind, v in args:
            if kind == "t":
                reads[v] = reads.get(v, 0) + 1
    for kind, v in program.outputs:
        if kind == "t":
            reads[v] = reads.get(v, 0) + 1
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


def block_source(program: Program, scalars: tuple[bool, ...] = ()) -> tuple[str, dict[str, Any], int]:
    """``_f(v0, ..., _O, _n, _B, _R)``: the program over the ``_n`` points in blocks of ``_B``,
    temporaries in registers ``_R[k]`` (block-sized buffers), outputs written into ``_O[k]``.
    The inputs flagged in ``scalars`` are one number for every point.

    The loop over blocks is part of the generated code, so a block costs slicing, not Python
    calls. Output nodes, and the chains of single-use values leading to them, are computed in
    the output block itself (``_output_chains``); any other temporary gets the lowest free
    register, freed after the last statement that reads it. Inputs are never written. Returns
    the source, its namespace and the number of registers.
    """
    last_use: dict[int, int] = {}
    for s, (_, _, args, _) in enumerate(program.steps):
        for kind, v in args:
            if kind == "t":
                last_use[v] = s
    location = {v: f"o{k}" for v, k in _output_chains(program).items()}  # node -> its block
    for kind, v in program.outputs:
        if kind == "t":
            last_use[v] = len(program.steps)
    namespace: dict[str, Any] = {"_np": np, "_nan": np.nan, "_inf": np.inf}
    register: dict[int, int] = {}
    free: list[int] = []
    count = 0

    def ref(r: tuple[str, Any]) -> str:
        kind, v = r
        if kind == "in":
            return f"v{v}" if v < len(scalars) and scalars[v] else f"b{v}"
        return _const(v) if kind == "c" else location[v]

    body: list[str] = []
    for s, (dest, op, args, fn) in enumerate(program.steps):
        a = [ref(r) for r in args]
        for kind, v in args:  # operands dying here may be overwritten by this very ufunc
            if kind == "t" and last_use[v] == s and v in register and register[v] not in free:
                free.append(register[v])
        if dest not in location:
            if free:
                free.sort()
                register[dest] = free.pop(0)
            else:
                register[dest], count = count, count + 1
            location[dest] = f"r{register[dest]}"
            if dest not in last_use:  # never read: free after this statement
                free.append(register[dest])
        r = location[dest]
        if op == "fn":
            lines, value = _ufunc_fn(fn, a[0], r, f"_fn{dest}")
            if value is not None:
                namespace[f"_fn{dest}"] = value
        elif op == "neg":
            lines = [f"_np.negative({a[0]}, out={r})"]
        else:
            lines = [f"{_UFUNC[op]}({a[0]}, {a[1]}, out={r})"]
        body += lines
    for k, r in enumerate(program.outputs):  # inputs, constants, a node listed twice
        if ref(r) != f"o{k}":
            body.append(f"o{k}[...] = {ref(r)}")
    regs = [f"r{k}" for k in range(count)]
    arrays = [k for k in range(program.n_inputs) if not (k < len(scalars) and scalars[k])]
    ins = [f"v{k}" for k in range(program.n_inputs)]
    head = [f"def _f({', '.join(ins + ['_O', '_n', '_B', '_R'])}):"]
    if regs:
        head.append(f"    {', '.join(regs)}, = _R")
    head += ["    for _a in range(0, _n, _B):", "        _b = _a + _B",
             "        if _b > _n:  # the last, shorter block", "            _b = _n"]
    head += [f"            {r} = {r}[:_b - _a]" for r in regs] or ["            pass"]
    head += [f"        b{k} = v{k}[_a:_b]" for k in arrays]
    head += [f"        o{k} = _O[{k}][_a:_b]" for k in range(len(program.outputs))]
    return "\n".join(head + [f"        {b}" for b in body]) + "\n", namespace, count


def _exec(source: str, namespace: dict[str, Any], label: str) -> Callable[..., Any]:
    exec(compile(source, f"<subgraph_ad.lambdify:{label}>", "exec"), namespace)  # our own code
    return namespace["_f"]


@functools.cache
def _numba_helpers() -> dict[str, Any]:
    """The functions the Numba loop calls besides ``math``'s, jitted once per process."""
    import numba

    @numba.njit(error_model="numpy")
    def _sigmoid(v: float) -> float:
        if v >= 0.0:
            return 1.0 / (1.0 + math.exp(-v))
        e = math.exp(v)
        return e / (1.0 + e)

    @numba.njit(error_model="numpy")
    def _log(v: float) -> float:  # math.log raises on v <= 0 in Python semantics; IEEE here
        return np.log(v)

    @numba.njit(error_model="numpy")
    def _sqrt(v: float) -> float:
        return np.sqrt(v)

    return {"_math": math, "_sigmoid": _sigmoid, "_log": _log, "_sqrt": _sqrt}


def _numba_kernel(program: Program, scalars: tuple[bool, ...]) -> Callable[..., Any]:
    """Compile the loop with Numba, eagerly (so compile errors surface here, not at call time),
    for inputs that are arrays or, where ``scalars`` says so, single numbers."""
    import numba

    source, namespace = expression_source(program, numba=True, scalars=scalars)
    for name, value in list(namespace.items()):
        if name.startswith("_fn"):
            namespace[name] = numba.njit(value)
    namespace.update(_numba_helpers())
    py = _exec(source, namespace, "numba")
    array = numba.float64[::1]
    ins = [numba.float64 if scalar else array for scalar in scalars]
    signature = numba.void(*ins, *([array] * len(program.outputs)))
    # nogil: Compiled runs slices of the points on several threads (Numba's own parallel=True
    # costs ~6 ms per call to start its pool: more than a whole evaluation here)
    return numba.njit(signature, nogil=True, error_model="numpy", cache=False)(py)


#: Runs the program over points a..b of the inputs into the same points of the outputs.
Run = Callable[[int, int], None]


def _part(values: np.ndarray, start: int, stop: int) -> np.ndarray:
    """Points start..stop of an input; a single number is the same for every slice."""
    return values if values.ndim == 0 else values[start:stop]


class Compiled:
    """A compiled function of the inputs: a value for one output, a tuple for a list."""

    def __init__(self, program: Program, names: list[str], single: bool, backend: str,
                 block: int = BLOCK, parallel: bool = True) -> None:
        if backend not in ("numpy", "numba"):
            raise ValueError(f"lambdify backend must be 'numpy' or 'numba', got {backend!r}")
        if not (isinstance(block, int) and block > 0):
            raise ValueError(f"lambdify block must be a positive int, got {block!r}")
        self.program, self.names, self.single = program, names, single
        self.block, self.parallel = block, parallel
        source, namespace = expression_source(program)
        self._scalar = _exec(source, namespace, "scalar")
        self.source = source
        arrays_only = (False,) * program.n_inputs
        self.block_source, namespace, registers = block_source(program, arrays_only)
        self._blocks: dict[tuple[bool, ...], tuple[Callable[..., None], int]] = {
            arrays_only: (_exec(self.block_source, namespace, "block"), registers)}
        self.backend = "numpy"
        self._kernels: dict[tuple[bool, ...], Callable[..., Any]] = {}
        if backend == "numba":
            try:
                self._kernels[arrays_only] = _numba_kernel(program, arrays_only)
                self.backend = "numba"
            except ImportError:
                warnings.warn("lambdify(backend='numba'): Numba is not installed "
                              "(pip install 'subgraph_ad[numba]'); using the NumPy backend",
                              BackendWarning, stacklevel=3)
            except Exception as error:  # e.g. a user UnaryFn.f that Numba cannot type
                warnings.warn(f"lambdify(backend='numba'): Numba could not compile this program "
                              f"({type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}); "
                              "using the NumPy backend", BackendWarning, stacklevel=3)

    def __reduce__(self) -> tuple[Any, ...]:
        # Rebuilt from the program on unpickling (e.g. on a Dask worker): code objects and
        # Numba kernels do not travel, the program does.
        return (Compiled, (self.program, self.names, self.single, self.backend, self.block, self.parallel))

    def __repr__(self) -> str:
        return (f"<lambdify ({', '.join(self.names)}) -> {len(self.program.outputs)} output(s), "
                f"{len(self.program.steps)} steps, backend {self.backend}>")

    def __call__(self, *args: Any) -> Any:
        if len(args) != len(self.names):
            raise TypeError(f"expected {len(self.names)} arguments ({', '.join(self.names)}), got {len(args)}")
        if any(hasattr(a, "__dask_graph__") for a in args):
            return self._dask(args)
        arrays = [np.asarray(a, dtype=float) for a in args]
        shape = np.broadcast_shapes(*(a.shape for a in arrays))
        if not shape:
            with np.errstate(all="ignore"):
                results = self._scalar(*(np.float64(a) for a in arrays))
            results = tuple(float(r) for r in results)
        else:
            results = self._arrays(arrays, shape)
        return results[0] if self.single else results

    def _kernel(self, scalars: tuple[bool, ...]) -> Callable[..., Any]:
        """The Numba kernel for this pattern of scalar and array inputs, compiled once."""
        if scalars not in self._kernels:
            self._kernels[scalars] = _numba_kernel(self.program, scalars)
        return self._kernels[scalars]

    def _arrays(self, arrays: list[np.ndarray], shape: tuple[int, ...]) -> tuple[np.ndarray, ...]:
        size = math.prod(shape)
        # A single number stays one (a ufunc or the kernel broadcasts it, no copy per point);
        # other broadcasts are copied, as the kernel takes contiguous arrays of the points.
        flat = [np.float64(a) if a.ndim == 0 else
                np.ascontiguousarray(a if a.shape == shape else np.broadcast_to(a, shape).copy()).reshape(size)
                for a in arrays]
        outs = [np.empty(size) for _ in self.program.outputs]
        if size:
            worker = self._numba_worker if self.backend == "numba" else self._numpy_worker
            self._split(worker(flat, outs), size)
        return tuple(o.reshape(shape) for o in outs)

    def _numba_worker(self, flat: list[np.ndarray], outs: list[np.ndarray]) -> Callable[[], Run]:
        """The kernel for this pattern of numbers and arrays; it keeps no state, so every thread
        runs the same one."""
        kernel = self._kernel(tuple(v.ndim == 0 for v in flat))

        def run(a: int, b: int) -> None:
            kernel(*(_part(v, a, b) for v in flat), *(o[a:b] for o in outs))

        return lambda: run

    def _numpy_worker(self, flat: list[np.ndarray], outs: list[np.ndarray]) -> Callable[[], Run]:
        """The block program for this pattern of numbers and arrays among the inputs (generated
        once); each thread gets its own block-sized registers."""
        scalars = tuple(v.ndim == 0 for v in flat)
        if scalars not in self._blocks:
            source, namespace, registers = block_source(self.program, scalars)
            self._blocks[scalars] = _exec(source, namespace, "block"), registers
        block, registers = self._blocks[scalars]
        step = min(self.block, outs[0].shape[0])

        def worker() -> Run:
            own = [np.empty(step) for _ in range(registers)]

            def run(a: int, b: int) -> None:
                with np.errstate(all="ignore"):
                    block(*(_part(v, a, b) for v in flat), [o[a:b] for o in outs], b - a, step, own)

            return run

        return worker

    def _split(self, worker: Callable[[], Run], size: int) -> None:
        """Run the points in block-sized slices on every core, ``worker()`` making each
        thread's runner once. Both backends' work runs without the GIL — the Numba kernel is
        ``nogil``, and NumPy releases it inside each ufunc over a block (``sin`` of 1e5 points:
        1.7x faster on two cores) — so plain threads scale. The calling thread works too and
        slices are handed out one at a time: a pool thread that wakes up late (costly on a VM)
        takes fewer slices instead of holding up the call."""
        starts = range(0, size, self.block)
        threads = min(_cpu_count(), len(starts)) if self.parallel else 1
        if threads <= 1:
            worker()(0, size)
            return
        todo, lock = iter(starts), threading.Lock()

        def work() -> None:
            run = worker()
            while True:
                with lock:
                    a = next(todo, None)
                if a is None:
                    return
                run(a, min(a + self.block, size))

        pool = _pool(threads - 1)
        jobs = [pool.submit(work) for _ in range(threads - 1)]
        work()
        for job in jobs:
            job.result()

    def _stacked(self, *blocks: Any) -> np.ndarray:
        results = self(*blocks)
        return np.stack([results] if self.single else list(results))

    def _dask(self, args: tuple[Any, ...]) -> Any:
        """Blockwise over Dask arrays: one map_blocks task per chunk computes every output."""
        import dask.array as da

        arrays = da.broadcast_arrays(*(da.asarray(a, dtype=float) for a in args))
        reference = next((a for a, orig in zip(arrays, args) if hasattr(orig, "__dask_graph__")), arrays[0])
        arrays = [a.rechunk(reference.chunks) for a in arrays]
        n = len(self.program.outputs)
        if self.single:
            return da.map_blocks(self, *arrays, dtype=float)
        stacked = da.map_blocks(self._stacked, *arrays, new_axis=0, chunks=((n,),) + reference.chunks,
                                dtype=float)
        return tuple(stacked[k] for k in range(n))


def lambdify(inputs: Term | Sequence[Term], outputs: Term | Sequence[Term], backend: str = "numpy",
             block: int = BLOCK, parallel: bool = True) -> Compiled:
    """Compile ``outputs`` as a function of the vars ``inputs``.

    Returns a value for one output and a tuple for a list; works elementwise on arrays, with
    every output broadcast to the inputs' common shape, and on Dask arrays blockwise. IEEE
    semantics: never raises on values. ``backend`` is ``"numpy"`` or ``"numba"`` (falls back to
    NumPy with a ``BackendWarning`` when unusable); ``block`` is the NumPy backend's points per
    block; ``parallel`` lets either backend share the blocks out over every core.
    """
    ins, _ = _as_list(inputs, "inputs")
    outs, single = _as_list(outputs, "outputs")
    tape = ins[0].tape
    for v in ins:
        tape.check_var(v, "lambdify input")
    if len({v.index for v in ins}) != len(ins):
        raise ValueError(f"lambdify inputs repeat a var: {[v.name for v in ins]}")
    for t in outs:
        ins[0]._lift(t)  # same tape, or a clear ValueError
    program = build_program(tape, ins, outs)
    return Compiled(program, [v.name for v in ins], single, backend, block, parallel)
