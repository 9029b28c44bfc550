"""Compiled programs on Dask: each task graph carries a program once, each worker process
compiles it once, and the batch is cut into chunks of about 100 ms of work.

- **Shipped once a graph.** A compiled function travels as a ``Shipped``: its pickle,
  compressed, named by its hash, put in the graph as one key of its own (``dask.delayed``) that
  every chunk's task takes as an argument. A function inside each task would be sent with each
  task (distributed #8814 warns past 10 MB graphs); a key is fetched by a worker once. A
  10⁵-step program is about 0.5 MB (``program_size``); past ``subgraph_ad.ship-limit`` bytes
  (Dask config, 100 MB by default) building the graph raises, naming both sizes.
- **Compiled once a worker process.** A process keeps every program it received, by hash, with
  the kernels built for it, so a later task, or a later graph with the same program, compiles
  nothing. ``compiles()`` counts the kernels this process built (``client.run(compiles)`` reads
  every worker's), and ``warm(client, f)`` builds them on every worker, and on any that joins
  later (a ``WorkerPlugin``), before the first task. The plugin also points the persistent
  cache of compiled code (``SUBGRAPH_AD_CACHE``) at the worker's node-local scratch folder
  unless it is set: never a shared network home, where the cache's file locking is unsafe.
- **About 100 ms a task.** ``chunk_points`` sizes a chunk from the program's steps (about 10⁷
  points for a short program, fewer for a long one, never more than Dask's ``array.chunk-size``
  of inputs and outputs), and ``chunk_rows`` smaller where the client's workers would get fewer
  than two chunks each (down to 1 ms of work); ``subgraph_ad.chunk-points`` (Dask config) sets
  it instead.
- **Faults.** A task is a pure function of its chunk, so the chunks of a killed worker are run
  again elsewhere with the same values. A worker where the backend cannot compile (no Numba
  there) warns (``BackendWarning``, in its log), logs the event ``"subgraph_ad"`` on the
  cluster (``client.get_events("subgraph_ad")``) and runs the NumPy backend: the same values.

``sad.dask`` is this module.
"""

from __future__ import annotations

import functools
import hashlib
import math
import os
import pickle
import threading
import weakref
import zlib
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence, cast

import numpy as np

from .devices import on_host

#: Seconds of work a task is sized for: Dask's own guidance (a task costs the scheduler about
#: 1 ms; much longer tasks balance badly over the workers).
TASK_SECONDS = 0.1
#: Seconds a step of a program takes per point on one core (NumPy backend, in cache: measured
#: 0.5 to 2 ns), for sizing chunks.
STEP_SECONDS = 1e-9
#: Points per chunk at most (a short program's 100 ms).
MAX_POINTS = 10**7
#: Seconds of work a task is worth splitting down to: about what a task costs the scheduler.
MIN_TASK_SECONDS = 1e-3
#: Chunks per worker at least, where the batch has enough work: a worker that finishes early
#: takes a chunk of another instead of idling while the last one runs.
CHUNKS_PER_WORKER = 2
#: The largest compressed program shipped, in bytes, unless ``subgraph_ad.ship-limit`` says.
SHIP_LIMIT = 100 * 2**20
#: The prefix of a program's key in a task graph.
PREFIX = "subgraph_ad-program-"

_lock = threading.Lock()
#: This process's programs: (hash, the backend it was asked to run on) -> the compiled function.
_programs: dict[tuple[str, str | None], Any] = {}
_compiles = 0
_reported: set[str] = set()
#: The backend this worker runs every program on (``warm(..., backend=)``); None: the program's own.
_backend: str | None = None


class Plan(Protocol):
    """How a chunk's task feeds a program and shapes what it returns (one per graph)."""

    #: The hash of the program it feeds.
    program: str

    def pattern(self) -> tuple[bool, ...]:
        """Per input of the program, whether the task passes one number (True) or an array."""

    def evaluate(self, compiled: Callable[..., Any], blocks: Sequence[Any]) -> np.ndarray:
        """The chunk's result block: ``compiled`` (returning NumPy) run on the chunk's blocks."""


def _config(name: str, default: Any) -> Any:
    import dask

    return dask.config.get(f"subgraph_ad.{name}", default)


def ship_limit() -> int:
    """The largest compressed program shipped, in bytes: ``subgraph_ad.ship-limit`` or ``SHIP_LIMIT``."""
    from dask.utils import parse_bytes

    limit = _config("ship-limit", SHIP_LIMIT)
    return int(parse_bytes(limit) if isinstance(limit, str) else limit)


