"""NumPy code on Terms: ``np.sin(x)`` appends the node ``sad.sin(x)`` appends, and NumPy's
operators, ufuncs, reductions and array functions work on any mix of Terms, arrays of Terms,
numeric arrays and numbers, broadcasting exactly as NumPy does.

Two override protocols carry it. ``Term.__array_ufunc__`` and ``TermArray.__array_ufunc__`` map
a ufunc call to nodes: the arithmetic ufuncs (``np.add``, ``np.power``, ...) through Term
arithmetic, comparisons to condition Terms, and every registered function whose ``numpy`` is
the ufunc (``np.exp`` is ``sad.exp``, ``np.maximum`` is ``sad.maximum``), looked up at call
time; with an array among the operands, elementwise over NumPy's broadcast, into a
``TermArray`` (an object array of Terms that keeps these hooks); ``reduce`` (``np.sum``,
``np.max``), ``accumulate`` and ``outer`` of those ufuncs too. ``__array_function__`` (on both)
runs NumPy's own implementation of an array function on the object array (``np.dot``,
``np.einsum``, ``np.mean``, ``np.concatenate``, ...), except ``np.where``, ``np.clip`` and
``np.round``, which build selection and rounding nodes, and functions with no derivative
subgraph (``np.sort``, ``np.argmax``, ``np.linalg.solve``, ...), which are a TypeError naming
them and saying what to do. Numbers become constants of the Terms' tape. ``out=`` into a
numeric array is refused (a Term is not a number to store).

>>> import numpy as np
>>> import subgraph_ad as sad
>>> tape = sad.Tape(); x = tape.var("x", 0.5)
>>> np.sin(x) == sad.sin(x), np.float64(2.0) * x == 2.0 * x
(True, True)
>>> def f(v):
...     return np.exp(-v**2 / 2) * np.cos(v)
>>> f(x) == sad.exp(-x**2 / 2) * sad.cos(x)
True
>>> y = x + np.array([1.0, 2.0])       # broadcasting: an array of Terms
>>> type(y).__name__, y.shape, [t.eval() for t in y]
('TermArray', (2,), [1.5, 2.5])
"""

from __future__ import annotations

import operator
from typing import Any, Callable, Iterable, Mapping

import numpy as np

from ..core.term import Term
from .array_functions import ARRAY_TERM_FUNCTIONS, elements_of, holds_array_term
from ..functions import kinks
from ..functions.base import FUNCTIONS, Function
from ..functions.piecewise import abs_


def _square(a: Term) -> Term:
    return a * a


def _reciprocal(a: Term) -> Term:
    return 1.0 / a


def _conjugate(a: Term) -> Term:
    """A Term is real (real vars, real constants, real functions), so it is its own conjugate;
    NumPy's ``np.var``, ``np.std`` and ``np.vdot`` conjugate before they multiply."""
    return a


def _floor_divide(a: Any, b: Any) -> Any:
    return kinks.floor(a / b)


def _exp2(a: Any) -> Any:
    return 2.0**a


#: The arithmetic ufuncs, as Term arithmetic (``np.divide`` is ``np.true_divide``).
ARITHMETIC: dict[np.ufunc, Callable[..., Any]] = {
    np.add: operator.add,
    np.subtract: operator.sub,
    np.multiply: operator.mul,
    np.true_divide: operator.truediv,
    np.power: operator.pow,
    np.float_power: operator.pow,
    np.negative: operator.neg,
    np.positive: operator.pos,
    np.square: _square,
    np.reciprocal: _reciprocal,
    np.conjugate: _conjugate,
}

#: Ufuncs that are compositions of nodes rather than one registered function.
COMPOSED: dict[np.ufunc, Callable[..., Any]] = {
    np.floor_divide: _floor_divide,
    np.fabs: abs_,
    np.exp2: _exp2,
    np.logical_and: kinks.logical_and,
    np.logical_or: kinks.logical_or,
    np.logical_not: kinks.logical_not,
    np.logical_xor: lambda a, b: kinks.not_equal(kinks.truth(a), kinks.truth(b)),
    np.isnan: kinks.isnan,
    np.isfinite: kinks.isfinite,
}


