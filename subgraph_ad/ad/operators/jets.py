"""Directional Taylor jets ∂ʲu[v,…,v]: the truncated Taylor coefficients of t ↦ u(x + t·v), propagated
with the same local partials (the ODE recurrence k·y_k = Σ j·a_j·f′_{k−j})."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Callable, Mapping

import numpy as np

from ...core import Callback, Term
from ..forward import derivative_order
from .algebra import Lin
from .passes import PARTIALS, Pass, linear_share, linear_slot
from ...tables import rule_table


Jets = dict[int, list[Lin]]


def _coef(p: Pass, jets: Jets, i: int, k: int) -> Lin:
    """Coefficient k of node i: the node itself at k = 0, zero where it does not move."""
    if k == 0:
        return p.alg.of(i)
    found = jets.get(i)
    return found[k] if found is not None and k < len(found) else None


def _mul_jet(p: Pass, i: int, node: Any, jets: Jets, k: int) -> Lin:
    a, b = node.args
    alg = p.alg
    total: dict = {}
    if a == b:  # a square: each cross pair once, doubled
        for j in range((k + 1) // 2):
            alg.accumulate(total, alg.scale(alg.mul(_coef(p, jets, a, j), _coef(p, jets, a, k - j)), 2))
        if k % 2 == 0:
            half = _coef(p, jets, a, k // 2)
            alg.accumulate(total, alg.mul(half, half))
        return total or None
    for j in range(k + 1):
        alg.accumulate(total, alg.mul(_coef(p, jets, a, j), _coef(p, jets, b, k - j)))
    return total or None


def _div_jet(p: Pass, i: int, node: Any, jets: Jets, k: int) -> Lin:
    # q = a/b: q_k = (a_k − Σ_{j=1..k} b_j q_{k−j}) / b
    a, b = node.args
    alg = p.alg
    total: dict = {}
    alg.accumulate(total, _coef(p, jets, a, k))
    for j in range(1, k + 1):
        alg.accumulate(total, alg.scale(alg.mul(_coef(p, jets, b, j), _coef(p, jets, i, k - j)), -1))
    return alg.div(total or None, b)


def _chain_jet(p: Pass, i: int, node: Any, jets: Jets, k: int) -> Lin:
    """y = f(a, …): k·y_k = Σ_m Σ_{j=1..k} j·a_{m,j}·(f_m)_{k−j}, the partials f_m Taylor-propagated
    themselves; a function linear in its one moving operand gets f(…, a_k, …)."""
    alg = p.alg
    parts = p.partials(i)
    if len(parts) == 1 and linear_slot(p, i, parts[0][0]):
        return linear_share(p, i, parts[0][0], _coef(p, jets, parts[0][0], k))
    total: dict = {}
    for a, f in parts:
        if f is None:
            continue
        for j in range(1, k + 1):
            aj = _coef(p, jets, a, j)
            if aj is None:
                continue
            term = p.times(aj, f) if k == j else alg.mul(aj, _coef(p, jets, f.index, k - j))
            alg.accumulate(total, alg.scale(term, Fraction(j, k)))
    return total or None


#: The jet rules: coefficient k of a node from its operands' coefficients up to k.
JETS: dict[str, Callable[[Pass, int, Any, Jets, int], Lin]] = rule_table("operator JETS", {
    "add": lambda p, i, node, jets, k: p.alg.add(_coef(p, jets, node.args[0], k), _coef(p, jets, node.args[1], k)),
    "sub": lambda p, i, node, jets, k: p.alg.add(_coef(p, jets, node.args[0], k),
                                                 p.alg.scale(_coef(p, jets, node.args[1], k), -1)),
    "neg": lambda p, i, node, jets, k: p.alg.scale(_coef(p, jets, node.args[0], k), -1),
    "mul": _mul_jet,
    "div": _div_jet,
    "pow": _chain_jet,
    "fn": _chain_jet,
})


def _jet_orders(p: Pass, root: int, n: int) -> dict[int, int]:
    """How many coefficients each node needs: n at the root, as many as a node's own at its
    operands, one fewer at a function's partials (their coefficients enter one order later)."""
    nodes = p.tape.nodes
    need = {root: n}
    stack = [root]
    while stack:
        i = stack.pop()
        r = need[i]
        node = nodes[i]
        if not node.args or not p.mask(i):
            continue
        follow = [(a, r) for a in node.args if p.mask(a)]
        if node.op in PARTIALS and r > 1:
            follow += [(f.index, r - 1) for _, f in p.partials(i) if f is not None and p.mask(f.index)]
        for a, order in follow:
            if need.get(a, 0) < order:
                need[a] = order
                stack.append(a)
    return need


