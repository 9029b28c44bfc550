"""The Numba backend: the program as scalar statements inside one loop over the points.

The loop is compiled once per pattern of number and array inputs, eagerly (so a function Numba
cannot type fails at ``lambdify``, where the caller falls back to NumPy), ``nogil`` so threads
can run slices of the points at once. A function lowers through its spelling (each elementary's
``scalar``: a ``math`` or NumPy function is typed by Numba as it is, a plain Python function is
jitted once per process, a template is written out); without one, its ``f`` is compiled as a
function of ``(self=None, v)`` (``(self=None, a, b)`` for a BinaryFn).
"""

from __future__ import annotations

import functools
import types
from typing import Any, Callable, Sequence

import numpy as np

from ...functions import Function
from ..program import Operand, Program, callee, define, literal, namespace, scalar_call

NAME = "Numba"

#: An op's expression from its operands' text, the operands themselves and the opening of the
#: function call (``"fn"`` only).
Lowering = Callable[[Sequence[str], Sequence[Operand], str], str]


def _power(a: Sequence[str], operands: Sequence[Operand], call: str) -> str:
    """An int power as multiplications, not a pow() call; a negative one as 1/(x ** k), since
    Numba's int power raises for 0 ** -k where 1/0 gives inf."""
    kind, e = operands[1]
    if kind == "c" and float(e).is_integer():
        k = int(e)
        return f"{a[0]} ** {k}" if k >= 0 else f"1.0 / ({a[0]} ** {-k})"
    return f"{a[0]} ** {a[1]}"


LOWERING: dict[str, Lowering] = {
    "add": lambda a, operands, call: f"{a[0]} + {a[1]}",
    "sub": lambda a, operands, call: f"{a[0]} - {a[1]}",
    "mul": lambda a, operands, call: f"{a[0]} * {a[1]}",
    "div": lambda a, operands, call: f"{a[0]} / {a[1]}",
    "pow": _power,
    "neg": lambda a, operands, call: f"-{a[0]}",
    "fn": lambda a, operands, call: call,  # the whole call, from the function's spelling
}


@functools.cache
def _jit(func: types.FunctionType) -> Any:
    """A Python function as Numba code, compiled on first use and kept for the process; with
    NumPy's error model, as the kernel's, so 1/0 is inf rather than an exception."""
    import numba

    return numba.njit(error_model="numpy")(func)


def _call(fn: Function, operands: list[str], names: dict[str, Any], key: str) -> str:
    """``fn`` on its floats: its spelling (``scalar_call``), or ``f`` compiled by Numba."""
    if fn.spelling:
        return scalar_call(fn, operands, names, key, jit=_jit)[0]
    value = fn.f
    if isinstance(value, types.MethodType):  # a method that ignores self compiles with self=None
        return callee(_jit(value.__func__), names, key) + f"None, {', '.join(operands)})"
    return callee(_jit(value) if isinstance(value, types.FunctionType) else value, names, key) + f"{', '.join(operands)})"


def kernel_source(program: Program, scalars: tuple[bool, ...] = ()) -> tuple[str, dict[str, Any]]:
    """``_f(v0, ..., o0, ...)``: a loop over the points writing the outputs ``o``, where the inputs
    flagged in ``scalars`` are one number for every point."""
    names = namespace()

    def ref(r: Operand) -> str:
        kind, v = r
        return f"a{v}" if kind == "in" else literal(v) if kind == "c" else f"t{v}"

    outs = [f"o{k}" for k in range(len(program.outputs))]
    ins = [f"v{k}" for k in range(program.n_inputs)]
    lines = [f"def _f({', '.join(ins + outs)}):", f"    for _p in range({outs[0]}.shape[0]):"]
    lines += [f"        a{k} = v{k}" + ("" if k < len(scalars) and scalars[k] else "[_p]")
              for k in range(program.n_inputs)]
    for dest, op, args, fn in program.steps:
        a = [ref(r) for r in args]
        call = _call(fn, a, names, f"_fn{dest}") if fn is not None else ""
        lines.append(f"        t{dest} = " + LOWERING[op](a, args, call))
    lines += [f"        {o}[_p] = {ref(r)}" for o, r in zip(outs, program.outputs)]
    return "\n".join(lines) + "\n", names


def kernel(program: Program, scalars: tuple[bool, ...]) -> Callable[..., None]:
    """The loop compiled for inputs that are arrays or, where ``scalars`` says so, numbers."""
    try:
        import numba
    except ImportError as error:
        raise ImportError("Numba is not installed (pip install 'subgraph_ad[numba]')") from error
    source, names = kernel_source(program, scalars)
    array = numba.float64[::1]
    ins = [numba.float64 if scalar else array for scalar in scalars]
    signature = numba.void(*ins, *([array] * len(program.outputs)))
    # nogil: Compiled runs slices of the points on several threads (Numba's own parallel=True
    # costs ~6 ms per call to start its pool: more than a whole evaluation here)
    return numba.njit(signature, nogil=True, error_model="numpy", cache=False)(define(source, names, "numba"))


def worker(compiled: Callable[..., None], step: int) -> Callable[[Sequence[Any], Sequence[np.ndarray]], None]:
    """A thread's runner: the kernel keeps no state, so every thread calls the same one."""
    return lambda ins, outs: compiled(*ins, *outs)
