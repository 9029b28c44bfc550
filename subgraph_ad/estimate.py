"""Hutchinson's estimate of the Laplacian: for a Rademacher probe v (entries ±1),
E[vᵀ∇²u v] = tr ∇²u, and vᵀ∇²u v is the second directional derivative ∂²u[v, v] — a jet of two
coefficients, O(S) per point for S probes instead of the exact operator's O(d). One program of
x and v runs on every point and probe at once; the probes are drawn once per call from the seed
and shared by every point (and every Dask chunk), so a seed gives one estimate.

``laplacian(fn, samples=S, seed=s)`` returns an ``Estimate``; ``laplacian(u, xs, samples=S)`` on
a Term is ``at_values``.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

from .ad import operators as ops
from .ad.operators.array_jet import jet as array_jet
from .ad.operators.array_laplacian import Unsupported
from .core import Tape, Term
from .interop.dask_arrays import lazy, per_point  # Dask
from .pytrees import real_leaf
from .trace import Traced
from .trace.compiled import Programs, call, program
from .trace.nesting import outer_tape, terms_in
from .trace.tracer import check_callable

#: Probe evaluations per compiled call: x and v are broadcast to (points, probes) blocks of about
#: this many entries, so memory stays bounded.
STOCHASTIC_BLOCK = 1 << 18


def check_samples(samples: Any, seed: Any) -> tuple[int, int]:
    """(samples, seed) as ints, or the error that says what was given."""
    if isinstance(samples, bool) or not isinstance(samples, (int, np.integer)) or samples < 1:
        raise ValueError(f"laplacian: samples must be an int >= 1 (the number of random probes), got {samples!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"laplacian: seed must be an int, got {type(seed).__name__} {seed!r}")
    return int(samples), int(seed)


def probes(d: int, samples: int, seed: int) -> np.ndarray:
    """Rademacher probes, one column each: entries ±1 from NumPy's generator seeded with ``seed``."""
    return np.random.default_rng(seed).choice([-1.0, 1.0], size=(d, samples))


def probe_vars(tape: Tape, d: int) -> list[Term]:
    """d fresh vars for the probe v, named apart from any var of the tape."""
    names = []
    for k in range(d):
        name = f"probe_{k}"
        while tape.find_var(name) is not None:
            name += "_"
        names.append(name)
    return [tape.var(name) for name in names]


def second_directional(u: Term, xs: list[Term], vs: list[Term]) -> Term:
    """∂²u[v, v] = d²/dt² u(x + t·v), the probe v as vars: one directional Taylor sweep."""
    return ops.directional_taylor(u, dict(zip(xs, vs)), 2)[1]


