"""The coefficient kernel in NumPy: runs a system's tables (``system.py``) over the ensemble axis.

``c[row, k, b]`` is coefficient k of a row for ensemble member b. ``values`` fills coefficient
0 from the states' and t's (set by the caller), in tape order; ``fill_numpy`` orders 1..p, each
instruction reading only what the order before or its operands at this order have written:

- STATE  y_k = f_{k−1} / k                     - ADD, SUB, NEG  coefficient-wise
- MUL    Σ_{j=0..k} a_j·b_{k−j}                 - SCALE  a_0·b_k (a constant in t)
- DIV    (a_k − Σ_{j=1..k} b_j·q_{k−j}) / b_0    - ROOT   (u_k − Σ_{j=1..k−1} y_j·y_{k−j}) / (2·y_0)
- CHAIN0, CHAIN  = / += c·Σ_{j=1..k} j·u_j·g_{k−j} / k  (a function of u with derivative c·g)
- LINEAR p_k·f(1, a)                           - COPY  a_k (a function through Q(g): Q(g)'s)
- GATE0, GATE  = / += p_0·a_k where p_0 ≠ 0, else 0 (a gate selects: 0·inf is 0)

The same instructions run compiled on one member in ``compiled.py`` (the Numba backend's
stepping loop); this is the NumPy backend's, and the values of a function the compiled kernel
does not know (a ``VCALL``) are only computed here.
"""

from __future__ import annotations

import numpy as np

from ..functions.elementary import ELEMENTARY
from .system import (ADD, CHAIN, CHAIN0, COPY, DIV, GATE0, LINEAR, MUL, NATIVE, NEG, ROOT, SCALE, STATE, SUB, VADD,
                     VCALL, VCONST, VDIV, VMUL, VNATIVE, VNEG, VPOW, VSUB, System)

_ARITHMETIC = {VADD: np.add, VSUB: np.subtract, VMUL: np.multiply, VDIV: np.divide, VPOW: np.power}


def values(system: System, c: np.ndarray) -> None:
    """Coefficient 0 of every row but the states and t, vectorised over the ensemble axis."""
    for (op, i, a, b), constant in zip(system.values.tolist(), system.constants.tolist()):
        if op == VCONST:
            c[i, 0] = constant
        elif op in _ARITHMETIC:
            c[i, 0] = _ARITHMETIC[op](c[a, 0], c[b, 0])
        elif op == VNEG:
            c[i, 0] = -c[a, 0]
        elif op == VCALL:
            fn, rows = system.calls[a]
            c[i, 0] = fn.f(*(c[r, 0] for r in rows))
        else:
            elementary = ELEMENTARY[NATIVE[op - VNATIVE]]
            c[i, 0] = elementary.array(*(c[a, 0], c[b, 0])[:elementary.arity])


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
            elif op == SCALE:
                c[i, k] = c[a, 0] * c[b, k]
            elif op == DIV:
                c[i, k] = (c[a, k] - np.einsum("jb,jb->b", c[b, 1:k + 1], c[i, k - 1::-1])) / c[b, 0]
            elif op == ROOT:
                c[i, k] = (c[a, k] - np.einsum("jb,jb->b", c[i, 1:k], c[i, k - 1:0:-1])) / (2.0 * c[i, 0])
            elif op in (CHAIN0, CHAIN):
                j = np.arange(1.0, k + 1.0)[:, None]
                term = s * np.einsum("jb,jb->b", j * c[a, 1:k + 1], c[b, k - 1::-1]) / k
                c[i, k] = term if op == CHAIN0 else c[i, k] + term
            elif op == LINEAR:
                c[i, k] = c[a, k] * c[b, 0]
            elif op == COPY:
                c[i, k] = c[a, k]
            else:  # GATE0, GATE
                term = np.where(c[b, 0] != 0.0, c[b, 0] * c[a, k], 0.0)
                c[i, k] = term if op == GATE0 else c[i, k] + term
