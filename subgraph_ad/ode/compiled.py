"""The stepping loop in Numba: many Taylor steps of one member per call from Python.

One call runs steps until it must hand back: the end of the span, a full output buffer, the
step budget (``max_steps``), a failure, a step whose event polynomials may have a zero
(Python isolates those, ``events.py``, and finishes the step through ``apply``), or a step at
whose end a condition row has another value (Python locates the switch, ``switches.py``, and
takes the step up to it). Each step:

1. coefficient 0 of every row from the value table (``values``): the states', t's, then each
   node's operation in tape order, the elementaries by number (``system.NATIVE``);
2. orders 1..p from the instruction table (``fill``, the kernel of ``kernel.fill_numpy`` on
   one member), a run of one op at a time (``System.segments``), each Cauchy sum reassociated
   so that it runs in SIMD lanes rather than waiting on one add after another;
3. the step size (``stepper.py``'s rule), the state update y + Σ_{k≥1} y_k·h^k by Horner's
   rule with the state kept as a compensated pair (y, y_lo): each step's rounding is that of
   the increment, not of y, and t as a TwoSum pair.

Every function here is fixed code over the tables (data), so Numba compiles it once and keeps
it in its on-disk cache (``cache=True``): a new process loads machine code. Without Numba the
functions stay Python (``backend="numba"`` is then not chosen by default, see ``integrate``).
"""

from __future__ import annotations

import math
from typing import Any, Callable, TypeVar, cast

import numpy as np

from .pairs import add_increment, advance, two_product, two_sum
from .system import (ADD, CHAIN, CHAIN0, COPY, DIV, GATE0, LINEAR, MUL, NEG, ROOT, SCALE, STATE, SUB, VADD,
                     VCONST, VDIV, VMUL, VNATIVE, VNEG, VPOW, VSUB)

F = TypeVar("F", bound=Callable[..., Any])

try:
    import numba
    from numba.extending import register_jitable

    for _pairs in (two_sum, two_product, advance, add_increment):  # callable from the kernels below
        register_jitable(_pairs)

    def _jit(fn: F) -> F:
        return cast(F, numba.njit(cache=True, nogil=True, error_model="numpy")(fn))

    def _fast(fn: F) -> F:
        """Compiled with reassociation allowed (only the sums of products: never TwoSum)."""
        return cast(F, numba.njit(cache=True, nogil=True, error_model="numpy", fastmath={"reassoc", "contract"})(fn))
except ImportError:  # pragma: no cover - without Numba the loop is never chosen
    def _jit(fn: F) -> F:
        return fn

    _fast = _jit

#: What ``run`` hands back for: the end of the span, a full buffer, the budget spent, a step to
#: check for events, a step over a switch, coefficients that are not finite, a step below the
#: resolution of t.
DONE, FULL, BUDGET, EVENT, SWITCH, NONFINITE, TOO_SMALL = 0, 1, 2, 3, 4, -1, -2
#: The slots of ``real`` (floats, read and written) and ``count`` (ints, read and written).
T1, SIGN, RTOL, ATOL, FACTOR, RESOLUTION, SLACK, STEP = range(8)
BUDGET_, STEPS, NEXT_TIME, PATH, DENSE, LAST = range(6)


@_jit
def native(op: int, x: float, y: float) -> float:  # pragma: no cover - Numba
    """The elementary number ``op`` of ``system.NATIVE`` at x (and y), IEEE values."""
    if op == 0:
        return math.exp(x)
    if op == 1:
        return math.expm1(x)
    if op == 2:
        return np.log(x)  # type: ignore[no-any-return]
    if op == 3:
        return np.log1p(x)  # type: ignore[no-any-return]
    if op == 4:
        return np.log2(x)  # type: ignore[no-any-return]
    if op == 5:
        return np.log10(x)  # type: ignore[no-any-return]
    if op == 6:
        return np.sqrt(x)  # type: ignore[no-any-return]
    if op == 7:
        return math.sin(x)
    if op == 8:
        return math.cos(x)
    if op == 9:
        return math.tan(x)
    if op == 10:
        return 1.0 / math.cos(x)
    if op == 11:
        return 1.0 / math.sin(x)
    if op == 12:
        return 1.0 / math.tan(x)
    if op == 13:
        return np.arcsin(x)  # type: ignore[no-any-return]
    if op == 14:
        return np.arccos(x)  # type: ignore[no-any-return]
    if op == 15:
        return math.atan(x)
    if op == 16:
        return math.sinh(x)
    if op == 17:
        return math.cosh(x)
    if op == 18:
        return math.tanh(x)
    if op == 19:
        return math.asinh(x)
    if op == 20:
        return np.arccosh(x)  # type: ignore[no-any-return]
    if op == 21:
        return np.arctanh(x)  # type: ignore[no-any-return]
    if op == 22:
        return math.erf(x)
    if op == 23:
        return math.erfc(x)
    if op == 24:
        return abs(x)
    if op == 25:
        return 1.0 if x > 0.0 else (-1.0 if x < 0.0 else (0.0 if x == 0.0 else x))
    if op == 26:
        return -x
    if op == 27:
        return 1.0 / x
    if op == 28:
        if x >= 0.0:
            return 1.0 / (1.0 + math.exp(-x))
        e = math.exp(x)
        return e / (1.0 + e)
    if op == 29:
        return (1.0 / math.cosh(x)) ** 2
    if op == 30:
        return 1.0 / (2.0 + 2.0 * math.cosh(x))
    if op == 31:
        return math.atan2(x, y)
    if op == 32:
        return math.hypot(x, y)
    if op == 33:
        return np.power(x, y)  # type: ignore[no-any-return]
    if op == 34:
        return 0.0 if x == 0.0 and y == y else x * np.log(y)
    return np.cbrt(x)  # type: ignore[no-any-return]


