"""DOT source of a graph on the tape; no Graphviz program needed.

Drawing reads the tape and never changes it. The DOT text is built node by node in tape order,
so the same graph always gives byte-identical DOT; each node's label is made from the node at
render time (``labels.py``).

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

from typing import Any, Iterable, Mapping, Sequence, Union

from ..ad.diff import Derivatives
from ..core import OPS, Tape, Term, dependencies
from ..numeric.modes import values_of
from .labels import Html, describe, format_number, inline_label, named_label, shorten

#: Default cap on nodes laid out (render, SVG, Jupyter, animations; DOT text has none). ``dot``'s
#: layout time grows much faster than linearly; pass ``max_nodes=None`` to lift it.
MAX_NODES = 500
#: From this many drawn nodes on, drawings are compact: smaller nodes and gaps, and constants
#: written into the nodes that use them.
COMPACT_FROM = 60
#: Up to this many drawn nodes, the boxes of the derivative orders are stacked in order (top to
#: bottom, or left to right with rankdir="LR"); bigger drawings leave their placement to dot,
#: which is then several times faster.
STACK_UP_TO = 300
RANKDIRS = ("TB", "LR", "BT", "RL")

#: Fill colour per derivative order (the gen_graph pass that created a node); cycles after 8.
ORDER_COLOURS = ("#ffffff", "#cfe2f3", "#fce5cd", "#d9ead3", "#ead1dc", "#fff2cc", "#d0e0e3", "#e4dcf0")
HIGHLIGHT = "#d62728"

Drawable = Union[Term, Tape, Sequence[Term], Derivatives]
#: Names drawn on outputs: a dict from Term to name, or one name per output.
Labels = Union[Mapping[Term, str], Sequence[str]]


class GraphTooLarge(ValueError):
    """The graph has more nodes than ``max_nodes`` (layout would take too long), or an animation
    more frames than ``max_frames``.

    ``option`` names the limit that was passed (``"max_nodes"`` or ``"max_frames"``), ``size``
    and ``limit`` are the numbers, so a front end can name its own flag. Raised here, where the
    size is known, but public in ``render`` with the Graphviz errors, so its name (and every
    traceback) reads ``subgraph_ad.viz.render.GraphTooLarge``.
    """

    __module__ = "subgraph_ad.viz.render"

    def __init__(self, message: str, option: str = "max_nodes", size: int | None = None,
                 limit: int | None = None) -> None:
        super().__init__(message)
        self.option = option
        self.size = size
        self.limit = limit


# -- DOT -------------------------------------------------------------------------------------------
def _q(text: str) -> str:
    """A DOT double-quoted string; backslashes are escaped so Graphviz's \\N, \\l do not apply."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _attrs(attrs: Mapping[str, str]) -> str:
    return ", ".join(f"{k}={'<' + v + '>' if isinstance(v, Html) else _q(v)}" for k, v in attrs.items())


def _selection(obj: Any) -> tuple[Tape, list[int], list[int], list[str] | None]:
    """(tape, roots, default outputs, their default names) for what can be drawn: a Term, a Tape,
    a sequence of Terms of one tape, or a ``derivatives`` result (f and every derivative, named)."""
    if isinstance(obj, Derivatives):
        outs = [obj.f.index] + [step.term.index for step in obj]
        return obj.f.tape, sorted(set(outs)), outs, obj.labels()
    if isinstance(obj, Term):
        return obj.tape, [obj.index], [obj.index], None
    if isinstance(obj, Tape):
        return obj, list(range(len(obj))), [], None
    if isinstance(obj, (list, tuple)) and obj and all(isinstance(t, Term) for t in obj):
        tape = obj[0].tape
        for t in obj:
            if t.tape is not tape:
                raise ValueError(f"cannot draw terms of two different tapes together: {obj[0]!r} and {t!r}")
        return tape, sorted({t.index for t in obj}), [t.index for t in obj], None
    raise TypeError(
        "expected a Term, a Tape, a non-empty list of Terms or a derivatives() result to draw, "
        f"got {type(obj).__name__} {obj!r}"
    )


def _indices_of(tape: Tape, terms: Iterable[Any], what: str) -> list[int]:
    out = []
    for t in terms:
        if not isinstance(t, Term) or t.tape is not tape:
            raise ValueError(f"{what} must be Terms of the drawn tape {tape!r}, got {type(t).__name__} {t!r}")
        out.append(t.index)
    return out


def _names(tape: Tape, outputs: list[int], labels: Labels | None) -> dict[int, str]:
    """Node index -> the name drawn on it; two names of one node (sin's 4th derivative is sin) are
    joined with " = "."""
    if labels is None:
        return {}
    if isinstance(labels, Mapping):
        pairs = list(zip(_indices_of(tape, labels.keys(), "the keys of labels"), labels.values()))
    elif isinstance(labels, (list, tuple)):
        if len(labels) != len(outputs):
            raise ValueError(f"labels has {len(labels)} names for {len(outputs)} outputs: give one name per "
                             "output, or a dict from Term to name")
        pairs = list(zip(outputs, labels))
    else:
        raise TypeError(f"labels must be a dict from Term to name or a list of names (one per output), "
                        f"got {type(labels).__name__} {labels!r}")
    names: dict[int, list[str]] = {}
    for i, text in pairs:
        if not isinstance(text, str):
            raise TypeError(f"a label must be a str, got {type(text).__name__} {text!r} for node {i}")
        if text not in names.setdefault(i, []):
            names[i].append(text)
    return {i: " = ".join(texts) for i, texts in names.items()}


