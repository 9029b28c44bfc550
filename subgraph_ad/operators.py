"""Differential operators of Terms or of Python functions: ``laplacian``, ``biharmonic`` and
``derivative_tensor``.

Given a Term and its vars, each returns Terms on the same tape (``ad.operators``). Given a
Python function u(x) of one array argument (as ``sad.hessian(fn)`` takes it), or u(x, t, θ)
with ``argnums`` naming x, each returns a callable on one point of shape (d,) or a batch
(..., d), the other arguments passed through: the function is traced once per signature (and
again when what it read outside its arguments changed: ``captured``), the operator built on the
trace and compiled, and every later call is ONE call of the compiled program on the points'
columns, with no Python loop over points. Called inside another transform's trace, the
operator appends to that trace instead (``nesting``), so a loss that calls it differentiates.

``laplacian(fn, samples=S, seed=s)`` estimates Δu instead (Hutchinson): the mean of the second
directional derivative ∂²u[v, v] = vᵀ∇²u v over S Rademacher probes v (entries ±1), each an
unbiased estimate of the trace, from one compiled program of x and v that is run on every
point and probe at once — for dimensions where the exact operator's graph is too large.

>>> import numpy as np
>>> import subgraph_ad as sad
>>> def u(x):
...     return np.sum(x**2) * sad.sin(x[0])
>>> points = np.array([[0.5, 1.0, -1.0], [0.0, 2.0, 1.0]])
>>> sad.laplacian(u)(points).round(6)
array([3.553011, 0.      ])
>>> sad.derivative_tensor(u, 2)(points).shape
(2, 3, 3)
"""

from __future__ import annotations

import functools
import itertools
import math
from typing import Any, Callable

import numpy as np

from .ad import operators as ops
from .ad.taylor import taylor_graph as ad_taylor_graph
from .ad.operators.array_jet import jet as array_jet
from .ad.operators.array_laplacian import Unsupported, dense, hessian_block, jacobian_block, scalar_twin
from .core import Tape, Term
from .estimate import Estimate, at_values, check_samples
from .interop.dask_arrays import lazy  # Dask
from .interop.numpy_dispatch import TermArray
from .pytrees import real_leaf
from .trace import Traced, vmap
from .trace.tracer import positions
from .trace.results import shaped
from .trace.transform import Transformed

#: How an operator's values are shaped: (outputs, points) -> (points, *operator shape).
Shape = Callable[[np.ndarray], np.ndarray]
#: How a batched operator is built on a trace: (tape, xs, u) -> (inputs, Terms, shape of values).
Build = Callable[[Tape, list[Term], Term], tuple[list[Term], list[Term], Shape]]