@_jit
def values(code: np.ndarray, constants: np.ndarray, c: np.ndarray) -> None:  # pragma: no cover - Numba
    """Coefficient 0 of every row but the states and t (set by the caller), c: (rows, p + 1)."""
    for m in range(code.shape[0]):
        op, i, a, b = code[m, 0], code[m, 1], code[m, 2], code[m, 3]
        if op == VCONST:
            c[i, 0] = constants[m]
        elif op == VADD:
            c[i, 0] = c[a, 0] + c[b, 0]
        elif op == VSUB:
            c[i, 0] = c[a, 0] - c[b, 0]
        elif op == VMUL:
            c[i, 0] = c[a, 0] * c[b, 0]
        elif op == VDIV:
            c[i, 0] = c[a, 0] / c[b, 0]
        elif op == VNEG:
            c[i, 0] = -c[a, 0]
        elif op == VPOW:
            c[i, 0] = native(33, c[a, 0], c[b, 0])
        else:
            c[i, 0] = native(op - VNATIVE, c[a, 0], c[b, 0])


#: Indices are unsigned in the kernel: a signed index is checked for wrapping around (x[-1]) at
#: every access, which also keeps LLVM from vectorising the sums (measured: 1.7x slower).
_U = np.uint64
_ONE = np.uint64(1)


@_fast
def _dot(c: np.ndarray, a: Any, b: Any, low: Any, high: Any, k: Any) -> float:  # pragma: no cover - Numba
    """Σ_{j=low..high} c[a, j]·c[b, k − j], reassociated (SIMD lanes, several sums at once)."""
    ca, cb = c[a], c[b]
    acc = 0.0
    for j in range(low, high + _ONE):
        acc += ca[j] * cb[k - j]
    return acc


@_fast
def _weighted(c: np.ndarray, a: Any, b: Any, k: Any) -> float:  # pragma: no cover - Numba
    """Σ_{j=1..k} j·c[a, j]·c[b, k − j], reassociated."""
    ca, cb = c[a], c[b]
    acc = 0.0
    for j in range(_ONE, k + _ONE):
        acc += j * ca[j] * cb[k - j]
    return acc


