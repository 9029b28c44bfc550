"""The text drawn on a node, made from the node itself (an op's label from the registry, a
function name, a var name, a number), never by concatenating operand names, so labels stay
short however deep the graph is.
"""

from __future__ import annotations

import html
import math
import re
from typing import Any

import numpy as np

from ..core import OPS, Tape
from ..core.arrays import ARRAY_OPS, shape_of

class Html(str):
    """An HTML-like Graphviz label, written as ``<...>`` instead of a quoted string."""


#: Labels longer than this many characters are shortened with an ellipsis (the tooltip keeps all).
MAX_LABEL = 16


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
    shape = shape_of(tape, index)
    if node.op == "var":
        return str(node.payload) + (f" [{_dims(shape)}]" if shape else "")
    if node.op == "const":
        return format_number(node.payload)
    if node.op == "fn":
        return str(node.payload.name)
    if node.op in ARRAY_OPS:  # one box for the whole array: its op and its shape
        what = node.payload[1] if node.op == "map" else node.op
        name = OPS[what].label if isinstance(what, str) and what in OPS else getattr(what, "name", what)
        return f"{name} [{_dims(shape)}]" if shape else str(name)
    return OPS[node.op].label


def _dims(shape: tuple[int, ...]) -> str:
    return "×".join(str(n) for n in shape)


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


def inline_label(tape: Tape, index: int, inline: set[int]) -> str:
    """The label of a node whose operands in ``inline`` (constants) are written into it.

    >>> tape = Tape(); x = tape.var("x")
    >>> two = {tape.const(2.0).index}
    >>> inline_label(tape, (x - 2).index, two), inline_label(tape, (2 / x).index, two), inline_label(tape, (x * 2).index, two)
    ('a − 2', '2 / b', '× 2')
    """
    node = tape.nodes[index]
    if not any(a in inline for a in node.args) or node.op in ARRAY_OPS:
        return node_label(tape, index)
    texts = [format_number(tape.nodes[a].payload) if a in inline else "ab"[k] for k, a in enumerate(node.args)]
    if node.op == "fn":
        return f"{node.payload.name}({', '.join(texts)})"
    op = OPS[node.op]
    if op.arity == 1:
        return op.label + texts[0]
    if op.ordered:
        return re.sub(r"\b[ab]\b", lambda m: texts["ab".index(m.group())], op.label)
    if all(a in inline for a in node.args):
        return f" {op.label} ".join(texts)
    return f"{op.label} " + " ".join(t for t, a in zip(texts, node.args) if a in inline)


def named_label(name: str, text: str, value: str | None, size: int) -> Html:
    """An output's label: its name (df/dx, ...) in bold above the node's own label."""
    body = html.escape(text, quote=False) + (f"<br/>= {html.escape(value, quote=False)}" if value is not None else "")
    return Html(f'<font point-size="{size}"><b>{html.escape(name, quote=False)}</b></font><br/>{body}')
