"""Repeated differentiation: ``diff`` (SymPy-style, the last derivative) and ``derivatives``
(every one on the way), by repeated ``gen_graph`` passes or in Taylor mode, and the choice
between the two (``method="auto"``).

>>> from subgraph_ad import Tape, exp
>>> tape = Tape(); x = tape.var("x", 0.5)
>>> round(diff(exp(-x**2 / 2), x, 4).eval(), 9)
1.37890141
"""

from __future__ import annotations

import itertools
import math
from typing import Any, Callable, Iterable, Iterator, NamedTuple, Sequence

import numpy as np

from . import accuracy
from .forward import gen_graph
from ..core import Callback, LimitError, Tape, Term, UnfedPlaceholder, dependencies
from ..core.arrays import has_arrays
from ..core.expand import scalar_roots
from ..core.checks import choice, diff_spec
from ..numeric.modes import values_of
from ..tables import html_table, text_table
from .closed_form import closed_form as horner
from .taylor import taylor_diff, taylor_graph


#: ``method="auto"``: a run of fewer repeats of one var than this is differentiated by gen_graph,
AUTO_TAYLOR_FROM = 3
#: a run of this many or more in Taylor mode, and in between by whichever appends fewer nodes,
#: Taylor on a tie: at 3–7 orders either can be smaller (see docs/performance.md), from 8 on
#: Taylor mode almost always is, and repeated gen_graph gets expensive to try.
AUTO_TAYLOR_SURE = 8


def _size(tape: Tape, build: Callable[[], Any]) -> float:
    """How many nodes ``build()`` appends, measured on trial (rolled back); infinitely many if it
    passes the tape's ``max_nodes``: then the other way is taken, and may fit."""
    try:
        with tape.trial() as trial, accuracy.unchecked():
            build()
    except LimitError:
        return math.inf
    return trial.appended


#: A run of three or more orders that comes back within this many appended nodes to a
#: derivative it built before (sin → cos → −sin → −cos → sin, e^{−x} → −e^{−x} → e^{−x}, a
#: polynomial → … → 0: ``_closes``) is built by gen_graph in ``method="auto"`` too, whatever its
#: order: its answer is a node of the cycle, so sin(x).diff(x, 100_000) holds a few nodes where
#: Taylor mode would hold 10 GB of exact scalars.
CYCLE_NODES = 64


def _graph_run(z: Term, w: Term, count: int, callback: Callback | None = None,
               closed: list[bool] | None = None) -> Iterator[Term]:
    """``count`` gen_graph passes by w, yielding each derivative as soon as it is built. A pass
    that returns a derivative the run built before has closed a cycle (said in ``closed``): the
    orders after it are the cycle's nodes again, yielded without passes (memory and time
    independent of ``count``)."""
    run, seen = [z], {z.index: 0}
    for k in range(1, count + 1):
        z = gen_graph(z, w, callback)
        first = seen.setdefault(z.index, k)
        if first < k:
            if closed is not None:
                closed.append(True)
            period = k - first
            yield from (run[first + (j - first) % period] for j in range(k, count + 1))
            return
        run.append(z)
        yield z


def _closes(z: Term, w: Term, count: int) -> bool:
    """Whether ``count`` gen_graph passes come back to a derivative built before, appending at
    most ``CYCLE_NODES`` nodes on the way: measured on trial (rolled back)."""
    tape = z.tape
    seen = {z.index}
    with tape.trial(), accuracy.unchecked():
        mark = len(tape)
        try:
            for _ in range(count):
                z = gen_graph(z, w)
                if z.index in seen:
                    return True
                if len(tape) - mark > CYCLE_NODES:
                    return False
                seen.add(z.index)
        except LimitError:
            return False
    return False


