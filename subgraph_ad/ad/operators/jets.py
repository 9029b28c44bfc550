"""Directional Taylor jets ∂ʲu[v,…,v] = dʲ/dtʲ u(x + t·v) at t = 0: the Taylor engine
(``ad.taylor``) seeded by a direction, so they share its plan, its coefficients (numbers kept
out of the graph as lazy scalars) and its exact scalars above ``EXACT_ABOVE`` orders."""

from __future__ import annotations

from typing import Any, Mapping

from ...core import Callback, Term
from ..taylor import taylor_graph


def directional_taylor(u: Term, direction: Mapping[Term, Any], n: int, callback: Callback | None = None) -> list[Term]:
    """The directional derivatives ∂ʲu[v,…,v] for j = 1..n, as Terms: v is ``direction`` ({var:
    number or Term}; vars not named have component 0). ``taylor_graph`` by a direction: one
    sweep of every node's coefficients of t up to the order it is needed at. The tape's 0 marks
    a structural zero. Transactional.

    >>> from subgraph_ad import Tape, sin
    >>> tape = Tape(); x = tape.var("x"); y = tape.var("y")
    >>> [d.to_sympy() for d in directional_taylor(sin(x * y), {x: 1, y: 1}, 2)]
    [(x + y)*cos(x*y), -(x + y)**2*sin(x*y) + 2*cos(x*y)]
    """
    if not isinstance(direction, Mapping):
        raise TypeError(f"taylor_graph: the direction must be a dict {{var: component}}, got "
                        f"{type(direction).__name__} {direction!r:.80}")
    return taylor_graph(u, direction, n, callback)
