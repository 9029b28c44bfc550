"""An ODE system y′ = f(t, y) as one coefficient program.

The Taylor coefficients of the solution come from one recurrence over f's graph: with every
node's coefficients up to order k − 1 known, y_k = f(t, y)_{k−1} / k, and then every node's
coefficient k follows from the univariate Taylor rules of ``ad/taylor/recurrences.py`` (the
same ``FORMS``: a kind and its operands per node, a function's local derivative appended as a
node of its own, so that user functions need no rule). Here the coefficients are numbers, not
Terms: the forms are laid out once as an instruction table (op, row, operand, operand, scalar)
over the rows of one coefficient array (rows × (p + 1) × B), and one fixed kernel
(``kernel.py``) runs the table order by order. The table's size is the graph's, whatever the
order p; the coefficients 0 (the nodes' values) come from ``lambdify`` of the rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numpy as np

from ..ad.taylor.plan import DEGREES, UNBOUNDED, Degrees
from ..ad.taylor.series import Series
from ..compile.lambdify import lambdify
from ..core import Tape, Term
from ..core.ops import LEAVES

#: The kernel's instruction codes (``kernel.py``): how row i gets its coefficient k.
STATE, ADD, SUB, NEG, MUL, DIV, ROOT, CHAIN, LINEAR, SQUARE, QUADRATIC = range(11)
#: The operands whose coefficient k a form's coefficient k reads (computed first at each order);
#: a chain's g is read at orders below k only.
_SAME_ORDER = {"add": (1, 2), "sub": (1, 2), "mul": (1, 2), "div": (1, 2), "neg": (1,), "root": (1,),
               "linear": (1,), "square": (1,), "quadratic": (1,)}


class _Moving(Degrees):
    """Degree bounds along a trajectory: every state moves without bound, t linearly."""

    def __init__(self, tape: Tape, states: set[int], time: Optional[int]) -> None:
        super().__init__(tape, -1)
        self.states, self.time = states, time

    def __call__(self, i: int) -> int:
        deg, nodes = self.deg, self.tape.nodes
        for j in range(len(deg), i + 1):
            node = nodes[j]
            if node.op in LEAVES:
                d = UNBOUNDED if j in self.states else int(j == self.time)
            elif max(deg[a] for a in node.args) == 0:
                d = 0
            else:
                d = DEGREES[node.op](nodes, node, deg)
            deg.append(d)
        return deg[i]


@dataclass
class System:
    """The coefficient program of one system: ``values(t, *y)`` gives every row's coefficient 0,
    ``code``/``scalars`` the instructions for the rest; ``states``, ``rhs`` and ``events`` are rows."""

    n: int
    rows: int
    states: np.ndarray
    rhs: np.ndarray
    events: np.ndarray
    time: int  # the row of t, or -1 when nothing reads t
    code: np.ndarray  # (instructions, 4) int64: op, row, operand, operand
    scalars: np.ndarray  # (instructions,) float
    values: Any  # a compiled function of (t, *y), or of y alone when not ``timed``: the rows' values
    timed: bool


def _reads(form: tuple, k: int) -> list[tuple[int, int]]:
    """The nodes a form's coefficients up to k read, each with the highest order read (a chain's
    g below k; None: a chain with a zero derivative)."""
    if form[0] in ("unary", "binary"):
        out = []
        for at in range(1, len(form), 3):
            out.append((form[at], k))
            if form[at + 1] is not None:
                out.append((form[at + 1], k - 1))
        return out
    return [(form[at], k) for at in _SAME_ORDER.get(form[0], ())]


def _same_order(form: tuple) -> list[int]:
    if form[0] in ("unary", "binary"):
        return [form[at] for at in range(1, len(form), 3)]
    return [form[at] for at in _SAME_ORDER.get(form[0], ())]


def build(tape: Tape, time: Optional[Term], states: Sequence[Term], rhs: Sequence[Term], events: Sequence[Term],
          order: int, backend: str) -> System:
    """The program of y′ = rhs over the vars ``states`` (and ``time``) to Taylor order ``order``,
    with the events' g as extra rows; appends the local derivatives it needs to ``tape`` (all or nothing)."""
    with tape.transaction():
        return _build(tape, time, states, rhs, events, order, backend)


