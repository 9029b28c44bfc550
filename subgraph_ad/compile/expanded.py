"""``lambdify`` of graphs with array nodes for the backends that know only scalars (Numba, C,
CUDA): the graph expanded to scalar nodes (``core.expand.expand_many``) and compiled by that
backend, the array arguments split into one column per element — the same values as
``arrays.ArrayCompiled``'s, in the scalar program's time. One point of float64 arrays goes to
the kernel as one vector and comes back as one (``at_point``); a batch laid out as JAX lays it
is read in place (``columns``).
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

from ..core import Tape, Term
from ..core.arrays import Shape, spans
from ..core.expand import element_vars, expand_many


class Expanded:
    """A graph with array nodes for a backend that knows only scalars: the outputs expanded to
    scalar nodes once, compiled by that backend over one input per element; a call splits the
    array arguments into those elements and stacks each array output back (see the module)."""

    def __init__(self, tape: Tape, inputs: Sequence[Term], outputs: Sequence[Term], single: bool,
                 compile_scalar: Callable[[list[Term], list[Term]], Any], backend: str) -> None:
        self.single, self.backend = single, backend  # the backend that runs the scalar program
        self.names = [str(v.name) for v in inputs]
        self.shapes: list[Shape] = [v.shape for v in inputs]
        flat_inputs: list[Term] = []
        for v in inputs:
            flat_inputs += list(element_vars(tape, str(v.name)).ravel()) if v.shape else [v]
        parts = expand_many(tape, [t.index for t in outputs])
        self.out_shapes: list[Shape] = [np.shape(p) if isinstance(p, np.ndarray) else () for p in parts]
        #: Where each output lies among the scalar program's outputs, and its shape.
        self._out_parts = spans(self.out_shapes)
        flat_outputs = [t for p in parts for t in (p.ravel() if isinstance(p, np.ndarray) else [p])]
        self.inner = compile_scalar(flat_inputs, flat_outputs or [tape.zero])

    def __repr__(self) -> str:
        return f"<expanded {self.inner!r}>"

    def __call__(self, *args: Any) -> Any:
        if len(args) != len(self.names):
            raise TypeError(f"expected {len(self.names)} arguments ({', '.join(self.names)}), got {len(args)}")
        done = self._at_point(args)
        if done is None:
            done = self._over_batch(args)
        if done is not None:
            return done
        flat: list[Any] = []
        for value, name, shape in zip(args, self.names, self.shapes):
            if not shape:
                flat.append(value)
                continue
            if tuple(np.shape(value)[np.ndim(value) - len(shape):]) != shape:
                raise ValueError(f"argument {name} is an array of shape {shape} (with any batch axes in front), "
                                 f"got shape {np.shape(value)}")
            flat += _columns(value, shape)
        found = self.inner(*flat)
        found = list(found) if isinstance(found, tuple) else [found]
        results = [_stacked(found[at:to], shape) if shape else found[at] for at, to, shape in self._out_parts]
        return results[0] if self.single else tuple(results)

    def _at_point(self, args: Sequence[Any]) -> Any:
        """One point of float64 arrays of the inputs' shapes and numbers (the common call of a
        transform), each output a view of the one vector ``at_point`` returns; None for any other
        call."""
        found = self.at_point(args)
        if found is None:
            return None
        vector = found[0]
        results = [vector[at:to].reshape(shape) if shape else float(vector[at]) for at, to, shape in self._out_parts]
        return results[0] if self.single else tuple(results)

    def at_point(self, args: Sequence[Any]) -> list[np.ndarray] | None:
        """One point of float64 arrays of the inputs' shapes and numbers as one vector into the
        scalar program, and every output's numbers, in order, as one new vector out (R1000's
        gradient at one point on the Numba kernel: 1,000 numbers never through Python), the one
        item of the list; None for any other call."""
        run = getattr(self.inner, "flat_point", None)
        if run is None or len(args) != len(self.shapes):
            return None
        parts = []
        for value, shape in zip(args, self.shapes):
            if shape and type(value) is np.ndarray and value.dtype == np.float64 and value.shape == shape:
                parts.append(value.ravel())
            elif not shape and type(value) in (float, int, np.float64):
                parts.append(np.array([value], dtype=float))
            else:
                return None
        return [run(parts[0] if len(parts) == 1 else parts)]

    at_known_point = at_point  # (its checks are its reading of the arguments)

    def _over_batch(self, args: Sequence[Any]) -> Any:
        """A batch laid out as JAX lays it (``columns``), each array output a view of one
        array; None for any other call."""
        found = self.columns(*args)
        if found is None:
            return None
        batch = found.shape[:-1]
        results = [found[..., at:to].reshape(batch + shape) if shape else found[..., at]
                   for at, to, shape in self._out_parts]
        return results[0] if self.single else tuple(results)

    def columns(self, *args: Any) -> np.ndarray | None:
        """Every output's numbers, in order, along the last axis of one array of the batch's
        shape: for float64 arrays each of the batch's shape and then its input's (as ``vmap``
        hands them over), beside numbers and unbatched arrays, on a scalar program whose kernels
        read a column of its argument and write one of the result where they lie
        (``Compiled.strided``); None for any other call."""
        if not getattr(self.inner, "strided", False):  # (NumPy's ufuncs would be slower on columns)
            return None
        flat: list[Any] = []
        batch: Shape | None = None
        for value, shape in zip(args, self.shapes):
            if type(value) in (float, int, np.float64) and not shape:
                flat.append(value)
                continue
            if type(value) is not np.ndarray or value.dtype != np.float64 or value.shape[value.ndim - len(shape):] != shape:
                return None
            if value.ndim == len(shape):  # the same at every point
                flat += value.ravel().tolist()
                continue
            if batch is not None and value.shape[:value.ndim - len(shape)] != batch:
                return None
            batch = value.shape[:value.ndim - len(shape)]
            flat += list(value.reshape(-1, math.prod(shape)).T)
        if batch is None:
            return None
        found: np.ndarray = self.inner.stacked(*flat)
        return found.reshape(batch + found.shape[-1:])


def _columns(value: Any, shape: Shape) -> list[Any]:
    """An array argument's elements, each over the call's batch: for a NumPy array with batch
    axes, rows of one transposed copy (each contiguous: 100 columns of 10⁴ points in 0.9 ms,
    where copying each strided column took 30); else its elements' views."""
    n = math.prod(shape)
    if type(value) is np.ndarray and value.ndim > len(shape) and n > 1:
        batch = value.shape[:value.ndim - len(shape)]
        return list(np.ascontiguousarray(np.moveaxis(value.reshape(batch + (n,)), -1, 0)))
    return [value[(Ellipsis,) + where] for where in np.ndindex(*shape)]


def _stacked(parts: list[Any], shape: Shape) -> Any:
    """Elements (numbers or arrays of one batch) as one array of batch + shape, in the module of
    the elements (``jax.numpy`` for JAX arrays)."""
    xp: Any = np
    if any(type(p).__module__.startswith("jax") for p in parts):
        import jax.numpy as xp  # the backend's own arrays stay on its device
    batch = np.broadcast_shapes(*(np.shape(p) for p in parts))
    stacked = xp.stack([xp.broadcast_to(xp.asarray(p), batch) for p in parts], axis=-1)
    return xp.reshape(stacked, tuple(batch) + shape)


__all__ = ["Expanded"]