class _Operator(Transformed):
    """The operator of u with respect to its argument ``argnums``, one point x of shape (d,): a
    transform like ``grad`` (traced and compiled per signature, nested inside another trace); a
    batch of points (..., d) runs it under ``vmap``, the other arguments the same at every
    point (vmap it with in_axes to batch them too)."""

    def __init__(self, f: Callable[..., Any], what: str, build: Build, argnums: int, backend: str | None,
                 arrays: bool = False) -> None:
        """``arrays``: whether the operator's pass runs over array nodes, as the Laplacian's and
        the biharmonic's do; it then takes them where u has a dense layer (``dense``)."""
        if isinstance(argnums, bool) or not isinstance(argnums, int):
            raise TypeError(f"{what}: argnums must be an int (the argument the operator acts on), got {argnums!r}")
        self.argnums = argnums
        self.ARRAYS = arrays  # otherwise the point is traced as scalar vars, as the other passes take them

        def traced(trace: Traced) -> tuple[list[Term], Any]:
            (k,) = positions(argnums, len(trace.trees), what, one=True)
            if len(trace.array_argument(k, what)) != 1:
                raise ValueError(f"{what}: argument {k} is the point, an array of shape (d,), got the shape "
                                 f"{trace.trees[k].meta}")
            out, xs = trace.scalar_output(what), trace.vars_of(k)
            if any(x.shape for x in xs) and not (arrays and dense(out)):  # (nested: scalar vars already)
                (out,), xs = trace.scalars([out]), trace.scalar_vars(k)
            _, terms, shaped = build(trace.tape, xs, out)

            def assemble(values: list[Any], batch: tuple[int, ...]) -> Any:
                if values and isinstance(values[0], Term):  # nested: Terms of the outer trace
                    found = shaped(np.array(values + [values[0]], dtype=object)[:-1, None])[0]
                    return found.view(TermArray) if isinstance(found, np.ndarray) else found
                out = shaped(np.array([np.broadcast_to(v, batch) for v in values]).reshape(len(values), -1))
                out = out.reshape(batch + out.shape[1:])
                return float(out) if out.ndim == 0 else out

            return terms, assemble

        super().__init__(f, what, traced, backend)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        (k,) = positions(self.argnums, len(args), self.what, one=True)
        points = args[k]
        traced_points = isinstance(points, (Term, TermArray))
        if not traced_points:
            real_leaf(self.what)(points, "the points")
        shape = np.shape(points)
        if not shape:
            raise ValueError(f"{self.what}: points must be an array of shape (d,) for one point or (n, d) for a "
                             f"batch, got a number {points!r}")
        if len(shape) == 1:
            return self.run(args, kwargs, None)
        flat = (points if traced_points else points.astype(float) if lazy(points)  # Dask: kept lazy
                else np.asarray(points, dtype=float)).reshape(-1, shape[-1])
        axes = tuple(0 if j == k else None for j in range(len(args)))
        out = vmap(self, in_axes=axes)(*args[:k], flat, *args[k + 1:], **kwargs)
        return out.reshape(shape[:-1] + out.shape[1:])


def _scalar_values(values: np.ndarray) -> np.ndarray:
    row: np.ndarray = values[0]  # values is 2-D, (outputs, points): a row is an array
    return row


def _is_function(u: Any, what: str) -> bool:
    """Whether ``u`` is a Python function to trace (else a Term); anything else is refused."""
    if isinstance(u, Term):
        return False
    if callable(u):
        return True
    raise TypeError(f"{what} takes a Term with its vars, or a Python function to trace, got {type(u).__name__} {u!r:.80}")


def _no_xs(xs: Any, what: str) -> None:
    if xs is not None:
        raise TypeError(f"{what}(fn) differentiates by fn's array argument; xs is for a Term, got {xs!r:.80}")


def laplacian(u: Any, xs: Any = None, weights: Any = None, *, samples: int | None = None, seed: int = 0,
              argnums: int = 0, backend: str | None = None) -> Any:
    """Δu = Σᵢ ∂²u/∂xᵢ² (with ``weights`` A: Σᵢⱼ aᵢⱼ ∂²u/∂xᵢ∂xⱼ, A symmetric).

    ``laplacian(u, xs)`` for a Term u: a Term, by one forward pass (``ad.operators``).
    ``laplacian(fn, argnums=k)``: a callable on points (argument k, shape (d,) or (..., d); the
    other arguments passed through), compiled once per signature with ``backend``. ``samples=S``: Hutchinson's estimate from S Rademacher probes (seeded by
    ``seed``) of the second directional derivative instead — a float at the vars' current
    values for a Term (the tape is left as it was), an array on points for a function.
    """
    if _is_function(u, "laplacian"):
        _no_xs(xs, "laplacian")
        if samples is not None:
            if argnums != 0:
                raise ValueError("laplacian: samples= estimates the Laplacian of a function of one argument; for "
                                 f"argnums={argnums!r} build it exactly (samples=None)")
            if weights is not None:
                raise ValueError("laplacian: samples= estimates the plain Laplacian; with weights, build it exactly "
                                 "(samples=None)")
            return Estimate(u, backend, *check_samples(samples, seed))

        def build(tape: Tape, xs_: list[Term], out: Term) -> Any:
            return xs_, [ops.laplacian(out, xs_, weights)], _scalar_values

        return _Operator(u, "laplacian", build, argnums, backend, arrays=True)
    if samples is None:
        if xs is None:
            raise TypeError("laplacian(u, xs) needs the vars xs of the Term u")
        return ops.laplacian(u, xs, weights)
    if weights is not None:
        raise ValueError("laplacian: samples= estimates the plain Laplacian; with weights, build it exactly "
                         "(samples=None)")
    return at_values(u, ops.check_vars(u, xs, "laplacian"), *check_samples(samples, seed), backend)


