"""An ODE system y′ = f(t, y) as one coefficient program.

The Taylor coefficients of the solution come from one recurrence over f's graph: with every
node's coefficients up to order k − 1 known, y_k = f(t, y)_{k−1} / k, and then every node's
coefficient k follows from the univariate Taylor rules of ``ad/taylor/recurrences.py`` (the
same ``FORMS``: a kind and its operands per node, a function's local derivative appended as a
node of its own, so that user functions need no rule). Here the coefficients are numbers, not
Terms: the forms are laid out once as an instruction table (op, row, operand, operand, scalar)
over the rows of one coefficient array (rows × (p + 1) × B), and one fixed kernel
(``kernel.py``) runs the table order by order. The table's size is the graph's, whatever the
order p. The coefficients 0 (the nodes' values) come from a second table, in tape order, of
the nodes' own operations (``VALUE_OPS``): the arithmetic, and a function as its spelling's
chain of elementaries (``NATIVE``, which the compiled kernel knows by number) or, for any other
function, a call of its ``f`` (``VCALL``: NumPy only, so such a system steps in Python).
The rows held through a step although an operand moves (``switches``: comparisons, sign,
floor, heaviside in x: a derivative that is a structural zero) keep their step-start value in
the step's series; the drivers end a step where one of them switches (``switches.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numpy as np

from ..ad.taylor.plan import UNBOUNDED, Degrees
from ..ad.taylor.series import Series
from ..core import Tape, Term
from ..core.ops import LEAVES
from ..functions.elementary import ELEMENTARY, steps
from ..functions.view import view
from ..tables import rule_table

#: The kernel's instruction codes (``kernel.py``): how row i gets its coefficient k.
#: CHAIN0 is a row's first CHAIN (it assigns, the rest add), SCALE a product with a constant.
STATE, ADD, SUB, NEG, MUL, DIV, ROOT, CHAIN, LINEAR, COPY, GATE, CHAIN0, SCALE, GATE0 = range(14)
#: The value instructions (op, row, a, b) with a scalar: a constant, the arithmetic, a call of a
#: function's ``f`` (b: its index in ``System.calls``, the operands in a and ``VSECOND``), and
#: from ``VNATIVE`` on the elementaries of ``NATIVE`` by number.
VCONST, VADD, VSUB, VMUL, VDIV, VNEG, VPOW, VCALL, VNATIVE = range(9)
#: The elementaries the compiled kernel evaluates (``kernel._native``), in its order.
NATIVE = ("exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "sin", "cos", "tan", "sec", "csc", "cot",
          "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "erf", "erfc", "fabs", "sign",
          "neg", "recip", "sigmoid", "sech2", "dsigmoid", "atan2", "hypot", "pow", "xlogy", "cbrt")
#: Each op's value instruction; a function's are its spelling's (``_values``).
_VALUE_OPS = rule_table("ODE VALUE_OPS", {"add": VADD, "sub": VSUB, "mul": VMUL, "div": VDIV, "neg": VNEG, "pow": VPOW},
                        without=("fn",))
#: The operands whose coefficient k a form's coefficient k reads (computed first at each order);
#: a chain's g is read at orders below k only.
_SAME_ORDER = {"add": (1, 2), "sub": (1, 2), "mul": (1, 2), "div": (1, 2), "neg": (1,), "root": (1,),
               "linear": (1,), "through": (1,)}


class _Moving(Degrees):
    """Degree bounds along a trajectory: every state moves without bound, t linearly."""

    def __init__(self, tape: Tape, states: set[int], time: Optional[int]) -> None:
        super().__init__(tape, set())
        self.states, self.time = states, time

    def leaf(self, j: int) -> int:
        return UNBOUNDED if j in self.states else int(j == self.time)


@dataclass
class System:
    """The coefficient program of one system: ``values``/``constants`` the instructions for
    every row's coefficient 0 (given the states' and t's), ``code``/``scalars`` those for the
    rest; ``states``, ``rhs`` and ``events`` are rows."""

    n: int
    rows: int
    states: np.ndarray
    rhs: np.ndarray
    events: np.ndarray
    switches: np.ndarray  # the rows of the conditions that move (a step must not contain a switch)
    time: int  # the row of t, or -1 when nothing reads t
    code: np.ndarray  # (instructions, 4) uint64: op, row, operand, operand
    scalars: np.ndarray  # (instructions,) float
    segments: np.ndarray  # (runs, 3) uint64: op, first, past the last instruction of a run of one op
    values: np.ndarray  # (value instructions, 4) int64: op, row, operand, operand
    constants: np.ndarray  # (value instructions,) float: a VCONST's value
    calls: list[Any]  # the functions of the VCALL instructions
    native: bool  # whether every value instruction is one the compiled kernel knows (no VCALL)


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
    if form[0] == "gated":
        return list(form[1:])
    if form[0] in ("unary", "binary"):
        return [form[at] for at in range(1, len(form), 3)]
    return [form[at] for at in _SAME_ORDER.get(form[0], ())]


def build(tape: Tape, time: Optional[Term], states: Sequence[Term], rhs: Sequence[Term], events: Sequence[Term],
          order: int) -> System:
    """The program of y′ = rhs over the vars ``states`` (and ``time``) to Taylor order ``order``,
    with the events' g as extra rows; appends the local derivatives it needs to ``tape`` (all or nothing)."""
    with tape.transaction():
        return _build(tape, time, states, rhs, events, order)