def _directions(u: Term, direction: Any) -> tuple[list[Term], list[Any]]:
    if not isinstance(direction, Mapping):
        raise TypeError(f"taylor_graph: the direction must be a dict {{var: component}}, got "
                        f"{type(direction).__name__} {direction!r:.80}")
    keys = list(direction)
    xs = [u.tape.check_var(x, "direction key") for x in keys]
    if len({x.index for x in xs}) != len(xs):
        raise ValueError(f"taylor_graph: the direction names a var twice: {[x.name for x in xs]}")
    values = []
    for x in xs:
        v = direction[x]
        if isinstance(v, Term):
            u._lift(v)
        elif isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, Fraction, np.integer, np.floating)):
            raise TypeError(f"taylor_graph: the component of {x.name} must be a number or a Term, got "
                            f"{type(v).__name__} {v!r}")
        values.append(v)
    return xs, values


def directional_taylor(u: Term, direction: Mapping[Term, Any], n: int, callback: Callback | None = None) -> list[Term]:
    """The directional derivatives ∂ʲu[v,…,v] = dʲ/dtʲ u(x + t·v) at t = 0 for j = 1..n, as
    Terms: v is ``direction`` ({var: number or Term}; vars not named have component 0). One
    Taylor-mode sweep (``JETS``): every node's coefficients of t up to the order it is needed at.
    The tape's 0 marks a structural zero. Transactional.

    >>> from subgraph_ad import Tape, sin
    >>> tape = Tape(); x = tape.var("x"); y = tape.var("y")
    >>> [d.to_sympy() for d in directional_taylor(sin(x * y), {x: 1, y: 1}, 2)]
    [(x + y)*cos(x*y), -(x + y)**2*sin(x*y) + 2*cos(x*y)]
    """
    if not isinstance(u, Term):
        raise TypeError(f"taylor_graph differentiates a Term, got {type(u).__name__} {u!r:.80}")
    xs, values = _directions(u, direction)
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"taylor_graph: the order n must be an int >= 0, got {n!r}")
    if n == 0:
        return []
    tape = u.tape
    base = derivative_order(u)
    with tape.transaction(callback, order=base + 1):
        def build() -> list[int]:
            p = Pass(tape, xs)
            seeds = [p.alg.of(v) if isinstance(v, Term) else p.alg.constant(v if isinstance(v, float) else Fraction(v))
                     for v in values]
            need = _jet_orders(p, u.index, n)
            nodes = tape.nodes
            jets: Jets = {}
            for k in range(1, n + 1):
                tape.tag(base + k)
                for i in sorted(i for i, r in need.items() if r >= k and p.mask(i)):
                    node = nodes[i]
                    if node.op == "var":
                        value = seeds[p.position[i]] if k == 1 else None
                    else:
                        value = JETS[node.op](p, i, node, jets, k)
                    jets.setdefault(i, [None]).append(value)
            out = []
            for k in range(1, n + 1):
                tape.tag(base + k)
                out.append(p.alg.term(p.alg.scale(_coef(p, jets, u.index, k), math.factorial(k))).index)
            return out

        return [Term(tape, i) for i in tape.pruned(build)]
