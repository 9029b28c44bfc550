"""NumPy functions on Terms: ``np.sin(x)`` appends the node ``sad.sin(x)`` appends.

``Term.__array_ufunc__`` (NumPy's override protocol, attached by ``subgraph_ad.methods``) maps a
ufunc call on Terms to a node, so code written with NumPy builds a graph when handed a Term:
the arithmetic ufuncs (``np.add``, ``np.multiply``, ``np.power``, ``np.square``, ...) through
Term arithmetic, and every registered function whose ``numpy`` attribute is the ufunc
(``np.exp`` is ``sad.exp``, ``np.arctan2`` is ``sad.atan2``), looked up in ``FUNCTIONS`` at call
time, so a function registered later is found too. Numbers among the operands become
constants of the Term's tape. Anything else (a ufunc with no derivative subgraph, ``reduce``,
``out=``) is a TypeError naming it and what is supported, never a silent array of objects.

>>> import numpy as np
>>> import subgraph_ad as sad
>>> tape = sad.Tape(); x = tape.var("x", 0.5)
>>> np.sin(x) == sad.sin(x), np.float64(2.0) * x == 2.0 * x
(True, True)
>>> def f(v):
...     return np.exp(-v**2 / 2) * np.cos(v)
>>> f(x) == sad.exp(-x**2 / 2) * sad.cos(x)
True
"""

from __future__ import annotations

import operator
from typing import Any, Callable

import numpy as np

from ..core.term import Term
from ..functions.base import FUNCTIONS, Function


def _square(a: Term) -> Term:
    return a * a


def _reciprocal(a: Term) -> Term:
    return 1.0 / a


def _conjugate(a: Term) -> Term:
    """A Term is real (real vars, real constants, real functions), so it is its own conjugate;
    NumPy's ``np.var``, ``np.std`` and ``np.vdot`` conjugate before they multiply."""
    return a


#: The arithmetic ufuncs, as Term arithmetic (``np.divide`` is ``np.true_divide``).
ARITHMETIC: dict[np.ufunc, Callable[..., Term]] = {
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


def function_of(ufunc: Any) -> Function | None:
    """The registered function that is this ufunc (its ``numpy``), taking as many arguments."""
    for fn in FUNCTIONS.values():
        if fn.numpy is ufunc and fn.arity == getattr(ufunc, "nin", fn.arity):
            return fn
    return None


def supported() -> list[str]:
    """The ufuncs Terms accept, as ``np.name``: the arithmetic ones, then the registry's."""
    names = [f"np.{u.__name__}" for u in ARITHMETIC]
    for fn in FUNCTIONS.values():
        if isinstance(fn.numpy, np.ufunc) and fn.numpy not in ARITHMETIC and function_of(fn.numpy) is fn:
            names.append(f"np.{fn.numpy.__name__}")
    return list(dict.fromkeys(names))


def _refuse(what: str, why: str) -> TypeError:
    return TypeError(f"{what} is not supported on Terms ({why}); supported: {', '.join(supported())}")


def _operand(term: Term, value: Any, name: str) -> Term:
    """An operand as a Term of ``term``'s tape: a Term of that tape (another tape: ValueError),
    or a real number, which becomes a constant."""
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iuf":
        value = value.item()
    try:
        return term._lift(value)
    except TypeError:
        raise TypeError(
            f"np.{name} on a Term takes Terms and real numbers, got {type(value).__name__} {value!r}; "
            "a Term's values over an array come from term.eval({x: array}) or lambdify"
        ) from None


def array_ufunc(term: Term, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Term:
    """NumPy's ``__array_ufunc__`` for Term: ``ufunc(*inputs)`` as a node of ``term``'s tape."""
    name = getattr(ufunc, "__name__", repr(ufunc))
    if method != "__call__":
        call = f"np.{name}({', '.join('xyzuvw'[:getattr(ufunc, 'nin', 1)])})"
        raise _refuse(f"np.{name}.{method}", f"only a call such as {call} builds a node")
    if kwargs:
        given = ", ".join(f"{k}=" for k in kwargs)
        raise _refuse(f"np.{name}(..., {given})",
                      "a Term is a node of the graph, not a buffer: call it on Terms and numbers only")
    arithmetic = ARITHMETIC.get(ufunc)
    fn = None if arithmetic is not None else function_of(ufunc)
    if arithmetic is None and fn is None:
        raise _refuse(f"np.{name}", "no derivative subgraph for it")
    operands = [_operand(term, v, name) for v in inputs]
    return arithmetic(*operands) if arithmetic is not None else fn(*operands)  # type: ignore[misc]


def ufunc_method(term: Term, name: str) -> Callable[..., Term]:
    """``term.sin``, ``term.arctan2``, …: the methods NumPy calls on each element of an object
    array of Terms (``np.sin(array)`` does not consult ``__array_ufunc__`` for those), found by
    the name of the ufunc each registered function says it is; ``term.conjugate()`` is the Term
    (it is real), which NumPy's object loops of ``np.conjugate`` and ``np.vdot`` call."""
    if name == "conjugate":
        return lambda: _conjugate(term)
    for fn in FUNCTIONS.values():
        if fn.numpy is not None and getattr(fn.numpy, "__name__", None) == name:
            return lambda *others: fn(term, *others)
    raise AttributeError(f"'Term' object has no attribute {name!r}")
