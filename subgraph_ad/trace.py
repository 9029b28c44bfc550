"""Traced Python functions: ``grad(f)``, ``derivative(f, n)``, ``jacobian(f)``, ``hessian(f)``.

``f`` is ordinary Python using ``sad.*`` functions or NumPy ufuncs. It is called once per call
signature (the number of arguments and their shapes) on fresh vars — an array argument as an
array of vars, so NumPy code written for arrays (slicing, ``np.sum``, ``np.exp``, ``@`` on small
matrices) runs on Terms — and the derivative subgraph is built, compiled and cached; later
calls with the same signature only run the compiled program. Python control flow on the value
of a traced argument cannot be recorded (the graph is traced once) and raises a TypeError that
says so, as JAX's concretization error does.

>>> import numpy as np
>>> import subgraph_ad as sad
>>> def f(x, y):
...     return x * y + np.sin(x)
>>> [round(v, 12) for v in sad.grad(f, argnums=(0, 1))(0.5, 4.2)]
[5.07758256189, 0.5]
>>> sad.derivative(np.sin, 4)(np.array([0.0, np.pi / 2]))
array([0., 1.])
"""

from __future__ import annotations

import functools
import math
from typing import Any, Callable, Sequence

import numpy as np

from .core import checks
from .ad.diff import diff
from .ad.matrices import hessian as hessian_terms
from .ad.matrices import Sparse, sparse_matrix
from .ad.matrices import jacobian as jacobian_terms
from .ad.reverse import grad_graph
from .compile.lambdify import lambdify
from .core import Tape, Term

Signature = tuple[tuple[int, ...], ...]


def _check_callable(f: Any, what: str) -> None:
    if not callable(f):
        raise TypeError(f"{what}() takes a Python function to trace, got {type(f).__name__} {f!r}")


def _argnums(argnums: Any, count: int, what: str, one: bool = False) -> tuple[int, ...]:
    """The argument positions to differentiate by; ``one``: exactly one."""
    nums = (argnums,) if isinstance(argnums, int) and not isinstance(argnums, bool) else argnums
    if one and not (isinstance(nums, tuple) and len(nums) == 1):
        raise TypeError(f"{what} differentiates with respect to one argument: give one int, got {argnums!r}")
    if not isinstance(nums, tuple) or not nums or not all(isinstance(k, int) and not isinstance(k, bool) for k in nums):
        raise TypeError(f"{what}: argnums must be an int or a non-empty tuple of ints, got {argnums!r}")
    for k in nums:
        if not -count <= k < count:
            raise ValueError(f"{what}: argnums {k} is out of range for a function called with {count} argument(s)")
    return tuple(k % count for k in nums)


class Traced:
    """The trace of ``f`` for one signature: the tape, the vars of each argument as created (``f``
    gets each as a Term, or an object array of Terms of its own) and what it returned on them.

    ``vars`` is kept apart from the arrays ``f`` gets: NumPy code may write into its argument
    (``x[0], x[1] = x[1], x[0]``), and reading the vars back from it afterwards would
    differentiate by whatever was written there, permuting the result without a word."""

    def __init__(self, f: Callable[..., Any], shapes: Signature, what: str) -> None:
        self.tape = Tape()
        args: list[Any] = []
        self.shapes = shapes
        self.vars: list[list[Term]] = []
        for k, shape in enumerate(shapes):
            if shape:
                names = [f"a{k}_{'_'.join(map(str, i))}" for i in np.ndindex(*shape)]
                self.vars.append([self.tape.var(name) for name in names])
                args.append(np.array(self.vars[-1], dtype=object).reshape(shape))
            else:
                self.vars.append([self.tape.var(f"a{k}")])
                args.append(self.vars[-1][0])
        self.flat: list[Term] = [v for vars_ in self.vars for v in vars_]
        try:
            self.out = f(*args)
        except TypeError as error:
            raise TypeError(f"{what}: tracing {getattr(f, '__name__', f)!r} failed: {error}") from error

    def vars_of(self, k: int) -> list[Term]:
        """The vars of argument k, as created (whatever ``f`` wrote into its array)."""
        if not self.vars[k]:
            raise ValueError(f"argument {k} is an empty array of shape {self.shapes[k]}: there is nothing to "
                             "differentiate with respect to")
        return self.vars[k]

    def scalar_output(self, what: str) -> Term:
        """f's result as one Term (a number becomes a constant); anything else is an error."""
        out = self.out
        if isinstance(out, np.ndarray) and out.shape == ():
            out = out.item()
        if isinstance(out, Term):
            return out
        if isinstance(out, (int, float, np.integer, np.floating)) and not isinstance(out, bool):
            return self.tape.const(float(out))
        raise TypeError(f"{what} needs a function returning one number, got {type(out).__name__} {out!r}")

    def outputs(self, what: str) -> tuple[list[Term], tuple[int, ...]]:
        """f's result as a flat list of Terms and its shape (numbers become constants)."""
        out = self.out
        array = np.asarray(out, dtype=object) if not isinstance(out, Term) else np.array(out, dtype=object)
        flat = []
        for item in array.ravel():
            if isinstance(item, Term):
                flat.append(item)
            elif isinstance(item, (int, float, np.integer, np.floating)) and not isinstance(item, bool):
                flat.append(self.tape.const(float(item)))
            else:
                raise TypeError(f"{what} needs a function returning numbers, got an element {item!r}")
        return flat, array.shape


