"""How accurate a derivative graph is: measured where it is built, and a warning where it is not.

Taylor mode's recurrences sum binomially weighted terms: the n-th derivative of e^x·sin x is
Σ_j C(n, j)·e^x·sin⁽ʲ⁾(x), terms of size ~2ⁿ whose sum is 2^{n/2}·e^x·sin(x + nπ/4). That
cancellation is the algorithm's, not the problem's: in float64 it costs about n/2 bits (27 % off at
x = 0.4, n = 100), while repeated gen_graph, whose roundings cancel in pairs there, is exact. So every
Taylor build estimates its own rounding error at fixed probe points (``Series.rounding``, read by
``typical``); ``diff`` and ``derivatives`` in auto mode measure repeated gen_graph instead where
that estimate passes ``TOLERANCE`` (``GraphRun``: built on trial, within a node budget, measured
by ``shadow``) and keep the better; a gen_graph run of 8 orders or more is measured too (its
sums can cancel as well); and whatever is returned with an error above ``TOLERANCE`` comes with
an ``AccuracyWarning`` naming it.

The probes are the closed form's (``closed_form.PROBES``, the var on [−4, 4], other vars at
fixed values), so the measure, like the graph, depends only on the expression, the var and the
order, never on the current values.

>>> import warnings
>>> from subgraph_ad import Tape, exp, sin, taylor_graph
>>> tape = Tape(); x = tape.var("x", 0.4)
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     d = taylor_graph(exp(x) * sin(x), x, 100)
>>> [w.category.__name__ for w in caught]
['AccuracyWarning']
"""

from __future__ import annotations

import math
import sys
import warnings
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any, Callable, Iterator, Mapping, Optional

import numpy as np

from ..core import OPS, LimitError, Tape, Term
from ..numeric.modes import values_of
from .closed_form import MIN_FINITE, PROBES, probe_values
from .exact_derivative import derivative
from .forward import gen_graph

#: A derivative whose estimated relative error (``typical``) is above this is returned with an
#: ``AccuracyWarning``. A stable float64 build is good to ~1e-14 at order 100 (repeated gen_graph
#: on e^x·sin x, Taylor mode on the benchmark's F1–F5: docs/guarantees.md); 1e-10 leaves four
#: digits for benign growth of rounding with the order and is far below the losses it catches.
TOLERANCE = 1e-10
#: The unit roundoff of float64: a rounding error is at most this much of its value.
U = 2.0**-53
#: A gen_graph run that auto mode measures against an inaccurate Taylor build may append this many
#: times the Taylor build's nodes, and at least ``GRAPH_NODES``; beyond it, it is not tried further
#: (e^{2x}·cos 3x at n = 100 would take 177,000 nodes, and be no more accurate). e^{−x}·sin 2x
#: at n = 100 is exact in 5,465 nodes, where Taylor mode's 100th derivative alone has ~1,000.
GRAPH_TIMES = 4
GRAPH_NODES = 20_000

#: A point's error may be a few times the typical one (``typical``, a median): against mpmath on
#: e^{ax}·sin(bx) and e^{ax}·cos(bx) at 14 points each, orders 30–100, the largest was 3.2 times
#: it. Estimates are reported that many times the typical error, as "up to".
SPREAD = 4
#: A first look, before all the probes: one of them (``screen``). Where the estimate there is below
#: ``TOLERANCE`` / 100 (at one point, not a median: a point near a zero of the derivative only
#: sends the build on to all the probes), the build is taken as accurate.
SCREEN_BELOW = TOLERANCE / 100
_SORTED = np.argsort(PROBES)
_OFF_GRID = [int(i) for i in _SORTED if i >= 33]  # the probes off the quarter grid, in order
_PACKAGE = str(Path(__file__).resolve().parents[1])


class AccuracyWarning(UserWarning):
    """A derivative was built by a method whose rounding error, measured at the probe points,
    exceeds ``TOLERANCE``: its value may have lost digits that the problem itself does not
    lose (see docs/guarantees.md, "Accuracy at high order")."""