def unwrapped(compiled: Any) -> Any:
    """The compiled function itself (a ``lambdify`` result), not a wrapper that copies its
    results to the host; it must carry its program."""
    inner = getattr(compiled, "__wrapped__", compiled)
    if getattr(inner, "program", None) is None:
        raise TypeError(f"on Dask arrays a program runs from lambdify's result; got {compiled!r}. On GPU workers "
                        "compile for the CPU and choose CUDA per worker: sad.dask.warm(client, f, backend='cuda')")
    return inner


class Shipped:
    """A compiled function as it travels: its pickle, compressed, and the hash that names it.
    Unpickled on a worker it is only bytes; ``load`` gives the process's own compiled function
    for that hash, building it from the bytes the first time."""

    def __init__(self, compiled: Any) -> None:
        compiled = unwrapped(compiled)
        self.data = zlib.compress(pickle.dumps(compiled, protocol=pickle.HIGHEST_PROTOCOL), 1)
        limit = ship_limit()
        if len(self.data) > limit:
            raise ValueError(f"the program of {compiled!r} is {len(self.data):,} bytes compressed, over the "
                             f"{limit:,}-byte limit for shipping to Dask workers (subgraph_ad.ship-limit in Dask's "
                             "config); raise the limit, or build a smaller program (fewer outputs, or a "
                             "derivative by Taylor mode)")
        self.key = hashlib.sha256(self.data).hexdigest()
        self.backend: str = compiled.backend

    @property
    def size(self) -> int:
        """Bytes shipped: the compressed pickle."""
        return len(self.data)

    def load(self) -> Any:
        """This process's compiled function for the program, on this worker's backend."""
        key = (self.key, _backend)
        compiled = _programs.get(key)
        if compiled is None:
            with _lock:
                compiled = _programs.get(key)
                if compiled is None:
                    compiled = _on_backend(pickle.loads(zlib.decompress(self.data)), _backend)
                    _programs[key] = compiled
        return compiled

    def __repr__(self) -> str:
        return f"<program {self.key[:12]}, {self.size:,} bytes>"


def _on_backend(compiled: Any, backend: str | None) -> Any:
    """``compiled`` rebuilt for ``backend`` (CUDA on a GPU worker), or as it came."""
    if backend is None or backend == compiled.backend:
        return compiled
    from .backends.cuda import CudaCompiled
    from .lambdify import Compiled

    if not isinstance(compiled, Compiled):
        raise TypeError(f"a worker backend ({backend!r}) replaces that of a CPU program, got {compiled!r}")
    cpu = functools.partial(Compiled, compiled.program, compiled.names, compiled.single)
    options = (compiled.block, compiled.parallel, compiled.warn, compiled.chunk, compiled.cache)
    if backend == "cuda":
        return CudaCompiled(compiled.program, compiled.names, compiled.single, "float64",
                            functools.partial(cpu, "numpy", *options))
    return cpu(backend, *options)


_shipped: weakref.WeakKeyDictionary[Any, Shipped] = weakref.WeakKeyDictionary()


def shipped(compiled: Any) -> Shipped:
    """``compiled`` as it travels (made once per compiled function)."""
    compiled = unwrapped(compiled)
    found = _shipped.get(compiled)
    if found is None or found.backend != compiled.backend:
        found = _shipped[compiled] = Shipped(compiled)
    return found


def program_size(compiled: Any) -> int:
    """The bytes a compiled function's program takes in a task graph (once a graph).

    >>> import subgraph_ad as sad
    >>> tape = sad.Tape(); x = tape.var("x")
    >>> 0 < sad.dask.program_size(sad.lambdify([x], sad.sin(x) * x)) < 2000
    True
    """
    return shipped(compiled).size


def chunk_points(compiled: Any) -> int:
    """Points per chunk: ``subgraph_ad.chunk-points`` (Dask config) if set, else about
    ``TASK_SECONDS`` of one core's work, at most ``MAX_POINTS`` and Dask's ``array.chunk-size``
    of inputs and outputs.

    >>> import dask, subgraph_ad as sad
    >>> tape = sad.Tape(); x = tape.var("x")
    >>> sad.dask.chunk_points(sad.lambdify([x], sad.sin(x)))
    8388608
    >>> with dask.config.set({"subgraph_ad.chunk-points": 1000}):
    ...     sad.dask.chunk_points(sad.lambdify([x], sad.sin(x)))
    1000
    """
    import dask
    from dask.utils import parse_bytes

    setting = _chunk_setting()
    if setting is not None:
        return setting
    program = unwrapped(compiled).program
    by_memory = parse_bytes(dask.config.get("array.chunk-size")) // (8 * (program.n_inputs + len(program.outputs)))
    return max(1, int(min(_points_in(TASK_SECONDS, program), by_memory, MAX_POINTS)))