#: The registry's functions by the ufunc each is, and the registry they were read from: a
#: function registered or replaced later is seen at the next call.
_by_ufunc: tuple[tuple[tuple[str, Function], ...], dict[Any, Function], dict[str, Function]] = ((), {}, {})


def _ufunc_table() -> tuple[dict[Any, Function], dict[str, Function]]:
    """ufunc -> function and ufunc name -> function, the first registered winning."""
    global _by_ufunc
    key = tuple(FUNCTIONS.items())
    if _by_ufunc[0] != key:
        table: dict[Any, Function] = {}
        names: dict[str, Function] = {}
        for fn in FUNCTIONS.values():
            ufunc = fn.numpy
            if ufunc is not None and fn.arity == getattr(ufunc, "nin", fn.arity):
                table.setdefault(ufunc, fn)
                names.setdefault(getattr(ufunc, "__name__", ""), fn)
        _by_ufunc = (key, table, names)
    return _by_ufunc[1], _by_ufunc[2]


def function_of(ufunc: Any) -> Function | None:
    """The registered function that is this ufunc (its ``numpy``), taking as many arguments."""
    return _ufunc_table()[0].get(ufunc)


def supported() -> list[str]:
    """The ufuncs Terms accept, as ``np.name``: the arithmetic ones, then the registry's."""
    names = [f"np.{u.__name__}" for u in (*ARITHMETIC, *COMPOSED)]
    for fn in FUNCTIONS.values():
        if isinstance(fn.numpy, np.ufunc) and fn.numpy not in ARITHMETIC and function_of(fn.numpy) is fn:
            names.append(f"np.{fn.numpy.__name__}")
    return list(dict.fromkeys(names))


def _refuse(what: str, why: str) -> TypeError:
    return TypeError(f"{what} is not supported on Terms ({why}); supported: {', '.join(supported())}")


def scalar_op(ufunc: Any) -> Callable[..., Any] | None:
    """What ``ufunc`` does to one element: Term arithmetic, a composition, or the registered
    function that is it; None for a ufunc with no derivative subgraph."""
    found = ARITHMETIC.get(ufunc) or COMPOSED.get(ufunc)
    return found if found is not None else function_of(ufunc)


def _object_only(ufunc: Any) -> bool:
    """A ufunc of Python objects only (``np.frompyfunc``'s, as ``sad.sin`` uses on arrays)."""
    return all(set(t.replace("->", "")) == {"O"} for t in getattr(ufunc, "types", ["d->d"]))


def _plain(value: Any) -> Any:
    """A TermArray as the plain object array it views, a Term as a 0-d object array: operands
    NumPy runs its own loops on, without coming back here."""
    if isinstance(value, TermArray):
        return value.view(np.ndarray)
    if isinstance(value, Term):
        array = np.empty((), dtype=object)
        array[()] = value
        return array
    return value


def _unwrapped(value: Any) -> Any:
    """A TermArray as a plain object array; anything else as it is."""
    return value.view(np.ndarray) if isinstance(value, TermArray) else value


def _wrap(value: Any) -> Any:
    """An object array from NumPy as a TermArray (nested in tuples and lists too); a 0-d one as
    its element, as NumPy gives a scalar for a 0-d result."""
    if isinstance(value, np.ndarray) and value.dtype == object:
        return value.view(TermArray) if value.ndim else value[()]
    if isinstance(value, tuple):
        return tuple(_wrap(v) for v in value)
    if isinstance(value, list):
        return [_wrap(v) for v in value]
    return value