def biharmonic(u: Any, xs: Any = None, *, method: str = "auto", argnums: int = 0, backend: str | None = None) -> Any:
    """Δ²u = Σᵢⱼ ∂⁴u/∂xᵢ²∂xⱼ²: a Term for a Term u and its vars xs; for a Python function, a
    callable on points like ``laplacian(fn)``. ``method``: see ``ad.operators.biharmonic``."""
    if _is_function(u, "biharmonic"):
        _no_xs(xs, "biharmonic")

        def build(tape: Tape, xs_: list[Term], out: Term) -> Any:
            return xs_, [ops.biharmonic(out, xs_, method=method)], _scalar_values

        return _Operator(u, "biharmonic", build, argnums, backend, arrays=True)
    if xs is None:
        raise TypeError("biharmonic(u, xs) needs the vars xs of the Term u")
    return ops.biharmonic(u, xs, method=method)


#: The most entries a derivative tensor of order 3 or 4 has at one point for it to be one array
#: block (d = 100 at order 3, 40 at order 4); past it the scalar tensor keeps each distinct
#: entry once.
BLOCK_ENTRIES = 1 << 20


def _tensor_block(xs: list[Term], out: Term, order: int) -> Any:
    """The order-k derivative tensor of u at one array point x as one array node: u's gradient,
    then the array pass's Jacobian block of it k − 1 times (d = 300 at order 2: a few nodes
    where the scalar tensor has 45,150 distinct entries), and how its values (dᵏ, points)
    become (points, d, …, d). None where the pass has no rule or the block would be too large."""
    (x,) = xs
    d = x.size
    if order > 2 and d ** order > BLOCK_ENTRIES:
        return None
    block = hessian_block(out, x)
    if block is None:
        return None
    try:
        for _ in range(order - 2):
            block = jacobian_block(block, [x])
    except Unsupported:
        return None
    return xs, [block.reshape((d ** order,))], lambda values: values.T.reshape((values.shape[1],) + (d,) * order)


def derivative_tensor(u: Any, xs: Any = None, k: Any = None, *, argnums: int = 0, backend: str | None = None) -> Any:
    """The tensor of k-th partial derivatives (1 <= k <= 4). For a Term u: a
    ``DerivativeTensor`` over xs, T[i, j, …] in any order of indices (``ad.operators``).
    ``derivative_tensor(fn, k)``: a callable on points returning arrays of shape
    points.shape[:-1] + (d,) * k, each distinct entry computed once and copied to its
    permutations."""
    if _is_function(u, "derivative_tensor"):
        if k is None and isinstance(xs, (int, np.integer)) and not isinstance(xs, bool):
            xs, k = None, xs
        _no_xs(xs, "derivative_tensor")
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= 4:
            raise ValueError(f"derivative_tensor: the order k must be an int from 1 to 4, got {k!r}")
        order = int(k)

        def build(tape: Tape, xs_: list[Term], out: Term) -> Any:
            if any(x.shape for x in xs_) and order > 1:  # over its array point: one block (``_tensor_block``)
                found = _tensor_block(xs_, out, order)
                if found is not None:
                    return found
                out, xs_ = scalar_twin(out, xs_)  # an op the array pass has no rule for
            tensor = ops.derivative_tensor(out, xs_, order)
            d = len(xs_)
            keys = list(tensor.entries)
            terms = [tensor.entries[key] for key in keys] or [tape.zero]
            flat = [np.ravel_multi_index(tuple(np.array(index) for index in zip(*sorted(set(itertools.permutations(key))))),
                                         (d,) * order) for key in keys]

            def shape(values: np.ndarray) -> np.ndarray:
                out_ = np.zeros((values.shape[1], d ** order), dtype=values.dtype)
                for row, places in enumerate(flat):
                    out_[:, places] = values[row][:, None]
                return out_.reshape((values.shape[1],) + (d,) * order)

            return xs_, terms, shape

        return _Operator(u, "derivative_tensor", build, argnums, backend, arrays=order > 1)
    if xs is None or k is None:
        raise TypeError("derivative_tensor(u, xs, k) needs the vars xs and the order k for a Term u")
    return ops.derivative_tensor(u, xs, k)


