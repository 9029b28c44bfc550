"""Traced Python functions, as JAX users write them: ``grad``, ``value_and_grad``, ``jacobian``,
``hessian``, ``derivative``, the function forms of ``jvp``, ``vjp`` and ``hvp``, and ``vmap``.

``f`` is ordinary Python using ``sad.*`` or NumPy functions. It is called once per call
signature — the structure of the arguments, the shapes of their arrays, and the keyword
arguments, which are static (part of the cache key, never differentiated) — on fresh vars: a
number argument as a Term, an array as a ``TermArray`` of vars (so NumPy code written for arrays
runs on Terms), and a container — tuples, lists, dicts, None, nested (JAX's pytrees) — taken
apart into those, in JAX's order: dict entries by sorted key, then depth first. A list of plain
numbers is an array, as ``np.asarray`` reads it. The derivative subgraph is built, compiled and
cached; later calls with the same signature only run the compiled program — after checking that
what f read outside its arguments (closed-over arrays, globals, attributes, defaults) is as it
was at the trace, and tracing again where it is not (``captured``). Python control flow
on the value of a traced argument cannot be recorded (the graph is traced once) and raises a
TypeError that says so, as JAX's concretization error does.

``vmap(fn)`` maps over a leading batch axis by running the same compiled program once on the
columns of the batch (each var gets the array of its values across the batch): no Python loop
over points.

>>> import numpy as np
>>> import subgraph_ad as sad
>>> def f(x, y):
...     return x * y + np.sin(x)
>>> [round(v, 12) for v in sad.grad(f, argnums=(0, 1))(0.5, 4.2)]
[5.07758256189, 0.5]
>>> sad.derivative(np.sin, 4)(np.array([0.0, np.pi / 2]))
array([0., 1.])
>>> value, g = sad.value_and_grad(lambda p: np.sum(p["w"] ** 2) + p["b"])({"w": np.array([1.0, 2.0]), "b": 0.5})
>>> value, g["w"], g["b"]
(5.5, array([2., 4.]), 1.0)
>>> sad.vmap(sad.grad(lambda x: np.sum(x ** 3)))(np.array([[1.0, 2.0], [3.0, 4.0]]))
array([[ 3., 12.],
       [27., 48.]])
"""

from __future__ import annotations

import contextlib
import functools
import gc
import math
import threading
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from .ad.diff import diff
from .ad.forward import directional
from .ad.matrices import Sparse, sparse_matrix
from .ad.matrices import hessian as hessian_terms
from .ad.matrices import hvp as hvp_terms
from .ad.matrices import jacobian as jacobian_terms
from .ad.reverse import grad_graph
from .captured import Captured
from .compile.devices import on_host
from .compile.lambdify import lambdify
from .core import Tape, Term, checks
from .interop import dask_arrays  # Dask: the hooks marked "Dask" below
from .interop.numpy_dispatch import TermArray
from .nesting import fresh_prefix, lifted, name_tape, outer_tape, substitute, terms_in, tracing
from .numeric import modes
from .pytrees import Tree, flatten, is_number, leaf_shapes, real_leaf, shown, static_key, unflatten
from .trace_errors import in_user_code


# -- the trace -------------------------------------------------------------------------------------
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


def _as_tree(spec: Any) -> Tree:
    """A Tree, or a plain shape (a tuple of ints: one array or number argument)."""
    return spec if isinstance(spec, Tree) else Tree("leaf", tuple(spec))


class Traced:
    """The trace of ``f`` for one signature: the tape, the vars of each argument as created (``f``
    gets each leaf as a Term, or a TermArray of vars of its own) and what it returned on them.

    ``vars`` is kept apart from the arrays ``f`` gets: NumPy code may write into its argument
    (``x[0], x[1] = x[1], x[0]``), and reading the vars back from it afterwards would
    differentiate by whatever was written there, permuting the result without a word."""

    def __init__(self, f: Callable[..., Any], signature: Sequence[Any], what: str,
                 kwargs: dict[str, Any] | None = None, tape: Tape | None = None) -> None:
        self.tape = Tape() if tape is None else tape  # a given tape: a trace nested in the one that made it
        if tape is None:
            name_tape(self.tape, f"the trace of {what} of {getattr(f, '__name__', f)!r}")
        prefix = "" if tape is None else fresh_prefix(tape, what)
        self.trees = [_as_tree(s) for s in signature]
        self.vars: list[list[Term]] = []
        self.leaf_vars: list[list[list[Term]]] = []
        args = []
        for k, tree in enumerate(self.trees):
            shapes = leaf_shapes(tree)
            single = tree.kind == "leaf"
            leaves: list[Any] = []
            per_leaf: list[list[Term]] = []
            for j, shape in enumerate(shapes):
                stem = f"{prefix}a{k}" if single else f"{prefix}a{k}_l{j}"
                if shape:
                    vs = [self.tape.var(f"{stem}_{'_'.join(map(str, i))}") for i in np.ndindex(*shape)]
                    leaves.append(np.array(vs, dtype=object).reshape(shape).view(TermArray))
                else:
                    vs = [self.tape.var(stem)]
                    leaves.append(vs[0])
                per_leaf.append(vs)
            self.leaf_vars.append(per_leaf)
            self.vars.append([v for vs in per_leaf for v in vs])
            args.append(unflatten(tree, leaves))
        self.flat: list[Term] = [v for vars_ in self.vars for v in vars_]
        try:
            with tracing(self.tape):
                self.out = f(*args, **(kwargs or {}))
        except Exception as error:  # shown ending in the user's own line: see trace_errors
            raise in_user_code(error, what, f) from None

    def vars_of(self, k: int) -> list[Term]:
        """The vars of argument k, as created (whatever ``f`` wrote into its array)."""
        if not self.vars[k]:
            tree = self.trees[k]
            what = f"an empty array of shape {tree.meta}" if tree.kind == "leaf" else "a container with no numbers"
            raise ValueError(f"argument {k} is {what}: there is nothing to differentiate with respect to")
        return self.vars[k]

    def array_argument(self, k: int, what: str) -> tuple[int, ...]:
        """The shape of argument k, which must be one number or array (not a container)."""
        if self.trees[k].kind != "leaf":
            raise TypeError(f"{what} takes a number or an array as argument {k}, got a {self.trees[k].kind}; "
                            "for a container use grad, value_and_grad, jvp or vjp")
        return self.trees[k].meta  # type: ignore[no-any-return]

    def scalar(self, out: Any, what: str) -> Term:
        """``out`` as one Term (a number becomes a constant); anything else is an error."""
        if isinstance(out, np.ndarray) and out.shape == ():
            out = out[()]
        if isinstance(out, Term):
            return out
        if is_number(out):
            return self.tape.const(float(out))
        raise TypeError(f"{what} needs a function returning one number, got {shown(out)}")

    def scalar_output(self, what: str) -> Term:
        return self.scalar(self.out, what)

    def split_aux(self, has_aux: bool, what: str) -> tuple[Any, Any]:
        """f's value and, with ``has_aux``, its auxiliary data: f returns the pair (value, aux)."""
        if not has_aux:
            return self.out, None
        if not (isinstance(self.out, (tuple, list)) and len(self.out) == 2):
            raise TypeError(f"{what}(..., has_aux=True) needs a function returning a pair (value, aux), got "
                            f"{shown(self.out)}")
        return self.out[0], self.out[1]

    def outputs(self, what: str, out: Any = None) -> tuple[list[Term], tuple[int, ...]]:
        """f's result (or ``out``) as one array: a flat list of Terms and its shape."""
        out = self.out if out is None else out
        array = np.array(out, dtype=object) if isinstance(out, Term) else np.asarray(out, dtype=object)
        return [self._term(item, what) for item in array.ravel()], array.shape

    def _term(self, item: Any, what: str) -> Term:
        if isinstance(item, Term):
            return item
        if is_number(item):
            return self.tape.const(float(item))
        raise TypeError(f"{what} needs a function returning numbers, got an element {item!r:.80}")

    def tree_outputs(self, out: Any, what: str) -> tuple[list[Term], Tree]:
        """A result pytree as flat Terms and its structure (leaves: Terms, numbers, arrays)."""
        leaves, tree = flatten(out, "result", lambda value, path: self.outputs(what, value))
        return [t for terms in leaves for t in terms], tree


