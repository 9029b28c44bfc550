"""Numeric derivatives of graphs that hold array nodes: the symbolic array rules built in a trial
(removed again at once) and evaluated, since the per-node numeric partials of the scalar sweeps
are scalar. The cost is one build and one evaluation of array nodes: a few per layer.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..core import Tape, Term
from ..core.arrays import has_arrays
from ..core.graph import dependencies


def holds_arrays(tape: Tape, roots: Sequence[int]) -> bool:
    return has_arrays(tape, dependencies(tape, list(roots)))


def tangents(tape: Tape, outputs: Sequence[int], seeds: Mapping[int, Any], values: Any, warn: bool) -> list[Any]:
    """Σ_w t_w·∂out/∂w for each output, by the directional derivative's nodes."""
    from ..ad.forward import directional
    from .modes import values_of

    with tape.trial():
        terms = directional([Term(tape, i) for i in outputs], {Term(tape, w): t for w, t in seeds.items()})
        vals = values_of(tape, [t.index for t in terms], values, warn=warn)
        return [vals[t.index] for t in terms]


def adjoints(tape: Tape, outputs: Sequence[int], cotangents: Sequence[Any], values: Any, warn: bool) -> dict[int, Any]:
    """Var index -> Σ_i c_i·∂out_i/∂var, by the gradient's nodes (every var the outputs need)."""
    from ..ad.reverse import grad_graph
    from .modes import values_of

    wanted = [i for i in dependencies(tape, list(outputs)) if tape.nodes[i].op == "var"]
    if not wanted:
        return {}
    with tape.trial():
        total = sum((Term(tape, o) * c for o, c in zip(outputs, cotangents)), start=tape.zero)
        found = grad_graph(total, [Term(tape, w) for w in wanted])
        vals = values_of(tape, [t.index for t in found], values, warn=warn)
        return {w: vals[t.index] for w, t in zip(wanted, found)}
