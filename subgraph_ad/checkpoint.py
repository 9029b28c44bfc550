"""Checkpointed reverse mode for long loops: ``checkpointed_grad(step, x0, n)``.

x_{k+1} = step(x_k) for k < n. Reverse mode needs every x_k on the way back; storing them all
costs n states. Instead the loop is split where the step index has the most trailing zeros in
binary (count-trailing-zeros, CTZ): to go back over steps [a, b), run forward from the stored
x_a to x_m, m the number in (a, b) with the most trailing zeros, and go back over [m, b) first,
then over [a, m). At most one state per level of that binary split is held, O(log n) states,
and each step is run O(log n) times, O(n log n) step calls in all.

``step`` is traced once (scalars: one var; arrays: an array of vars) into a compiled step and a
compiled vector-Jacobian product, so the loop itself runs only compiled programs.

>>> import subgraph_ad as sad
>>> result = sad.checkpointed_grad(lambda x: sad.sin(x) + 0.5 * x, 0.3, 64)
>>> x64, slope = result
>>> result.stored_states <= 7, result.step_calls
(True, 256)
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

import numpy as np

from .ad.reverse import grad_graph
from .core import Term, checks
from .trace import Traced
from .trace.compiled import call, compile_traced, program


def split(a: int, b: int) -> int:
    """The number in (a, b) with the most trailing zeros (b − a >= 2).

    >>> split(0, 8), split(0, 7), split(5, 8)
    (4, 4, 6)
    """
    m = b - 1
    bit = 1
    while (m & ~bit) > a:  # clear low set bits while the number stays inside (a, b)
        m &= ~bit
        bit <<= 1
    return m


class Checkpointed:
    """``(x_n, dx_n/dx_0)`` — unpacks as that pair — with the schedule's cost: the most states
    held at once and the number of step calls."""

    def __init__(self, value: Any, derivative: Any, stored_states: int, step_calls: int) -> None:
        self.value, self.derivative = value, derivative
        self.stored_states, self.step_calls = stored_states, step_calls

    def __iter__(self) -> Iterator[Any]:
        return iter((self.value, self.derivative))

    def __repr__(self) -> str:
        return (f"Checkpointed(value={self.value!r}, derivative={self.derivative!r}, "
                f"stored_states={self.stored_states}, step_calls={self.step_calls})")


def checkpointed_grad(step: Callable[[Any], Any], x0: Any, n_steps: int) -> Checkpointed:
    """x_n and dx_n/dx_0 for x_{k+1} = step(x_k): a float for a number x0, the Jacobian (shape
    x0.shape * 2) for an array x0. Reverse mode over the CTZ schedule (see the module)."""
    if not callable(step):
        raise TypeError(f"checkpointed_grad() takes a step function to trace, got {type(step).__name__} {step!r}")
    checks.count(n_steps, "n_steps", "checkpointed_grad")
    state = np.asarray(x0, dtype=float)
    size = max(state.size, 1)

    def build(trace: Traced) -> tuple[list[Term], list[Term], Callable[..., Any]]:
        """The step, and beside it the VJP c ↦ cᵀ·∂step/∂x with the cotangent c as inputs
        (traced on the same tape)."""
        outs, shape = trace.outputs("checkpointed_grad")
        if shape != state.shape:
            raise ValueError(f"checkpointed_grad: step must return the shape of its argument {state.shape}, got {shape}")
        xs = trace.flat
        cs = [trace.tape.var(f"c{k}") for k in range(size)]
        weighted = outs[0] * cs[0]
        for o, c in zip(outs[1:], cs[1:]):
            weighted = weighted + o * c
        return xs, outs, program(xs + cs, list(grad_graph(weighted, xs)))

    run, vjp = compile_traced(step, [state.shape], "checkpointed_grad", build)
    calls = 0

    def forward(x: np.ndarray) -> np.ndarray:
        nonlocal calls
        calls += 1
        return np.array(call(run, x), dtype=float)

    x = state.ravel() if state.ndim else state.reshape(1)
    # the forward sweep keeps x_k only where the schedule will start from: the split points
    stack: list[tuple[int, int, np.ndarray]] = [(0, n_steps, x)]  # (a, b, x_a): go back over [a, b)
    cotangent = np.eye(size)  # rows: d x_n / d x_n
    end = x
    for _ in range(n_steps):
        end = forward(end)
    most = 1
    while stack:
        a, b, xa = stack.pop()
        if b - a == 0:
            continue
        if b - a == 1:
            cotangent = np.array(call(vjp, [*xa, *cotangent.T]), dtype=float).reshape(size, -1).T
            continue
        m = split(a, b)
        xm = xa
        for _ in range(m - a):
            xm = forward(xm)
        stack.append((a, m, xa))  # back over [a, m) after [m, b)
        stack.append((m, b, xm))
        most = max(most, len(stack))
    value = end.reshape(state.shape) if state.ndim else float(end[0])
    derivative = cotangent.reshape(state.shape + state.shape) if state.ndim else float(cotangent[0, 0])
    return Checkpointed(value, derivative, most, calls)