# -- running the compiled program ------------------------------------------------------------------
#: How a built transform turns the program's values into its result: (the outputs' values, each
#: a number or an array of the batch's shape; the batch shape) -> result.
Assemble = Callable[[list[Any], tuple[int, ...]], Any]
Build = Callable[[Traced], tuple[list[Term], Assemble]]


def _block(values: list[Any], start: int, shape: tuple[int, ...], batch: tuple[int, ...]) -> Any:
    """Values start.. as one leaf of ``shape`` per batch point: a float for one number at one
    point."""
    size = math.prod(shape)
    part = values[start:start + size]
    if part and isinstance(part[0], Term):  # nested: Terms of the outer trace
        return part[0] if not shape else _term_array(part, shape)
    if not batch:
        return float(part[0]) if not shape else np.array(part, dtype=float).reshape(shape)
    out = np.empty(batch + (size,))
    for k, v in enumerate(part):
        out[..., k] = v
    return out.reshape(batch + shape)


def _term_array(terms: Sequence[Any], shape: tuple[int, ...]) -> Any:
    array = np.empty(len(terms), dtype=object)
    array[:] = list(terms)
    return array.reshape(shape).view(TermArray)


def _traced_leaf(what: str) -> Callable[[Any, str], tuple[Any, tuple[int, ...]]]:
    """The leaf check of a nested call: Terms and arrays of them besides real numbers."""
    check = real_leaf(what)

    def leaf(value: Any, path: str) -> tuple[Any, tuple[int, ...]]:
        if isinstance(value, Term):
            return value, ()
        if isinstance(value, np.ndarray) and value.dtype == object and next(terms_in(value), None) is not None:
            return value, value.shape
        return check(value, path)

    return leaf


def _elements(leaf: Any) -> list[Any]:
    """A leaf's numbers or Terms, flat in C order."""
    if isinstance(leaf, Term):
        return [leaf]
    return list(np.asarray(leaf, dtype=object).ravel())


def _dtype(leaves: list[list[Any]]) -> Any:
    """The float dtype a result keeps: float32 (or float16) where every floating array among the
    arguments has it, None (float64) otherwise — as JAX keeps float32, Python numbers weak."""
    kinds = {np.asarray(leaf).dtype for found in leaves for leaf in found
             if isinstance(leaf, (np.ndarray, np.floating)) and np.asarray(leaf).dtype.kind == "f"}
    if not kinds:
        return None
    kept = np.result_type(*kinds)
    return kept if kept.itemsize < 8 else None


def _cast(result: Any, dtype: Any) -> Any:
    """Every float leaf of a result as ``dtype``."""
    if dtype is None:
        return result
    leaves, tree = flatten(result, "result")
    return unflatten(tree, [dtype.type(v) if isinstance(v, float) else np.asarray(v, dtype=dtype)
                            if isinstance(v, np.ndarray) and v.dtype.kind == "f" else v for v in leaves])


def _tree_values(tree: Tree, values: list[Any], start: int, batch: tuple[int, ...]) -> tuple[Any, int]:
    """The pytree ``tree`` filled from the stack at ``start``; and where the next values start."""
    leaves = []
    for shape in leaf_shapes(tree):
        leaves.append(_block(values, start, shape, batch))
        start += math.prod(shape)
    return unflatten(tree, leaves), start


def _columns(leaf: Any, batched: tuple[bool, ...]) -> list[Any]:
    """The inputs of a leaf's vars: its numbers, or with batch axes in front (one per level of
    vmap where ``batched``), each var's values across the batch, with size-1 axes for the levels
    that do not batch it, so every input broadcasts to the whole batch."""
    array = np.asarray(leaf, dtype=float)
    nb = sum(batched)
    if not batched or not nb:
        points: list[float] = array.ravel().tolist()  # Python floats: the one-point code's own type
        return points
    outer = array.shape[:nb]
    full, at = [], 0
    for b in batched:
        full.append(outer[at] if b else 1)
        at += b
    point = array.reshape(tuple(full) + (-1,))
    return list(np.ascontiguousarray(np.moveaxis(point, -1, 0)))