@_jit
def fill(code: np.ndarray, scalars: np.ndarray, segments: np.ndarray, c: np.ndarray,
         order: int) -> None:  # pragma: no cover - Numba
    """Orders 1..order of every row of one member (c: rows × (p + 1)), as ``kernel.fill_numpy``,
    a run of one op (``System.segments``) at a time; code and segments are uint64."""
    zero = _U(0)
    for order_k in range(1, order + 1):
        k = _U(order_k)
        for r in range(segments.shape[0]):
            op, first, end = segments[r, 0], segments[r, 1], segments[r, 2]
            if op == MUL:
                for m in range(first, end):
                    c[code[m, 1], k] = _dot(c, code[m, 2], code[m, 3], zero, k, k)
            elif op == SCALE:
                for m in range(first, end):
                    c[code[m, 1], k] = c[code[m, 2], zero] * c[code[m, 3], k]
            elif op == ADD:
                for m in range(first, end):
                    c[code[m, 1], k] = c[code[m, 2], k] + c[code[m, 3], k]
            elif op == SUB:
                for m in range(first, end):
                    c[code[m, 1], k] = c[code[m, 2], k] - c[code[m, 3], k]
            elif op == STATE:
                for m in range(first, end):
                    c[code[m, 1], k] = c[code[m, 2], k - _ONE] / order_k
            elif op == CHAIN0:
                for m in range(first, end):
                    c[code[m, 1], k] = scalars[m] * _weighted(c, code[m, 2], code[m, 3], k) / order_k
            elif op == CHAIN:
                for m in range(first, end):
                    c[code[m, 1], k] += scalars[m] * _weighted(c, code[m, 2], code[m, 3], k) / order_k
            elif op == DIV:
                for m in range(first, end):
                    i, a, b = code[m, 1], code[m, 2], code[m, 3]
                    c[i, k] = (c[a, k] - _dot(c, b, i, _ONE, k, k)) / c[b, zero]
            elif op == NEG:
                for m in range(first, end):
                    c[code[m, 1], k] = -c[code[m, 2], k]
            elif op == ROOT:
                for m in range(first, end):
                    i, a = code[m, 1], code[m, 2]
                    c[i, k] = (c[a, k] - _dot(c, i, i, _ONE, k - _ONE, k)) / (2.0 * c[i, zero])
            elif op == LINEAR:
                for m in range(first, end):
                    c[code[m, 1], k] = c[code[m, 2], k] * c[code[m, 3], zero]
            elif op == COPY:
                for m in range(first, end):
                    c[code[m, 1], k] = c[code[m, 2], k]
            else:  # GATE0, GATE: a gate selects, so 0·inf is 0
                for m in range(first, end):
                    i, a, p = code[m, 1], code[m, 2], code[m, 3]
                    term = c[p, zero] * c[a, k] if c[p, zero] != 0.0 else 0.0
                    c[i, k] = term if op == GATE0 else c[i, k] + term


@_jit
def _increment(c: np.ndarray, s: int, h: float, y: float, low: float) -> tuple[float, float]:  # pragma: no cover
    """(y, low) + Σ_{k≥1} c[s, k]·h^k as a pair: Horner's rule down to order 2 in floats, then
    ``add_increment``."""
    p = c.shape[1] - 1
    acc = c[s, p]
    for k in range(p - 1, 1, -1):
        acc = acc * h + c[s, k]
    return add_increment(acc, c[s, 1], h, y, low)


@_jit
def _step(c: np.ndarray, states: np.ndarray, y: np.ndarray, clock: np.ndarray, real: np.ndarray
          ) -> tuple[float, bool, int]:  # pragma: no cover - Numba
    """The step h from the coefficients (``stepper.step_sizes``), whether it reaches t1, and
    a failure (0 for none)."""
    p = c.shape[1] - 1
    size = top = below = 0.0
    for i in range(states.shape[0]):
        s = states[i]
        for k in range(p + 1):
            if not math.isfinite(c[s, k]):
                return 0.0, False, NONFINITE
        size = max(size, abs(y[i]))
        below = max(below, abs(c[s, p - 1]))
        top = max(top, abs(c[s, p]))
    scale = max(real[ATOL], real[RTOL] * size)
    rho = math.inf
    if below > 0.0:
        rho = (scale / below) ** (1.0 / (p - 1))
    if top > 0.0:
        rho = min(rho, (scale / top) ** (1.0 / p))
    h = rho * real[FACTOR]
    remaining = (real[T1] - clock[0]) - clock[1]
    if h >= abs(remaining):
        return remaining, True, 0
    if h <= real[RESOLUTION] or not math.isfinite(h):
        return real[SIGN] * h, False, TOO_SMALL
    return real[SIGN] * h, False, 0


@_jit
def _may_vanish(c: np.ndarray, events: np.ndarray, h: float, slack: float) -> bool:  # pragma: no cover - Numba
    """Whether some event polynomial may have a zero (or a near touch) in [0, h]: not when its
    value at the start exceeds the sum of its other terms' sizes by a margin."""
    p = c.shape[1] - 1
    for e in range(events.shape[0]):
        g = events[e]
        rest = 0.0
        power = 1.0
        for k in range(1, p + 1):
            power *= abs(h)
            rest += abs(c[g, k]) * power
        start = abs(c[g, 0])
        if not start - rest > slack * (start + rest):
            return True
    return False


