"""Kinks and selections: comparisons as condition Terms, ``where``, ``maximum``/``minimum``
(and NumPy's nan-ignoring ``fmax``/``fmin``), ``relu``, ``clip``, ``heaviside``, and the
rounding functions ``floor``, ``ceil``, ``round``, ``trunc``, ``mod``, ``fmod``, all through the
UnaryFn/BinaryFn door.

Each is smooth but for a set of measure zero, so its derivative at a point is the derivative of
the piece the point is in; every order follows, in every engine, from the one ``fdiff``. At a
kink or a tie the convention is JAX's (PyTorch's differs only for ``clip`` at its bounds):

===================  ====================================  ==============================
function             derivative                            at ties and kinks
===================  ====================================  ==============================
``maximum(a, b)``    1 to the larger argument, 0 to the     ½ each when a == b (JAX and
                     other                                  PyTorch alike)
``minimum(a, b)``    1 to the smaller                      ½ each when a == b
``fmax``/``fmin``    as NumPy picks: the non-nan one        all to b when a == b (JAX)
``relu(x)``          1 for x > 0, else 0                   relu′(0) = 0 (JAX, PyTorch)
``clip(x, lo, hi)``  minimum(maximum(x, lo), hi)           ½ at x == lo or hi (JAX;
                                                            PyTorch's clamp gives 1)
``heaviside(x, h)``  0 in x; in h: 1 where x == 0          H(0) = h, ½ by default (SymPy)
floor, ceil, round,  0 (a structural zero)                  0 at the jumps (JAX, PyTorch)
trunc
``mod(a, b)``        1 in a, −floor(a/b) in b              the same at the jumps
``fmod(a, b)``       1 in a, −trunc(a/b) in b              the same at the jumps
===================  ====================================  ==============================

``round`` rounds half to even, as NumPy, JAX and PyTorch do.

A comparison of Terms (``x > 0``, ``np.less(x, y)``) is a *condition*: a node whose value is 1.0
or 0.0 and whose derivative is a structural zero; ``bool()`` of it is still the control-flow
error, since the graph is traced once. ``where(c, a, b)`` is ``select(c, a) + select(not c, b)``
with ``select(c, a)`` = a where c holds, else exactly 0 — also where a is inf or nan. ``select``
is linear in a and a condition is constant to every engine, so a forward derivative is
``select`` of the branch's derivative, Taylor mode's coefficient k the selected coefficient k,
and a reverse sweep's adjoint of a the selected adjoint, kept a selection as it goes down the
branch (every rule is linear in the adjoint): the untaken branch's inf or nan never reaches a
value or a derivative of any order, in any engine — unlike JAX's where-nan-gradient pitfall.

>>> import subgraph_ad as sad
>>> tape = sad.Tape(); x = tape.var("x", 0.0)
>>> f = sad.where(x > 0, sad.log(x), x * x)
>>> f.eval(), f.gen_graph(x).eval(), f.diff(x, 2, method="graph").eval()
(0.0, 0.0, 2.0)
>>> sad.maximum(x, 0.0).derive(x), sad.relu(x).derive(x)
(0.5, 0.0)
"""

from __future__ import annotations

from .conditions import (COMPARISONS, Compare, Predicate, Select, equal, greater, greater_equal, is_condition,
                         isfinite, isnan, less, less_equal, logical_and, logical_not, logical_or, not_equal, select,
                         selection, truth, where)
from .extrema import Extremum, Heaviside, Relu, clip, fmax, fmin, heaviside, maximum, minimum, reduce_extremum, relu
from .kink_elementaries import KINKS, Kinded, sympy_truth
from .rounding import Remainder, Rounding, ceil, floor, fmod, mod, round_, trunc
from .stop_gradient import StopGradient, stop_gradient

__all__ = ["COMPARISONS", "KINKS", "Compare", "Extremum", "Heaviside", "Kinded", "Predicate", "Relu", "Remainder",
           "Rounding", "Select", "StopGradient", "ceil", "clip", "equal", "floor", "fmax", "fmin", "fmod", "greater",
           "greater_equal", "heaviside", "is_condition", "isfinite", "isnan", "less", "less_equal", "logical_and",
           "logical_not", "logical_or", "maximum", "minimum", "mod", "not_equal", "reduce_extremum", "relu", "round_",
           "select", "selection", "stop_gradient", "sympy_truth", "trunc", "truth", "where"]
