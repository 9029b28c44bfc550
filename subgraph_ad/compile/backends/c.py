"""The C backend: a program as C99 statements for one point, the body the CUDA kernels wrap.

``c_body`` writes one ``const`` local per step from the ops' table below and each function's
spelling (every elementary's ``c`` template), reading ``in0, in1, …`` and assigning ``out0,
out1, …``: the caller declares those, so the same text is the inside of a C loop, of a CUDA
kernel or of a CuPy ``ElementwiseKernel``. IEEE semantics: no fast math, ``pow()`` for powers
(x², 1/x and √x are a product, a quotient and ``sqrt`` already: ``program.POWERS``), nan and inf spelled ``NAN`` and ``INFINITY``;
``dtype="float"`` writes the ``float`` forms of the math functions (``expf``) and of the
literals (``1.0f``), so nothing is computed in double.

``cpu_function`` compiles that body in a loop with the system's C compiler (``cc``) and calls it
through ctypes: the tests' way to check C's arithmetic and libm against NumPy without a GPU.

>>> from subgraph_ad import Tape, exp
>>> from subgraph_ad.compile.program import build_program
>>> tape = Tape(); x = tape.var("x")
>>> print(c_body(build_program(tape, [x], [exp(-x**2 / 2)])))
const double t2 = in0 * in0;
const double t6 = (-0.5) * t2;
const double t7 = exp(t6);
out0 = t7;
"""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import subprocess
import tempfile
from typing import Any, Callable

import numpy as np

from ...tables import rule_table
from ...functions.elementary import steps
from ..program import INFIX, Lowering, Operand, Program, Step

NAME = "C"

#: The C types ``c_body`` writes, by the name a caller may give (C's or NumPy's).
CTYPES = {"double": "double", "float": "float", "float64": "double", "float32": "float"}

#: The C99 ``<math.h>`` functions that have a ``float`` form named with an ``f`` suffix.
C99_MATH = frozenset((
    "acos asin atan atan2 cos sin tan acosh asinh atanh cosh sinh tanh exp exp2 expm1 frexp ilogb ldexp log "
    "log10 log1p log2 logb modf scalbn scalbln cbrt fabs hypot pow sqrt erf erfc lgamma tgamma ceil floor "
    "nearbyint rint lrint llrint round lround llround trunc fmod remainder remquo copysign nan nextafter "
    "nexttoward fdim fmax fmin fma").split())

#: C99's classification macros: type-generic, so no ``f`` form.
C99_MACROS = frozenset("isnan isfinite isinf isnormal signbit fpclassify".split())

_CALL = re.compile(r"\b([a-z][a-z0-9]*)(\s*\()")
_ANY_CALL = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
_FLOAT_LITERAL = re.compile(r"(?<![\w.])(\d+\.\d*(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+)(?![\w.])")


class NotLowerable(TypeError):
    """A function the target cannot compute: without a spelling its value is only a Python
    ``f``, which generated C (or JAX code, for an ``f`` that needs NumPy) cannot call."""


def ctype(dtype: str) -> str:
    """The C type of ``dtype`` (``"double"``/``"float64"`` or ``"float"``/``"float32"``)."""
    if dtype not in CTYPES:
        raise ValueError(f"dtype must be one of {sorted(CTYPES)}, got {dtype!r}")
    return CTYPES[dtype]


def literal(value: float, dtype: str = "double") -> str:
    """A constant as C source: the shortest decimal that rounds back to it in ``dtype`` (C
    compilers round decimal literals correctly), ``f``-suffixed in float, negative ones in
    parentheses (negating one gives ``-(-1.0)``, never the decrement ``--1.0``); nan and inf
    are ``NAN``/``INFINITY``, which have no literal (a double beyond float's range is inf).

    >>> literal(0.1), literal(0.1, "float"), literal(-0.0), literal(float("-inf"))
    ('0.1', '0.1f', '(-0.0)', '(-INFINITY)')
    """
    single = ctype(dtype) == "float"
    with np.errstate(over="ignore"):
        v = float(np.float32(value)) if single else float(value)
    if v != v:
        return "NAN"
    if v in (float("inf"), float("-inf")):
        return "INFINITY" if v > 0 else "(-INFINITY)"
    text = str(np.float32(v)) if single else repr(v)
    text += "f" if single else ""
    return f"({text})" if text.startswith("-") else text


def template(c: str, dtype: str) -> str:
    """An elementary's C template in ``dtype``: for float, the ``f`` forms of the C99 math
    functions and ``f``-suffixed literals, so a float program never widens to double."""
    if ctype(dtype) == "double":
        return c
    c = _CALL.sub(lambda m: m.group(1) + ("f" if m.group(1) in C99_MATH else "") + m.group(2), c)
    return _FLOAT_LITERAL.sub(r"\1f", c)


def _math(name: str, dtype: str) -> str:
    return name + ("f" if ctype(dtype) == "float" else "")