def _build(tape: Tape, time: Optional[Term], states: Sequence[Term], rhs: Sequence[Term], events: Sequence[Term],
           order: int, backend: str) -> System:
    state_of = {v.index: k for k, v in enumerate(states)}
    time_index = None if time is None else time.index
    series = Series(tape, -1 if time_index is None else time_index)
    series.degree = _Moving(tape, set(state_of), time_index)
    forms: dict[int, tuple] = {}
    extra: dict[int, int] = {}  # a linear form's node -> its f(…, 1, …) node
    need: dict[int, int] = {}  # the highest order of each node that is read
    # A chain's g is read one order below its node, so a chain of ever new derivatives (digamma′ =
    # polygamma(1, ·), …) ends after p links; a node read at order 0 only is a value.
    stack = [(i, order) for i in sorted({t.index for t in (*states, *events)}, reverse=True)]
    while stack:
        i, k = stack.pop()
        if need.get(i, -1) >= k:
            continue
        need[i] = k
        node = tape.nodes[i]
        if i in state_of:
            forms[i] = ("state", rhs[state_of[i]].index)
        elif i == time_index:
            forms[i] = ("time",)
        elif node.op in LEAVES or k == 0:
            forms.setdefault(i, ("zero",))
        elif i not in forms or forms[i] == ("zero",):
            forms[i] = series.form(i)
        form = forms[i]
        reads = [(form[1], k - 1)] if form[0] == "state" else _reads(form, k)
        if form[0] == "linear":
            if i not in extra:
                args = [tape.const(1.0) if a == form[1] else Term(tape, a) for a in node.args]
                extra[i] = node.payload(*args).index
            reads.append((extra[i], 0))
        stack += [(x, j) for x, j in reversed(reads) if j >= 0 and need.get(x, -1) < j]
    laid = _topological(forms)
    row = {i: r for r, i in enumerate(laid)}
    code: list[tuple[int, int, int, int]] = []
    scalars: list[float] = []
    for i in laid:  # the states first: they read f at order k − 1
        if forms[i][0] == "state":
            code.append((STATE, row[i], row[forms[i][1]], 0))
            scalars.append(0.0)
    for i in laid:
        _lay_out(forms[i], row[i], row, extra.get(i), code, scalars)
    inputs = ([] if time is None else [time]) + list(states)
    values = lambdify(inputs, [Term(tape, i) for i in laid], backend=backend)
    return System(n=len(states), rows=len(laid), states=np.array([row[v.index] for v in states]),
                  rhs=np.array([row[t.index] for t in rhs]), events=np.array([row[t.index] for t in events], dtype=int),
                  time=row.get(time_index, -1) if time_index is not None else -1,
                  code=np.array(code, dtype=np.int64).reshape(-1, 4), scalars=np.array(scalars, dtype=float),
                  values=values, timed=time is not None)


def _topological(forms: dict[int, tuple]) -> list[int]:
    """The nodes in an order where each comes after what its coefficient k reads at order k
    (iterative depth-first, by tape index: deterministic)."""
    order: list[int] = []
    done: set[int] = set()
    for root in sorted(forms):
        stack = [(root, False)]
        while stack:
            i, expanded = stack.pop()
            if i in done:
                continue
            if expanded:
                done.add(i)
                order.append(i)
                continue
            stack.append((i, True))
            stack += [(x, False) for x in reversed(_same_order(forms[i])) if x not in done]
    return order


def _lay_out(form: tuple, i: int, row: dict[int, int], scale: Optional[int],
             code: list[tuple[int, int, int, int]], scalars: list[float]) -> None:
    """The instructions for row i's coefficients past 0 (none for a constant, t or a state)."""
    kind = form[0]
    simple = {"add": ADD, "sub": SUB, "mul": MUL, "div": DIV}
    if kind in simple:
        code.append((simple[kind], i, row[form[1]], row[form[2]]))
        scalars.append(0.0)
    elif kind in ("neg", "root"):
        code.append((NEG if kind == "neg" else ROOT, i, row[form[1]], 0))
        scalars.append(0.0)
    elif kind in ("unary", "binary"):  # k·y_k = Σ c·j·u_j·g_{k−j} over the (u, g, c) triples
        for at in range(1, len(form), 3):
            u, g, c = form[at:at + 3]
            if g is not None:
                code.append((CHAIN, i, row[u], row[g]))
                scalars.append(float(c))
    elif kind == "linear":
        assert scale is not None  # set with the form
        code.append((LINEAR, i, row[form[1]], row[scale]))
        scalars.append(0.0)
    elif kind in ("square", "quadratic"):
        code.append((SQUARE if kind == "square" else QUADRATIC, i, row[form[1]], 0))
        scalars.append(float(form[2]))
