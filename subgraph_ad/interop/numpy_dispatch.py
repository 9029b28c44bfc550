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

from ..core.term import Term
from .array_functions import ARRAY_FUNCTIONS, REFUSED, array_function
from .term_array import TermArray, stack
from .term_operators import TERM_OPERATORS
from .ufuncs import ARITHMETIC, COMPOSED, array_ufunc, function_of, scalar_op, supported, ufunc_method

__all__ = ["ARITHMETIC", "ARRAY_FUNCTIONS", "COMPOSED", "REFUSED", "TERM_OPERATORS", "TermArray", "array_function",
           "array_ufunc", "function_of", "scalar_op", "stack", "supported", "ufunc_method"]

# NumPy's hooks on TermArray, and the operators of NumPy-style code on Term: set here, where the
# modules that implement them meet (they import TermArray, so it cannot import them)
for _name, _hook in (("__array_ufunc__", array_ufunc), ("__array_function__", array_function)):
    setattr(TermArray, _name, _hook)
for _name, _method in TERM_OPERATORS.items():
    setattr(Term, _name, _method)