def _legend(orders: list[int]) -> Html:
    cells = "".join(
        f'<td bgcolor="{ORDER_COLOURS[o % len(ORDER_COLOURS)]}">{o}</td>' for o in orders
    )
    return Html(
        '<table border="0" cellborder="1" cellspacing="0" cellpadding="3">'
        f'<tr><td border="0">derivative order&#160;</td>{cells}</tr></table>'
    )


def drawn_nodes(obj: Drawable, outputs: Iterable[Term] | None = None, labels: Labels | None = None) -> list[int]:
    """The tape indices a drawing of ``obj`` shows, in tape order (what ``max_nodes`` counts)."""
    tape, roots, default_outputs, _ = _selection(obj)
    out_idx = default_outputs if outputs is None else _indices_of(tape, outputs, "outputs")
    named = _names(tape, out_idx, labels)
    return dependencies(tape, sorted(set(roots) | set(out_idx) | set(named)))


def check_size(count: int, max_nodes: int | None, what: str = "the graph") -> None:
    """GraphTooLarge if ``count`` drawn nodes are more than ``max_nodes`` (None: no cap)."""
    if max_nodes is not None and count > max_nodes:
        raise GraphTooLarge(
            f"{what} has {count} nodes, more than max_nodes={max_nodes}; Graphviz layout time grows steeply "
            "with size, so pass max_nodes=None (or a larger number) to draw it anyway",
            option="max_nodes", size=count, limit=max_nodes)


def _clusters(tape: Tape, drawn: list[int], id_prefix: str, group_attrs: Mapping[int, Mapping[str, str]],
              stack: bool) -> list[str]:
    """DOT lines of one cluster per derivative order, written after the nodes (naming a node in a
    subgraph makes it a member, and keeps the node lines in tape order).

    With ``stack``, an invisible anchor heads each order's box: the last nodes of the order before
    lead into it and it leads into the first nodes of its own, so every order is ranked after the
    one before and the boxes read in order.
    """
    members: dict[int, list[int]] = {}
    for i in drawn:
        members.setdefault(tape.orders[i], []).append(i)
    lines = []
    for order, group in sorted(members.items()):
        attrs = {"id": f"{id_prefix}o{order}", "label": f"order {order}", "labeljust": "l",
                 "style": "rounded,dashed", "color": "#999999", "fontcolor": "#555555"}
        attrs.update(group_attrs.get(order, {}))
        anchor = f"b{order}; " if stack and order != min(members) else ""
        lines.append(f"  subgraph cluster_o{order} {{")
        lines.append(f"    graph [{_attrs(attrs)}];")
        lines.append("    " + anchor + " ".join(f"n{i};" for i in group))
        lines.append("  }")
    if stack:
        orders = sorted(members)
        shown = set(drawn)
        same = {i: [a for a in tape.nodes[i].args if a in shown and tape.orders[a] == tape.orders[i]] for i in drawn}
        inner = {a for i in drawn for a in same[i]}  # used within their own order: not its last nodes
        for before, order in zip(orders, orders[1:]):
            lines.append(f'  b{order} [id="{id_prefix}b{order}", style="invis", label="", width="0", height="0", '
                         'fixedsize="true"];')
            lines += [f'  n{i} -> b{order} [style="invis"];' for i in members[before] if i not in inner]
            lines += [f'  b{order} -> n{i} [style="invis"];' for i in members[order] if not same[i]]
    return lines