def _build(tape: Tape, time: Optional[Term], states: Sequence[Term], rhs: Sequence[Term], events: Sequence[Term],
           order: int) -> System:
    state_of = {v.index: k for k, v in enumerate(states)}
    time_index = None if time is None else time.index
    series = Series(tape, {} if time_index is None else {time_index: 1.0})
    series.degree = _Moving(tape, set(state_of), time_index)
    forms: dict[int, tuple] = {}
    extra: dict[int, int] = {}  # a linear form's node -> its f(…, 1, …) node
    gates: dict[int, list[tuple[int, int]]] = {}  # a gated form's node -> its (operand, gate) pairs
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
        if form[0] == "gated":
            if i not in gates:
                v = view(tape, i)
                gates[i] = [(a, p.index) for a, p in zip(v.operands, v.partials()) if p is not None]
                forms[i] = form = ("gated", *(a for a, _ in gates[i]))  # the operands that move
            reads = [(a, k) for a, _ in gates[i]] + [(p, 0) for _, p in gates[i]]
        if form[0] == "linear":
            if i not in extra:
                args = [tape.const(1.0) if a == form[1] else Term(tape, a) for a in node.args]
                extra[i] = node.payload(*args).index
            reads.append((extra[i], 0))
        stack += [(x, j) for x, j in reversed(reads) if j >= 0 and need.get(x, -1) < j]
    laid = _topological(forms)
    laid += _value_only(tape, laid, state_of, time_index)
    row = {i: r for r, i in enumerate(laid)}
    code: list[tuple[int, int, int, int]] = []
    scalars: list[float] = []
    for i in laid:  # the states first: they read f at order k − 1
        if i in forms and forms[i][0] == "state":
            code.append((STATE, row[i], row[forms[i][1]], 0))
            scalars.append(0.0)
    constant = {i for i, form in forms.items() if form == ("zero",) and need[i] > 0}
    for i in laid:
        if i in forms:
            _lay_out(forms[i], row[i], row, extra.get(i), gates.get(i, []), constant, code, scalars)
    values, constants, calls = _values(tape, laid, row, {*state_of, time_index})
    code_ = np.array(code, dtype=np.int64).reshape(-1, 4)
    table, segments = _scheduled(code_)
    return System(n=len(states), rows=len(laid), states=np.array([row[v.index] for v in states]),
                  rhs=np.array([row[t.index] for t in rhs]), events=np.array([row[t.index] for t in events], dtype=int),
                  switches=np.array([row[i] for i in _switches(tape, laid, forms, series.degree)], dtype=int),
                  time=row.get(time_index, -1) if time_index is not None else -1,
                  code=code_[table].astype(np.uint64), scalars=np.array(scalars, dtype=float)[table],
                  segments=segments.astype(np.uint64),
                  values=np.array(values, dtype=np.int64).reshape(-1, 4), constants=np.array(constants, dtype=float),
                  calls=calls, native=not calls)


#: The operands (columns of an instruction) whose coefficient k an instruction reads.
_READS_SAME = {ADD: (2, 3), SUB: (2, 3), MUL: (2, 3), DIV: (2, 3), SCALE: (3,), STATE: ()}