_pauses = 0  # builds now running with the collector paused, in any thread
_collecting = False  # whether the collector was on when the first of them began
_pausing = threading.Lock()


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while a signature is traced, built and compiled:
    that makes ~10⁶ objects that all stay alive (the tape), and each of the collections their
    allocation triggers walks them all for nothing — 0.2 s of a 961-parameter MLP gradient's
    1 s first call. It is back on (if it was on) when the last build running ends, with every
    object moved to the oldest generation first (``freeze`` then ``unfreeze``: no walk), or
    the first young collection would walk them all once more (50 ms); not where the user has
    frozen objects, which ``unfreeze`` would release."""
    global _pauses, _collecting
    with _pausing:
        if not _pauses:
            _collecting = gc.isenabled()
            gc.disable()
        _pauses += 1
    try:
        yield
    finally:
        with _pausing:
            _pauses -= 1
            if not _pauses and _collecting:
                if not gc.get_freeze_count():
                    gc.freeze()
                    gc.unfreeze()
                gc.enable()


class _Transformed:
    """A callable that traces ``f`` once per signature, builds the outputs with ``build(trace)``
    (flat Terms, and how to assemble their values), compiles them, and runs the compiled program,
    on one point or (``vmap``) on the columns of a batch."""

    def __init__(self, f: Callable[..., Any], what: str, build: Build, backend: str | None = None) -> None:
        _check_callable(f, what)
        self.f, self.what, self.build, self.backend = f, what, build, backend
        self.cache: dict[Any, tuple[Any, Assemble]] = {}
        self.captured: dict[Any, Captured] = {}  # per signature: what f read beyond its arguments
        functools.update_wrapper(self, f, updated=())

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.run(args, kwargs, None)

    def _signature(self, args: Sequence[Any], kwargs: dict[str, Any],
                   levels: Sequence[tuple[bool, ...]] | None) -> tuple[list[list[Any]], list[Tree], Any]:
        """Each argument's leaves and per-point structure (batch axes taken off), and the key."""
        check = real_leaf(self.what)
        leaves, trees = [], []
        for k, arg in enumerate(args):
            found, tree = flatten(arg, f"argument {k}", check)
            nb = sum(levels[k]) if levels is not None else 0
            if nb:
                for shape in leaf_shapes(tree):
                    if len(shape) < nb:
                        raise ValueError(f"vmap: argument {k} has a leaf of shape {shape}, with no batch axis to map "
                                         "over; give in_axes=None for an argument that is not batched")
                tree = _strip(tree, nb)
            leaves.append(found)
            trees.append(tree)
        return leaves, trees, (tuple(trees), static_key(kwargs, self.what))

    def run(self, args: Sequence[Any], kwargs: dict[str, Any], levels: Sequence[tuple[bool, ...]] | None) -> Any:
        """The transform at ``args``; ``levels``: per argument, whether each level of vmap (the
        outermost first) batches it along a leading axis. Inside another trace, the transform's
        Terms on that trace's tape (``inline``)."""
        tape = _outer(args, self.what) if levels is None else None
        if tape is not None:
            return self.inline(tape, args, kwargs)
        leaves, trees, key = self._signature(args, kwargs, levels)
        dtype = _dtype(leaves)
        entry = self.cache.get(key)
        if entry is not None and self.captured[key].changed() is None:
            return _cast(self._call(entry, leaves, levels), dtype)
        with _collector_paused():  # the first call too: it writes and compiles the code
            trace = Traced(self.f, trees, self.what, kwargs)
            terms, assemble = self.build(trace)
            entry = (on_host(lambdify(trace.flat, terms or [trace.tape.zero], self.backend)), assemble)
            self.captured[key], self.cache[key] = Captured(self.f, self.what), entry
            return _cast(self._call(entry, leaves, levels), dtype)

    def inline(self, tape: Tape, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        """The transform inside the trace of ``tape``: f traced on fresh vars of that tape, the
        transform built on them, and the arguments (Terms of the outer trace, or numbers as its
        constants) substituted for the fresh vars (``nesting``). Nothing is compiled."""
        leaves, trees = [], []
        for k, arg in enumerate(args):
            found, tree = flatten(arg, f"argument {k}", _traced_leaf(self.what))
            leaves.append(found)
            trees.append(tree)
        trace = Traced(self.f, trees, self.what, kwargs, tape)
        terms, assemble = self.build(trace)
        mapping = {}
        for vars_, found in zip(trace.vars, leaves):
            values = [lifted(tape, v) for leaf in found for v in _elements(leaf)]
            mapping.update({v.index: value for v, value in zip(vars_, values)})
        return assemble(substitute(tape, terms, mapping), ())

    @staticmethod
    def _call(entry: tuple[Any, Assemble], leaves: list[list[Any]], levels: Sequence[tuple[bool, ...]] | None) -> Any:
        """The compiled program run on the arguments' leaves, its values assembled."""
        compiled, assemble = entry
        if dask_arrays.any_lazy(leaves):  # Dask: lazily, one task per chunk of the batch
            return dask_arrays.over_batch(compiled, assemble, leaves, levels, _columns)
        inputs: list[Any] = []
        for k, found in enumerate(leaves):
            for leaf in found:
                inputs += _columns(leaf, tuple(levels[k]) if levels is not None else ())
        batch = _batch_shape(inputs) if levels is not None else ()
        return assemble(list(compiled(*inputs)), batch)

    def __repr__(self) -> str:
        return f"<{self.what} of {getattr(self.f, '__name__', self.f)!r}>"


def _outer(args: Sequence[Any], what: str) -> Tape | None:
    """The tape of the trace a call is nested in: of the Terms among the arguments, or of the
    trace running; None for a call from plain Python."""
    found: list[Any] = []
    for arg in args:
        found += flatten(arg, "argument", lambda value, path: (value, ()))[0]
    return outer_tape(found, what)


def _batch_shape(inputs: list[Any]) -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(*(np.shape(v) for v in inputs)))
    except ValueError:
        sizes = sorted({np.shape(v) for v in inputs if np.ndim(v)})
        raise ValueError(f"vmap: the batched arguments have different batch sizes {sizes}") from None