__all__ = ["biharmonic", "derivative_tensor", "laplacian"]


def taylor_graph(u: Any, wrt: Any, n: Any = None, callback: Any = None, *, backend: str | None = None) -> Any:
    """``taylor_graph(term, wrt, n)``: the derivatives of orders 1..n as Terms (``ad.taylor``).
    ``taylor_graph(fn, k)`` for a Python function u(x): a callable ``(x, v) -> (..., k)`` of the
    directional derivatives ∂ʲu[v,…,v], j = 1..k, on a point and a direction of shape (d,) or
    batches of them (..., d) (broadcast against each other), like ``laplacian(fn)``: traced once
    per signature, the direction's components are vars of the program, so one compiled program
    serves every point and direction.

    >>> import numpy as np, subgraph_ad as sad
    >>> jets = sad.taylor_graph(lambda x: sad.sin(x[0] * x[1]), 2)
    >>> jets(np.array([0.5, 1.0]), np.array([1.0, 0.0])).round(6)   # d/dt, d²/dt² of sin(t)
    array([ 0.877583, -0.479426])
    """
    if not _is_function(u, "taylor_graph"):
        return ad_taylor_graph(u, wrt, n, callback)
    if n is not None or callback is not None:
        raise TypeError("taylor_graph(fn, k) takes the function and the order; the point and direction come with "
                        "each call: taylor_graph(fn, k)(x, v)")
    if isinstance(wrt, bool) or not isinstance(wrt, (int, np.integer)) or wrt < 1:
        raise ValueError(f"taylor_graph(fn, k): the order k must be an int >= 1, got {wrt!r}")
    order = int(wrt)

    def build(trace: Traced) -> Any:
        out = trace.scalar(trace.out, "taylor_graph(fn, k)")
        (x,), (v,) = trace.vars_of(0), trace.vars_of(1)
        if x.shape and x.shape == v.shape:  # one array var each: the jet over array nodes
            try:
                with trace.tape.transaction():
                    ys = array_jet(out, x, v, order)
                    return [trace.tape.zero if y is None else math.factorial(k) * y
                            for k, y in enumerate(ys, 1)], shaped((order,))
            except Unsupported:
                pass
        xs, vs = trace.scalar_vars(0), trace.scalar_vars(1)  # Taylor mode is scalar: element vars
        if len(xs) != len(vs):
            raise ValueError(f"taylor_graph(fn, {order}): the point has {len(xs)} entries and the direction {len(vs)}")
        (scalar,) = trace.scalars([out])
        terms = ad_taylor_graph(scalar, dict(zip(xs, vs)), order)
        return terms, shaped((order,))

    one = Transformed(lambda x, v: u(x), "taylor_graph", build, backend)

    def jets(x: Any, v: Any) -> Any:
        x, v = np.asarray(x, dtype=float), np.asarray(v, dtype=float)
        if x.ndim == 0 or v.ndim == 0 or x.shape[-1] != v.shape[-1]:
            raise ValueError(f"taylor_graph(fn, {order})(x, v): x and v must end in the same axis (d,), got shapes "
                             f"{x.shape} and {v.shape}")
        batch = np.broadcast_shapes(x.shape[:-1], v.shape[:-1])
        d = x.shape[-1]
        flat = [np.broadcast_to(a, batch + (d,)).reshape(-1, d) for a in (x, v)]
        return np.asarray(vmap(one)(*flat)).reshape(batch + (order,))

    return functools.update_wrapper(jets, u, updated=())
