"""The operators' argument checks: u and its vars, and the weights of a weighted Laplacian."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Mapping

import numpy as np

from ...core import Term
from ...core.expand import element_vars, scalar_roots
from ...core.ops import plain_fraction
from .algebra import Algebra, Lin, Scalar


def check_vars(u: Any, xs: Any, caller: str) -> list[Term]:
    """u a Term and xs distinct vars of its tape (a Term, a list, a tuple or an array of them)."""
    if not isinstance(u, Term):
        raise TypeError(f"{caller} takes a Term (or, at the top level, a Python function), got "
                        f"{type(u).__name__} {u!r:.80}")
    if isinstance(xs, np.ndarray) and xs.dtype == object:
        xs = list(xs.ravel())
    if isinstance(xs, Term):
        xs = [xs]
    if not isinstance(xs, (list, tuple)) or not xs:
        raise TypeError(f"{caller}: xs must be a var or a non-empty list of vars, got {type(xs).__name__} {xs!r:.80}")
    out = [u.tape.check_var(x, f"{caller}: xs[{k}]") for k, x in enumerate(xs)]
    if len({x.index for x in out}) != len(out):
        raise ValueError(f"{caller}: xs repeats a var: {[x.name for x in out]}")
    return out


def scalar_form(u: Any, xs: Any, caller: str) -> tuple[Term, list[Term]]:
    """u and xs for a pass that knows only scalar nodes: u's expansion if it holds array nodes,
    and each array var among xs as its element vars (in C order), then checked as ``check_vars``."""
    if not isinstance(u, Term):
        return u, check_vars(u, xs, caller)  # refused there, by name
    tape = u.tape
    if not tape.var_shapes and not tape.array_nodes:
        return u, check_vars(u, xs, caller)
    u = Term(tape, scalar_roots(tape, [u.index], caller)[0])
    listed = list(xs.ravel()) if isinstance(xs, np.ndarray) and xs.dtype == object else [xs] if isinstance(xs, Term) else xs
    if isinstance(listed, (list, tuple)):
        xs = [v for x in listed for v in (element_vars(tape, x.name).ravel()
                                         if isinstance(x, Term) and x.tape is tape and x.op == "var" and x.shape
                                         else [x])]
    return u, check_vars(u, xs, caller)


def _weight(u: Term, value: Any, where: str) -> Any:
    """One weight: a real number or a Term of u's tape (Terms are compared as nodes)."""
    if isinstance(value, Term):
        u._lift(value)  # the same tape, or a ValueError naming both
        return value
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, Fraction, np.integer, np.floating)):
        raise TypeError(f"laplacian: weights{where} must be a real number or a Term, got {type(value).__name__} {value!r}")
    return value


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, Term) or isinstance(b, Term):
        return isinstance(a, Term) and isinstance(b, Term) and a.index == b.index
    if a == b:
        return True
    return bool(math.isfinite(a) and math.isfinite(b) and abs(a - b) <= 1e-12 * max(abs(a), abs(b)))


def check_weights(u: Term, weights: Any, d: int) -> dict[tuple[int, int], Any]:
    """The weight matrix A (d×d) as its nonzero entries {(i, j): number or Term}, both
    triangles: a dense nested list or ndarray, or a dict {(i, j): value} (a pair given once
    stands for both). A must be symmetric (to a relative 1e-12 for numbers; Terms: the same
    node)."""
    entries: dict[tuple[int, int], Any] = {}
    if isinstance(weights, Mapping):
        for key, value in weights.items():
            if not (isinstance(key, tuple) and len(key) == 2 and all(isinstance(k, (int, np.integer))
                                                                    and not isinstance(k, bool) for k in key)):
                raise TypeError(f"laplacian: a weights dict maps (i, j) pairs of ints to values, got the key {key!r}")
            i, j = int(key[0]), int(key[1])
            if not (0 <= i < d and 0 <= j < d):
                raise ValueError(f"laplacian: weights entry {key!r} is out of range for {d} vars (0..{d - 1})")
            value = _weight(u, value, f"[{i}, {j}]")
            mirror = weights.get((j, i), value)  # a pair given once stands for both
            if not _same(value, _weight(u, mirror, f"[{j}, {i}]")):
                raise ValueError(f"laplacian: weights must be symmetric, but ({i}, {j}) is {value!r} and ({j}, {i}) "
                                 f"is {mirror!r}")
            entries[(i, j)] = entries[(j, i)] = value
    else:
        rows = weights.tolist() if isinstance(weights, np.ndarray) and weights.dtype != object else weights
        if isinstance(rows, np.ndarray):
            rows = [list(r) for r in rows]
        if not (isinstance(rows, (list, tuple)) and len(rows) == d
                and all(isinstance(r, (list, tuple, np.ndarray)) and len(r) == d for r in rows)):
            shape = np.shape(weights) if not isinstance(weights, (str, bytes)) else type(weights).__name__
            raise ValueError(f"laplacian: weights must be a {d}×{d} matrix (one row and column per var) or a dict "
                             f"{{(i, j): value}}, got {type(weights).__name__} of shape {shape}")
        for i in range(d):
            for j in range(d):
                value = _weight(u, rows[i][j], f"[{i}][{j}]")
                if j < i and not _same(value, entries.get((j, i), 0) if (j, i) in entries else rows[j][i]):
                    raise ValueError(f"laplacian: weights must be symmetric, but A[{i}][{j}] = {value!r} and "
                                     f"A[{j}][{i}] = {rows[j][i]!r}")
                if j >= i:
                    entries[(i, j)] = entries[(j, i)] = value
    return {key: v for key, v in entries.items() if isinstance(v, Term) or v != 0}


def _scalar(value: Any) -> Scalar:
    """A weight as a coefficient: exact where it is an int, a Fraction or a float that says its
    value exactly (0.25, 3.0: ``plain_fraction``), so that it keeps an exact derivative exact."""
    if isinstance(value, Fraction):
        return value
    if isinstance(value, (int, np.integer)):
        return Fraction(int(value))
    plain = plain_fraction(float(value))
    return float(value) if plain is None else plain


def metric(alg: Algebra, entries: dict[tuple[int, int], Any], d: int) -> list[dict[int, Lin]]:
    """The rows of the metric: {position: weight as a Lin} per position."""
    rows: list[dict[int, Lin]] = [{} for _ in range(d)]
    for (i, j), value in sorted(entries.items()):
        lin = alg.of(value) if isinstance(value, Term) else alg.constant(_scalar(value))
        if lin is not None:
            rows[i][j] = lin
    return rows