def _strip(tree: Tree, nb: int) -> Tree:
    """The structure of one point: the leading ``nb`` batch axes off every leaf's shape."""
    if tree.kind == "leaf":
        return Tree("leaf", tree.meta[nb:])
    return Tree(tree.kind, tree.meta, tuple(_strip(c, nb) for c in tree.children))


def _leafwise(trace: Traced, k: int, values: list[Any], start: int, batch: tuple[int, ...]) -> tuple[Any, int]:
    """Argument k's structure filled from the stack (a gradient, a tangent)."""
    return _tree_values(trace.trees[k], values, start, batch)


def _shaped(shape: tuple[int, ...]) -> Assemble:
    return lambda values, batch: _block(values, 0, shape, batch)


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


def _sparse(matrix: Sparse, tape: Tape) -> tuple[list[Term], Assemble]:
    """A traced sparse matrix: its distinct nonzero Terms, and their values as a ``scipy.sparse``
    CSR matrix (a dense ndarray without SciPy); one point only."""
    terms, take = _nonzeros(matrix, tape)

    def assemble(values: list[Any], batch: tuple[int, ...]) -> Any:
        if values and isinstance(values[0], Term):
            raise TypeError("sparse=True cannot nest inside another transform: a scipy.sparse matrix holds numbers, "
                            "not the Terms of the outer trace; use sparse=False there")
        if batch:
            raise TypeError("a sparse matrix (sparse=True) is one point's; vmap a dense one (sparse=False)")
        return sparse_matrix(matrix.rows, matrix.cols, np.array(values, dtype=float)[take], matrix.shape)

    return terms, assemble


def _dense(matrix: Sparse, tape: Tape, shape: tuple[int, ...]) -> tuple[list[Term], Assemble]:
    """A traced dense matrix from its structural nonzeros only, scattered into zeros of
    ``shape``: a Hessian of n vars compiles its distinct nonzeros, not n² entries that are
    mostly the constant 0 (Rosenbrock-1000: 1,999 distinct Terms compiled, not 1,000,000)."""
    terms, take = _nonzeros(matrix, tape)
    flat = np.array(matrix.rows, dtype=np.intp) * matrix.shape[1] + np.array(matrix.cols, dtype=np.intp)

    def scatter(values: list[Any], batch: tuple[int, ...]) -> Any:
        if values and isinstance(values[0], Term):  # nested: Terms of the outer trace, zeros its 0
            entries = [values[0].tape.zero] * (matrix.shape[0] * matrix.shape[1])
            for k, t in zip(flat, take):
                entries[k] = values[t]
            return entries[0] if not shape else _term_array(entries, shape)
        out = np.zeros(batch + (matrix.shape[0] * matrix.shape[1],))
        if batch:
            for k, t in zip(flat, take):  # one column per entry: no stack of all the values first
                out[..., k] = values[t]
        else:
            out[flat] = np.array(values, dtype=float)[take]
        if not batch and not shape:
            return float(out[0])
        return out.reshape(batch + shape)

    return terms, scatter


# -- the transforms --------------------------------------------------------------------------------
def _gradient(f: Callable[..., Any], what: str, argnums: int | tuple[int, ...], has_aux: bool,
              with_value: bool, backend: str | None) -> _Transformed:
    """grad and value_and_grad: one reverse sweep (``grad_graph``) on the trace."""

    def build(trace: Traced) -> tuple[list[Term], Assemble]:
        nums = _argnums(argnums, len(trace.trees), what)
        value, aux = trace.split_aux(has_aux, what)
        z = trace.scalar(value, what)
        wrts = [v for k in nums for v in trace.vars_of(k)]
        terms = list(grad_graph(z, wrts))
        aux_terms, aux_tree = trace.tree_outputs(aux, what) if has_aux else ([], Tree("none", None))
        head = [z] if with_value else []

        def assemble(values: list[Any], batch: tuple[int, ...]) -> Any:
            at = len(head)
            parts = []
            for k in nums:
                part, at = _leafwise(trace, k, values, at, batch)
                parts.append(part)
            gradient = parts[0] if isinstance(argnums, int) else tuple(parts)
            aux_value = _tree_values(aux_tree, values, at, batch)[0] if has_aux else None
            if with_value:
                first = _block(values, 0, (), batch)
                return ((first, aux_value), gradient) if has_aux else (first, gradient)
            return (gradient, aux_value) if has_aux else gradient

        return head + terms + aux_terms, assemble

    return _Transformed(f, what, build, backend)


def grad(f: Callable[..., Any], argnums: int | tuple[int, ...] = 0, has_aux: bool = False, *,
         backend: str | None = None) -> Callable[..., Any]:
    """The gradient of a scalar function, as ``jax.grad``: ``grad(f)(*args)`` is ∂f/∂args[argnums]
    in the structure of that argument (a float for a number, an array of its shape for an array,
    the same dict or tuple for a pytree; a tuple of those for several argnums). With ``has_aux``,
    f returns (value, aux) and the result is (gradient, aux). Built by one reverse sweep
    (``grad_graph``) on the trace, compiled once per signature by ``lambdify`` with ``backend``
    (None: ``config.default_backend()``; results come back as NumPy from any backend)."""
    return _gradient(f, "grad", argnums, has_aux, with_value=False, backend=backend)


def value_and_grad(f: Callable[..., Any], argnums: int | tuple[int, ...] = 0,
                   has_aux: bool = False, *, backend: str | None = None) -> Callable[..., Any]:
    """``jax.value_and_grad``: (f(*args), ∂f/∂args[argnums]) from one compiled program; with
    ``has_aux``, ((value, aux), gradient).

    >>> import numpy as np
    >>> import subgraph_ad as sad
    >>> def loss(w, x):
    ...     return np.sum((x @ w) ** 2), x @ w
    >>> (v, pred), g = sad.value_and_grad(loss, has_aux=True)(np.array([1.0, -1.0]), np.eye(2))
    >>> v, pred, g
    (2.0, array([ 1., -1.]), array([ 2., -2.]))
    """
    return _gradient(f, "value_and_grad", argnums, has_aux, with_value=True, backend=backend)


