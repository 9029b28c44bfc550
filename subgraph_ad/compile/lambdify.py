"""``lambdify``: straight-line code for the nodes some outputs need, like ``sympy.lambdify``.

The nodes are laid out once into a program with one statement per node, so a call does no
per-node Python dispatch. Nothing more is generated until a call needs it, and then once: the
one-point code on the first call with numbers, each backend's kernel on the first call with
its pattern of numbers and arrays. Big programs are compiled in chunks of ``chunk`` steps
(``program.chunks``), so compiling takes time linear in the program's size. Each backend is one
module, found by name in ``registry.BACKENDS`` (a function lowers itself, so none knows the
built-ins). Two run the program on NumPy arrays; ``"jax"`` and ``"cuda"`` hand it to other
array libraries (``devices``):

- ``"numpy"`` (default): NumPy ufuncs over blocks of points. Each intermediate lives in a
  register (a preallocated block-sized buffer) that is reused as soon as its value is dead
  (liveness over the straight-line order), and every ufunc writes with ``out=``: no allocation
  per node, and a block's working set stays in cache. Blocks are shared out over the cores
  (NumPy releases the GIL inside a ufunc).
- ``"numba"``: each chunk as one loop over the points in SIMD vectors (8 points an instruction
  with AVX-512), LLVM IR compiled through llvmlite, Numba's LLVM binding; Numba compiles what
  has no IR of its own (a user's Python function). Run on slices of the points by every core
  (``pip install numba``). Without Numba, or for a user function Numba cannot
  compile, it warns (``BackendWarning``) at the first call on arrays and uses ``"numpy"``:
  results are the same, only speed differs. An input passed as one number stays one number.

Compiled code is kept in a persistent cache (``SUBGRAPH_AD_CACHE``, a directory or ``off``;
the user's cache directory by default; ``lambdify(..., cache=False)`` to skip), keyed by its
generated text: a new process with the same program loads machine code and Python code objects
instead of compiling them. It keeps a private folder of its own there, touches no other file,
and refuses (``CacheWarning``) a folder that another user owns or can write (``compile.cache``). A compiled function works elementwise on NumPy arrays, and on Dask
arrays blockwise (one task per chunk; the result is a lazy Dask array; ``compile.cluster``).
It pickles, so Dask's distributed workers can run it. Like ``eval``, it gives IEEE values
without NumPy's floating-point warnings; ``lambdify(..., warn=True)`` reports them where NumPy
computes (the NumPy backend, and single points on either backend; Numba's compiled loops
report none).

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
import threading
import warnings
from typing import Any, Callable, Protocol, Sequence, cast

import numpy as np

from ..core import Term
from ..core.var_names import vars_of
from ..numeric.modes import floating
from . import feed, registry, threads
from .arrays import ArrayCompiled, JaxArrayCompiled, mostly_scalar, needs_arrays
from .expanded import Expanded
from .backends import numpy as numpy_backend
from .backends.llvm_args import Read
from .cache import CACHE_MIN_STEPS
from .devices import BackendWarning, DeviceCompiled, described
from .point_code import PointCode
from .program import CHUNK, Program, build_program
from .registry import Host

#: Points per block of the NumPy backend: 16384 float64 = 128 KiB per register (measured best).
BLOCK = 16384
#: Steps from which a call on one point runs on the backend's kernel where it can (Numba: one
#: vector of points per scratch row), not as Python floats, plus ``NATIVE_POINT_PER_INPUT`` per
#: input: the Python code takes ~0.7 µs and ~9 ns a step, the kernel's call ~1.6 µs, ~0.6 ns
#: a step and ~15 ns an input (F3's 10th derivative, 359 steps: 3.9 → 1.9 µs; F3's 5th, 109
#: steps, stays: 1.6 against 1.8; S's gradient, 445 steps and 50 inputs: 6.6 → 4.1; S itself,
#: 247 steps, stays: 3.9 against 4.6; R100's HVP, 1,385 steps: 23 → 9 µs; M's HVP: 68 → 13).
NATIVE_POINT = 150
NATIVE_POINT_PER_INPUT = 2


def _as_list(items: Any, what: str) -> tuple[list[Term], bool]:
    if isinstance(items, Term):
        return [items], True
    if isinstance(items, (list, tuple)) and items and all(isinstance(t, Term) for t in items):
        return list(items), False
    raise TypeError(f"lambdify {what} must be a Term or a non-empty list of Terms, got {items!r}")


class NativePoint(Protocol):
    """A backend's kernel on one point (``numba_point.Point``): numbers in, numbers out; or one
    float64 vector of them (or its parts end to end) in, one out."""

    def __call__(self, values: Sequence[float]) -> tuple[float, ...]: ...

    def on_array(self, values: np.ndarray | Sequence[np.ndarray]) -> np.ndarray: ...


#: Runs the program over points a..b of the inputs into the same points of the outputs.
Run = Callable[[int, int], None]


class Compiled:
    """A compiled function of the inputs: a value for one output, a tuple for a list.

    Nothing is generated until a call needs it: the one-point code on the first call with
    numbers, its IEEE fallback only when a point raises there (or with ``warn=True``), and each
    backend kernel on the first call with its pattern of number and array inputs. A program of
    100,000 steps called only on points never builds a block kernel (``built`` says what was).
    """

    def __init__(self, program: Program, names: list[str], single: bool, backend: str,
                 block: int = BLOCK, parallel: bool = True, warn: bool = False, chunk: int = CHUNK,
                 cache: bool = True) -> None:
        registry.as_host(registry.backend(backend))  # a ValueError now, not at the first call on arrays
        for name, value in (("block", block), ("chunk", chunk)):
            if isinstance(value, bool) or not (isinstance(value, int) and value > 0):
                raise ValueError(f"lambdify {name} must be a positive int, got {value!r}")
        self.program, self.names, self.single = program, names, single
        self.block, self.parallel, self.warn, self.chunk, self.cache = block, parallel, warn, chunk, cache
        #: The backend that runs arrays: the one asked for until it turns out unusable.
        self.backend = backend
        self._native: NativePoint | None = None
        self._no_native = False  # the backend has no one-point kernel (or could not build it)
        #: Whether a call on one point takes the backend's kernel, where it has one.
        self._natively = len(program.steps) >= NATIVE_POINT + NATIVE_POINT_PER_INPUT * program.n_inputs
        #: The active backend's kernels, by pattern of number (True) and array inputs.
        self._kernels: dict[tuple[bool, ...], Any] = {}
        self._lock = threading.Lock()  # two threads that call at once build a path once
        #: One point in Python: floats first, NumPy scalars where that raises.
        self._code = PointCode(program, warn, cache and len(program.steps) >= CACHE_MIN_STEPS, self._lock)
        self._point = self._code.run

    @property
    def built(self) -> tuple[str, ...]:
        """What has been generated so far: ``"point"`` (Python floats), ``"point IEEE"`` (NumPy
        scalars), ``"<backend> (point)"`` (a large program's one-point kernel) and
        ``"<backend> <pattern>"`` per kernel, e.g. ``"numpy (array, number)"``."""
        paths = self._code.built
        if self._native is not None:
            paths.append(f"{self.backend} (point)")
        for scalars in self._kernels:
            pattern = ", ".join("number" if s else "array" for s in scalars)
            paths.append(f"{self.backend} ({pattern})")
        return tuple(paths)

    @property
    def source(self) -> str:
        """The IEEE one-point code (NumPy scalars), as text; generating it builds nothing."""
        return numpy_backend.scalar_source(self.program)[0]

    @property
    def block_source(self) -> str:
        """The NumPy backend's block code for array inputs, as text; generating it builds nothing."""
        return numpy_backend.block_source(self.program, (), self.chunk)[0]

    @property
    def _pure(self) -> bool:
        """Whether the one-point code is Python floats only (so it cannot warn); builds it."""
        return self._code.pure

    def _options(self, backend: Host) -> dict[str, Any]:
        """The options of this call a backend takes (those named in its ``OPTIONS``)."""
        return {name: getattr(self, name) for name in getattr(backend, "OPTIONS", ())}

    def _native_point(self) -> NativePoint | None:
        """The backend's one-point runner of its kernel, where it has one (None: the Python code)."""
        if self._native is None and not self._no_native:
            with self._lock:
                backend = registry.as_host(registry.backend(self.backend))
                made = getattr(backend, "point", None)
                try:
                    self._native = None if made is None else made(self.program, **self._options(backend))
                except Exception as error:  # as ``_kernel``: a backend that cannot compile it warns once
                    self._fall_back(error)
                self._no_native = self._native is None
        return self._native

    def __reduce__(self) -> tuple[Any, ...]:
        # Rebuilt from the program on unpickling (e.g. on a Dask worker): code objects and
        # Numba kernels do not travel, the program does.
        return (Compiled, (self.program, self.names, self.single, self.backend, self.block, self.parallel, self.warn,
                           self.chunk, self.cache))

    def __repr__(self) -> str:
        return described(self.names, self.program, self.backend)

    def __call__(self, *args: Any) -> Any:
        if len(args) != len(self.names):
            raise TypeError(f"expected {len(self.names)} arguments ({', '.join(self.names)}), got {len(args)}")
        results: tuple[float, ...] | tuple[np.ndarray, ...]
        types = set(map(type, args))
        if types <= feed.NUMBERS:  # one point: no array handling at all
            results = self._one(args, types == feed.FLOAT)
        elif (fed := self._fed(args)) is not None:  # the common batch: numbers and float64 vectors of one length
            results = self._arrays(*fed)
        elif any(hasattr(a, "__dask_graph__") for a in args):  # lazily: one task per chunk (``cluster``)
            from .cluster import blockwise

            return blockwise(self, args)
        else:
            arrays = [feed.numbers(a, name) for a, name in zip(args, self.names)]
            shapes = {a.shape for a in arrays if a.ndim}  # one shape and numbers (the common batch): no broadcast
            shape = next(iter(shapes)) if len(shapes) == 1 else np.broadcast_shapes(*(a.shape for a in arrays))
            results = self._arrays(arrays, shape) if shape else self._one([float(a) for a in arrays], True)
        return results[0] if self.single else results

    def flat_point(self, values: np.ndarray | Sequence[np.ndarray]) -> np.ndarray:
        """One point given as one float64 vector of every input's number (or its parts end to
        end), the outputs' numbers as one vector: what a program of array nodes expanded to
        scalars calls (``arrays``), on the backend's kernel with no number going through Python
        where the program is large enough (as ``__call__`` decides for numbers)."""
        native = self._native_point() if not self.warn and self._natively else None
        if native is not None:
            return native.on_array(values)
        flat = values if isinstance(values, np.ndarray) else np.concatenate(values) if len(values) else np.zeros(0)
        return np.array(self._point(flat.tolist()), dtype=float)

    def _one(self, point: Sequence[Any], floats: bool) -> tuple[float, ...]:
        """One point of numbers (``floats``: all Python floats): on the backend's kernel where
        the program is large enough, else the Python code (``point_code``: a call of numbers on a
        program of ``NATIVE_POINT`` steps, and ``NATIVE_POINT_PER_INPUT`` more an input, runs
        natively where the backend can)."""
        native = self._native_point() if not self.warn and self._natively else None
        if native is not None:
            return native(point)
        return self._point(point if floats else list(map(float, point)))

    def _kernel(self, scalars: tuple[bool, ...]) -> Any:
        """The active backend's kernel for this pattern of number and array inputs, compiled on
        first use. A backend that cannot compile this program (its library missing, a user
        function it cannot type) warns once and hands every pattern to the NumPy backend."""
        kernel = self._kernels.get(scalars)
        if kernel is not None:
            return kernel
        with self._lock:
            if scalars not in self._kernels:
                backend = registry.as_host(registry.backend(self.backend))
                try:
                    self._kernels[scalars] = backend.kernel(self.program, scalars, **self._options(backend))
                except Exception as error:
                    if self.backend == "numpy":
                        raise
                    self._fall_back(error)
                    self._kernels[scalars] = numpy_backend.kernel(self.program, scalars, **self._options(numpy_backend))
            return self._kernels[scalars]

    def _fall_back(self, error: Exception) -> None:
        """Warn that the backend is unusable here and run NumPy from now on."""
        if isinstance(error, ImportError):
            why = str(error)
        else:  # e.g. a user function's f that Numba cannot type
            first = str(error).splitlines()[0] if str(error) else ""
            why = (f"{registry.backend(self.backend).NAME} could not compile this program "
                   f"({type(error).__name__}: {first})")
        warnings.warn(f"lambdify(backend={self.backend!r}): {why}; using the NumPy backend", BackendWarning,
                      stacklevel=5)
        self.backend = "numpy"
        self._kernels.clear()

    @property
    def strided(self) -> bool:
        """Whether its kernels read and write a batch's points where they lie when they are not
        next to each other (a column of a (points × n) array: Numba's), so that ``stacked`` on
        such columns costs no copy."""
        return hasattr(registry.backend(self.backend), "slices")

    def stacked(self, *args: Any) -> np.ndarray:
        """The outputs on a batch as the columns of one (points × outputs) array: for vectors
        of one length and numbers (``feed.fed``), each output written there by the kernel (on
        Numba through the rows of its block: no pass of its own), else the outputs stacked. An
        array program expanded to scalars hands out its array outputs as views of it."""
        fed = self._fed(args) if len(args) == len(self.names) else None
        if fed is None:
            results = self(*args)
            return np.stack(np.broadcast_arrays(*([results] if self.single else results)), axis=-1)
        block = np.empty(fed[1] + (len(self.program.outputs),))
        self._arrays(*fed, into=block)
        return block

    def _fed(self, args: Sequence[Any]) -> tuple[Sequence[Any] | Read, tuple[int, ...], tuple[bool, ...]] | None:
        """The common batch's arguments as ``_arrays`` takes them, with their shape and which are
        numbers: read natively in one call where the backend has a ``reader`` (Numba: R100's
        gradient, 100 vectors, ~200 µs less a call), else by ``feed.fed``; None for any other call."""
        reader = getattr(registry.backend(self.backend), "reader", None)
        read = reader() if reader is not None else None
        given = read(args) if read is not None else None
        if given is None:
            return feed.fed(args)
        return given, (given.size,), tuple(given.numbers.astype(bool).tolist())

    def _arrays(self, arrays: Sequence[np.ndarray | np.float64] | Read, shape: tuple[int, ...],
                numbers: tuple[bool, ...] | None = None, into: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
        """The program on a batch of ``shape``; ``numbers``: the arguments are already numbers
        (np.float64) and float64 vectors of that shape (``feed.fed``), these the numbers;
        ``into``: the outputs go into its columns (``stacked``)."""
        size = math.prod(shape)
        if numbers is None:
            assert not isinstance(arrays, Read)  # (read arguments come with which are numbers)
            # A single number stays one (a ufunc or the kernel broadcasts it, no copy per point);
            # other broadcasts are copied, as the kernel takes contiguous arrays of the points.
            arrays = [np.float64(a) if a.ndim == 0 else
                      np.ascontiguousarray(a if a.shape == shape else np.broadcast_to(a, shape).copy()).reshape(size)
                      for a in arrays]
            numbers = tuple(type(a) is np.float64 for a in arrays)
        flat = arrays
        if not size:
            outs = [np.empty(size) for _ in self.program.outputs] if into is None else list(into.T)
        else:
            kernel = self._kernel(numbers)
            backend = registry.as_host(registry.backend(self.backend))  # after the kernel: it may have fallen back
            step = threads.step(size, self.block, getattr(backend, "GRAIN", None), self.parallel)
            prepared = getattr(backend, "slices", None)  # a backend that reads every address once a call
            if prepared is not None:  # (its kernels store whole vectors: outputs on cache lines)
                outs, at = feed.outputs(len(self.program.outputs), size) if into is None else feed.columns(into)
                runner: Callable[[], Run] = prepared(kernel, flat, outs, at)
            else:
                outs = [np.empty(size) for _ in self.program.outputs] if into is None else list(into.T)
                given = flat.arguments() if isinstance(flat, Read) else flat  # (read for one that fell back since)
                runner = lambda: feed.sliced(backend.worker(kernel, step), given, outs)  # noqa: E731

            def worker() -> Run:
                run = runner()

                def slice_run(a: int, b: int) -> None:
                    with floating(self.warn):  # per thread: NumPy's error state is thread-local
                        run(a, b)

                return slice_run

            threads.share(worker, [(a, min(a + step, size)) for a in range(0, size, step)], self.parallel)
        return tuple(outs) if len(shape) == 1 else tuple(o.reshape(shape) for o in outs)


def lambdify(inputs: Term | Sequence[Term], outputs: Term | Sequence[Term], backend: str | None = None,
             block: int = BLOCK, parallel: bool = True, *, warn: bool = False, chunk: int = CHUNK,
             cache: bool = True, dtype: str | None = None) -> Compiled | DeviceCompiled | ArrayCompiled | JaxArrayCompiled | Expanded:
    """Compile ``outputs`` as a function of the vars ``inputs``.

    Returns a value for one output and a tuple for a list; works elementwise on arrays, with
    every output broadcast to the inputs' common shape, and on Dask arrays blockwise. IEEE
    semantics: never raises on values, and no NumPy warnings unless ``warn=True``. A graph with
    array nodes (or array var inputs, fed whole) is one NumPy call per node on the NumPy backend,
    one ``jax.numpy`` call per node under ``jax.jit`` on JAX, and expanded to scalar nodes for the
    others (``compile.arrays``). ``backend``
    is a name of ``registry.BACKENDS``: ``"numpy"``, ``"numba"`` or ``"cuda"`` (each falls back
    to NumPy with a ``BackendWarning`` when unusable; CUDA returns CuPy arrays of ``dtype``,
    float64 by default, or float32), or ``"jax"`` (a function of JAX arrays for
    ``jax.jit``/``vmap``/``grad``; see ``devices``), by default ``config.default_backend()``
    (``SUBGRAPH_AD_BACKEND``, else ``"numpy"``); ``block`` is the NumPy backend's points per
    block; ``parallel`` lets either host backend share the blocks out over every core. Code is
    generated on first use, in chunks of ``chunk`` steps; ``cache=False`` skips the persistent
    cache of compiled code (``SUBGRAPH_AD_CACHE``).
    """
    backend, module, dtypes = registry.chosen(backend, dtype)
    outs, single = _as_list(outputs, "outputs")
    ins, _ = _as_list(vars_of(outs[0].tape, inputs, "lambdify"), "inputs")  # names and Symbols: vars
    tape = ins[0].tape
    for v in ins:
        tape.check_var(v, "lambdify input")
    if len({v.index for v in ins}) != len(ins):
        raise ValueError(f"lambdify inputs repeat a var: {[v.name for v in ins]}")
    for t in outs:
        ins[0]._lift(t)  # same tape, or a clear ValueError
    if needs_arrays(tape, ins, outs):
        return _arrays(tape, ins, outs, single, backend, block, parallel, warn, chunk, cache, dtype)
    program = build_program(tape, ins, outs)
    names = cast("list[str]", [v.name for v in ins])  # each is a var (check_var above): its name is a str
    if registry.host(module):
        return Compiled(program, names, single, backend, block, parallel, warn, chunk, cache)
    fallback = functools.partial(Compiled, program, names, single, "numpy", block, parallel, warn, chunk, cache)
    return registry.as_device(module).compiled(program, names, single, dtype or dtypes[0], fallback)


def _arrays(tape: Any, ins: list[Term], outs: list[Term], single: bool, backend: str, block: int, parallel: bool,
            warn: bool, chunk: int, cache: bool, dtype: str | None) -> ArrayCompiled | JaxArrayCompiled | Expanded:
    """A graph with array nodes: NumPy and JAX run it whole; the other backends its scalar
    expansion, and so does every backend where the arrays are small beside the scalar code
    (``mostly_scalar``): there the scalar program is the smaller and the faster."""
    if backend == "numpy" and not mostly_scalar(tape, outs):
        return ArrayCompiled(tape, ins, outs, single, warn, parallel)
    if backend == "jax" and not mostly_scalar(tape, outs):
        return JaxArrayCompiled(tape, ins, outs, single)

    def scalar(inputs: list[Term], outputs: list[Term]) -> Any:
        return lambdify(inputs, outputs, backend, block, parallel, warn=warn, chunk=chunk, cache=cache, dtype=dtype)

    return Expanded(tape, ins, outs, single, scalar, backend)