def _signature(args: Sequence[Any]) -> Signature:
    return tuple(np.shape(a) for a in args)


def _check_real(args: Sequence[Any], what: str) -> None:
    """Refuse an argument that is not real before anything is traced or cast: the vars are real,
    and NumPy's cast of a complex array to float drops the imaginary part with only a
    ComplexWarning, which would give a real answer to a question that was not asked."""
    for k, a in enumerate(args):
        dtype = getattr(a, "dtype", None)  # read, not converted: a Dask array stays lazy
        kind = np.dtype(dtype).kind if dtype is not None else np.asarray(a).dtype.kind
        shown = f"{type(a).__name__} {a!r:.80}"
        if kind == "c" or (kind == "O" and any(isinstance(v, (complex, np.complexfloating))
                                               for v in np.asarray(a).ravel())):
            raise TypeError(f"{what}: argument {k} is complex ({shown}); complex input is not supported; give a "
                            "real number or an array of real numbers (a complex function is two real ones: "
                            "pass the real and imaginary parts as separate arguments)")
        if kind not in "biufO":
            raise TypeError(f"{what}: argument {k} must be a real number or an array of real numbers, got {shown}")


def _flatten(args: Sequence[Any]) -> list[Any]:
    flat: list[Any] = []
    for a in args:
        flat += list(np.asarray(a, dtype=float).ravel()) if np.ndim(a) else [a]
    return flat


class _Transformed:
    """A callable that traces ``f`` once per signature, builds the outputs with ``build(trace)``
    (flat Terms, and how to shape their values), compiles them, and runs the compiled program."""

    def __init__(self, f: Callable[..., Any], what: str,
                 build: Callable[[Traced], tuple[list[Term], Callable[[list[Any]], Any]]]) -> None:
        _check_callable(f, what)
        self.f, self.what, self.build = f, what, build
        self.cache: dict[Signature, tuple[Any, Callable[[list[Any]], Any]]] = {}
        functools.update_wrapper(self, f)  # type: ignore[arg-type]

    def __call__(self, *args: Any) -> Any:
        _check_real(args, self.what)
        signature = _signature(args)
        if signature not in self.cache:
            trace = Traced(self.f, signature, self.what)
            terms, shape = self.build(trace)
            self.cache[signature] = (lambdify(trace.flat, terms), shape)
        compiled, shape = self.cache[signature]
        values = compiled(*_flatten(args))
        return shape(list(values))

    def __repr__(self) -> str:
        return f"<{self.what} of {getattr(self.f, '__name__', self.f)!r}>"


def _shaped(shape: tuple[int, ...]) -> Callable[[list[Any]], Any]:
    return lambda values: float(values[0]) if not shape else np.array(values, dtype=float).reshape(shape)


def _nonzeros(matrix: Sparse, tape: Tape) -> tuple[list[Term], np.ndarray]:
    """The distinct Terms of a sparse matrix (a symmetric pair is one Term, compiled once), and
    for each entry the position of its Term among them. No nonzero at all still compiles one
    Term, the 0, of which nothing is taken."""
    distinct: dict[int, Term] = {}
    for t in matrix.terms:
        distinct.setdefault(t.index, t)
    position = {i: k for k, i in enumerate(distinct)}
    terms = list(distinct.values()) or [tape.zero]
    return terms, np.array([position[t.index] for t in matrix.terms], dtype=np.intp)


def _sparse(matrix: Sparse, tape: Tape) -> tuple[list[Term], Callable[[list[Any]], Any]]:
    """A traced sparse matrix: its distinct nonzero Terms, and their values as a ``scipy.sparse``
    CSR matrix (a dense ndarray without SciPy)."""
    terms, take = _nonzeros(matrix, tape)
    return terms, lambda values: sparse_matrix(matrix.rows, matrix.cols, np.array(values, dtype=float)[take],
                                               matrix.shape)


def _dense(matrix: Sparse, tape: Tape, shape: tuple[int, ...]) -> tuple[list[Term], Callable[[list[Any]], Any]]:
    """A traced dense matrix from its structural nonzeros only, scattered into zeros of
    ``shape``: a Hessian of n vars compiles its distinct nonzeros, not n² entries that are
    mostly the constant 0 (Rosenbrock-1000: 1,999 distinct Terms compiled, not 1,000,000)."""
    terms, take = _nonzeros(matrix, tape)
    rows, cols = np.array(matrix.rows, dtype=np.intp), np.array(matrix.cols, dtype=np.intp)

    def scatter(values: list[Any]) -> Any:
        out = np.zeros(matrix.shape)
        out[rows, cols] = np.array(values, dtype=float)[take]
        return out.reshape(shape) if shape else float(out[0, 0])

    return terms, scatter


