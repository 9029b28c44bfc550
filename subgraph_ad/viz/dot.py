"""DOT source of a graph on the tape, and the labels drawn on its nodes; no Graphviz program needed.

Drawing reads the tape and never changes it. The DOT text is built node by node in tape order,
so the same graph always gives byte-identical DOT; labels are made from each node at render time
(an op's label from the registry, a function name, a var name, a number), never by
concatenating operand names, so they stay short however deep the graph is.

>>> import re
>>> from subgraph_ad import Tape, exp
>>> tape = Tape(); x = tape.var("x", 0.5)
>>> dot = exp(-x * x).to_dot()
>>> dot.splitlines()[0]
'digraph subgraph_ad {'
>>> re.findall(r"^  (n[0-9]+(?: -> n[0-9]+)?) ", dot, re.M)  # nodes, then edges, in tape order
['n0', 'n2', 'n3', 'n4', 'n0 -> n2', 'n0 -> n2', 'n2 -> n3', 'n3 -> n4']
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Mapping, Sequence, Union

import numpy as np

from ..core import OPS, Tape, Term, dependencies
from ..numeric.modes import values_of

#: Default cap on drawn nodes. ``dot``'s layout time grows much faster than linearly (seconds at
#: a few hundred nodes, minutes near a thousand); pass ``max_nodes=None`` to lift it.
MAX_NODES = 500
#: Labels longer than this many characters are shortened with an ellipsis (the tooltip keeps all).
MAX_LABEL = 16
RANKDIRS = ("TB", "LR", "BT", "RL")

#: Fill colour per derivative order (the gen_graph pass that created a node); cycles after 8.
ORDER_COLOURS = ("#ffffff", "#cfe2f3", "#fce5cd", "#d9ead3", "#ead1dc", "#fff2cc", "#d0e0e3", "#e4dcf0")
HIGHLIGHT = "#d62728"

Drawable = Union[Term, Tape, Sequence[Term]]


class GraphTooLarge(ValueError):
    """The graph has more nodes than ``max_nodes``; layout would take too long.

    Raised here, where the size is known, but public in ``render`` with the Graphviz errors, so
    its name (and every traceback) reads ``subgraph_ad.viz.render.GraphTooLarge``.
    """

    __module__ = "subgraph_ad.viz.render"


# -- labels ----------------------------------------------------------------------------------------
def shorten(text: str, limit: int = MAX_LABEL) -> str:
    """Cut ``text`` to ``limit`` characters with an ellipsis.

    >>> shorten("a_very_long_variable_name", 10)
    'a_very_lo…'
    """
    return text if len(text) <= limit else text[: limit - 1] + "…"


def format_number(value: Any, digits: int = 6) -> str:
    """A short, stable text for a number or an array.

    >>> format_number(0.5), format_number(3.0), format_number(math.pi), format_number(float("nan"))
    ('0.5', '3', '3.14159', 'nan')
    """
    if np.ndim(value) > 0:
        shape = "×".join(str(n) for n in np.shape(value))
        return f"[{shape} array]"
    value = float(value)
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.{digits}g}"


def node_label(tape: Tape, index: int) -> str:
    """The full label of one node, made from the node itself.

    >>> tape = Tape(); x = tape.var("x")
    >>> node_label(tape, x.index), node_label(tape, (x - 2).index), node_label(tape, tape.const(0.25).index)
    ('x', 'a − b', '0.25')
    """
    node = tape.nodes[index]
    if node.op == "var":
        return str(node.payload)
    if node.op == "const":
        return format_number(node.payload)
    if node.op == "fn":
        return node.payload.name
    return OPS[node.op].label


def describe(tape: Tape, index: int, with_order: bool = True) -> str:
    """One line about a node for tooltips and captions: index, kind, label, derivative order.

    >>> tape = Tape(); x = tape.var("x")
    >>> describe(tape, (x * x).gen_graph(x).index)
    'node 4: mul × (order 1)'
    """
    node = tape.nodes[index]
    kind = {"var": "var", "const": "constant", "fn": "function"}.get(node.op, node.op)
    text = node_label(tape, index)
    if node.op == "const":
        text = repr(float(node.payload))
    order = tape.orders[index]
    return f"node {index}: {kind} {text}" + (f" (order {order})" if order and with_order else "")


# -- DOT -------------------------------------------------------------------------------------------
def _q(text: str) -> str:
    """A DOT double-quoted string; backslashes are escaped so Graphviz's \\N, \\l do not apply."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