def _build_run(tape: Tape, method: str, count: int, taylor: Callable[[Callback | None], Any],
               graph: Callable[[Callback | None], Any], callback: Callback | None,
               run: accuracy.GraphRun) -> tuple[bool, Any]:
    """Build a run of ``count`` repeats of one var in Taylor mode (``taylor(callback)``) or by
    gen_graph passes (``graph(callback)``) as ``method`` says: (Taylor mode?, what it returned).

    ``"auto"`` at 3–7 repeats measures both on trial and builds the one that appends fewer nodes
    (Taylor mode on a tie), and from 3 repeats on a run that closes a cycle (``_closes``) is
    built by gen_graph. The callback sees only the nodes kept. A Taylor build in auto mode
    that estimates itself inaccurate gives way to the gen_graph ``run`` where that measures
    better (``accuracy.taylor_or_graph``); a gen_graph run of ``AUTO_TAYLOR_SURE`` orders or
    more is measured too, and warned about if inaccurate.
    """
    if method != "auto" or count < AUTO_TAYLOR_FROM:
        in_taylor = method == "taylor"
    elif _closes(run.term, run.wrt, count):
        in_taylor = False
    elif count >= AUTO_TAYLOR_SURE:
        in_taylor = True
    else:
        in_taylor = _size(tape, lambda: taylor(None)) <= _size(tape, lambda: graph(None))
    if in_taylor and method == "auto":
        return accuracy.taylor_or_graph(taylor, graph, run, callback)
    built = (taylor if in_taylor else graph)(callback)
    if not in_taylor and count >= AUTO_TAYLOR_SURE:  # gen_graph's sums can cancel too
        run.settle([built] if isinstance(built, Term) else [t for t, _ in built])
    return in_taylor, built


#: ``diff`` tries the closed form of a run of this many orders or more (below it the
#: derivative graph is already as short as its closed form).
CLOSED_FROM = 3

#: How ``diff``, ``derivatives`` and ``animate`` build: see ``diff``.
METHODS = ("auto", "graph", "taylor")


def _runs(z: Term, args: tuple[Any, ...], method: str) -> list[tuple[Term, int]]:
    """The vars of ``diff``-style args as runs (var, repeats), checked."""
    if not isinstance(z, Term):
        raise TypeError(f"diff differentiates a Term, got {type(z).__name__} {z!r:.80}")
    wrts = diff_spec(args, "diff", z.tape)
    for w in wrts:
        z.tape.check_var(w, "wrt")
    choice(method, "method", METHODS, "diff")
    return [(w, len(list(run))) for w, run in itertools.groupby(wrts)]


