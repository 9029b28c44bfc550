"""The coefficient kernel: runs a system's instruction table (``system.py``) order by order.

``c[row, k, b]`` is coefficient k of a row for ensemble member b; coefficient 0 (the values) is
filled by the caller, orders 1..p here, each instruction reading only what the order before or
its operands at this order have written:

- STATE  y_k = f_{k−1} / k                     - ADD, SUB, NEG  coefficient-wise
- MUL    Σ_{j=0..k} a_j·b_{k−j}                 - DIV   (a_k − Σ_{j=1..k} b_j·q_{k−j}) / b_0
- ROOT   (u_k − Σ_{j=1..k−1} y_j·y_{k−j}) / (2·y_0)
- CHAIN  += c·Σ_{j=1..k} j·u_j·g_{k−j} / k      (a function of u with derivative c·g)
- LINEAR p_k·f(1, a)                           - SQUARE, QUADRATIC  c·Σ g_j·g_{k−j} (+ g_k)

The same kernel serves every system (the table is data), so nothing is compiled per system:
with Numba it is compiled once and cached on disk; without, the NumPy version runs each
instruction over the ensemble axis.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .stepper import horner
from .system import ADD, CHAIN, DIV, LINEAR, MUL, NEG, QUADRATIC, ROOT, SQUARE, STATE, SUB

Kernel = Callable[[np.ndarray, np.ndarray, np.ndarray, int], None]


def fill_numpy(code: np.ndarray, scalars: np.ndarray, c: np.ndarray, order: int) -> None:
    """Orders 1..order of every row, vectorised over the ensemble axis (the last)."""
    table = [(int(op), int(i), int(a), int(b), float(s)) for (op, i, a, b), s in zip(code, scalars)]
    for k in range(1, order + 1):
        for op, i, a, b, s in table:
            if op == STATE:
                c[i, k] = c[a, k - 1] / k
            elif op == ADD:
                c[i, k] = c[a, k] + c[b, k]
            elif op == SUB:
                c[i, k] = c[a, k] - c[b, k]
            elif op == NEG:
                c[i, k] = -c[a, k]
            elif op == MUL:
                c[i, k] = np.einsum("jb,jb->b", c[a, :k + 1], c[b, k::-1])
            elif op == DIV:
                c[i, k] = (c[a, k] - np.einsum("jb,jb->b", c[b, 1:k + 1], c[i, k - 1::-1])) / c[b, 0]
            elif op == ROOT:
                c[i, k] = (c[a, k] - np.einsum("jb,jb->b", c[i, 1:k], c[i, k - 1:0:-1])) / (2.0 * c[i, 0])
            elif op == CHAIN:
                j = np.arange(1.0, k + 1.0)[:, None]
                c[i, k] += s * np.einsum("jb,jb->b", j * c[a, 1:k + 1], c[b, k - 1::-1]) / k
            elif op == LINEAR:
                c[i, k] = c[a, k] * c[b, 0]
            else:  # SQUARE, QUADRATIC
                c[i, k] = s * np.einsum("jb,jb->b", c[a, :k + 1], c[a, k::-1]) + (c[a, k] if op == QUADRATIC else 0.0)


def _fill_loops(code: np.ndarray, scalars: np.ndarray, c: np.ndarray, order: int) -> None:  # pragma: no cover - Numba
    """``fill_numpy`` as scalar loops, for Numba to compile (the same sums in the same order)."""
    width = c.shape[2]
    for k in range(1, order + 1):
        for m in range(code.shape[0]):
            op, i, a, b = code[m, 0], code[m, 1], code[m, 2], code[m, 3]
            s = scalars[m]
            for q in range(width):
                if op == STATE:
                    c[i, k, q] = c[a, k - 1, q] / k
                elif op == ADD:
                    c[i, k, q] = c[a, k, q] + c[b, k, q]
                elif op == SUB:
                    c[i, k, q] = c[a, k, q] - c[b, k, q]
                elif op == NEG:
                    c[i, k, q] = -c[a, k, q]
                elif op == MUL:
                    acc = 0.0
                    for j in range(k + 1):
                        acc += c[a, j, q] * c[b, k - j, q]
                    c[i, k, q] = acc
                elif op == DIV:
                    acc = 0.0
                    for j in range(1, k + 1):
                        acc += c[b, j, q] * c[i, k - j, q]
                    c[i, k, q] = (c[a, k, q] - acc) / c[b, 0, q]
                elif op == ROOT:
                    acc = 0.0
                    for j in range(1, k):
                        acc += c[i, j, q] * c[i, k - j, q]
                    c[i, k, q] = (c[a, k, q] - acc) / (2.0 * c[i, 0, q])
                elif op == CHAIN:
                    acc = 0.0
                    for j in range(1, k + 1):
                        acc += j * c[a, j, q] * c[b, k - j, q]
                    c[i, k, q] += s * acc / k
                elif op == LINEAR:
                    c[i, k, q] = c[a, k, q] * c[b, 0, q]
                else:
                    acc = 0.0
                    for j in range(k + 1):
                        acc += c[a, j, q] * c[a, k - j, q]
                    c[i, k, q] = s * acc + (c[a, k, q] if op == QUADRATIC else 0.0)


def _horner_loops(coefficients: np.ndarray, tau: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover - Numba
    """out[i, b] = Σ_k coefficients[i, k, b]·tau[b]^k by Horner's rule (``stepper.horner``)."""
    for i in range(coefficients.shape[0]):
        for b in range(coefficients.shape[2]):
            acc = coefficients[i, coefficients.shape[1] - 1, b]
            for k in range(coefficients.shape[1] - 2, -1, -1):
                acc = acc * tau[b] + coefficients[i, k, b]
            out[i, b] = acc


def _horner_numpy(coefficients: np.ndarray, tau: np.ndarray, out: np.ndarray) -> None:
    out[...] = horner(coefficients, tau)


_COMPILED: dict[str, Any] = {}


def _numba() -> Any:
    """Numba's ``njit`` where Numba imports, else None."""
    try:
        import numba
    except ImportError:
        return None
    return numba.njit(cache=True, nogil=True)


def kernel(backend: str) -> Kernel:
    """The kernel for a backend: ``"numba"`` (compiled once, cached on disk) where Numba imports,
    else the NumPy one."""
    jit = _numba() if backend == "numba" else None
    if jit is None:
        return fill_numpy
    if "fill" not in _COMPILED:
        _COMPILED["fill"] = jit(_fill_loops)
    return _COMPILED["fill"]  # type: ignore[no-any-return]


def evaluator(backend: str) -> Callable[[np.ndarray, np.ndarray, np.ndarray], None]:
    """Horner's rule over a step for every member at once, compiled like ``kernel``."""
    jit = _numba() if backend == "numba" else None
    if jit is None:
        return _horner_numpy
    if "horner" not in _COMPILED:
        _COMPILED["horner"] = jit(_horner_loops)
    return _COMPILED["horner"]  # type: ignore[no-any-return]