def typical(values: Any, errors: Any) -> list[Optional[float]]:
    """The typical relative error of each derivative (a row of ``values``, its error the row of
    ``errors``, at the ``PROBES``): |error| over the derivative's size near each point (the
    largest |value| at it and its two neighbours, so a point at a zero of the derivative counts
    by its neighbours' size), median over the points where both are finite; None where fewer
    than ``MIN_FINITE`` are (too little evidence)."""
    value = np.abs(np.asarray(values, dtype=float))[:, _SORTED]
    error = np.abs(np.asarray(errors, dtype=float))[:, _SORTED]
    with np.errstate(all="ignore"):
        finite = np.isfinite(value) & np.isfinite(error)
        size = np.where(finite, value, 0.0)
        near = size.copy()
        np.maximum(near[:, 1:], size[:, :-1], out=near[:, 1:])
        np.maximum(near[:, :-1], size[:, 1:], out=near[:, :-1])
        ratio = np.where(finite, error / near, np.inf)
    ratio[np.isnan(ratio)] = np.inf  # 0 / 0: a vanishing neighbourhood says nothing; sorted last
    counts = np.sum(np.isfinite(ratio), axis=1)
    ratio.sort(axis=1)
    return [float(r[(c - 1) // 2] + r[c // 2]) / 2 if c >= MIN_FINITE else None for r, c in zip(ratio, counts)]


def screen(finite: np.ndarray) -> Optional[int]:
    """The probe of the first look (an index into ``PROBES``): a third of the way across those
    off the quarter grid where f is finite (``finite``: a mask over ``PROBES``); None if fewer
    than three are."""
    mask = finite.tolist()
    off = [i for i in _OFF_GRID if mask[i]]
    return None if len(off) < 3 else off[len(off) // 3]


def worst(errors: list[Optional[float]]) -> Optional[float]:
    """The largest of some estimates, None if there is none."""
    return max((e for e in errors if e is not None), default=None)


class Noise:
    """Rounding errors drawn at random, as complex factors 1 + 2u·i·s with s = ±1: multiplying a
    value by one gives it an error of its own size in the imaginary part, which complex products
    then carry to first order. Entries of a fixed table (seeded: the same build gives the same
    estimate), taken in turn; ``width`` None gives numbers, else rows of that many."""

    SIZE = 1021  # prime: a sum of some fixed length does not cycle with the table
    _tables: dict[Optional[int], Any] = {}

    def __init__(self, width: Optional[int]) -> None:
        table = self._tables.get(width)
        if table is None:
            signs = np.random.default_rng(20240611).integers(0, 2, (self.SIZE, width or 1)) * 2.0 - 1.0
            table = 1.0 + (2.0 * U) * 1j * signs
            table = self._tables[width] = table[:, 0].tolist() if width is None else table
        self.table = table
        self.at = 0

    def next(self) -> Any:
        """The next factor: a complex number, or a row of them."""
        self.at = (self.at + 1) % self.SIZE
        return self.table[self.at]


def _value(tape: Tape, i: int, vals: dict[int, Any], wide: Any) -> Any:
    """Node i's value from its operands' values in ``vals`` (NumPy's longdouble where they are);
    a function that does not take longdouble (SciPy's erf) is computed in float64."""
    node = tape.nodes[i]
    if node.op == "const":
        return wide(node.payload)
    args = [vals[a] for a in node.args]
    if node.op != "fn":
        return OPS[node.op].value(*args)
    try:
        return node.payload.f(*args)
    except TypeError:
        return wide(node.payload.f(*(np.asarray(a, dtype=float) for a in args)))


def shadow(tape: Tape, roots: list[int], wrt: int) -> list[Optional[float]]:
    """The measured rounding error of each root (``SPREAD`` times ``typical``, as Taylor mode's
    estimate is): the graph evaluated at the probe points in float64 and again in NumPy's
    longdouble, every node (f's too: a graph can be exact only through its roundings'
    correlations, fl(−a − b) = −fl(a + b), which a mix of the two would break). Where
    longdouble is no wider than float64 (Windows, Apple silicon) each node's float64 value gets
    a random error of its own size instead (a stochastic estimate, pessimistic where roundings
    are correlated). For graphs whose constants are exact, such as gen_graph's; Taylor mode's
    scalars are rounded sums, measured by ``Series.rounding``."""
    try:
        vals = values_of(tape, roots, probe_values(tape, wrt))
    except Exception:  # a user function that refuses the probes: nothing measured
        return [None] * len(roots)
    wide = np.longdouble if np.finfo(np.longdouble).nmant > np.finfo(float).nmant else None
    noise = Noise(PROBES.size)
    other: dict[int, Any] = {}
    with np.errstate(all="ignore"):
        for i, v in vals.items():  # tape order
            if tape.nodes[i].op == "var":
                other[i] = np.asarray(v, dtype=wide or float)
            elif wide is not None:
                other[i] = _value(tape, i, other, wide)
            else:  # 1 + 2u·s: the imaginary part of a noise factor is 2u·s
                other[i] = _value(tape, i, other, np.float64) * (1.0 + np.imag(noise.next()))
        values = [np.broadcast_to(np.asarray(vals[r], dtype=float), PROBES.shape) for r in roots]
        errors = [np.asarray(vals[r], dtype=wide or float) - other[r] for r in roots]
        found = typical(values, [np.broadcast_to(np.asarray(e, dtype=float), PROBES.shape) for e in errors])
    return [None if e is None else SPREAD * e for e in found]


@dataclass
class GraphRun:
    """Repeated gen_graph over ``count`` orders of ``term`` in ``wrt``: what auto mode measures
    against a Taylor build that estimates itself inaccurate. ``every``: all orders count (as
    ``derivatives`` returns them), else only the last (``diff``)."""

    term: Term
    wrt: Term
    count: int
    every: bool

    def settle(self, found: list[Term]) -> None:
        """Warn if the derivatives ``found`` (this run, built) measure above ``TOLERANCE``; each
        node once (a run that closes a cycle returns its few nodes again and again)."""
        roots = list(dict.fromkeys(t.index for t in found))
        settle(worst(shadow(self.term.tape, roots, self.wrt.index)),
               f"{_orders(self.count, self.every)} in {self.wrt.name} by repeated gen_graph")

    def error(self, budget: int) -> float:
        """The run's measured error (``shadow``; the worst order), built on trial and rolled
        back; infinite past ``budget`` appended nodes or the tape's limit."""
        tape = self.term.tape
        with tape.trial():
            mark = len(tape)
            found, d = [], self.term
            try:
                for _ in range(self.count):
                    d = gen_graph(d, self.wrt)
                    found.append(d.index)
                    if len(tape) - mark > budget:
                        return math.inf
            except LimitError:
                return math.inf
            return worst(shadow(tape, found if self.every else found[-1:], self.wrt.index)) or 0.0

    def exact_error(self) -> float:
        """The measured error (``shadow``) of the last order as ``exact_derivative.derivative`` builds
        it, exactly but for its coefficients' one rounding each, on trial and rolled back;
        infinite where it has no such form, or where every order counts."""
        tape = self.term.tape
        if self.every:
            return math.inf
        with tape.trial():
            try:
                found = derivative(tape, self.term.index, self.wrt.index, self.count)
            except LimitError:
                return math.inf
            return math.inf if found is None else worst(shadow(tape, [found], self.wrt.index)) or 0.0

    def build_exact(self, callback: Any) -> Term:
        """The last order by ``exact_derivative.derivative`` (``exact_error`` found it), kept: only
        the nodes it needs stay, tagged with its order."""
        tape, term = self.term.tape, self.term
        with tape.transaction(callback, order=tape.orders[term.index] + self.count):
            (index,) = tape.pruned(lambda: [derivative(tape, term.index, self.wrt.index, self.count) or 0])
            return Term(tape, index)


#: Whether Taylor builds measure themselves (not in auto mode's size trials), and the gen_graph
#: run auto mode offers in place of an inaccurate one; per thread and task.
_CHECKING: ContextVar[bool] = ContextVar("subgraph_ad_accuracy_checking", default=True)
_ALTERNATIVE: ContextVar[Optional[GraphRun]] = ContextVar("subgraph_ad_accuracy_alternative", default=None)


@contextmanager
def _setting(var: ContextVar, value: Any) -> Iterator[None]:
    token = var.set(value)
    try:
        yield
    finally:
        var.reset(token)


def unchecked() -> Any:
    """A block in which Taylor builds measure nothing (auto mode's size trials)."""
    return _setting(_CHECKING, False)


def checking() -> bool:
    """Whether a Taylor build made now measures its accuracy."""
    return _CHECKING.get()


class Replaced(Exception):
    """Raised inside a Taylor build that auto mode replaces by a more accurate gen_graph run
    (the build rolls back); ``error`` is the run's measured error."""

    def __init__(self, error: float, exact: bool = False) -> None:
        super().__init__(error)
        self.error = error
        self.exact = exact


def replace(error: float, size: int) -> None:
    """Inside an inaccurate Taylor build (``error`` above ``TOLERANCE``, ``size`` nodes): raise
    ``Replaced`` if auto mode offered a run whose exact expansion (``GraphRun.exact_error``)
    or, failing that, whose gen_graph passes measure better within their budget."""
    run = _ALTERNATIVE.get()
    if run is None:
        return
    with _setting(_ALTERNATIVE, None):  # the run's own builds are no Taylor builds to replace
        exact = run.exact_error()
        if exact < error:
            raise Replaced(exact, exact=True)
        found = run.error(max(GRAPH_NODES, GRAPH_TIMES * size))
    if found < error:
        raise Replaced(found)


def taylor_or_graph(taylor: Callable[[Any], Any], graph: Callable[[Any], Any], run: GraphRun,
                    callback: Any) -> tuple[bool, Any]:
    """Auto mode's Taylor build, ``taylor(callback)``, unless it estimates itself inaccurate and
    ``run`` measures better: then the run's exact expansion (``GraphRun.build_exact``) or
    ``graph(callback)``, warned about if it too is above ``TOLERANCE``. (Taylor mode?, what the
    build returned)."""
    try:
        with _setting(_ALTERNATIVE, run):
            return True, taylor(callback)
    except Replaced as replaced:
        error, exact = replaced.error, replaced.exact
    if exact:
        built: Any = run.build_exact(callback)
        settle(error, f"{_orders(run.count, run.every)} in {run.wrt.name} by exact expansion")
        return False, built
    built = graph(callback)
    settle(error, f"{_orders(run.count, run.every)} in {run.wrt.name} by repeated gen_graph")
    return False, built


def _orders(n: int, every: bool) -> str:
    return f"orders 1–{n}" if every and n > 1 else f"the derivative of order {n}"


def taylor_what(n: int, every: bool, wrt: Term | Mapping[Term, Any]) -> str:
    """How a Taylor build, by a var or along a direction, is named in its warning."""
    if isinstance(wrt, Term):
        return f"{_orders(n, every)} in {wrt.name} by Taylor mode"
    return f"{_orders(n, every)} along a direction in {', '.join(f'{x.name}' for x in wrt)} by Taylor mode"


def _outside() -> int:
    """The stacklevel of the first caller outside this package (the user's line)."""
    level = 1
    frame: Optional[FrameType] = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        level, frame = level + 1, frame.f_back
    return level


def settle(error: Optional[float], what: str) -> None:
    """Warn that ``what`` has the estimated relative error ``error``, if that is above
    ``TOLERANCE``."""
    if error is None or error <= TOLERANCE:
        return
    lost = "no digit is left" if error >= 0.5 else f"about {round(16 + math.log10(error))} of 16 digits lost"
    warnings.warn(
        f"{what}: estimated relative error {error:.1e}, {lost} (at typical probe points; tolerance "
        f"{TOLERANCE:g}). See docs/guarantees.md, 'Accuracy at high order'",
        AccuracyWarning, stacklevel=_outside())