def _operand(value: Any, name: str) -> Any:
    """An operand of a ufunc on Terms: a Term, a real number, or an array of them (a 0-d array
    as its element); anything else is refused naming it."""
    if isinstance(value, np.ndarray):
        if value.ndim == 0:
            value = value[()]
        elif value.dtype.kind == "b":
            return value.astype(float)  # True and False as 1.0 and 0.0, as NumPy's arithmetic reads them
        elif value.dtype.kind in "iufO":
            return value
        else:
            raise TypeError(f"np.{name} on Terms takes Terms, real numbers and arrays of them, got an array of "
                            f"dtype {value.dtype}")
    if isinstance(value, (Term, int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_)):
        return value
    if isinstance(value, (bool, np.bool_)):
        return float(value)
    if type(value).__module__.startswith("sympy"):
        return value  # a SymPy number: Term arithmetic makes it an exact constant
    raise TypeError(f"np.{name} on a Term takes Terms, real numbers and arrays of them, got {type(value).__name__} "
                    f"{value!r:.80}; a Term's values over an array come from term.eval({{x: array}}) or lambdify")


#: Keyword arguments NumPy passes on its own (np.mean, np.var) that change nothing for Terms.
_BENIGN = {"casting", "subok", "order", "dtype", "signature"}


def _keywords(name: str, kwargs: dict[str, Any], allowed: tuple[str, ...] = ()) -> dict[str, Any]:
    """Split the keyword arguments of a ufunc call: ``out=`` into an object array (NumPy's own
    np.mean and np.var write there) is kept, into anything else refused; ``where=True`` and the
    benign ones are dropped; the reduction's own (``allowed``) are returned; anything else is
    refused by name."""
    kept: dict[str, Any] = {}
    for key, value in kwargs.items():
        if key == "out":
            outs = value if isinstance(value, tuple) else (value,)
            if all(o is None for o in outs):
                continue
            if all(isinstance(o, np.ndarray) and o.dtype == object for o in outs):
                kept["out"] = outs
                continue
            raise _refuse(f"np.{name}(..., out=)", "a Term is a node of the graph, not a number to store in a "
                          "numeric array: call it without out= and use the result")
        elif key == "where" and value is True:
            continue
        elif key in _BENIGN:
            continue
        elif key in allowed:
            kept[key] = value
        else:
            raise _refuse(f"np.{name}(..., {key}=)",
                          "a Term is a node of the graph, not a buffer: call it on Terms and numbers only")
    return kept


def _into(result: Any, outs: tuple[Any, ...] | None) -> Any:
    """Write ``result`` into ``out`` (an object array) where NumPy asked for it; return what NumPy
    returns then."""
    if not outs:
        return result
    results = result if isinstance(result, tuple) else (result,)
    for o, r in zip(outs, results):
        o[...] = r
    wrapped = tuple(o.view(TermArray) if isinstance(o, np.ndarray) and o.ndim else o for o in outs)
    return wrapped if isinstance(result, tuple) else wrapped[0]