def dot_source(
    obj: Drawable,
    *,
    precision: int | None = None,
    highlight: Iterable[Term] = (),
    outputs: Iterable[Term] | None = None,
    labels: Labels | None = None,
    color_by_order: bool = True,
    legend: bool | None = None,
    group_by_order: bool | None = None,
    compact: bool | None = None,
    rankdir: str = "TB",
    max_nodes: int | None = None,
    id_prefix: str = "",
    node_attrs: Mapping[int, Mapping[str, str]] | None = None,
    edge_attrs: Mapping[tuple[int, int], Mapping[str, str]] | None = None,
    group_attrs: Mapping[int, Mapping[str, str]] | None = None,
    graph_attrs: Mapping[str, str] | None = None,
) -> str:
    """DOT source; ``to_dot`` plus hooks the animations use.

    ``node_attrs[i]``, ``edge_attrs[(head, k)]`` (edge into ``head`` from its k-th operand) and
    ``group_attrs[order]`` (the cluster of that derivative order) override the computed
    attributes of that node, edge or cluster.
    """
    tape, roots, default_outputs, default_labels = _selection(obj)
    out_idx = default_outputs if outputs is None else _indices_of(tape, outputs, "outputs")
    names = _names(tape, out_idx, default_labels if labels is None and outputs is None else labels)
    marked = set(_indices_of(tape, highlight, "highlight"))
    if rankdir not in RANKDIRS:
        raise ValueError(f"rankdir must be one of {', '.join(RANKDIRS)}, got {rankdir!r}")
    if precision is not None and (isinstance(precision, bool) or not isinstance(precision, int) or precision < 1):
        raise ValueError(f"precision must be a positive int (significant digits) or None, got {precision!r}")
    indices = dependencies(tape, sorted(set(roots) | set(out_idx) | set(names)))
    check_size(len(indices), max_nodes)
    values = values_of(tape, indices, None) if precision is not None else {}
    orders = sorted({tape.orders[i] for i in indices})
    if group_by_order is None:
        group_by_order = len(orders) > 1
    if compact is None:
        compact = len(indices) >= COMPACT_FROM
    if legend is None:
        legend = color_by_order and len(orders) > 1 and not group_by_order
    # A compact drawing writes each constant into the nodes that use it: a constant shared by many
    # nodes would otherwise pull long edges across the whole picture.
    used = {a for i in indices for a in tape.nodes[i].args}
    is_output = set(out_idx) | set(names)
    inline = {i for i in indices if compact and tape.nodes[i].op == "const" and i in used
              and i not in is_output and i not in marked}
    node_attrs = node_attrs or {}
    edge_attrs = edge_attrs or {}
    group_attrs = group_attrs or {}

    graph = {"id": f"{id_prefix}graph", "rankdir": rankdir, "ordering": "in", "fontname": "Helvetica",
             "fontsize": "10"}
    if group_by_order:
        del graph["ordering"]  # with clusters, dot 2.43 can crash on it
    node_style = {"fontname": "Helvetica", "fontsize": "12", "style": "filled", "fillcolor": "#ffffff",
                  "height": "0.4"}
    edge_style = {"color": "#555555", "arrowsize": "0.6", "labelfontname": "Helvetica", "labelfontsize": "9",
                  "labelfontcolor": "#666666", "labeldistance": "1.6"}
    if compact:
        graph.update(nodesep="0.12", ranksep="0.25")
        node_style.update(fontsize="10", height="0.22", width="0.3", margin="0.04,0.02")
        edge_style.update(arrowsize="0.4", labelfontsize="8", labeldistance="1.2")
    if legend and orders:
        graph.update(label=_legend(orders), labelloc="b")
    graph.update(graph_attrs or {})
    lines = [
        "digraph subgraph_ad {",
        f"  graph [{_attrs(graph)}];",
        f"  node [{_attrs(node_style)}];",
        f"  edge [{_attrs(edge_style)}];",
    ]
    for i in indices:
        if i in inline:
            continue
        node = tape.nodes[i]
        text = shorten(inline_label(tape, i, inline))
        value = shorten(format_number(values[i], precision)) if precision is not None and node.op != "const" else None
        if i in names:
            label: str = named_label(names[i], text, value, 13 if compact else 14)
        else:
            label = text if value is None else f"{text}\n= {value}"
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
            if a in inline:
                continue
            attrs = {"id": f"{id_prefix}e{i}_{k}"}
            if ordered:
                attrs["headlabel"] = "ab"[k]
            attrs.update(edge_attrs.get((i, k), {}))
            lines.append(f"  n{a} -> n{i} [{_attrs(attrs)}];")
    if group_by_order:
        lines += _clusters(tape, [i for i in indices if i not in inline], id_prefix, group_attrs,
                           stack=len(indices) <= STACK_UP_TO)
    lines.append("}")
    return "\n".join(lines) + "\n"


def to_dot(obj: Drawable, **options: Any) -> str:
    """DOT source of a Term (the nodes it depends on), a Tape (every node), a list of Terms, or a
    ``derivatives`` result (f and each derivative, named df/dx, d²f/dx², … on the picture).

    DOT is text, so any size works; only laying it out (``render``, SVG, Jupyter, animations)
    is capped. Options: ``precision`` (show each node's value with that many significant
    digits), ``highlight`` (Terms drawn with a red outline), ``outputs`` (Terms drawn with a
    double outline, and included; default: the drawn terms), ``labels`` (names drawn on outputs:
    a dict from Term to name, or one name per output), ``color_by_order`` (fill by the gen_graph
    pass that made the node, default True), ``legend``, ``group_by_order`` (one box per
    derivative order; default when there are several), ``compact`` (smaller nodes and gaps,
    constants written into their users; default from COMPACT_FROM nodes on), ``rankdir``
    ("TB", "LR", ...), ``max_nodes`` (default None: no cap), ``id_prefix`` (for the SVG ids).

    >>> from subgraph_ad import Tape
    >>> tape = Tape(); x = tape.var("x", 2.0)
    >>> for line in to_dot(x - 3, precision=3).splitlines()[-4:-1]:
    ...     print(line)
      n2 [id="n2", label="a − b\\n= -1", tooltip="node 2: sub a − b", fillcolor="#ffffff", peripheries="2"];
      n0 -> n2 [id="e2_0", headlabel="a"];
      n1 -> n2 [id="e2_1", headlabel="b"];
    """
    return dot_source(obj, **options)