def diff(z: Term, *args: Any, method: str = "auto", closed_form: bool = True,
         callback: Callback | None = None) -> Term:
    """Repeated differentiation, SymPy-style: ``diff(z, x, 2, y)`` is d3z/dx2dy.

    ``method`` is ``"graph"`` (repeated gen_graph), ``"taylor"`` (each run of one var in Taylor
    mode, see taylor.py) or ``"auto"``: per run of one var, gen_graph below
    ``AUTO_TAYLOR_FROM`` repeats, Taylor mode from ``AUTO_TAYLOR_SURE`` on, and in between
    whichever appends fewer nodes (``_build_run``); gen_graph at any order where the run comes
    back to a derivative it built (sin⁽ⁿ⁾, ``CYCLE_NODES``), so that the answer costs the
    cycle's few nodes, not memory that grows with n. All give the same values up to rounding,
    which at high order can cost Taylor mode (and gen_graph) digits: see ``accuracy``. Then, with
    ``closed_form`` (the default), each run of three or more orders is replaced by its closed form
    where that is smaller and as accurate (``closed_form.py``). The whole call is one
    transaction.

    >>> from subgraph_ad import Tape, tanh
    >>> tape = Tape(); x = tape.var("x", 0.3)
    >>> z = tanh(x)
    >>> abs(z.diff(x, 5, method="taylor").eval() - z.diff(x, 5, method="graph").eval()) < 1e-12
    True
    """
    runs = _runs(z, args, method)
    tape = z.tape
    if has_arrays(tape, dependencies(tape, [z.index])):
        if method == "taylor":  # Taylor mode is scalar: it reads the expansion
            z = Term(tape, scalar_roots(tape, [z.index], "diff")[0])
        else:  # gen_graph keeps array nodes; closed forms are scalar
            method, closed_form = "graph", False
    closed: list[bool] = []  # whether the gen_graph run being built closed a cycle

    def last(build: Callable[[], Term], w: Term, count: int) -> Term:
        """The run ``build`` makes, then its closed form where that is smaller (and then only
        the nodes it needs stay); the listener hears only the nodes kept."""
        mark, won = len(tape), []
        closed.clear()

        def run() -> list[int]:
            found = build()
            if not (closed_form and count >= CLOSED_FROM and found.index >= mark):
                return [found.index]
            tape.tag(tape.orders[found.index])  # the closed form belongs to the same order
            try:  # what the attempt built and does not use leaves at once
                (index,) = tape.pruned(lambda: [horner(tape, found.index, mark, w.index)])
            except LimitError:  # no room to try it: the run stands (pruned rolled the attempt back)
                index = found.index
            won.append(index != found.index)
            return [index]

        (index,) = tape.pruned(run, needed=lambda: any(won) or any(closed))  # a closed cycle's
        # passes leave nodes its answer skips (the 1 of dx/dx under exp(x)'s derivatives)
        return Term(tape, index)

    with tape.transaction(callback):
        result = z
        for w, count in runs:
            start = result
            in_taylor, built = _build_run(
                tape, method, count,
                lambda cb: last(lambda: taylor_diff(start, w, count, cb), w, count),
                lambda cb: last(lambda: list(_graph_run(start, w, count, cb, closed))[-1], w, count), None,
                accuracy.GraphRun(start, w, count, every=False))
            result = built
        return result


_SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


def notation(names: Sequence[str], plain: bool = False) -> str:
    """Leibniz notation for differentiating f by ``names`` in turn (none: f itself).

    >>> notation(["x", "x", "x"]), notation(["x", "y"]), notation(["x", "x"], plain=True), notation([])
    ('d³f/dx³', 'd²f/dxdy', 'd^2f/dx^2', 'f')
    """
    if not names:
        return "f"

    def power(n: int) -> str:
        if n == 1:
            return ""
        return f"^{n}" if plain else str(n).translate(_SUPERSCRIPT)

    groups = [(name, len(list(run))) for name, run in itertools.groupby(names)]
    return f"d{power(len(names))}f/" + "".join(f"d{name}{power(count)}" for name, count in groups)


class Step(NamedTuple):
    """One derivative along a ``derivatives`` sequence, the nodes appended for it and how it was
    built (``"graph"``: a gen_graph pass, ``"taylor"``: one order of a Taylor-mode run)."""

    term: Term
    appended: tuple[int, ...]
    method: str

    def __getattr__(self, name: str) -> Any:
        # a Step stands for its Term where code expects one (ds[-1].eval(), ds[-1].diff(x))
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.term, name)