def _scheduled(code: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The instructions reordered into runs of one op, and the runs: an instruction's level is
    one past its same-order operands' (the states' first: they read order k − 1), the
    instructions of a level are independent, so each level is sorted by op (a row's CHAIN0
    stays before its CHAINs) and the kernel dispatches once a run, not once an instruction."""
    level: dict[int, int] = {}
    for op, i, a, b in code.tolist():
        operands = [(a, b)[c - 2] for c in _READS_SAME.get(op, (2,))]
        level[i] = max([level.get(i, 0)] + [level.get(r, 0) + 1 for r in operands])
    group = {CHAIN: CHAIN0, GATE: GATE0}
    kinds = [group.get(op, op) for op in code[:, 0].tolist()]
    order = sorted(range(len(code)), key=lambda m: (level[int(code[m, 1])], kinds[m], m))
    table = np.array(order, dtype=np.int64)
    ops = code[table, 0]
    starts = [m for m in range(len(ops)) if m == 0 or ops[m] != ops[m - 1]]
    segments = np.array([(ops[m], m, end) for m, end in zip(starts, starts[1:] + [len(ops)])], dtype=np.int64)
    return table, segments.reshape(-1, 3)


def _switches(tape: Tape, laid: list[int], forms: dict[int, tuple], degree: Degrees) -> list[int]:
    """The rows held through a step although an operand moves, by tape index: conditions (a
    comparison, sign, floor: degree 0 in the plan) and functions whose derivative is a
    structural zero in every moving operand (heaviside in x). Their value may switch inside a
    step, which their coefficients past 0 do not see."""
    found = []
    for i in laid:
        node = tape.nodes[i]
        moving = {a for a in node.args if degree(a) != 0}
        if node.op in LEAVES or not moving or (node.op == "fn" and not node.payload.jumps):
            continue
        form = forms.get(i, ("zero",))
        if form[0] in ("unary", "binary"):
            read = {form[at] for at in range(1, len(form), 3) if form[at + 1] is not None}
        else:
            read = set(form[1:]) if form[0] == "gated" else set()
        if degree(i) == 0 or (node.op == "fn" and form[0] in ("unary", "binary", "gated") and not moving & read):
            found.append(i)
    return found


def _value_only(tape: Tape, laid: list[int], states: dict[int, int], time: Optional[int]) -> list[int]:
    """The nodes the rows' values read that are not rows themselves (the operands of a node
    constant in t, a function's argument whose Taylor form reads another node), by tape index."""
    have = set(laid)
    found: set[int] = set()
    stack = [i for i in laid if i not in states and i != time]
    while stack:
        i = stack.pop()
        for a in tape.nodes[i].args:
            if a not in have and a not in found:
                found.add(a)
                stack.append(a)
    return sorted(found)


def _values(tape: Tape, laid: list[int], row: dict[int, int], given: set[Optional[int]]
            ) -> tuple[list[tuple[int, int, int, int]], list[float], list[Any]]:
    """The value instructions of the rows, in tape order (each after its operands); the states'
    and t's values are given."""
    code: list[tuple[int, int, int, int]] = []
    constants: list[float] = []
    calls: list[Any] = []
    for i in sorted(laid):
        if i in given:
            continue
        node, r = tape.nodes[i], row[i]
        args = [row[a] for a in node.args] + [0, 0]
        if node.op == "const":
            code.append((VCONST, r, 0, 0))
            constants.append(float(node.payload))
        elif node.op in _VALUE_OPS:
            code.append((_VALUE_OPS[node.op], r, args[0], args[1]))
            constants.append(0.0)
        elif node.op == "var":
            raise ValueError(f"taylor_integrate: the right-hand side reads the var {node.payload!r}, which is "
                             "neither a state nor t")
        else:
            chain = steps(node.payload.spelling)
            numbers = [NATIVE.index(s.name) if s.name in NATIVE and ELEMENTARY[s.name] is s else -1 for s in chain]
            if not chain or min(numbers) < 0:
                code.append((VCALL, r, len(calls), len(node.args)))
                constants.append(0.0)
                calls.append((node.payload, [row[a] for a in node.args]))
                continue
            for k, number in enumerate(numbers):
                code.append((VNATIVE + number, r, args[0] if k == 0 else r, args[1]))
                constants.append(0.0)
    return code, constants, calls


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


def _lay_out(form: tuple, i: int, row: dict[int, int], scale: Optional[int], gates: list[tuple[int, int]],
             constant: set[int], code: list[tuple[int, int, int, int]], scalars: list[float]) -> None:
    """The instructions for row i's coefficients past 0 (none for a constant, t or a state);
    a product with a node constant in t is a scaling (``constant``: the tape indices of those)."""
    kind = form[0]
    simple = {"add": ADD, "sub": SUB, "mul": MUL, "div": DIV}
    if kind == "mul" and (form[1] in constant or form[2] in constant):
        c, u = (form[1], form[2]) if form[1] in constant else (form[2], form[1])
        code.append((SCALE, i, row[c], row[u]))
        scalars.append(0.0)
    elif kind in simple:
        code.append((simple[kind], i, row[form[1]], row[form[2]]))
        scalars.append(0.0)
    elif kind in ("neg", "root"):
        code.append((NEG if kind == "neg" else ROOT, i, row[form[1]], 0))
        scalars.append(0.0)
    elif kind in ("unary", "binary"):  # k·y_k = Σ c·j·u_j·g_{k−j} over the (u, g, c) triples
        first = True
        for at in range(1, len(form), 3):
            u, g, c = form[at:at + 3]
            if g is not None:
                code.append((CHAIN0 if first else CHAIN, i, row[u], row[g]))
                scalars.append(float(c))
                first = False
    elif kind == "linear":
        assert scale is not None  # set with the form
        code.append((LINEAR, i, row[form[1]], row[scale]))
        scalars.append(0.0)
    elif kind == "through":  # the coefficients of Q(g), a node of its own
        code.append((COPY, i, row[form[1]], 0))
        scalars.append(0.0)
    elif kind == "gated":  # Σ gate(p, a_k): p's coefficient 0 selects and weighs a's coefficient k
        for m, (a, p) in enumerate(gates):
            code.append((GATE0 if m == 0 else GATE, i, row[a], row[p]))
            scalars.append(0.0)