class Html(str):
    """An HTML-like Graphviz label, written as ``<...>`` instead of a quoted string."""


def _attrs(attrs: Mapping[str, str]) -> str:
    return ", ".join(f"{k}={'<' + v + '>' if isinstance(v, Html) else _q(v)}" for k, v in attrs.items())


def _selection(obj: Any) -> tuple[Tape, list[int], list[int]]:
    """(tape, roots, default outputs) for a Term, a Tape or a sequence of Terms of one tape."""
    if isinstance(obj, Term):
        return obj.tape, [obj.index], [obj.index]
    if isinstance(obj, Tape):
        return obj, list(range(len(obj))), []
    if isinstance(obj, (list, tuple)) and obj and all(isinstance(t, Term) for t in obj):
        tape = obj[0].tape
        for t in obj:
            if t.tape is not tape:
                raise ValueError(f"cannot draw terms of two different tapes together: {obj[0]!r} and {t!r}")
        roots = sorted({t.index for t in obj})
        return tape, roots, roots
    raise TypeError(
        f"expected a Term, a Tape or a non-empty list of Terms to draw, got {type(obj).__name__} {obj!r}"
    )


def _indices_of(tape: Tape, terms: Iterable[Any], what: str) -> list[int]:
    out = []
    for t in terms:
        if not isinstance(t, Term) or t.tape is not tape:
            raise ValueError(f"{what} must be Terms of the drawn tape {tape!r}, got {type(t).__name__} {t!r}")
        out.append(t.index)
    return out


def _legend(orders: list[int]) -> Html:
    cells = "".join(
        f'<td bgcolor="{ORDER_COLOURS[o % len(ORDER_COLOURS)]}">{o}</td>' for o in orders
    )
    return Html(
        '<table border="0" cellborder="1" cellspacing="0" cellpadding="3">'
        f'<tr><td border="0">derivative order&#160;</td>{cells}</tr></table>'
    )