class Derivatives(list):  # a list of Step
    """What ``derivatives`` returns: a list of Steps that also knows f and the vars, so it prints as
    a table (``str``, the IPython console, Jupyter's HTML) and draws with each output named.

    >>> from subgraph_ad import Tape
    >>> tape = Tape(); x = tape.var("x", 1.0); y = tape.var("y", 2.0)
    >>> steps = derivatives(x**3 * y, x, 2, y)
    >>> print(steps)
    order  derivative  wrt  method  new nodes  node  value
    -----  ----------  ---  ------  ---------  ----  -----
        1  df/dx       x    graph           5     9    6.0
        2  d²f/dx²     x    graph           4    13   12.0
        3  d³f/dx²dy   y    graph           0    12    6.0
    >>> steps.labels()
    ['f', 'df/dx', 'd²f/dx²', 'd³f/dx²dy']
    """

    def __init__(self, steps: Iterable[Step], f: Term, wrts: Sequence[Term]) -> None:
        super().__init__(steps)
        self.f = f
        self.wrts = tuple(wrts)

    def labels(self) -> list[str]:
        """The name of f and of each derivative, in Leibniz notation: f, df/dx, d²f/dx², …"""
        names = [w.name or "?" for w in self.wrts]
        return [notation(names[:k]) for k in range(len(self) + 1)]

    def _rows(self) -> tuple[list[str], list[list[Any]], str]:
        """Header, rows and a note; values at the vars' current values, all in one sweep."""
        note = ""
        try:
            values = values_of(self.f.tape, sorted({s.term.index for s in self}), None)
        except UnfedPlaceholder as exc:
            values, note = {}, f"no values: {exc}"
        rows = []
        for k, (step, label, wrt) in enumerate(zip(self, self.labels()[1:], self.wrts), 1):
            value: Any = values.get(step.term.index)
            if value is None:
                value = ""
            elif np.ndim(value) > 0:
                value = f"array of shape {np.shape(value)}"
            else:
                value = float(value)
            rows.append([k, label, wrt.name or "?", step.method, len(step.appended), step.term.index, value])
        return ["order", "derivative", "wrt", "method", "new nodes", "node", "value"], rows, note

    def __str__(self) -> str:
        headers, rows, note = self._rows()
        return text_table(headers, rows) + (f"\n{note}" if note else "")

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))

    def _repr_html_(self) -> str:
        headers, rows, note = self._rows()
        caption = f"derivatives of f (node {self.f.index}) at the current values" + (f"; {note}" if note else "")
        return html_table(headers, rows, caption)


def derivatives(z: Term, *args: Any, method: str = "auto", callback: Callback | None = None) -> Derivatives:
    """Every derivative along ``diff``-style args, each with the nodes appended for it:
    ``derivatives(z, x, 2, y)`` gives dz/dx, d2z/dx2 and d3z/dx2dy (what a table of all orders,
    or an animation of them, needs). Same ``method`` rule as ``diff``; a Taylor-mode run builds
    all its orders at once and attributes each node to the order that first needed it. One
    transaction.

    >>> from subgraph_ad import Tape
    >>> tape = Tape(); x = tape.var("x", 0.5); y = tape.var("y", 2.0)
    >>> [s.term.to_sympy() for s in derivatives(x**3 * y, x, 3, y)]
    [3*x**2*y, 6*x*y, 6*y, 6]

    The result is a ``Derivatives``: a list of Steps that prints as a table.
    """
    runs = _runs(z, args, method)
    tape = z.tape
    if has_arrays(tape, dependencies(tape, [z.index])):
        if method == "taylor":  # Taylor mode is scalar: it reads the expansion
            z = Term(tape, scalar_roots(tape, [z.index], "diff")[0])
        else:  # gen_graph keeps array nodes
            method = "graph"
    steps = Derivatives([], z, [w for w, count in runs for _ in range(count)])
    with tape.transaction():
        result = z
        for w, count in runs:
            appended: list[int] = []

            def collect(t: Term, appended: list[int] = appended) -> None:
                appended.append(t.index)
                if callback is not None:
                    callback(t)

            start = result
            base = tape.orders[start.index]
            # the gen_graph passes come with where each one's nodes end in ``appended``
            in_taylor, built = _build_run(
                tape, method, count, lambda cb: taylor_graph(start, w, count, cb),
                lambda cb: [(d, len(appended)) for d in _graph_run(start, w, count, cb)], collect,
                accuracy.GraphRun(start, w, count, every=True))
            if in_taylor:  # a Taylor run tags each node with the order that first needed it
                orders: list[list[int]] = [[] for _ in built]
                for i in appended:
                    orders[tape.orders[i] - base - 1].append(i)
                steps += [Step(t, tuple(own), "taylor") for t, own in zip(built, orders)]
                result = built[-1]
            else:
                ends = [0] + [end for _, end in built]
                steps += [Step(t, tuple(appended[ends[k]:ends[k + 1]]), "graph") for k, (t, _) in enumerate(built)]
                result = built[-1][0]
        return steps