def grad(f: Callable[..., Any], argnums: int | tuple[int, ...] = 0) -> Callable[..., Any]:
    """The gradient of a scalar function: ``grad(f)(*args)`` is ∂f/∂args[argnums], a float for a
    number argument and an array of its shape for an array one (a tuple for several argnums).
    Built by one reverse sweep (``grad_graph``) on the trace, compiled once per signature."""

    def build(trace: Traced) -> tuple[list[Term], Callable[[list[Any]], Any]]:
        nums = _argnums(argnums, len(trace.shapes), "grad")
        z = trace.scalar_output("grad")
        wrts = [v for k in nums for v in trace.vars_of(k)]
        terms = list(grad_graph(z, wrts))  # type: ignore[arg-type]
        shapes = [trace.shapes[k] for k in nums]

        def shape(values: list[Any]) -> Any:
            parts, at = [], 0
            for s in shapes:
                size = math.prod(s)
                parts.append(_shaped(s)(values[at:at + size]))
                at += size
            return parts[0] if isinstance(argnums, int) else tuple(parts)

        return terms, shape

    return _Transformed(f, "grad", build)


class _Derivative(_Transformed):
    """``derivative(f, n)``: every argument is a number (an array of them is points), so the
    trace has one var per argument whatever the shapes, and the compiled program broadcasts."""

    def __call__(self, *args: Any) -> Any:
        _check_real(args, self.what)
        signature = ((),) * len(args)
        if signature not in self.cache:
            trace = Traced(self.f, signature, self.what)
            terms, shape = self.build(trace)
            self.cache[signature] = (lambdify(trace.flat, terms[0]), shape)
        compiled, _ = self.cache[signature]
        return compiled(*args)


def derivative(f: Callable[..., Any], n: int = 1, argnum: int = 0) -> Callable[..., Any]:
    """The n-th derivative of a scalar function in one argument, elementwise on arrays of
    points: ``derivative(f, 4)(np.linspace(-2, 2, 9))``. Built by ``diff`` (Taylor mode from
    the third order) on the trace."""
    checks.count(n, "the order n", "derivative")

    def build(trace: Traced) -> tuple[list[Term], Callable[[list[Any]], Any]]:
        (k,) = _argnums(argnum, len(trace.shapes), "derivative", one=True)
        z = trace.scalar_output("derivative")
        return [diff(z, trace.vars_of(k)[0], n) if n else z], _shaped(())

    return _Derivative(f, "derivative", build)


def jacobian(f: Any, inputs: Any = None, argnums: int = 0, sparse: bool = False) -> Any:
    """``jacobian(outputs, inputs)`` on Terms: rows of Terms, or a ``Sparse`` matrix with
    ``sparse=True`` (see ``ad.matrices``). Given a Python function, a callable returning the
    Jacobian of its output (array) with respect to argument ``argnums`` as a NumPy array of shape
    output.shape + argument.shape; with ``sparse=True`` a ``scipy.sparse`` matrix of shape
    (output.size, argument.size) holding only the structural nonzeros."""
    if inputs is not None or isinstance(f, (Term, list, tuple, np.ndarray)):
        return jacobian_terms(f, inputs, sparse=sparse)

    def build(trace: Traced) -> tuple[list[Term], Callable[[list[Any]], Any]]:
        (k,) = _argnums(argnums, len(trace.shapes), "jacobian", one=True)
        outs, out_shape = trace.outputs("jacobian")
        xs = trace.vars_of(k)
        matrix = jacobian_terms(outs, xs, sparse=True)
        return _sparse(matrix, trace.tape) if sparse else _dense(matrix, trace.tape, out_shape + trace.shapes[k])

    return _Transformed(f, "jacobian", build)


def hessian(f: Any, inputs: Any = None, argnums: int = 0, sparse: bool = False) -> Any:
    """``hessian(output, inputs)`` on Terms: rows of Terms, or a ``Sparse`` matrix with
    ``sparse=True`` (see ``ad.matrices``). Given a Python function, a callable returning its
    Hessian with respect to argument ``argnums`` as a NumPy array (shape argument.shape * 2); with
    ``sparse=True`` a ``scipy.sparse`` matrix of shape (argument.size, argument.size)."""
    if inputs is not None or isinstance(f, Term):
        return hessian_terms(f, inputs, sparse=sparse)

    def build(trace: Traced) -> tuple[list[Term], Callable[[list[Any]], Any]]:
        (k,) = _argnums(argnums, len(trace.shapes), "hessian", one=True)
        z = trace.scalar_output("hessian")
        matrix = hessian_terms(z, trace.vars_of(k), sparse=True)
        shape = trace.shapes[k]
        return _sparse(matrix, trace.tape) if sparse else _dense(matrix, trace.tape, shape + shape)

    return _Transformed(f, "hessian", build)