def array_ufunc(self: Any, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
    """NumPy's ``__array_ufunc__`` for Term and TermArray: ``ufunc(*inputs)`` as nodes."""
    name = getattr(ufunc, "__name__", repr(ufunc))
    op = scalar_op(ufunc)
    if method == "__call__" and not kwargs and any(isinstance(v, Term) and v.shape for v in inputs):
        # an array node among the operands: one array node (W @ x, np.tanh(h)), not an object array
        term = next(v for v in inputs if isinstance(v, Term))
        if ufunc is np.matmul:
            return term._lift(inputs[0]) @ term._lift(inputs[1])
        if op is not None:
            return op(*(term._lift(v) for v in inputs))
    if op is None and (getattr(ufunc, "signature", None) is not None or _object_only(ufunc)):
        # a generalized ufunc (np.matmul) or one of objects (np.frompyfunc's): NumPy's object loops
        extra = _keywords(name, kwargs, ("axes", "axis", "keepdims"))
        outs = extra.pop("out", None)
        found = getattr(ufunc, method)(*(_plain(_operand(v, name)) for v in inputs), **extra)
        return _into(_wrap(found), outs)
    if op is None:
        raise _refuse(f"np.{name}", "no derivative subgraph for it")
    if method == "__call__":
        outs = _keywords(name, kwargs).get("out")
        operands = [_operand(v, name) for v in inputs]
        if any(isinstance(v, np.ndarray) for v in operands):
            found = np.frompyfunc(op, len(operands), getattr(ufunc, "nout", 1))(*(_plain(v) for v in operands))
            return _into(_wrap(found), outs)
        term = next(v for v in operands if isinstance(v, Term))
        return _into(op(*(term._lift(v) for v in operands)), outs)
    if method in ("reduce", "accumulate", "outer"):
        allowed = {"reduce": ("axis", "keepdims", "initial"), "accumulate": ("axis",), "outer": ()}[method]
        options = _keywords(f"{name}.{method}", kwargs, allowed)
        outs = options.pop("out", None)
        arrays = [np.asarray(_plain(_operand(v, name)), dtype=object) for v in inputs]
        vectorized = np.frompyfunc(op, 2, 1)
        if method == "reduce":
            found = _reduce(vectorized, arrays[0], options.get("axis", 0), bool(options.get("keepdims", False)),
                            options.get("initial", np._NoValue), ufunc.identity)
        else:
            found = getattr(vectorized, method)(*arrays, **options)
        return _into(_wrap(found), outs)
    call = f"np.{name}({', '.join('xyzuvw'[:getattr(ufunc, 'nin', 1)])})"
    raise _refuse(f"np.{name}.{method}", f"only a call such as {call}, reduce, accumulate or outer builds nodes")


def _reduce(vectorized: Any, array: np.ndarray, axis: Any, keepdims: bool, initial: Any, identity: Any) -> Any:
    """``ufunc.reduce`` over any axes of an object array (NumPy's reduce of a Python function
    takes one axis at a time): the axes moved last and merged into one. Nothing to reduce starts
    from ``initial``, or from the ufunc's identity (np.sum of nothing is 0)."""
    ndim = array.ndim
    axes = tuple(range(ndim)) if axis is None else (axis,) if np.ndim(axis) == 0 else tuple(axis)
    axes = tuple(sorted(a % max(ndim, 1) for a in axes)) if ndim else ()
    kept = [n for k, n in enumerate(array.shape) if k not in axes]
    merged = np.moveaxis(array, axes, tuple(range(ndim - len(axes), ndim))).reshape(tuple(kept) + (-1,))
    if initial is np._NoValue and merged.shape[-1] == 0 and identity is not None:
        initial = identity
    options = {} if initial is np._NoValue else {"initial": initial}
    found = vectorized.reduce(merged, axis=-1, **options)
    if keepdims:
        found = np.asarray(found, dtype=object).reshape([1 if k in axes else n for k, n in enumerate(array.shape)])
    return found


def ufunc_method(term: Term, name: str) -> Callable[..., Term]:
    """``term.sin``, ``term.arctan2``, …: the methods NumPy calls on each element of an object
    array of Terms (``np.sin(array)`` does not consult ``__array_ufunc__`` for those), found by
    the name of the ufunc each registered function says it is; ``term.conjugate()`` is the Term
    (it is real), which NumPy's object loops of ``np.conjugate`` and ``np.vdot`` call."""
    if name == "conjugate":
        return lambda: _conjugate(term)
    fn = None if name.startswith("__") else _ufunc_table()[1].get(name)  # NumPy probes __array_*__ often
    if fn is None:
        raise AttributeError(f"'Term' object has no attribute {name!r}")
    return lambda *others: fn(term, *others)


# -- array functions ---------------------------------------------------------------------------
def _np_where(condition: Any, x: Any = None, y: Any = None) -> Any:
    if x is None or y is None:
        raise _refuse_function("where", "np.where(condition) asks for the indices where a condition holds, which "
                               "are not known until the graph is evaluated; give both branches: np.where(c, a, b)")
    return kinks.where(*(_unwrapped(v) for v in (condition, x, y)))


def _np_clip(a: Any, a_min: Any = None, a_max: Any = None, out: Any = None, **kwargs: Any) -> Any:
    if out is not None:
        raise _refuse_function("clip", "out= cannot hold Terms; call np.clip without out=")
    lo = kwargs.pop("min", a_min)
    hi = kwargs.pop("max", a_max)
    if kwargs:
        raise _refuse_function("clip", f"keyword argument(s) {', '.join(kwargs)} are not supported on Terms")
    return kinks.clip(*(_unwrapped(v) for v in (a, lo, hi)))


def _np_round(a: Any, decimals: int = 0, out: Any = None) -> Any:
    if out is not None:
        raise _refuse_function("round", "out= cannot hold Terms; call np.round without out=")
    value = _unwrapped(a)
    if isinstance(value, np.ndarray):
        return np.frompyfunc(lambda v: kinks.round_(v, decimals), 1, 1)(value)
    return kinks.round_(value, decimals)


def _np_fix(x: Any, out: Any = None) -> Any:
    if out is not None:
        raise _refuse_function("fix", "out= cannot hold Terms; call np.fix without out=")
    return kinks.trunc(_unwrapped(x))


#: Array functions that build nodes of their own.
ARRAY_FUNCTIONS: dict[Any, Callable[..., Any]] = {
    np.where: _np_where, np.clip: _np_clip, np.round: _np_round, np.around: _np_round, np.fix: _np_fix,
}

_ORDER = ("the order of values is not known when the graph is traced (it is traced once, for every value); a "
          "max or a min is differentiable: use np.max, np.min, sad.maximum or sad.minimum, or sort the numbers "
          "before tracing")
_TRUTH = ("it asks whether values are true or equal, which is not known when the graph is traced; compare the "
          "values after evaluating, or build the branch-free form with np.where")
_LINALG = ("no derivative subgraph for it; write the computation with arithmetic on the array of Terms (an "
           "elimination, a fixed number of iterations), or differentiate the numbers another way")

#: Array functions with no derivative subgraph, and what to do instead.
REFUSED: dict[Any, str] = {
    **{f: _ORDER for f in (np.sort, np.argsort, np.argmax, np.argmin, np.partition, np.argpartition, np.lexsort,
                           np.median, np.percentile, np.quantile, np.nanmedian, np.nanpercentile, np.nanquantile,
                           np.unique, np.searchsorted, np.histogram, np.nanargmax, np.nanargmin, np.digitize)},
    **{f: _TRUTH for f in (np.nonzero, np.flatnonzero, np.argwhere, np.count_nonzero, np.any, np.all, np.isclose,
                           np.allclose, np.array_equal, np.array_equiv, np.extract, np.compress, np.select,
                           np.piecewise)},
    **{f: _LINALG for f in (np.linalg.solve, np.linalg.inv, np.linalg.pinv, np.linalg.det, np.linalg.slogdet,
                            np.linalg.eig, np.linalg.eigh, np.linalg.eigvals, np.linalg.eigvalsh, np.linalg.svd,
                            np.linalg.qr, np.linalg.cholesky, np.linalg.lstsq, np.linalg.matrix_rank,
                            np.linalg.matrix_power, np.linalg.cond, np.linalg.tensorsolve, np.linalg.tensorinv,
                            np.fft.fft, np.fft.ifft, np.fft.rfft, np.fft.irfft, np.fft.fft2, np.fft.fftn,
                            np.convolve, np.correlate, np.interp, np.polyfit, np.roots)},
}


def _function_name(func: Any) -> str:
    module = getattr(func, "__module__", "") or ""
    prefix = "np.linalg." if "linalg" in module else "np.fft." if "fft" in module else "np."
    return prefix + getattr(func, "__name__", repr(func))


def _refuse_function(name: str, why: str) -> TypeError:
    return TypeError(f"np.{name} is not supported on Terms: {why}")


def array_function(self: Any, func: Callable[..., Any], types: Iterable[type], args: Iterable[Any],
                   kwargs: Mapping[str, Any]) -> Any:
    """NumPy's ``__array_function__`` for Term and TermArray: the functions that build nodes of
    their own, a refusal for those with no derivative subgraph, and NumPy's own implementation
    on the object arrays for the rest (its inner ufunc calls come back through
    ``array_ufunc``)."""
    if holds_array_term(args) or holds_array_term(kwargs.values()):
        mine = ARRAY_TERM_FUNCTIONS.get(func)
        if mine is not None:
            return mine(*args, **kwargs)
        if func not in ARRAY_FUNCTIONS:  # the rest run on the elements of the array Terms
            args, kwargs = elements_of(tuple(args)), {k: elements_of(v) for k, v in kwargs.items()}
    own = ARRAY_FUNCTIONS.get(func)
    if own is not None:
        return _wrap(own(*args, **kwargs))
    name = _function_name(func)
    if func in REFUSED:
        raise TypeError(f"{name} is not supported on Terms: {REFUSED[func]}")
    implementation = getattr(func, "_implementation", None)
    if implementation is None:
        raise TypeError(f"{name} is not supported on Terms: NumPy gives no implementation to run on an array of "
                        "Terms")
    try:
        return _wrap(implementation(*args, **kwargs))
    except TypeError as error:
        if "Term" not in str(error):
            raise
        raise TypeError(f"{name} on Terms failed: {error}") from error


class TermArray(np.ndarray):
    """An object array of Terms (and numbers) that keeps NumPy's hooks: ``np.max``, ``np.where``,
    ``np.sort`` and the ufuncs reach ``array_ufunc``/``array_function`` even where no element is
    asked (a plain object array would compare its elements and fail on ``bool``). Traced array
    arguments are TermArrays; slicing, arithmetic and NumPy functions keep them so."""

    __array_ufunc__ = array_ufunc
    __array_function__ = array_function

    def __getitem__(self, index: Any) -> Any:
        if _holds_terms(index):
            raise IndexError(f"x[mask] with a mask of Terms ({_shown(index)}): a mask that depends on the traced "
                             "values is a data-dependent shape; use `sad.where`: sad.where(mask, x, 0.0) keeps "
                             "every entry and zeroes the others")
        return super().__getitem__(index)

    @property
    def at(self) -> Any:
        """JAX's functional update ``x.at[i].set(v)`` has no place here: said as an error."""
        raise AttributeError("x.at[...] is JAX's functional update: NumPy arrays are updated in place here; "
                             "write `x[i] = …` on a copy (y = x.copy(); y[i] = value)")

    def eval(self, values: Any = None) -> np.ndarray:
        """The values of every element, as a float array of this shape."""
        from ..numeric.modes import evaluate

        return np.array([evaluate(t, values) if isinstance(t, Term) else float(t) for t in self.ravel()],
                        dtype=float).reshape(self.shape)


def _holds_terms(index: Any) -> bool:
    """An index that depends on Terms: a Term, an object array or list holding one, or a tuple
    with such a part."""
    parts = index if isinstance(index, tuple) else (index,)
    for part in parts:
        if isinstance(part, Term):
            return True
        if isinstance(part, list) and any(isinstance(p, Term) for p in part):
            return True
        if isinstance(part, np.ndarray) and part.dtype == object and any(isinstance(p, Term) for p in part.flat):
            return True
    return False


def _shown(index: Any) -> str:
    shape = getattr(index, "shape", None)
    return f"an array of shape {shape}" if shape is not None else f"{type(index).__name__} {index!r:.60}"


def stack(items: Any, axis: int = 0) -> TermArray:
    """Terms (and numbers, and arrays of them) joined into one array along a new ``axis``: how a
    traced function builds an array of results, where writing a Term into a float array
    (``np.zeros(3)``) cannot work.

    >>> import subgraph_ad as sad
    >>> tape = sad.Tape(); x = tape.var("x", 2.0)
    >>> sad.stack([x**2, 1.0, sad.sin(x)]).eval()
    array([4.        , 1.        , 0.90929743])
    """
    if isinstance(items, (str, bytes)) or not hasattr(items, "__len__") or len(items) == 0:
        raise TypeError(f"stack() takes a non-empty sequence of Terms, numbers or arrays of them, got "
                        f"{type(items).__name__} {items!r:.80}")
    parts = []
    for item in items:
        part = np.empty((), dtype=object)
        part[()] = item
        parts.append(item if isinstance(item, np.ndarray) else part)
    return np.stack([np.asarray(p, dtype=object) for p in parts], axis=axis).view(TermArray)


# -- Term's operators for NumPy-style code ------------------------------------------------------
def _number(value: Any) -> bool:
    """A real number (a SymPy number too), or a 0-d numeric array: what a comparison with a Term
    turns into a condition."""
    if isinstance(value, np.ndarray):
        return value.ndim == 0 and value.dtype.kind in "biuf"
    if isinstance(value, (bool, np.bool_)):
        return False
    return isinstance(value, (int, float, np.integer, np.floating)) or (
        type(value).__module__.startswith("sympy") and getattr(value, "is_number", False))


def _comparison(symbol: str) -> Callable[[Term, Any], Any]:
    fn = kinks.COMPARISONS[symbol]

    def compare(self: Term, other: Any) -> Any:
        if isinstance(other, Term) or _number(other):
            return fn(self, self._lift(other[()] if isinstance(other, np.ndarray) else other))
        return NotImplemented

    compare.__name__ = f"__{fn.name}__"
    compare.__doc__ = f"``self {symbol} other`` as a condition Term (1.0 or 0.0, derivative 0)."
    return compare


def _equality(symbol: str) -> Callable[[Term, Any], Any]:
    fn = kinks.COMPARISONS[symbol]

    def compare(self: Term, other: Any) -> Any:
        if isinstance(other, Term):  # the same node or not: what dicts, sets and `in` rely on
            same = other.tape is self.tape and other.index == self.index
            return same if symbol == "==" else not same
        if _number(other):
            return fn(self, self._lift(other[()] if isinstance(other, np.ndarray) else other))
        if isinstance(other, (complex, np.complexfloating)):  # False for every x would be a silent branch
            raise TypeError(f"cannot compare a Term ({self!r} {symbol} {other!r}): a Term is real, so equality with a "
                            "complex number is no condition; compare with its real part")
        return NotImplemented

    compare.__doc__ = (f"Term {symbol} Term: whether they are (not) the same node; Term {symbol} number: a "
                       "condition Term.")
    return compare


def _binary(fn: Callable[[Any, Any], Any], reflected: bool = False) -> Callable[[Term, Any], Any]:
    def method(self: Term, other: Any) -> Any:
        if not (isinstance(other, Term) or _number(other)):
            return NotImplemented
        other = self._lift(other[()] if isinstance(other, np.ndarray) else other)
        return fn(other, self) if reflected else fn(self, other)

    return method


def _divmod(a: Any, b: Any) -> tuple[Any, Any]:
    return _floor_divide(a, b), kinks.mod(a, b)


def _round(self: Term, ndigits: int | None = None) -> Term:
    return kinks.round_(self, ndigits or 0)


#: The operators NumPy-style code uses on Terms, set on Term when this module loads: comparisons
#: (conditions), ``& | ^ ~`` on conditions, ``// % divmod``, ``round``, ``math.floor`` and
#: friends, and NumPy's array functions.
TERM_OPERATORS: dict[str, Any] = {
    "__lt__": _comparison("<"), "__le__": _comparison("<="), "__gt__": _comparison(">"), "__ge__": _comparison(">="),
    "__eq__": _equality("=="), "__ne__": _equality("!="),
    "__and__": _binary(kinks.logical_and), "__rand__": _binary(kinks.logical_and, True),
    "__or__": _binary(kinks.logical_or), "__ror__": _binary(kinks.logical_or, True),
    "__xor__": _binary(lambda a, b: kinks.not_equal(kinks.truth(a), kinks.truth(b))),
    "__rxor__": _binary(lambda a, b: kinks.not_equal(kinks.truth(a), kinks.truth(b)), True),
    "__invert__": kinks.logical_not,
    "__floordiv__": _binary(_floor_divide), "__rfloordiv__": _binary(_floor_divide, True),
    "__mod__": _binary(kinks.mod), "__rmod__": _binary(kinks.mod, True),
    "__divmod__": _binary(_divmod), "__rdivmod__": _binary(_divmod, True),
    "__round__": _round, "__floor__": lambda self: kinks.floor(self), "__ceil__": lambda self: kinks.ceil(self),
    "__trunc__": lambda self: kinks.trunc(self),
    "__array_function__": array_function,
}

for _name, _method in TERM_OPERATORS.items():
    setattr(Term, _name, _method)