def chunk_rows(compiled: Any, rows: int, per_row: int = 1, workers: int | None = None) -> int:
    """Rows per chunk of a batch of ``rows`` rows of ``per_row`` points each: ``chunk_points``'s
    points, and where the cluster's ``workers`` are known (None: from the current Dask client,
    if there is one; 0: unknown) fewer, so that each worker gets ``CHUNKS_PER_WORKER`` chunks, but
    never fewer than ``MIN_TASK_SECONDS`` of work (a small batch is split less, or not at all).
    ``subgraph_ad.chunk-points`` (Dask config) sets the points instead, whatever the workers.

    >>> import subgraph_ad as sad
    >>> tape = sad.Tape(); x = tape.var("x")
    >>> f = sad.lambdify([x], sad.sin(x))
    >>> [sad.dask.chunk_rows(f, 10**7, workers=w) for w in (0, 1, 8)]
    [8388608, 5000000, 1000000]
    """
    most = max(1, chunk_points(compiled) // per_row)
    if _chunk_setting() is not None:
        return most
    workers = _workers() if workers is None else workers
    if not workers:
        return most
    least = math.ceil(_points_in(MIN_TASK_SECONDS, unwrapped(compiled).program) / per_row)
    return max(1, min(most, max(least, math.ceil(rows / (CHUNKS_PER_WORKER * workers)))))


def _chunk_setting() -> int | None:
    """``subgraph_ad.chunk-points``, checked; None for ``"auto"``."""
    setting = _config("chunk-points", "auto")
    if setting == "auto":
        return None
    if isinstance(setting, bool) or not isinstance(setting, int) or setting < 1:
        raise ValueError(f"subgraph_ad.chunk-points must be 'auto' or a positive int, got {setting!r}")
    return setting


def _points_in(seconds: float, program: Any) -> float:
    """The points one core runs ``program`` on in ``seconds``."""
    return seconds / (STEP_SECONDS * max(1, len(program.steps)))


def _workers() -> int | None:
    """The number of workers of the current Dask client; None without one."""
    try:
        from distributed import default_client

        return len(default_client().nthreads())
    except (ImportError, ValueError):  # no distributed, or no client: the workers are unknown
        return None


# -- on the worker ---------------------------------------------------------------------------------
def _kernels(compiled: Any) -> int:
    """How many kernels ``compiled`` has built (a device backend's: whether it has built)."""
    built = getattr(compiled, "built", None)
    return len(built) if built is not None else int(getattr(compiled, "_function", None) is not None)


def run(program: Shipped, plan: Plan, *blocks: Any) -> np.ndarray:
    """One chunk's task: this process's compiled program on the chunk, counted."""
    global _compiles
    compiled = program.load()
    before = _kernels(compiled)
    result = plan.evaluate(on_host(compiled), blocks)
    built = _kernels(compiled) - before
    if built:
        with _lock:
            _compiles += built
    if compiled.backend != (_backend or program.backend):
        _report(program, compiled.backend)
    return result


def _report(program: Shipped, backend: str) -> None:
    """Log on the cluster, once per process and program, that the backend fell back."""
    with _lock:
        if program.key in _reported:
            return
        _reported.add(program.key)
    try:
        from distributed import get_worker

        get_worker().log_event("subgraph_ad", {"program": program.key, "asked": _backend or program.backend,
                                               "running": backend, "pid": os.getpid()})
    except (ImportError, ValueError):  # not on a distributed worker: the warning alone says it
        pass


def compiles() -> int:
    """The kernels this process has built for programs it received (read every worker's with
    ``client.run(sad.dask.compiles)``)."""
    return _compiles


def prepare(program: Shipped, pattern: tuple[bool, ...], backend: str | None = None,
            local_directory: str | None = None) -> int:
    """Make this process ready to run ``program`` for inputs of ``pattern`` (the warm-up a
    worker plugin does): its backend, its compile cache on node-local disk, its kernel. The
    kernels it built."""
    global _backend, _compiles
    if backend is not None:
        _backend = backend
    if local_directory is not None and "SUBGRAPH_AD_CACHE" not in os.environ:
        os.environ["SUBGRAPH_AD_CACHE"] = str(Path(local_directory).parent / "subgraph_ad")
    compiled = program.load()
    before = _kernels(compiled)
    compiled(*(0.0 if number else np.zeros(1) for number in pattern))
    built = _kernels(compiled) - before
    with _lock:
        _compiles += built
    return built


# -- on the client ---------------------------------------------------------------------------------
class Elementwise:
    """The plan of a ``lambdify``'d function on Dask arrays: the blocks are its inputs (a number
    passed as one), its outputs stacked along a new first axis when there are several."""

    def __init__(self, program: str, numbers: dict[int, float], count: int, single: bool) -> None:
        self.program, self.numbers, self.count, self.single = program, numbers, count, single

    def pattern(self) -> tuple[bool, ...]:
        return tuple(k in self.numbers for k in range(self.count))

    def evaluate(self, compiled: Callable[..., Any], blocks: Sequence[Any]) -> np.ndarray:
        arrays = iter(blocks)
        results = compiled(*(self.numbers[k] if k in self.numbers else next(arrays) for k in range(self.count)))
        return results if self.single else np.stack(results)


def blockwise(compiled: Any, args: Sequence[Any]) -> Any:
    """A ``lambdify``'d function on Dask arrays (and arrays and numbers): one task per chunk of
    the first axis (the other axes in one chunk), lazily; a Dask array, or a tuple of them."""
    import dask.array as da

    numbers = {k: float(a) for k, a in enumerate(args) if not hasattr(a, "__dask_graph__") and np.ndim(a) == 0}
    arrays = da.broadcast_arrays(*(da.asarray(a, dtype=float) for k, a in enumerate(args) if k not in numbers))
    shape = arrays[0].shape
    rows = chunk_rows(compiled, shape[0] if shape else 1, max(1, math.prod(shape[1:])))
    arrays = [a.rechunk((rows,) + shape[1:] if shape else ()) for a in arrays]
    program = shipped(compiled)
    first = keys(program, Elementwise(program.key, numbers, len(args), compiled.single))
    index = tuple(range(len(shape)))
    pairs = [item for a in arrays for item in (a, index)]
    if compiled.single:
        return da.blockwise(run, index, *first, *pairs, dtype=float, meta=np.empty((0,) * len(shape)))
    n = len(compiled.program.outputs)
    stacked = da.blockwise(run, (-1,) + index, *first, *pairs, new_axes={-1: n}, dtype=float,
                           meta=np.empty((0,) * (len(shape) + 1)))
    return tuple(stacked[k] for k in range(n))


def keys(program: Shipped, plan: Plan) -> tuple[Any, None, Any, None]:
    """The first arguments of ``run`` for ``dask.array.blockwise``: the program and the plan, each
    one key of the graph (named by content: equal ones are one key, in any graph)."""
    import dask

    token = hashlib.sha256(pickle.dumps(plan, protocol=pickle.HIGHEST_PROTOCOL)).hexdigest()
    return (dask.delayed(program, name=PREFIX + program.key, traverse=False), None,
            dask.delayed(plan, name=f"subgraph_ad-plan-{token}", traverse=False), None)


def programs_in(collection: Any) -> list[tuple[Shipped, Plan]]:
    """The programs a Dask collection's graph runs, each with a plan that feeds it."""
    found: dict[str, Shipped] = {}
    plans: list[Plan] = []
    for value in dict(collection.__dask_graph__()).values():
        value = getattr(value, "value", value)  # a literal in the graph is held in a DataNode
        if isinstance(value, Shipped):
            found[value.key] = value
        elif isinstance(getattr(value, "program", None), str) and hasattr(value, "pattern"):
            plans.append(cast(Plan, value))
    return [(found[plan.program], plan) for plan in plans if plan.program in found]


def warm(client: Any, target: Any, *, backend: str | None = None) -> dict[str, Any]:
    """Compile on every worker of ``client``, and on any that joins later, before the first
    task: ``target`` is a ``lambdify``'d function (warmed for arrays as every input) or the lazy
    result of any entry point (warmed for the inputs its tasks pass). ``backend`` runs every
    program on these workers with that backend (``"cuda"`` on GPU workers; it falls back, with a
    ``BackendWarning``, where unusable). Returns each worker's answer to the plugin's setup."""
    from .warming import Warm

    if hasattr(target, "__dask_graph__"):
        pairs = [(program, plan.pattern()) for program, plan in programs_in(target)]
        if not pairs:
            raise ValueError(f"warm: {target!r} runs no subgraph_ad program; give a lambdify'd function or the lazy "
                             "result of a subgraph_ad entry point")
    else:
        program = shipped(target)
        pairs = [(program, (False,) * unwrapped(target).program.n_inputs)]
    result: dict[str, Any] = client.register_plugin(Warm(pairs, backend))
    return result