def columns_mean(compiled: Callable[..., Any], columns: list[np.ndarray], drawn: np.ndarray) -> np.ndarray:
    """The mean of the compiled scalar ∂²u[v, v] over the probes at every point: one compiled call
    per block of points (x as (points, 1), v as (1, probes), broadcast inside the program)."""
    n, samples = columns[0].shape[0], drawn.shape[1]
    step = max(1, STOCHASTIC_BLOCK // samples)
    out = np.empty(n)
    rows = [p[None, :] for p in drawn]
    for start in range(0, n, step):
        part = [c[start:start + step, None] for c in columns]
        found = call(compiled, part + rows)
        found = found[0] if isinstance(found, tuple) else found
        out[start:start + step] = np.mean(np.broadcast_to(found, (len(part[0]), samples)), axis=1)
    return out


def at_values(u: Term, xs: list[Term], samples: int, seed: int, backend: str | None) -> float:
    """The estimate at the vars' current values of a Term u; the tape is left as it was."""
    tape = u.tape
    with tape.trial():
        vs = probe_vars(tape, len(xs))
        compiled = program(xs + vs, second_directional(u, xs, vs), backend)
        at = [np.array([float(tape.value_of(x))]) for x in xs]
    return float(columns_mean(compiled, at, probes(len(xs), samples, seed))[0])


class Probes:
    """The plan of the estimate on a chunk of Dask points (``cluster.Plan``): the estimate at
    each row from the probes drawn once, on the client, from the seed, so that every chunk, and
    the NumPy path, averages the same probes."""

    def __init__(self, program: str, probes: np.ndarray) -> None:
        self.program, self.probes = program, probes

    def pattern(self) -> tuple[bool, ...]:
        return (False,) * (2 * len(self.probes))  # the columns of x, then the rows of v

    def evaluate(self, compiled: Callable[..., Any], blocks: Any) -> np.ndarray:
        (points,) = blocks
        return columns_mean(compiled, [np.ascontiguousarray(points[:, k]) for k in range(points.shape[1])], self.probes)


class Estimate:
    """The estimate for a traced function u(x), x of shape (d,): by the order-2 jet over array
    nodes, one program of x and the probe v run on every point and probe at once (a GEMM per
    layer); where u holds an op that jet has no rule for, and on Dask, by the scalar program of
    x's and v's components on the points' columns. Each is compiled once per d."""

    what = "laplacian"

    def __init__(self, f: Callable[..., Any], backend: str | None, samples: int, seed: int) -> None:
        check_callable(f, self.what)
        self.f, self.samples, self.seed = f, samples, seed
        self.cache: Programs[None] = Programs(f, self.what, self._program, backend)  # one per d
        # by the jet over array nodes; None once u holds an op it has no rule for
        self.jets: Programs[None] | None = Programs(f, self.what, self._jet, backend, arrays=True)
        functools.update_wrapper(self, f)

    @staticmethod
    def _program(trace: Traced) -> tuple[list[Term], list[Term], None]:
        xs = trace.vars_of(0)
        vs = probe_vars(trace.tape, len(xs))
        return xs + vs, [second_directional(trace.scalar_output("laplacian"), xs, vs)], None

    @staticmethod
    def _jet(trace: Traced) -> tuple[list[Term], Term, None]:
        """∂²u[v, v] = 2·y₂ of the order-2 jet over array nodes, x and the probe v array vars:
        a program run on (points, 1, d) and (1, probes, d) at once, a GEMM per layer."""
        (x,) = trace.vars_of(0)
        v = trace.tape.array(f"{x.name}_probe", np.zeros(x.shape))
        (_, second) = array_jet(trace.scalar_output("laplacian"), x, v, 2)
        return [x, v], trace.tape.zero if second is None else 2.0 * second, None

    def _by_jets(self, flat: np.ndarray, drawn: np.ndarray) -> np.ndarray | None:
        """The mean of ∂²u[v, v] over the probes at every point by the array jet, in blocks of
        points; None where the jet has no rule for what u holds (the scalar program then)."""
        if self.jets is None:
            return None
        d = flat.shape[1]
        try:
            compiled, _ = self.jets.get(d) or self.jets.make(d, [(d,)])
        except Unsupported:
            self.jets = None
            return None
        rows = drawn.T[None, :, :]
        step = max(1, STOCHASTIC_BLOCK // drawn.shape[1])
        out = np.empty(flat.shape[0])
        for start in range(0, flat.shape[0], step):
            out[start:start + step] = np.mean(call(compiled, [flat[start:start + step, None, :], rows]), axis=1)
        return out

    def __call__(self, points: Any) -> Any:
        if outer_tape(list(terms_in(points)), self.what) is not None:
            raise TypeError(f"{self.what}(fn, samples=...) cannot nest inside another transform: its estimate draws "
                            "random probes and averages numbers; inside a trace use the exact operator (samples=None)")
        real_leaf(self.what)(points, "the points")
        if not np.shape(points):
            raise ValueError(f"{self.what}: points must be an array of shape (d,) for one point or (n, d) for a "
                             f"batch, got a number {points!r}")
        d = np.shape(points)[-1]
        if lazy(points):  # Dask: a task per chunk of points, the probes shipped in its plan
            compiled, _ = self.cache.get(d) or self.cache.make(d, [(d,)])
            plan = functools.partial(Probes, probes=probes(d, self.samples, self.seed))
            return per_point(compiled, points.astype(float).reshape(-1, d), plan, self.samples).reshape(points.shape[:-1])
        array = np.asarray(points, dtype=float)
        flat = array.reshape(-1, d)
        drawn = probes(d, self.samples, self.seed)
        found = self._by_jets(flat, drawn)
        if found is None:  # the scalar program of x and v, on the points' columns
            compiled, _ = self.cache.get(d) or self.cache.make(d, [(d,)])
            found = columns_mean(compiled, [np.ascontiguousarray(flat[:, k]) for k in range(d)], drawn)
        out = found.reshape(array.shape[:-1])
        return float(out) if out.ndim == 0 else out

    def __repr__(self) -> str:
        return f"<{self.what} of {getattr(self.f, '__name__', self.f)!r}>"


__all__ = ["Estimate", "Probes", "STOCHASTIC_BLOCK", "at_values", "check_samples", "probes"]
