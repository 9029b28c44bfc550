"""``lambdify`` of graphs that hold array nodes.

The NumPy backend runs such a graph as one NumPy call per node over whole arrays
(``ArrayCompiled``): a matrix product is one ``@``, an elementwise function one ufunc, whatever
the batch, because every value carries its batch axes IN FRONT of its node's shape (as
``Term.eval`` computes them, ``core.arrays``). So a per-point matrix-vector product over a
batch of points is one GEMM, and a program is O(array nodes) statements, not O(elements).

The JAX backend runs the same code in ``jax.numpy`` under ``jax.jit`` (``JaxArrayCompiled``).
The backends that know only scalars (Numba, C, CUDA) get the graph expanded to scalar nodes
first (``expanded.Expanded``).

An array var is fed whole: an array of its shape, or with batch axes in front. A scalar var
that is an element of an expanded array input (``W_0_1``) is read from that array.

>>> import numpy as np
>>> import subgraph_ad as sad
>>> tape = sad.Tape(); W = tape.array("W", np.eye(2)); x = tape.array("x", np.zeros(2))
>>> f = sad.lambdify([W, x], sad.tanh(W @ x).sum())
>>> round(f(np.eye(2), np.array([0.5, 1.0])), 12)
1.223711313216
>>> f(np.eye(2), np.array([[0.5, 1.0], [0.0, 0.0]]))        # a batch of two points x
array([1.22371131, 0.        ])
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

from ..core import Tape, Term, dependencies
from ..core.arrays import ARRAY_OPS, Shape, has_arrays, shape_of
from ..numeric.modes import floating
from . import blas, heap, threads
from .array_code import source
from .feed import FLOAT64
from .program import define


def needs_arrays(tape: Tape, inputs: Sequence[Term], outputs: Sequence[Term]) -> bool:
    """Whether the outputs need an array node or read an array var (or an element of one)."""
    if has_arrays(tape, [v.index for v in inputs]):
        return True
    return has_arrays(tape, dependencies(tape, [t.index for t in outputs]))


def mostly_scalar(tape: Tape, outputs: Sequence[Term]) -> bool:
    """The cost rule between a program of array statements and the scalar expansion: whether
    the scalar nodes the outputs need outnumber the elements of their array nodes (a network
    whose weights are a few dozen numbers under thousands of scalar nodes, as a Laplacian built
    per point on a small layer). Then the expansion, compiled by the scalar backends, is the
    smaller program; where the arrays carry the work (a dense layer over a batch), the array
    program is."""
    scalar = elements = 0
    nodes = tape.nodes
    for i in dependencies(tape, [t.index for t in outputs]):
        node = nodes[i]
        if node.op in ARRAY_OPS:
            elements += max(1, math.prod(node.payload[0]))
        elif node.args:
            scalar += 1
    return scalar > elements


#: Bytes of an array program's largest value on one chunk of a batch: a batch runs in chunks
#: along its first axis, small enough that every temporary comes from the heap (under the block
#: ``heap.settle`` frees: glibc maps a larger one afresh and faults its pages in on every call)
#: and large enough to spread NumPy's cost per call over many points. The width-32 network's
#: Laplacian on 10⁴ points (d = 16, blocks of 16 × 32 per point): 21 ms whole, 15 ms in chunks
#: of 1,700 points, 8 ms with the chunks on two cores.
CHUNK_BYTES = heap.BLOCK * 3 // 4


class ArrayCompiled:
    """A graph with array nodes compiled for NumPy: one expression per node over whole arrays
    (see the module and ``array_code``). Called with one value per input (an array var's: its
    shape, with batch axes in front or not; a scalar var's: a number or an array of points), it
    returns each output broadcast to the batch in front of its shape: a float for a scalar at
    one point. A call on one point runs the code written for one point (plain ``@`` and
    broadcasting); a call on a batch the code that folds the batch into each matrix product.
    A program whose matrix products are all small runs with BLAS on one thread (``blas``)."""

    def __init__(self, tape: Tape, inputs: Sequence[Term], outputs: Sequence[Term], single: bool,
                 warn: bool = False, parallel: bool = True) -> None:
        self.names = [str(v.name) for v in inputs]
        self.shapes: list[Shape] = [v.shape for v in inputs]
        self.out_shapes: list[Shape] = [t.shape for t in outputs]
        self.single, self.warn, self.parallel, self.backend = single, warn, parallel, "numpy"
        self._made = tape, list(inputs), list(outputs)  # what a pickle rebuilds it from
        self.widest = _widest(tape, outputs)
        heap.settle()
        self._point = self._define(tape, inputs, outputs, "point")
        self._batch = self._define(tape, inputs, outputs, "batch")
        self.block_source = self._batch[2]

    def _define(self, tape: Tape, inputs: Sequence[Term], outputs: Sequence[Term], flavour: str
                ) -> tuple[Callable[..., tuple[Any, ...]], int, str]:
        """The program of one flavour: its function, its largest product's multiply-adds per
        point, and its source."""
        text, namespace, work = source(tape, inputs, outputs, flavour, loops=not self.warn)  # a loop warns of nothing
        return define(text, namespace, f"arrays {flavour}"), work, text

    def __reduce__(self) -> tuple[Any, ...]:
        # Rebuilt from its graph on unpickling (a Dask worker, another process): the generated
        # code and its native loops do not travel, the tape does (``lambdify``: it pickles).
        return ArrayCompiled, (*self._made, self.single, self.warn, self.parallel)

    def __repr__(self) -> str:
        return f"<compiled array program of ({', '.join(self.names)}), {len(self.out_shapes)} output(s), {self.backend}>"

    def batch(self, args: Sequence[Any]) -> tuple[list[np.ndarray], Shape]:
        """The arguments as float arrays, and their common batch (the axes in front of each
        input's shape); a ValueError names an input whose trailing axes are not its shape."""
        if len(args) != len(self.names):
            raise TypeError(f"expected {len(self.names)} arguments ({', '.join(self.names)}), got {len(args)}")
        arrays, batches = [], []
        for value, name, shape in zip(args, self.names, self.shapes):
            array = np.asarray(value)
            if array.dtype.kind not in "biuf":
                raise TypeError(f"argument {name} must be a number or an array of numbers, got "
                                f"{type(value).__name__} {value!r:.80}")
            array = array.astype(float, copy=False)
            if shape and array.shape[array.ndim - len(shape):] != shape:
                raise ValueError(f"argument {name} is an array of shape {shape} (with any batch axes in front), "
                                 f"got shape {array.shape}")
            arrays.append(array)
            batches.append(array.shape[:array.ndim - len(shape)])
        if not any(batches):  # one point (the common call)
            return arrays, ()
        try:
            return arrays, tuple(np.broadcast_shapes(*batches))
        except ValueError:
            raise ValueError(f"the arguments' batch axes {batches} do not broadcast") from None

    def _is_point(self, args: Sequence[Any]) -> bool:
        """Whether ``args`` are one point of float64 arrays of the inputs' shapes (the common
        call): nothing to convert or check."""
        if len(args) != len(self.shapes):
            return False
        for a, shape in zip(args, self.shapes):
            if type(a) is not np.ndarray or a.dtype != np.float64 or a.shape != shape:
                return False
        return True

    def __call__(self, *args: Any) -> Any:
        arrays, batch = (list(args), ()) if self._is_point(args) else self.batch(args)
        results = self._run(arrays, batch)
        return results[0] if self.single else results

    def at_point(self, args: Sequence[Any]) -> list[np.ndarray] | None:
        """One point of float64 arrays of the inputs' shapes: each output's numbers as an array
        of its shape, as the code returns it; None for any other call. A transform's one-point
        call fills its result from them (``Transformed``)."""
        return self.at_known_point(args) if self._is_point(args) else None

    def at_known_point(self, args: Sequence[Any]) -> list[np.ndarray]:
        """``at_point`` of arguments known to be such a point (a transform's kept way: its
        pattern of shapes is the program's signature), unchecked."""
        found = self._computed(self._point, args, 1)
        return [v if type(v) is np.ndarray and v.dtype is FLOAT64 and v.shape == shape else np.asarray(_full(v, shape))
                for v, shape in zip(found, self.out_shapes)]

    def _run(self, arrays: list[np.ndarray], batch: Shape) -> tuple[Any, ...]:
        """Each output broadcast to ``batch`` in front of its shape (a float for one number)."""
        rows = self._rows(batch) if batch else None
        if rows is not None:
            return self._chunked(arrays, batch, rows)
        found = self._computed(self._batch if batch else self._point, arrays, math.prod(batch))
        return tuple(v if type(v) is np.ndarray and v.shape == s and v.dtype == np.float64 and not batch
                     else _full(v, batch + s) for v, s in zip(found, self.out_shapes))

    def _computed(self, program: tuple[Callable[..., tuple[Any, ...]], int, str], arrays: Sequence[Any],
                  points: int) -> tuple[Any, ...]:
        """The outputs of one flavour's code on ``points`` points, as it returns them."""
        run, work, _ = program
        with floating(self.warn):
            if 0 < work * points < blas.SMALL:  # (0: no product BLAS would share out)
                with blas.one_thread:
                    return run(*arrays)
            return run(*arrays)

    def _rows(self, batch: Shape) -> int | None:
        """Rows of the first batch axis a chunk takes (``CHUNK_BYTES`` of the largest value, at
        least one chunk a core, as many on every core); None for the batch in one piece."""
        row = 8 * self.widest * math.prod(batch[1:])  # bytes of the largest value per row
        rows = max(1, CHUNK_BYTES // row)
        cores = threads.cpu_count() if self.parallel else 1
        if cores > 1 and batch[0] * row >= CHUNK_BYTES // 2:
            rows = min(rows, -(-batch[0] // cores))
        if batch[0] <= rows:
            return None
        chunks = -(-batch[0] // rows)
        chunks += -chunks % cores
        return -(-batch[0] // chunks)

    def _chunked(self, arrays: list[np.ndarray], batch: Shape, rows: int) -> tuple[np.ndarray, ...]:
        """A batch in chunks of ``rows`` along its first axis, the chunks shared out over the
        cores (``threads``) with BLAS on one thread each: every temporary of a chunk stays under
        ``CHUNK_BYTES``. An input whose batch axes do not span the first (fewer of them, or a
        size-1 first one) goes to every chunk whole."""
        run = self._batch[0]
        split = [a.ndim - len(s) == len(batch) and a.shape[0] == batch[0] for a, s in zip(arrays, self.shapes)]
        outs = [np.empty(batch + s) for s in self.out_shapes]

        def worker() -> Callable[[int, int], None]:
            def chunk(a: int, b: int) -> None:
                with floating(self.warn):  # per thread: NumPy's error state is thread-local
                    found = run(*(v[a:b] if cut else v for v, cut in zip(arrays, split)))
                for out, value, s in zip(outs, found, self.out_shapes):
                    out[a:b] = _full(value, (b - a,) + batch[1:] + s)

            return chunk

        with blas.one_thread:
            threads.share(worker, [(a, min(a + rows, batch[0])) for a in range(0, batch[0], rows)], self.parallel)
        return tuple(outs)


def _widest(tape: Tape, outputs: Sequence[Term]) -> int:
    """Numbers at one point in the largest value that has the batch's axes (one that reads an
    input; a table has none): what sizes the chunks of a batch."""
    widest, reads = 1, set()
    for i in dependencies(tape, [t.index for t in outputs]):
        node = tape.nodes[i]
        if node.op == "var" or any(a in reads for a in node.args):
            reads.add(i)
            widest = max(widest, math.prod(shape_of(tape, i)))
    return widest


def _full(value: Any, shape: Shape) -> Any:
    """An output broadcast to its batch and shape; a float for one number."""
    if not shape:
        return float(value)
    if np.shape(value) == shape:
        return np.asarray(value, dtype=float)
    return np.array(np.broadcast_to(value, shape), dtype=float)


class JaxArrayCompiled:
    """A graph with array nodes compiled for JAX: the same code as ``ArrayCompiled``'s batch
    flavour in ``jax.numpy`` (a matrix product is one ``einsum``, which XLA makes one
    ``dot_general``), under ``jax.jit``; each output broadcast to the batch inside. It returns
    JAX arrays, so it composes with ``jax.jit``/``vmap``/``grad``; ``on_host`` makes it return
    NumPy (``host``). Float64 arguments run with JAX's 64-bit types on for the call."""

    def __init__(self, tape: Tape, inputs: Sequence[Term], outputs: Sequence[Term], single: bool) -> None:
        from .backends.jax import _jax

        jax, _ = _jax()
        self.names = [str(v.name) for v in inputs]
        self.shapes: list[Shape] = [v.shape for v in inputs]
        self.out_shapes: list[Shape] = [t.shape for t in outputs]
        self.single, self.backend, self.host = single, "jax", False
        self._made = tape, list(inputs), list(outputs)  # what a pickle rebuilds it from
        text, namespace, _ = source(tape, inputs, outputs, "jax")
        self.block_source = text
        self._run = jax.jit(define(text, namespace, "arrays jax"))

    def __reduce__(self) -> tuple[Any, ...]:
        return JaxArrayCompiled, (*self._made, self.single), {"host": self.host}  # (as ``ArrayCompiled``'s)

    def __repr__(self) -> str:
        return f"<compiled array program of ({', '.join(self.names)}), {len(self.out_shapes)} output(s), jax>"

    def __call__(self, *args: Any) -> Any:
        from .backends.jax import _jax, wide

        if len(args) != len(self.names):
            raise TypeError(f"expected {len(self.names)} arguments ({', '.join(self.names)}), got {len(args)}")
        ready = []
        for value, name, shape in zip(args, self.names, self.shapes):
            if not hasattr(value, "dtype") or np.dtype(value.dtype).kind in "biu":
                value = np.asarray(value, dtype=float) if np.asarray(value).dtype.kind in "biuf" else value
            if np.dtype(getattr(value, "dtype", object)).kind not in "f":
                raise TypeError(f"argument {name} must be a number or an array of numbers, got "
                                f"{type(value).__name__} {value!r:.80}")
            if shape and tuple(np.shape(value)[np.ndim(value) - len(shape):]) != shape:
                raise ValueError(f"argument {name} is an array of shape {shape} (with any batch axes in front), "
                                 f"got shape {np.shape(value)}")
            ready.append(value)
        jax, _ = _jax()
        if wide(ready):
            with jax.enable_x64(True):
                found = self._run(*ready)
        else:
            found = self._run(*ready)
        if self.host:
            found = tuple(float(v) if not np.ndim(v) else np.asarray(v) for v in found)
        return found[0] if self.single else found


__all__ = ["ArrayCompiled", "JaxArrayCompiled", "needs_arrays"]
