"""NumPy's ufuncs on Terms (``__array_ufunc__``): the arithmetic ufuncs as Term arithmetic, a
few as compositions of nodes, and every registered function whose ``numpy`` is the ufunc,
looked up at call time; elementwise over NumPy's broadcast where an array is among the
operands; ``reduce``, ``accumulate`` and ``outer`` too."""

from __future__ import annotations

import operator
from typing import Any, Callable

import numpy as np

from ..core.term import Term
from ..functions import kinks
from ..functions.base import FUNCTIONS, Function
from ..functions.piecewise import abs_
from .term_array import into, plain, wrap


def _square(a: Term) -> Term:
    return a * a


def _reciprocal(a: Term) -> Term:
    return 1.0 / a


def _conjugate(a: Term) -> Term:
    """A Term is real (real vars, real constants, real functions), so it is its own conjugate;
    NumPy's ``np.var``, ``np.std`` and ``np.vdot`` conjugate before they multiply."""
    return a


def floor_divide(a: Any, b: Any) -> Any:
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
    np.floor_divide: floor_divide,
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
        found = getattr(ufunc, method)(*(plain(_operand(v, name)) for v in inputs), **extra)
        return into(wrap(found), outs)
    if op is None:
        raise _refuse(f"np.{name}", "no derivative subgraph for it")
    if method == "__call__":
        outs = _keywords(name, kwargs).get("out")
        operands = [_operand(v, name) for v in inputs]
        if any(isinstance(v, np.ndarray) for v in operands):
            found = np.frompyfunc(op, len(operands), getattr(ufunc, "nout", 1))(*(plain(v) for v in operands))
            return into(wrap(found), outs)
        term = next(v for v in operands if isinstance(v, Term))
        return into(op(*(term._lift(v) for v in operands)), outs)
    if method in ("reduce", "accumulate", "outer"):
        allowed = {"reduce": ("axis", "keepdims", "initial"), "accumulate": ("axis",), "outer": ()}[method]
        options = _keywords(f"{name}.{method}", kwargs, allowed)
        outs = options.pop("out", None)
        arrays = [np.asarray(plain(_operand(v, name)), dtype=object) for v in inputs]
        vectorized = np.frompyfunc(op, 2, 1)
        if method == "reduce":
            found = _reduce(vectorized, arrays[0], options.get("axis", 0), bool(options.get("keepdims", False)),
                            options.get("initial", np._NoValue), ufunc.identity)
        else:
            found = getattr(vectorized, method)(*arrays, **options)
        return into(wrap(found), outs)
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