class _Derivative(_Transformed):
    """``derivative(f, n)``: every argument is a number (an array of them is points), so the
    trace has one var per argument whatever the shapes, and the compiled program broadcasts."""

    def run(self, args: Sequence[Any], kwargs: dict[str, Any], levels: Sequence[tuple[bool, ...]] | None) -> Any:
        tape = _outer(args, self.what) if levels is None else None
        if tape is not None:
            return self.inline(tape, args, kwargs)
        check = real_leaf(self.what)
        for k, a in enumerate(args):
            check(a, f"argument {k}")
        key = (len(args), static_key(kwargs, self.what))
        if key not in self.cache or self.captured[key].changed() is not None:
            with _collector_paused():
                trace = Traced(self.f, [()] * len(args), self.what, kwargs)
                terms, assemble = self.build(trace)
                compiled = on_host(lambdify(trace.flat, terms[0], self.backend))
                self.captured[key], self.cache[key] = Captured(self.f, self.what), (compiled, assemble)
        compiled, _ = self.cache[key]
        return compiled(*args)

    def inline(self, tape: Tape, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        """Inside a trace: the derivative traced once on fresh vars of its tape, then each point of
        the broadcast arguments substituted for them (``nesting``)."""
        points = np.broadcast_arrays(*(np.asarray(a, dtype=object) for a in args))
        trace = Traced(self.f, [()] * len(args), self.what, kwargs, tape)
        terms, _ = self.build(trace)
        found = [substitute(tape, terms, {v.index: lifted(tape, p[i]) for v, p in
                                                   zip(trace.flat, points)})[0] for i in np.ndindex(*points[0].shape)]
        return found[0] if not points[0].shape else _term_array(found, points[0].shape)


def derivative(f: Callable[..., Any], n: int = 1, argnum: int = 0, *, backend: str | None = None) -> Callable[..., Any]:
    """The n-th derivative of a scalar function in one argument, elementwise on arrays of
    points: ``derivative(f, 4)(np.linspace(-2, 2, 9))``. Built by ``diff`` (Taylor mode from
    the third order) on the trace."""
    checks.count(n, "the order n", "derivative")

    def build(trace: Traced) -> tuple[list[Term], Assemble]:
        (k,) = _argnums(argnum, len(trace.trees), "derivative", one=True)
        z = trace.scalar_output("derivative")
        return [diff(z, trace.vars_of(k)[0], n) if n else z], _shaped(())

    return _Derivative(f, "derivative", build, backend)


def _in_tree(trace: Traced, argnums: int | tuple[int, ...], nums: tuple[int, ...]) -> Tree:
    """The structure the derivative takes of the arguments: argument argnums's, or a tuple of them."""
    if isinstance(argnums, int):
        return trace.trees[nums[0]]
    return Tree("tuple", None, tuple(trace.trees[k] for k in nums))


def _out_tree(trace: Traced, what: str) -> tuple[list[Term], Tree]:
    """f's result: a pytree where it is a tuple, dict or namedtuple (JAX's layout), else one array
    (a list of numbers or Terms reads as np.asarray reads it)."""
    if isinstance(trace.out, (tuple, dict)):
        return trace.tree_outputs(trace.out, what)
    outs, shape = trace.outputs(what)
    return outs, Tree("leaf", shape)


def _blocks(matrix: Sparse, tape: Tape, out_tree: Tree, in_tree: Tree) -> tuple[list[Term], Assemble]:
    """A Jacobian of pytrees in JAX's layout: the result's structure, each leaf of it the
    arguments' structure, each leaf of that a block of shape out_leaf.shape + in_leaf.shape —
    from the distinct structural nonzeros only (``_dense``)."""
    rows, cols = matrix.shape
    terms, dense = _dense(matrix, tape, (rows, cols))
    out_shapes, in_shapes = leaf_shapes(out_tree), leaf_shapes(in_tree)

    def assemble(values: list[Any], batch: tuple[int, ...]) -> Any:
        full = dense(values, batch)
        parts, r = [], 0
        for so in out_shapes:
            row, c = [], 0
            for si in in_shapes:
                block = full[..., r:r + math.prod(so), c:c + math.prod(si)].reshape(batch + so + si)
                row.append(block if block.ndim else block[()] if block.dtype == object else float(block))
                c += math.prod(si)
            parts.append(unflatten(in_tree, row))
            r += math.prod(so)
        return unflatten(out_tree, parts)

    return terms, assemble


def _single(out_tree: Tree, in_tree: Tree, what: str) -> None:
    if out_tree.kind != "leaf" or in_tree.kind != "leaf":
        raise TypeError(f"{what}(..., sparse=True) is one matrix: of one array result by one array argument; for "
                        "pytrees use sparse=False")


def jacobian(f: Any, inputs: Any = None, argnums: int | tuple[int, ...] = 0, sparse: bool = False, *,
             backend: str | None = None) -> Any:
    """``jacobian(outputs, inputs)`` on Terms: rows of Terms, or a ``Sparse`` matrix with
    ``sparse=True`` (see ``ad.matrices``). Given a Python function, a callable returning the
    Jacobian of its output (array) with respect to argument ``argnums`` as a NumPy array of shape
    output.shape + argument.shape; pytrees as JAX lays them out (a tuple of argnums, a dict
    argument or result: the result's structure of the arguments' structure of blocks). With
    ``sparse=True`` a ``scipy.sparse`` matrix of shape (output.size, argument.size) holding only
    the structural nonzeros. Reverse sweeps or forward passes, whichever are fewer."""
    if inputs is not None or isinstance(f, (Term, list, tuple, np.ndarray)):
        return jacobian_terms(f, inputs, sparse=sparse)
    return _jacobian(f, "jacobian", argnums, sparse, backend)


def _jacobian(f: Any, what: str, argnums: int | tuple[int, ...], sparse: bool, backend: str | None) -> _Transformed:
    def build(trace: Traced) -> tuple[list[Term], Assemble]:
        nums = _argnums(argnums, len(trace.trees), what)
        outs, out_tree = _out_tree(trace, what)
        in_tree = _in_tree(trace, argnums, nums)
        matrix = jacobian_terms(outs, [v for k in nums for v in trace.vars_of(k)], sparse=True)
        if sparse:
            _single(out_tree, in_tree, what)
            return _sparse(matrix, trace.tape)
        return _blocks(matrix, trace.tape, out_tree, in_tree)

    return _Transformed(f, what, build, backend)


def jacfwd(f: Callable[..., Any], argnums: int | tuple[int, ...] = 0, *, backend: str | None = None) -> Any:
    """``jax.jacfwd``: the Jacobian of f (``jacobian``). Both of JAX's names give the same
    matrix; the sweeps are the cheaper of forward and reverse for its shape, whichever name."""
    return _jacobian(f, "jacfwd", argnums, False, backend)


def jacrev(f: Callable[..., Any], argnums: int | tuple[int, ...] = 0, *, backend: str | None = None) -> Any:
    """``jax.jacrev``: the Jacobian of f (``jacobian``; see ``jacfwd``)."""
    return _jacobian(f, "jacrev", argnums, False, backend)


def hessian(f: Any, inputs: Any = None, argnums: int | tuple[int, ...] = 0, sparse: bool = False, *,
            backend: str | None = None) -> Any:
    """``hessian(output, inputs)`` on Terms: rows of Terms, or a ``Sparse`` matrix with
    ``sparse=True`` (see ``ad.matrices``). Given a Python function, a callable returning its
    Hessian with respect to argument ``argnums`` as a NumPy array (shape argument.shape * 2);
    pytrees as ``jax.hessian`` lays them out (``argnums=(0, 1)``: the blocks ((H00, H01), (H10,
    H11)); a dict argument: a dict of dicts); with ``sparse=True`` a ``scipy.sparse`` matrix of
    shape (argument.size, argument.size). Built from one gradient, each symmetric pair once."""
    if inputs is not None or isinstance(f, Term):
        return hessian_terms(f, inputs, sparse=sparse)

    def build(trace: Traced) -> tuple[list[Term], Assemble]:
        nums = _argnums(argnums, len(trace.trees), "hessian")
        z = trace.scalar_output("hessian")
        in_tree = _in_tree(trace, argnums, nums)
        matrix = hessian_terms(z, [v for k in nums for v in trace.vars_of(k)], sparse=True)
        if sparse:
            _single(in_tree, in_tree, "hessian")
            return _sparse(matrix, trace.tape)
        return _blocks(matrix, trace.tape, in_tree, in_tree)

    return _Transformed(f, "hessian", build, backend)


def jit(f: Callable[..., Any], *, backend: str | None = None) -> Any:
    """``jax.jit``: f traced once per signature and compiled, no derivative taken; its result
    pytree comes back as NumPy. Unlike JAX's, a closed-over array is not frozen: it is checked
    before every call and f traced again where it changed. Inside another trace, f simply runs
    on that trace's values.

    >>> import numpy as np
    >>> import subgraph_ad as sad
    >>> sad.jit(lambda x: {"s": np.sum(np.sin(x))})(np.zeros(3))
    {'s': 0.0}
    """
    _check_callable(f, "jit")

    def build(trace: Traced) -> tuple[list[Term], Assemble]:
        outs, tree = trace.tree_outputs(trace.out, "jit")
        return outs, lambda values, batch: _tree_values(tree, values, 0, batch)[0]

    return _Transformed(f, "jit", build, backend)


def _pairs(primals: Any, tangents: Any, what: str) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """JAX's (primals, tangents): two tuples (or lists) of arguments of the same structure."""
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError(f"{what}(f, primals, tangents): primals and tangents are tuples of the arguments of f, got "
                        f"{shown(primals)} and {shown(tangents)}")
    if len(primals) != len(tangents):
        raise ValueError(f"{what}: {len(primals)} primal(s) but {len(tangents)} tangent(s); give one tangent per "
                         "argument, of the same structure")
    for k, (p, t) in enumerate(zip(primals, tangents)):
        if flatten(p)[1] != flatten(t)[1]:
            raise ValueError(f"{what}: tangent {k} has the structure {flatten(t)[1]}, not the primal's "
                             f"{flatten(p)[1]}")
    return tuple(primals), tuple(tangents)


def _first(f: Callable[..., Any], count: int) -> Callable[..., Any]:
    """f of the first ``count`` arguments (the rest are the tangents or cotangents), named as f."""

    @functools.wraps(f)
    def head(*args: Any, **kwargs: Any) -> Any:
        return f(*args[:count], **kwargs)

    return head


@functools.lru_cache(maxsize=128)
def _jvp_transform(f: Callable[..., Any], count: int) -> _Transformed:
    """f's value and its derivative along the tangents: the trace of f on the primals, with the
    tangents as vars of their own; one forward sweep (``directional``)."""

    def build(trace: Traced) -> tuple[list[Term], Assemble]:
        outs, tree = trace.tree_outputs(trace.out, "jvp")
        seeds = {p: t for k in range(count) for p, t in zip(trace.vars[k], trace.vars[count + k])}
        tangents = directional(outs, seeds) if outs else []

        def assemble(values: list[Any], batch: tuple[int, ...]) -> Any:
            primal, at = _tree_values(tree, values, 0, batch)
            return primal, _tree_values(tree, values, at, batch)[0]

        return outs + tangents, assemble

    return _Transformed(_first(f, count), "jvp", build)


def jvp(f: Any, primals: Any, tangents: Any = None, values: Any = None, *, warn: bool = False) -> Any:
    """``jax.jvp``: ``jvp(f, primals, tangents)`` is (f(*primals), the derivative of f along the
    tangents), both in the structure of f's result; one forward sweep, compiled.

    On Terms, the numeric form: ``jvp([z, w], {x: 1.0, y: 0.0}, values)`` is a list of floats
    (``numeric.modes.jvp``).

    >>> import numpy as np
    >>> import subgraph_ad as sad
    >>> value, tangent = sad.jvp(lambda x: np.sin(x) * x, (0.5,), (2.0,))
    >>> round(tangent, 12), round(float(2.0 * (np.cos(0.5) * 0.5 + np.sin(0.5))), 12)
    (1.836433639099, 1.836433639099)
    """
    if not callable(f):
        return modes.jvp(f, primals, tangents if values is None else values, warn=warn)
    ps, ts = _pairs(primals, tangents, "jvp")
    return _jvp_transform(f, len(ps))(*ps, *ts)


@functools.lru_cache(maxsize=128)
def _vjp_transform(f: Callable[..., Any], count: int) -> _Transformed:
    """The cotangents of the primals for a cotangent of f's result: Σ cᵢ·outᵢ, reverse swept."""

    def build(trace: Traced) -> tuple[list[Term], Assemble]:
        outs, tree = trace.tree_outputs(trace.out, "vjp")
        given = trace.trees[count]
        if given != tree:
            raise ValueError(f"vjp: the cotangent has the structure {given}, not that of f's result {tree}")
        weighted = trace.tape.zero
        for o, c in zip(outs, trace.vars[count]):
            weighted = weighted + o * c
        wrts = [v for k in range(count) for v in trace.vars[k]]
        terms = list(grad_graph(weighted, wrts)) if wrts else []

        def assemble(values: list[Any], batch: tuple[int, ...]) -> Any:
            parts, at = [], 0
            for k in range(count):
                part, at = _leafwise(trace, k, values, at, batch)
                parts.append(part)
            return tuple(parts)

        return terms, assemble

    return _Transformed(_first(f, count), "vjp", build)


@functools.lru_cache(maxsize=128)
def _value_transform(f: Callable[..., Any], what: str) -> _Transformed:
    """f itself, traced and compiled: its result pytree (what ``vmap`` of a plain function runs)."""

    def build(trace: Traced) -> tuple[list[Term], Assemble]:
        outs, tree = trace.tree_outputs(trace.out, what)
        return outs, lambda values, batch: _tree_values(tree, values, 0, batch)[0]

    return _Transformed(f, what, build)


def vjp(f: Any, *primals: Any, values: Any = None, warn: bool = False) -> Any:
    """``jax.vjp``: ``vjp(f, *primals)`` is (f(*primals), vjp_fn), where vjp_fn(cotangent) — a
    cotangent in the structure of f's result — is the tuple of cotangents of the primals; one
    compiled reverse sweep, traced once.

    On Terms, the numeric form: ``vjp([z, w], [1.0, 2.0], values)`` is a Grad
    (``numeric.modes.vjp``).

    >>> import numpy as np
    >>> import subgraph_ad as sad
    >>> out, back = sad.vjp(lambda x: x ** 2, np.array([1.0, 3.0]))
    >>> out, back(np.array([1.0, 10.0]))
    (array([1., 9.]), (array([ 2., 60.]),))
    """
    if not callable(f):
        if len(primals) not in (1, 2):
            raise TypeError(f"vjp(outputs, cotangents, values) on Terms takes 2 or 3 arguments, got {1 + len(primals)}")
        return modes.vjp(f, primals[0], primals[1] if len(primals) == 2 else values, warn=warn)
    _check_callable(f, "vjp")
    primal_out = _value_transform(f, "vjp")(*primals)
    backward = _vjp_transform(f, len(primals))

    def vjp_fn(cotangent: Any) -> tuple[Any, ...]:
        return backward(*primals, cotangent)  # type: ignore[no-any-return]

    return primal_out, vjp_fn


@functools.lru_cache(maxsize=128)
def _hvp_transform(f: Callable[..., Any]) -> _Transformed:
    """H·v of a scalar function of one (pytree) argument: its gradient (reverse), then one forward
    sweep of that along v."""

    def build(trace: Traced) -> tuple[list[Term], Assemble]:
        z = trace.scalar_output("hvp")
        xs = trace.vars_of(0)
        if trace.trees[1] != trace.trees[0]:
            raise ValueError(f"hvp: v has the structure {trace.trees[1]}, not x's {trace.trees[0]}")
        gradient = list(grad_graph(z, xs))
        terms = directional(gradient, dict(zip(xs, trace.vars[1])))
        return terms, lambda values, batch: _leafwise(trace, 0, values, 0, batch)[0]

    return _Transformed(_first(f, 1), "hvp", build)


def hvp(f: Any, x: Any, v: Any) -> Any:
    """The Hessian-vector product H(x)·v of a scalar function of one argument x (an array, a
    number or a pytree; v of the same structure), in x's structure: ``jvp(grad(f), (x,), (v,))``
    compiled as one program, without building H.

    On Terms, the symbolic form: ``hvp(z, [x, y], [vx, vy])`` is a list of Terms
    (``ad.matrices.hvp``).

    >>> import numpy as np
    >>> import subgraph_ad as sad
    >>> sad.hvp(lambda x: np.sum(x ** 3), np.array([1.0, 2.0]), np.array([1.0, 1.0]))
    array([ 6., 12.])
    """
    if not callable(f):
        return hvp_terms(f, x, v)
    return _hvp_transform(f)(x, v)


# -- vmap ------------------------------------------------------------------------------------------
class _Vmapped:
    """``vmap(fn, in_axes, out_axes)``: fn over a batch, by one call of fn's compiled program on
    columns; inside another trace, fn traced once on one point's fresh vars and each point
    substituted (``unrolled``)."""

    def __init__(self, fn: Any, in_axes: Any, out_axes: Any = 0) -> None:
        self.fn = fn if isinstance(fn, (_Transformed, _Vmapped)) else _value_transform(fn, "vmap")
        self.in_axes, self.out_axes = in_axes, out_axes
        functools.update_wrapper(self, fn, updated=())

    def _axes(self, count: int) -> list[int | None]:
        axes = self.in_axes
        if axes is None or (isinstance(axes, int) and not isinstance(axes, bool)):
            return [axes] * count
        if isinstance(axes, (tuple, list)) and len(axes) == count and all(
                a is None or (isinstance(a, int) and not isinstance(a, bool)) for a in axes):
            return list(axes)
        raise ValueError(f"vmap: in_axes must be an int, None, or a tuple of those with one entry per positional "
                         f"argument ({count}), got {axes!r}")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.run(args, kwargs, None)

    def run(self, args: Sequence[Any], kwargs: dict[str, Any], levels: Sequence[tuple[bool, ...]] | None) -> Any:
        axes = self._axes(len(args))
        if all(a is None for a in axes):
            raise ValueError("vmap: in_axes maps over no argument; give 0 (or an axis) for at least one")
        tape = _outer(args, "vmap") if levels is None else None
        outer = levels if levels is not None else [()] * len(args)
        moved = []
        for k, (arg, axis, before) in enumerate(zip(args, axes, outer)):
            if axis is None:
                moved.append(arg)
                continue
            nb = sum(before)
            leaves, tree = flatten(arg, f"argument {k}", real_leaf("vmap") if tape is None else _traced_leaf("vmap"))
            shifted = []
            for leaf in leaves:
                array = leaf.view(np.ndarray) if isinstance(leaf, TermArray) else (
                    leaf if dask_arrays.lazy(leaf) else np.asarray(leaf))  # Dask: kept lazy
                if not -(array.ndim - nb) <= axis < array.ndim - nb:
                    raise ValueError(f"vmap: in_axes {axis} is out of range for argument {k} of shape {array.shape}")
                shifted.append(np.moveaxis(array, nb + axis % (array.ndim - nb), nb))
            moved.append(unflatten(tree, shifted))
        if tape is not None:
            return self._unrolled(tape, moved, axes, kwargs)
        inner = [tuple(before) + (axis is not None,) for before, axis in zip(outer, axes)]
        return self._out(self.fn.run(moved, kwargs, inner), len(outer[0]) if outer else 0)

    def _out(self, result: Any, level: int) -> Any:
        """The batch axis of this level (after ``level`` outer ones) moved to ``out_axes``."""
        axes = self.out_axes
        if axes == 0:
            return result
        if isinstance(result, tuple) and isinstance(axes, (tuple, list)) and len(axes) == len(result):
            return tuple(_Vmapped(self.fn, self.in_axes, a)._out(r, level) for r, a in zip(result, axes))
        if isinstance(axes, bool) or not isinstance(axes, int):
            raise ValueError(f"vmap: out_axes must be an int, or a tuple of ints with one per element of a tuple "
                             f"result, got {axes!r}")
        leaves, tree = flatten(result, "result")
        moved = []
        for leaf in leaves:
            array = leaf if dask_arrays.lazy(leaf) else np.asarray(leaf)  # Dask: kept lazy
            if not -(array.ndim - level) <= axes < array.ndim - level:
                raise ValueError(f"vmap: out_axes {axes} is out of range for a result of shape {array.shape[level:]}")
            moved.append(np.moveaxis(array, level, level + axes % (array.ndim - level)))
        return unflatten(tree, moved)

    def _unrolled(self, tape: Tape, moved: list[Any], axes: list[int | None], kwargs: dict[str, Any]) -> Any:
        """vmap inside a trace: fn on one point of fresh vars (the unmapped arguments as they
        are), then each point's values substituted for them; results stacked along axis 0."""
        prefix = fresh_prefix(tape, "vmap")
        point_args, fresh, columns = [], [], []
        sizes = set()
        for k, (arg, axis) in enumerate(zip(moved, axes)):
            if axis is None:
                point_args.append(arg)
                continue
            leaves, tree = flatten(arg, f"argument {k}", lambda value, path: (value, np.shape(value)))
            made = []
            for j, leaf in enumerate(leaves):
                sizes.add(leaf.shape[0])
                vs = [tape.var(f"{prefix}a{k}_l{j}_{n}") for n in range(math.prod(leaf.shape[1:]))]
                fresh += vs
                columns.append(leaf.reshape(leaf.shape[0], -1))
                made.append(_term_array(vs, leaf.shape[1:]) if leaf.ndim > 1 else vs[0])
            point_args.append(unflatten(tree, made))
        if len(sizes) != 1:
            raise ValueError(f"vmap: the batched arguments have different batch sizes {sorted(sizes)}")
        with tracing(tape):
            out = self.fn(*point_args, **kwargs)
        leaves, tree = flatten(out, "result", lambda value, path: (value, np.shape(value)))
        flat = [lifted(tape, v) for leaf in leaves for v in _elements(leaf)]
        points = []
        for i in range(sizes.pop()):
            values = [lifted(tape, v) for column in columns for v in column[i]]
            points.append(substitute(tape, flat, {v.index: t for v, t in zip(fresh, values)}))
        stacked, at = [], 0
        for leaf in leaves:
            shape = np.shape(leaf)
            size = math.prod(shape)
            stacked.append(_term_array([t for p in points for t in p[at:at + size]], (len(points),) + shape))
            at += size
        return self._out(unflatten(tree, stacked), 0)

    def __repr__(self) -> str:
        return f"<vmap of {self.fn!r}>"


def vmap(fn: Callable[..., Any], in_axes: Any = 0, out_axes: Any = 0) -> Callable[..., Any]:
    """``jax.vmap``: ``vmap(fn)(batch)`` is fn at each entry of the batch's leading axis (``in_axes``:
    an axis, or None, per positional argument; keyword arguments are static, not mapped), stacked
    along a new axis ``out_axes`` (0: leading; a tuple: one per element of a tuple result).
    ``fn`` is a transform (``grad``, ``hessian``, ``value_and_grad``, ...), another vmap, or a
    plain function of Terms and NumPy; either way it is traced for one point and its compiled
    program runs once on the columns of the batch.

    >>> import numpy as np
    >>> import subgraph_ad as sad
    >>> sad.vmap(sad.hessian(lambda x: x[0] ** 2 * x[1]))(np.array([[1.0, 2.0], [3.0, 4.0]]))[1]
    array([[8., 6.],
           [6., 0.]])
    >>> sad.vmap(lambda w, x: np.dot(w, x), in_axes=(None, 0))(np.ones(2), np.eye(2))
    array([1., 1.])
    >>> sad.vmap(lambda x: x * np.arange(3.0), out_axes=1)(np.array([1.0, 2.0]))
    array([[0., 0.],
           [1., 2.],
           [2., 4.]])
    """
    if not callable(fn):
        raise TypeError(f"vmap() takes a function to map, got {shown(fn)}")
    return _Vmapped(fn, in_axes, out_axes)