def dot_source(
    obj: Drawable,
    *,
    precision: int | None = None,
    highlight: Iterable[Term] = (),
    outputs: Iterable[Term] | None = None,
    color_by_order: bool = True,
    legend: bool | None = None,
    rankdir: str = "TB",
    max_nodes: int | None = MAX_NODES,
    id_prefix: str = "",
    node_attrs: Mapping[int, Mapping[str, str]] | None = None,
    edge_attrs: Mapping[tuple[int, int], Mapping[str, str]] | None = None,
    graph_attrs: Mapping[str, str] | None = None,
) -> str:
    """DOT source; ``to_dot`` plus hooks the animations use.

    ``node_attrs[i]`` and ``edge_attrs[(head, k)]`` (edge into ``head`` from its k-th operand)
    override the computed attributes of that node or edge.
    """
    tape, roots, default_outputs = _selection(obj)
    out_idx = default_outputs if outputs is None else _indices_of(tape, outputs, "outputs")
    marked = set(_indices_of(tape, highlight, "highlight"))
    if rankdir not in RANKDIRS:
        raise ValueError(f"rankdir must be one of {', '.join(RANKDIRS)}, got {rankdir!r}")
    if precision is not None and (isinstance(precision, bool) or not isinstance(precision, int) or precision < 1):
        raise ValueError(f"precision must be a positive int (significant digits) or None, got {precision!r}")
    indices = dependencies(tape, sorted(set(roots) | set(out_idx)))
    if max_nodes is not None and len(indices) > max_nodes:
        raise GraphTooLarge(
            f"the graph has {len(indices)} nodes, more than max_nodes={max_nodes}; Graphviz layout time "
            f"grows steeply with size, so pass max_nodes=None (or a larger number) to draw it anyway"
        )
    values = values_of(tape, indices, None) if precision is not None else {}
    orders = sorted({tape.orders[i] for i in indices})
    if legend is None:
        legend = color_by_order and len(orders) > 1
    is_output = set(out_idx)
    node_attrs = node_attrs or {}
    edge_attrs = edge_attrs or {}

    graph = {"id": f"{id_prefix}graph", "rankdir": rankdir, "ordering": "in", "fontname": "Helvetica",
             "fontsize": "10"}
    if legend and orders:
        graph.update(label=_legend(orders), labelloc="b")
    graph.update(graph_attrs or {})
    lines = [
        "digraph subgraph_ad {",
        f"  graph [{_attrs(graph)}];",
        '  node [fontname="Helvetica", fontsize="12", style="filled", fillcolor="#ffffff", height="0.4"];',
        '  edge [color="#555555", arrowsize="0.6", labelfontname="Helvetica", labelfontsize="9", '
        'labelfontcolor="#666666", labeldistance="1.6"];',
    ]
    for i in indices:
        node = tape.nodes[i]
        label = shorten(node_label(tape, i))
        if precision is not None and node.op != "const":
            label += "\n= " + shorten(format_number(values[i], precision))
        attrs = {"id": f"{id_prefix}n{i}", "label": label, "tooltip": describe(tape, i)}
        if node.op in ("var", "const"):
            attrs["shape"] = "box"
            attrs["style"] = "filled" if node.op == "var" else "filled,rounded"
        if color_by_order:
            attrs["fillcolor"] = ORDER_COLOURS[tape.orders[i] % len(ORDER_COLOURS)]
        if i in is_output:
            attrs["peripheries"] = "2"
        if i in marked:
            attrs.update(color=HIGHLIGHT, penwidth="3")
        attrs.update(node_attrs.get(i, {}))
        lines.append(f"  n{i} [{_attrs(attrs)}];")
    for i in indices:
        node = tape.nodes[i]
        # Only the nodes whose operand order matters get "a"/"b" at the arrow heads: ordered
        # arithmetic ops, and two-operand functions (a BinaryFn: atan2(a, b) ≠ atan2(b, a)).
        ordered = OPS[node.op].ordered if node.op in OPS else node.op == "fn" and len(node.args) == 2
        for k, a in enumerate(node.args):
            attrs = {"id": f"{id_prefix}e{i}_{k}"}
            if ordered:
                attrs["headlabel"] = "ab"[k]
            attrs.update(edge_attrs.get((i, k), {}))
            lines.append(f"  n{a} -> n{i} [{_attrs(attrs)}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def to_dot(obj: Drawable, **options: Any) -> str:
    """DOT source of a Term (the nodes it depends on), a Tape (every node) or a list of Terms.

    Options: ``precision`` (show each node's value with that many significant digits),
    ``highlight`` (Terms drawn with a red outline), ``outputs`` (Terms drawn with a double
    outline, and included; default: the drawn terms), ``color_by_order`` (fill by the
    gen_graph pass that made the node, default True), ``legend``, ``rankdir`` ("TB", "LR", ...),
    ``max_nodes`` (default MAX_NODES; None for no cap), ``id_prefix`` (for the SVG ids).

    >>> from subgraph_ad import Tape
    >>> tape = Tape(); x = tape.var("x", 2.0)
    >>> for line in to_dot(x - 3, precision=3).splitlines()[-4:-1]:
    ...     print(line)
      n2 [id="n2", label="a − b\\n= -1", tooltip="node 2: sub a − b", fillcolor="#ffffff", peripheries="2"];
      n0 -> n2 [id="e2_0", headlabel="a"];
      n1 -> n2 [id="e2_1", headlabel="b"];
    """
    return dot_source(obj, **options)
