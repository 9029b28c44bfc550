"""Symbolic reverse mode: ``grad_graph`` appends every partial ∂z/∂w in ONE backward sweep.

The sweep visits the nodes z depends on in reverse tape order. Each node's adjoint z̄ (a Term:
∂z/∂node) is pushed to its operands by the row of its op in ``VJPS``, written with Terms, so the
result is an ordinary graph that differentiates again; a function node's row reads its partials
from the same ``fdiff`` forward and Taylor mode use (``shares``). Adjoints are summed with interning, so they
share with f and with forward results. Only operands that depend on a requested var receive an
adjoint: nothing is built for a branch that cannot reach one. A var z does not depend on gets
the tape's 0.

A selection (``where``) is linear in its branch, so its adjoint there is the selected adjoint
select(c, z̄), and every row is linear in z̄, so a row applied to select(c, w) is select(c, row
of w): the sweep keeps the selection outermost all the way down the branch (``_masks``,
``_masked``), and contributions that meet stay one while they all are (``_join``). So the
untaken branch's partials (1/x at x = 0 under ``where(x > 0, log(x), …)``) never multiply a
zero adjoint into nan, at any order: the gradient is itself made of selections. On arrays the
same holds down elementwise nodes of one shape; an op that mixes elements (a sum, a product of
matrices, a broadcast) takes its adjoint with the selection applied.

>>> from subgraph_ad import Tape, sin
>>> tape = Tape(); x = tape.var("x", 0.5); y = tape.var("y", 4.2)
>>> gx, gy = (x * y + sin(x)).grad_graph([x, y])
>>> gx.to_sympy(), gy.to_sympy()
(y + cos(x), x)
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence


from ..core import Callback, Tape, Term, array_build, dependencies
from ..core.graph import below
from ..functions import chain, logical_or, power_partial, select, selection, slope
from ..functions.view import view
from .forward import derivative_order
from ..tables import rule_table
from .arrays import REVERSE

A = Optional[Term]  # an adjoint contribution: a Term, or None for a structural zero


def _pow_vjp(a: Term, b: Term, out: Term, bar: Term, need: tuple[bool, ...]) -> tuple[A, ...]:
    # the power's partials, stated once (functions/binary.py); the exponent's adjoint only when
    # it depends on a var (out·log(a) is nan for a < 0)
    return tuple(chain(power_partial(k, a, b, out), bar) if wanted else None for k, wanted in enumerate(need))


def _mul_vjp(a: Term, b: Term, out: Term, bar: Term, need: tuple[bool, ...]) -> tuple[A, A]:
    # a square's one adjoint is (2·bar)·a: 2·bar is shared by every square under the same bar
    # (Σ x_i² gives ∇ = (2·bar)·x_i, one node per var), where bar·a + bar·a would be two nodes
    # here and two more per entry of a Hessian or HVP built on it
    if a.index == b.index:
        return ((bar + bar) * a if need[0] else None, None)
    return (bar * b if need[0] else None, bar * a if need[1] else None)


def _fn_vjp(fn: Any, *args: Any) -> tuple[A, ...]:
    """partial · bar for each argument that needs an adjoint; a partial that is a gate (a
    condition: select(c, a) in a, relu′) selects bar instead (``chain``)."""
    n = fn.arity
    inputs, out, bar, need = args[:n], args[n], args[n + 1], args[n + 2]
    partials = fn.partials(*inputs, out)
    return tuple(chain(p, bar) if wanted else None for p, wanted in zip(partials, need))


#: The reverse rules, one per op: (operands, output, the output's adjoint, which operands need
#: one) -> each operand's contribution. ``fn`` rows receive the function first.
VJPS: dict[str, Callable[..., tuple[A, ...]]] = rule_table("reverse VJPS", {
    "add": lambda a, b, out, bar, need: (bar, bar),
    "sub": lambda a, b, out, bar, need: (bar, -bar),
    "mul": _mul_vjp,
    "div": lambda a, b, out, bar, need: (bar / b if need[0] else None, -(bar * out) / b if need[1] else None),
    "pow": _pow_vjp,
    "neg": lambda a, out, bar, need: (-bar,),
    "fn": _fn_vjp,
})


def grad_graph(z: Term, wrt: Term | Sequence[Term], callback: Callback | None = None) -> Term | list[Term]:
    """Append the nodes of ∂z/∂w for every var w in ``wrt`` in one backward sweep; returns one
    Term for one var, a list for a list. Transactional: if anything raises, the tape is left as
    it was."""
    if not isinstance(z, Term):
        raise TypeError(f"grad_graph differentiates a Term, got {type(z).__name__} {z!r}")
    single = isinstance(wrt, Term)
    if not single and not (isinstance(wrt, (list, tuple)) and wrt):
        raise TypeError(f"grad_graph takes a var or a non-empty list of vars, got {type(wrt).__name__} {wrt!r}")
    wrts: list[Term] = [wrt] if isinstance(wrt, Term) else list(wrt)
    tape = z.tape
    if z.shape:
        raise TypeError(f"grad_graph differentiates a scalar Term; {z!r} is an array of shape {z.shape}: "
                        "sum it or index it first (or use jacobian)")
    for w in wrts:
        tape.check_var(w, "wrt")
    with tape.transaction(callback, order=derivative_order(z) + 1):
        found = tape.pruned(lambda: _backward(tape, z.index, [w.index for w in wrts]))
        results = [Term(tape, i if i >= 0 else array_build.zeros(tape, w.shape)) for i, w in zip(found, wrts)]
    return results[0] if single else results


def _reaches(tape: Tape, order: list[int], targets: set[int]) -> set[int]:
    """The nodes of ``order`` (tape order) that depend on one of the ``targets``."""
    reach: set[int] = set()
    nodes = tape.nodes
    for i in order:
        if i in targets or any(a in reach for a in nodes[i].args):
            reach.add(i)
    return reach


def _through(tape: Tape, i: int, node: Any, reach: set[int]) -> tuple[Term, Any] | None:
    """For a node q = Q(g(u)) declared to run through g (tanh′, σ′) whose g(u) the sweep
    still visits (an earlier node that depends on a var): (g, Q). q's adjoint then reaches u
    through g's, as the adjoint of Q(g) written out would, so repeated passes close on g's
    nodes; elsewhere (g not on the tape) the plain local partial."""
    if node.op != "fn":
        return None
    found = view(tape, i).through(build=False)
    return found if found is not None and found[0].index in reach else None


def _through_adjoint(tape: Tape, top: int, g: int, bar: Term) -> Term:
    """The adjoint that ``bar`` at Q(g) (node ``top``) gives g, by this sweep's own rules run
    down Q(g)'s nodes: for tanh′ = 1 − g·g, (−bar − bar)·g, whose shape later passes share
    (F4's 10th repeated ``grad_graph``: 18,359 nodes, against 19,877 for bar·(−2g))."""
    nodes = tape.nodes
    order = below(tape, [top], stop=lambda j: j == g)  # a few nodes, maybe far above g
    reach = _reaches(tape, order, {g})
    adjoint: dict[int, Term] = {top: bar}
    for i in reversed(order):
        found = adjoint.get(i)
        node = nodes[i]
        if found is None or i == g or not node.args:
            continue
        need = tuple(a in reach for a in node.args)
        extra = (node.payload,) if node.op == "fn" else ()
        parts = VJPS[node.op](*extra, *(Term(tape, a) for a in node.args), Term(tape, i), found, need)
        for a, part, wanted in zip(node.args, parts, need):
            if wanted and part is not None:
                adjoint[a] = part if a not in adjoint else adjoint[a] + part
    return adjoint[g]


def _masks(bar: Term) -> tuple[list[Term], Term]:
    """An adjoint select(c₁, select(c₂, w)) as its conditions [c₁, c₂], outermost first, and w."""
    conditions = []
    found = selection(bar)
    while found is not None:
        conditions.append(found[0])
        bar = found[1]
        found = selection(bar)
    return conditions, bar


def _masked(conditions: list[Term], part: Term) -> Term:
    """part selected by each condition, the first outermost; a constant 0 as it is."""
    if part.node.op == "const" and part.node.payload == 0.0:
        return part
    for c in reversed(conditions):
        part = select(c, part)
    return part


def _join(a: Term, b: Term) -> Term:
    """a + b, a selection again while both are: 0 wherever both are, so the sum goes down to the
    operands still masked. The conditions they share stay outside; where both have more, the
    sum is selected by either's outermost (c₁ ∨ c₂)."""
    ca, pa = _masks(a)
    cb, pb = _masks(b)
    if not ca or not cb:
        return a + b
    shared = 0
    while shared < min(len(ca), len(cb)) and ca[shared].index == cb[shared].index:
        shared += 1
    total = _masked(ca[shared:], pa) + _masked(cb[shared:], pb)
    if shared < len(ca) and shared < len(cb):
        total = select(logical_or(ca[shared], cb[shared]), total)
    return _masked(ca[:shared], total)


def _backward(tape: Tape, root: int, wrts: list[int]) -> list[int]:
    """The sweep: the indices of ∂root/∂w (-1 for a structural zero)."""
    nodes = tape.nodes
    order = dependencies(tape, [root])
    reach = _reaches(tape, order, set(wrts))
    adjoint: dict[int, Term] = {}
    if root in reach:
        adjoint[root] = tape.const(1.0)

    def add(a: int, part: Term) -> None:
        if a not in adjoint:
            adjoint[a] = part
        elif nodes[a].op == "var":  # it goes no further: its contributions are plainly summed
            adjoint[a] = adjoint[a] + part
        else:
            adjoint[a] = _join(adjoint[a], part)

    for i in reversed(order):
        found = adjoint.get(i)
        node = nodes[i]
        if found is None or not node.args:
            continue
        conditions, bar = _masks(found)
        through = _through(tape, i, node, reach)
        if through is not None:  # Q(g(u)) (tanh′, σ′): bar·Q′(g) joins g's adjoint (``slope``)
            g, q = through
            factor = slope(node.payload, g)
            share = _through_adjoint(tape, q(g).index, g.index, bar) if factor is None else bar * factor
            add(g.index, _masked(conditions, share))
            continue
        operands = [Term(tape, a) for a in node.args]
        need = tuple(a in reach for a in node.args)
        if node.op in REVERSE:
            out = Term(tape, i)
            if conditions and (node.op != "map" or any(t.shape != out.shape for t in operands)):
                bar, conditions = _masked(conditions, bar), []  # an array's mask reaches only its own elements
            parts = REVERSE[node.op](node, operands, out, bar, need)
        else:
            extra = (node.payload,) if node.op == "fn" else ()
            parts = VJPS[node.op](*extra, *operands, Term(tape, i), bar, need)
        for a, part, wanted in zip(node.args, parts, need):
            if wanted and part is not None:
                add(a, _masked(conditions, part))
    return [adjoint[w].index if w in adjoint else -1 for w in wrts]