def _function(dtype: str, a: list[str], step: Step) -> str:
    """A function's spelling as C: its elementaries' templates applied in turn, the first to the
    operands, each to the text of the one before (a template that reads its argument twice,
    like ``sign``, repeats a pure call, which is only ever cost). NotLowerable where a template
    calls a function that C99's ``<math.h>`` lacks (SciPy's ``erfinv``)."""
    fn = step[3]
    chain = steps(fn.spelling) if fn is not None else ()
    if not chain:
        raise NotLowerable(f"{fn.kind} {fn.name!r} has no spelling (its value is only the Python function f), "  # type: ignore[union-attr]
                           "so it cannot be compiled to C or CUDA; give it a spelling of elementary operations "
                           "(see subgraph_ad.functions.ELEMENTARY), or use the NumPy or Numba backend")
    for elementary in chain:  # refused here, not as an undefined symbol when the compiled code loads
        missing = sorted({m.group(1) for m in _ANY_CALL.finditer(elementary.c)} - C99_MATH - C99_MACROS)
        if missing:
            raise NotLowerable(f"{fn.kind} {fn.name!r} cannot be compiled to C or CUDA: its elementary "  # type: ignore[union-attr]
                               f"{elementary.name!r} calls {', '.join(missing)}, which C99's <math.h> does not have; "
                               "use the NumPy or Numba backend")
    text = template(chain[0].c, dtype).format(*a)
    for elementary in chain[1:]:
        text = template(elementary.c, dtype).format(text)
    return text


#: Each op's C expression, in the C type named by the context. A power is ``pow()``: the
#: powers NumPy computes otherwise are other ops by now (``program.POWERS``).
LOWERING: dict[str, Lowering[str]] = {
    **INFIX,
    "pow": lambda dtype, a, step: f"{_math('pow', dtype)}({a[0]}, {a[1]})",
    "fn": _function,
}
rule_table("C LOWERING", LOWERING)


def c_body(program: Program, dtype: str = "double") -> str:
    """The program for one point as C99 statements: one ``const`` local ``t<node>`` per step,
    reading ``in<k>`` and assigning ``out<k>`` (the caller declares both, in ``dtype``).

    Raises ``NotLowerable`` for a function without a spelling."""
    kind_of = ctype(dtype)

    def ref(r: Operand) -> str:
        kind, v = r
        return f"in{v}" if kind == "in" else literal(v, dtype) if kind == "c" else f"t{v}"

    lines = [f"const {kind_of} t{step[0]} = {LOWERING[step[1]](kind_of, [ref(r) for r in step[2]], step)};"
             for step in program.steps]
    lines += [f"out{k} = {ref(r)};" for k, r in enumerate(program.outputs)]
    return "\n".join(lines)


def c_source(program: Program, dtype: str = "double") -> str:
    """A C file with ``void run(long n, const T* const* in, T* const* out)``: the body in a loop
    over ``n`` points, input k at ``in[k]``, output k at ``out[k]`` (contiguous arrays)."""
    t = ctype(dtype)
    body = c_body(program, dtype)
    lines = ["#include <math.h>", "",
             f"void run(long n, const {t}* const* in, {t}* const* out) {{",
             "    for (long i = 0; i < n; i++) {"]
    lines += [f"        const {t} in{k} = in[{k}][i];" for k in range(program.n_inputs)]
    lines += [f"        {t} out{k};" for k in range(len(program.outputs))]
    lines += [f"        {line}" for line in body.splitlines()]
    lines += [f"        out[{k}][i] = out{k};" for k in range(len(program.outputs))]
    lines += ["    }", "}", ""]
    return "\n".join(lines)


#: How the CPU path compiles: C99 (which also turns off contraction into FMA) and no fast math.
CC_FLAGS = ("-O2", "-shared", "-fPIC", "-std=c99", "-ffp-contract=off")


def cpu_function(program: Program, dtype: str = "double") -> Callable[..., tuple[np.ndarray, ...]]:
    """The program compiled by the system's C compiler and called through ctypes: a function of
    numbers or arrays (broadcast like NumPy) returning a tuple of arrays in ``dtype``. For tests:
    it checks the C that the GPU runs, on the CPU. RuntimeError when there is no ``cc``."""
    compiler = shutil.which("cc")
    if compiler is None:
        raise RuntimeError("no C compiler: cpu_function needs `cc` on the PATH (e.g. apt install gcc)")
    numpy_type = np.float64 if ctype(dtype) == "double" else np.float32
    folder = tempfile.mkdtemp(prefix="subgraph_ad_c_")
    try:
        source, library = os.path.join(folder, "program.c"), os.path.join(folder, "program.so")
        with open(source, "w") as file:
            file.write(c_source(program, dtype))
        done = subprocess.run([compiler, *CC_FLAGS, "-o", library, source, "-lm"], capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"cc could not compile the program:\n{done.stderr}")
        run = ctypes.CDLL(library).run  # the loaded library stays mapped once its file is gone
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    pointers = ctypes.POINTER(ctypes.c_void_p)
    run.argtypes, run.restype = [ctypes.c_long, pointers, pointers], None

    def call(*args: Any) -> tuple[np.ndarray, ...]:
        if len(args) != program.n_inputs:
            raise TypeError(f"expected {program.n_inputs} arguments, got {len(args)}")
        arrays = [np.asarray(a, dtype=numpy_type) for a in args]
        shape = np.broadcast_shapes(*(a.shape for a in arrays))
        ins = [np.ascontiguousarray(np.broadcast_to(a, shape)) for a in arrays]
        outs = [np.empty(shape, numpy_type) for _ in program.outputs]
        table = (ctypes.c_void_p * max(len(ins), 1))(*(a.ctypes.data for a in ins))
        out_table = (ctypes.c_void_p * len(outs))(*(o.ctypes.data for o in outs))
        run(int(np.prod(shape, dtype=np.int64)), table, out_table)
        return tuple(outs)

    return call