@_jit
def apply(c: np.ndarray, states: np.ndarray, h: float, last: bool, y: np.ndarray, low: np.ndarray,
          clock: np.ndarray, real: np.ndarray, count: np.ndarray, times: np.ndarray, at_times: np.ndarray,
          path_t: np.ndarray, path_y: np.ndarray, dense_t: np.ndarray, dense_c: np.ndarray) -> None:  # pragma: no cover
    """Take the step h from the coefficients c: record the step's polynomial (dense output) and
    the t_eval points in it, advance the compensated state (y, low) and the time pair, record
    the new point (``path_*``, when they have room)."""
    p = c.shape[1] - 1
    n = states.shape[0]
    hi, lo = clock[0], clock[1]
    if dense_t.shape[0] > 0:
        d = count[DENSE]
        dense_t[d, 0], dense_t[d, 1] = hi, lo
        for i in range(n):
            for k in range(p + 1):
                dense_c[d, i, k] = c[states[i], k]
        count[DENSE] = d + 1
    new_hi, new_lo = advance(hi, lo, h)
    if last:
        new_hi, new_lo = real[T1], 0.0
    end = new_hi + new_lo
    j = count[NEXT_TIME]
    while j < times.shape[0] and (times[j] - end) * real[SIGN] <= 0.0:
        tau = (times[j] - hi) - lo
        for i in range(n):
            s = states[i]
            acc = c[s, p]
            for k in range(p - 1, -1, -1):
                acc = acc * tau + c[s, k]
            at_times[i, j] = acc + low[i]
        j += 1
    count[NEXT_TIME] = j
    for i in range(n):
        y[i], low[i] = _increment(c, states[i], h, y[i], low[i])
    clock[0], clock[1] = new_hi, new_lo
    count[STEPS] += 1
    if path_t.shape[0] > 0:
        q = count[PATH]
        path_t[q] = end
        for i in range(n):
            path_y[q, i] = y[i]
        count[PATH] = q + 1


@_jit
def _switched(c: np.ndarray, ahead: np.ndarray, switches: np.ndarray) -> bool:  # pragma: no cover - Numba
    """Whether some condition row has another value in ``ahead`` than in c (nan equals nan)."""
    for m in range(switches.shape[0]):
        r = switches[m]
        before, after = c[r, 0], ahead[r, 0]
        if before != after and not (before != before and after != after):
            return True
    return False


@_jit
def run(code: np.ndarray, scalars: np.ndarray, segments: np.ndarray, value_code: np.ndarray, constants: np.ndarray,
        states: np.ndarray, time: int, events: np.ndarray, switches: np.ndarray, ahead: np.ndarray, c: np.ndarray,
        y: np.ndarray, low: np.ndarray, clock: np.ndarray, real: np.ndarray, count: np.ndarray, times: np.ndarray,
        at_times: np.ndarray, path_t: np.ndarray, path_y: np.ndarray, dense_t: np.ndarray,
        dense_c: np.ndarray) -> int:  # pragma: no cover - Numba
    """Steps of one member until one of the reasons of the module docstring; for EVENT and
    SWITCH the step's coefficients stay in c, its h in real[STEP] and whether it is the last in
    count[LAST]. With condition rows (``switches``) each step's end values are computed into
    ``ahead`` (rows × 1) to compare, and they are the next step's: the check costs the comparison."""
    p = c.shape[1] - 1
    ready = False
    while count[BUDGET_] > 0:
        if ready:
            for r in range(c.shape[0]):
                c[r, 0] = ahead[r, 0]
        else:
            for i in range(states.shape[0]):
                c[states[i], 0] = y[i]
            if time >= 0:
                c[time, 0] = clock[0] + clock[1]
            values(value_code, constants, c)
        ready = False
        fill(code, scalars, segments, c, p)
        h, last, failed = _step(c, states, y, clock, real)
        if failed != 0:
            real[STEP] = h
            return failed
        if switches.shape[0] > 0:  # the state and time the step leaves, as ``apply`` computes them
            for i in range(states.shape[0]):
                ahead[states[i], 0] = _increment(c, states[i], h, y[i], low[i])[0]
            if time >= 0:
                end_hi, end_lo = advance(clock[0], clock[1], h)
                ahead[time, 0] = end_hi + end_lo
            values(value_code, constants, ahead)
            if _switched(c, ahead, switches):
                real[STEP], count[LAST] = h, last
                return SWITCH
            ready = True
        if events.shape[0] > 0 and _may_vanish(c, events, h, real[SLACK]):
            real[STEP], count[LAST] = h, last
            return EVENT
        apply(c, states, h, last, y, low, clock, real, count, times, at_times, path_t, path_y, dense_t, dense_c)
        count[BUDGET_] -= 1
        if last:
            return DONE
        if (path_t.shape[0] > 0 and count[PATH] == path_t.shape[0]) or \
                (dense_t.shape[0] > 0 and count[DENSE] == dense_t.shape[0]):
            return FULL
    return BUDGET
