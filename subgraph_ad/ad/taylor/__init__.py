"""Taylor-mode derivative subgraphs: every derivative up to order n in O(S·n²) nodes.

Repeated ``gen_graph`` differentiates the *derivative graph* again at each order. Taylor mode
instead propagates the univariate Taylor coefficients y_k = y⁽ᵏ⁾/k! of every node of z along
x ↦ x + t (``recurrences.py``: one recurrence per kind of node), requested on demand
(``plan.py``: degree bounds, so only coefficients that can be non-zero are built), as lazy
values whose 1/k, j and k! factors and signs are Python floats folded into the few constants
that must exist (``coefficients.py``). The results are ordinary Terms on the same tape: they
evaluate, compile, render and can be differentiated again.

Any order works. Float scalars fail past order 170 (k! overflows a float at 171, 1/k! underflows
near 180), so a build whose highest order exceeds ``EXACT_ABOVE`` (150) carries them exactly, as
``Fraction``s: sin(x).diff(x, 10_000) is sin(x) itself, k!·(1/k!) = 1. Only the constants that
become nodes are rounded; one beyond the normal floats is a chain of 2^±1000 factors, so a
result is ±inf or 0 only where the true derivative's value is. Below that the float path, and
its node counts, are unchanged. Exact scalars cost time (big integers; ~0.7 s at order 10,000
for sin) and nodes may still overflow in between (x·T_k sums with huge terms), as with any graph.

>>> from subgraph_ad import Tape, exp
>>> tape = Tape(); x = tape.var("x", 0.5)
>>> d = taylor_graph(exp(-x**2 / 2), x, 4)
>>> [t.to_sympy() for t in d[:2]]
[-x*exp(-x**2/2), x**2*exp(-x**2/2) - exp(-x**2/2)]
>>> round(d[3].eval(), 6)
1.378901
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Mapping, Optional

import numpy as np

from ...core import Callback, Term
from ...core.expand import scalar_roots
from ...numeric.modes import values_of
from .. import accuracy
from ..closed_form import probe_values
from .coefficients import EXACT_ABOVE
from .exact import exact_inputs
from .series import Component, Series


def _check(term: Term, wrt: Term, n: int) -> int:
    if not isinstance(term, Term):
        raise TypeError(f"taylor_graph differentiates a Term, got {type(term).__name__} {term!r:.80}")
    w = term.tape.check_var(wrt, "wrt").index
    _check_order(n)
    return w


def _check_order(n: int) -> None:
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"taylor_graph: the order n must be an int >= 0, got {n!r}")


def _seeds(term: Term, direction: Mapping[Term, Any], n: int) -> dict[int, Component]:
    """A direction {var: number or Term} as the build's seeds: each var's coefficient 1."""
    if not isinstance(term, Term):
        raise TypeError(f"taylor_graph differentiates a Term, got {type(term).__name__} {term!r:.80}")
    xs = [term.tape.check_var(x, "direction key") for x in direction]
    if len({x.index for x in xs}) != len(xs):
        raise ValueError(f"taylor_graph: the direction names a var twice: {[x.name for x in xs]}")
    seeds: dict[int, Component] = {}
    for x in xs:
        v = direction[x]
        if isinstance(v, Term):
            term._lift(v)
        elif isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, Fraction, np.integer, np.floating)):
            raise TypeError(f"taylor_graph: the component of {x.name} must be a number or a Term, got "
                            f"{type(v).__name__} {v!r}")
        seeds[x.index] = v
    _check_order(n)
    return seeds


def _estimate(series: Series, root: int, wanted: range, out: list[int]) -> Optional[float]:
    """The build's estimated relative error (``accuracy``), its worst order's: first at one probe
    (``accuracy.screen``), then, unless that is clearly below ``TOLERANCE``, at all of them,
    against the sizes of the derivatives ``out`` built (a derivative that comes out exactly 0
    there is a zero, whatever rounding its sums might have had). None where nothing could be
    measured, or nothing can cancel (``Series.sums``). A build from exact inputs has exact
    scalars and constants (``Series.keep``): the screen, which rounds the scalars' sums as well,
    overstates its error; past the screen its graph, which rounds only where it is evaluated as
    gen_graph's does, is measured as those are (``accuracy.shadow``)."""
    if not series.sums():
        return None
    try:
        values = series.values()
    except Exception:  # a user function that refuses the probes
        return None
    at = accuracy.screen(np.isfinite(np.broadcast_to(values[root], accuracy.PROBES.shape)))
    if at is not None:
        worst = max((abs(z.imag) / abs(z.real) if z.real else math.inf
                     for z in series.rounding(root, wanted, values, at) if z is not None), default=0.0)
        if accuracy.SPREAD * worst <= accuracy.SCREEN_BELOW:
            return accuracy.SPREAD * worst
    if series.keep:
        roots = [i for i in out if i >= 0]
        return accuracy.worst(accuracy.shadow(series.tape, roots, series.wrt)) if roots else None
    found = [(z, i) for z, i in zip(series.rounding(root, wanted, values, None), out) if z is not None and i >= 0]
    if not found:
        return None
    with np.errstate(all="ignore"):
        built = values_of(series.tape, [i for _, i in found], probe_values(series.tape, series.wrt))
        sizes = [np.broadcast_to(np.asarray(built[i], dtype=float), accuracy.PROBES.shape) for _, i in found]
        errors = [np.abs(z.imag / z.real) * size for (z, _), size in zip(found, sizes)]  # in the graph's units
    error = accuracy.worst(accuracy.typical(sizes, errors))
    return None if error is None else accuracy.SPREAD * error


