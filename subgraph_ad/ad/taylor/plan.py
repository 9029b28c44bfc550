"""The plan of a Taylor build: which coefficients can be non-zero, and in what order to compute them.

Each node has a degree bound (0 free of x, 1 for x, sums for products, unbounded past a
function or a division by x): coefficients above it are zero and never planned, and a product
visits only the pairs of coefficients that can both be non-zero. A function that is constant
to differentiation (a condition: ``Function.constant``) has degree 0 whatever its operands, as
in every other engine, so a selection by it is linear in its branch (``Function.linear``) and
has the branch's degree: its coefficients are the selected coefficients of the branch taken,
and the untaken branch's inf or nan never meets a product.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, AbstractSet, Callable

from ...core import Node, Tape
from ...core.arrays import ARRAY_OPS
from ...core.ops import LEAVES
from ...functions.view import gates
from ...tables import rule_table

if TYPE_CHECKING:  # pragma: no cover - typing only
    from .series import Series

#: The degree of a node whose Taylor series does not end (exp, a division by x, ...).
UNBOUNDED = 1 << 30
#: How many leading operands of a form enter coefficient k linearly (a_k in add, u_k in root, ...).
LINEAR = {"add": 2, "sub": 2, "neg": 1, "div": 1, "root": 1, "linear": 1, "through": 1, "gated": 2}


def whole(node: Node) -> bool:
    """A constant exponent p = 0, 1, 2, ...: then a ** p is a polynomial in a."""
    return node.op == "const" and float(node.payload).is_integer() and 0 <= node.payload < UNBOUNDED


def _sum_degree(nodes: list[Node], node: Node, deg: list[int]) -> int:
    return max(deg[a] for a in node.args)


def _mul_degree(nodes: list[Node], node: Node, deg: list[int]) -> int:
    a, b = node.args
    return min(deg[a] + deg[b], UNBOUNDED)


def _div_degree(nodes: list[Node], node: Node, deg: list[int]) -> int:
    a, b = node.args
    return deg[a] if deg[b] == 0 else UNBOUNDED


def _pow_degree(nodes: list[Node], node: Node, deg: list[int]) -> int:
    a, b = node.args
    if deg[b] == 0 and whole(nodes[b]):
        return min(deg[a] * int(nodes[b].payload), UNBOUNDED)
    return UNBOUNDED


def _fn_degree(nodes: list[Node], node: Node, deg: list[int]) -> int:
    """0 for a function constant to differentiation; the moving argument's bound for one linear
    in it whose other arguments are free of wrt (select(c, a), xlogy(p, a)): coefficient k is
    then f of that argument's coefficient k (``recurrences``); else unbounded."""
    fn = node.payload  # read as ``functions.view`` declares it: constant, linear, gated
    if fn.constant:
        return 0
    moving = [k for k, a in enumerate(node.args) if deg[a]]
    if len(moving) == 1 and fn.is_linear(moving[0]):
        return deg[node.args[moving[0]]]
    if moving and all(gates(fn)[k] for k in moving):  # relu(u): u's coefficients, selected
        return max(deg[node.args[k]] for k in moving)
    return UNBOUNDED


#: The degree bound of a node that depends on wrt, by op, from its operands' bounds.
DEGREES: dict[str, Callable[[list[Node], Node, list[int]], int]] = rule_table("Taylor DEGREES", {
    "add": _sum_degree,
    "sub": _sum_degree,
    "neg": _sum_degree,
    "mul": _mul_degree,
    "div": _div_degree,
    "pow": _pow_degree,
    "fn": _fn_degree,
})


class Degrees:
    """deg[i]: an upper bound on the orders at which node i has a non-zero coefficient, worked out
    in tape order as far as it is asked for (nodes appended by the build itself included): 0
    for a node free of the ``moving`` vars (those seeded: a var, or a direction's vars), 1 for
    one of them, else its op's row of ``DEGREES``."""

    def __init__(self, tape: Tape, moving: AbstractSet[int]) -> None:
        self.tape = tape
        self.moving = moving
        self.deg: list[int] = []

    def leaf(self, j: int) -> int:
        """The degree of var or constant j: 1 for a seeded var, else 0."""
        return int(j in self.moving)

    def __call__(self, i: int) -> int:
        deg = self.deg
        if i < len(deg):
            return deg[i]
        nodes = self.tape.nodes
        for j in range(len(deg), i + 1):
            node = nodes[j]
            if node.op in LEAVES or not node.args:  # a var, a constant, a table
                d = self.leaf(j)
            elif max(deg[a] for a in node.args) == 0:
                d = 0
            elif node.op in ARRAY_OPS:  # Taylor mode reads an array graph's expansion: never these
                d = UNBOUNDED
            else:
                d = DEGREES[node.op](nodes, node, deg)
            deg.append(d)
        return deg[i]


def plan(series: Series, root: int, wanted: range) -> list[tuple[int, int]]:
    """Every coefficient the wanted orders of root need, in an order that computes each after
    its needs (iterative depth-first). On the way back up, each coefficient's kind is settled
    from its needs' kinds, only the products whose factors are both non-zero are kept in
    ``series.terms`` (most are zero where a factor is x, whose x_k = 0 for k >= 2), and the
    products that use each Term coefficient are counted in ``series.arith.uses``. The hot loop of
    a build: helpers are inlined."""
    order: list[tuple[int, int]] = []
    state: dict[tuple[int, int], int] = {}
    kinds: dict[tuple[int, int], int] = {}  # 0 zero, 1 a plain number, 2 a Term
    terms, uses, forms = series.terms, series.arith.uses, series.forms
    nodes, degree, seeds = series.tape.nodes, series.degree, series.seeds
    deg = degree.deg
    stack = [(root, k) for k in reversed(wanted) if k <= degree(root)]
    while stack:
        key = stack[-1]
        seen = state.get(key)
        if seen is None:  # on the way down: what it needs
            state[key] = 1
            i, k = key
            form = forms.get(i) or series.form(i)
            products = terms[key] = series.products(form, i, k)
            for ka, kb, _ in reversed(products):  # pushed last to first: visited in order
                if kb[1] and kb not in state:
                    stack.append(kb)
                if ka[1] and ka not in state:
                    stack.append(ka)
            for a in reversed(form[1:1 + LINEAR.get(form[0], 0)]):
                if k <= deg[a] and (a, k) not in state:
                    stack.append((a, k))
            continue
        stack.pop()
        if seen == 2:
            continue
        state[key] = 2  # on the way up: its needs are settled
        order.append(key)
        i, k = key
        form = forms[i]
        if form[0] == "var":  # its seed: a number, or a Term (a direction's component)
            kinds[key] = 0 if k != 1 else 1 if seeds[i][1] is None else 2
            continue
        best = 0
        for a in form[1:1 + LINEAR.get(form[0], 0)]:
            best = max(best, kinds.get((a, k), 0))
        live = []
        for ka, kb, f in terms[key]:
            x = kinds.get(ka, 0) if ka[1] else (1 if nodes[ka[0]].op == "const" else 2)
            y = kinds.get(kb, 0) if kb[1] else (1 if nodes[kb[0]].op == "const" else 2)
            if x and y:
                best = max(best, x, y)
                live.append((ka, kb, f))
                if x == 2 and y == 2:
                    uses[ka] = uses.get(ka, 0) + 1
                    uses[kb] = uses.get(kb, 0) + 1
        terms[key] = live
        kinds[key] = 2 if best and form[0] in ("div", "root", "linear", "gated") else best
    return order