def _build(term: Term, seeds: Mapping[int, Component], wanted: range) -> tuple[list[Optional[int]], Optional[float]]:
    """The derivatives of the ``wanted`` orders along ``seeds`` (indices; None for a structural
    zero), inside the caller's transaction, and their estimated relative error (the worst
    order's ``accuracy.typical`` of ``Series.rounding``; None if not measured). Only the nodes
    the results need stay on the tape (``Tape.pruned``). An estimate above ``TOLERANCE`` lets
    auto mode replace the build before anyone hears of its nodes (``accuracy.replace``)."""
    tape = term.tape
    base = tape.orders[term.index]
    error: list[Optional[float]] = [None]
    # exact inputs, exact derivatives: the scalars and the constants they become stay Fractions
    keep = exact_inputs(tape, [term.index, *(v.index for v in seeds.values() if isinstance(v, Term))],
                        [v for v in seeds.values() if not isinstance(v, Term)])

    def build() -> list[int]:
        mark = len(tape)
        exact = wanted[-1] > EXACT_ABOVE  # above it, exact scalars: k! and 1/k! leave the floats
        series = Series(tape, seeds, exact, keep)
        series.run(term.index, wanted, base)
        out = []
        for k in wanted:
            tape.tag(base + k)
            d = series.arith.materialize(series.get(term.index, k), math.factorial(k))
            out.append(-1 if d is None else d.index)
        if accuracy.checking():
            error[0] = _estimate(series, term.index, wanted, out)
            if error[0] is not None and error[0] > accuracy.TOLERANCE:
                accuracy.replace(error[0], len(tape) - mark)
        return out

    return [None if i < 0 else i for i in tape.pruned(build)], error[0]


def taylor_graph(term: Term, wrt: Term | Mapping[Term, Any], n: int, callback: Callback | None = None) -> list[Term]:
    """Append the derivatives of orders 1..n of ``term`` in ``wrt``; returns them as Terms.

    Each result equals ``term.diff(wrt, k)``; the tape's 0 marks a structurally zero one. Nodes
    are tagged with the derivative order that first needed them (``tape.orders``); ``callback``
    sees each appended Term. Transactional: if anything raises, the tape is left as it was.
    ``wrt`` as a direction {var: number or Term} gives ∂ʲu[v,…,v] = dʲ/dtʲ u(x + t·v) at t = 0
    instead (vars not named have component 0): the same build, seeded with each var's component
    where a var is seeded with 1 (the accuracy estimate probes the direction's first var).
    """
    seeds = _seeds(term, wrt, n) if isinstance(wrt, Mapping) else {_check(term, wrt, n): 1.0}
    tape = term.tape
    arrays = [tape.nodes[i].payload for i in seeds if tape.nodes[i].payload in tape.var_shapes]
    if arrays:
        raise TypeError(f"taylor_graph takes scalar vars as directions; {arrays[0]!r} is an array of shape "
                        f"{tape.var_shapes[arrays[0]]}: give its elements' vars (Term.expand) or trace the function")
    if n == 0:
        return []
    with tape.transaction(callback):
        term = Term(tape, scalar_roots(tape, [term.index], "taylor_graph")[0])  # Taylor mode is scalar
        found, error = _build(term, seeds, range(1, n + 1))
        accuracy.settle(error, accuracy.taylor_what(n, True, wrt))
        return [tape.zero if i is None else Term(tape, i) for i in found]


def taylor_diff(term: Term, wrt: Term, n: int, callback: Callback | None = None) -> Term:
    """The n-th derivative alone: only the coefficients order n needs (the recurrence; ``diff``
    may replace it by its closed form afterwards). A structural zero appends nothing and returns
    the tape's 0."""
    w = _check(term, wrt, n)
    if n == 0:
        return term
    tape = term.tape
    with tape.transaction(callback):
        term = Term(tape, scalar_roots(tape, [term.index], "Taylor mode")[0])
        (index,), error = _build(term, {w: 1.0}, range(n, n + 1))
        accuracy.settle(error, accuracy.taylor_what(n, False, wrt))
        return tape.zero if index is None else Term(tape, index)
