"""Tables: the one register of op-keyed rule tables, and tables of results as plain text
(``str``, terminals, doctests) and HTML (Jupyter).

Every transformation and backend keeps one table keyed by op (forward ``RULES``, reverse
``VJPS``, Taylor ``FORMS``, each backend's ``LOWERING``, the ODE kernel's ``VALUE_OPS``, ...),
and each is made through ``rule_table``, so one test (tests/core/test_ops.py) checks every
table against the op list: a new op missing from any table fails with that table's name, and
an op-keyed dict made any other way fails too. Gradients, derivative tables
and verification reports are rows of cells; one renderer for each medium keeps them looking
alike everywhere. Depends on nothing else in the package.
"""

from __future__ import annotations

import html
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

Rows = TypeVar("Rows", bound=dict[str, Any])


class RuleTable:
    """A registered table: its rows, which keys it must have — every op of ``OPS`` and ``fn``
    but ``without`` (ops it need not see, with the reason in its module), or ``keys`` when it is
    keyed by something else (a Taylor kind) — and the module that keeps it."""

    def __init__(self, rows: dict[str, Any], without: tuple[str, ...],
                 keys: Callable[[], Iterable[str]] | None, module: str) -> None:
        self.rows, self.without, self.keys, self.module = rows, without, keys, module


#: Every op-keyed rule table, by name ("forward RULES"), in the order the modules register them.
RULE_TABLES: dict[str, RuleTable] = {}


def rule_table(name: str, rows: Rows, *, without: tuple[str, ...] = (),
               keys: Callable[[], Iterable[str]] | None = None) -> Rows:
    """Register ``rows`` as the rule table ``name`` of the calling module; returns it, so a module
    writes ``RULES = rule_table("forward RULES", {...})``."""
    RULE_TABLES[name] = RuleTable(rows, without, keys, sys._getframe(1).f_globals.get("__name__", "?"))
    return rows


def text_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Columns padded to their widest cell, numbers right-aligned, a rule under the header."""
    cells = [[str(c) for c in headers]] + [[_cell(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    numeric = [all(_is_number(row[i]) for row in rows) and bool(rows) for i in range(len(headers))]

    def line(row: list[str]) -> str:
        parts = [c.rjust(w) if num else c.ljust(w) for c, w, num in zip(row, widths, numeric)]
        return "  ".join(parts).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(cells[0]), rule] + [line(r) for r in cells[1:]])


def html_table(headers: Sequence[str], rows: Sequence[Sequence[object]], caption: str = "") -> str:
    """The same table as escaped HTML; numbers right-aligned in a monospace font."""
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(
            f'<td style="text-align:right;font-family:monospace">{html.escape(_cell(c))}</td>'
            if _is_number(c) else f"<td>{html.escape(_cell(c))}</td>" for c in row) + "</tr>"
        for row in rows)
    cap = f"<caption>{html.escape(caption)}</caption>" if caption else ""
    return f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _cell(value: object) -> str:
    """Floats with every digit that round-trips (``repr``), everything else as ``str``."""
    return repr(float(value)) if isinstance(value, float) else str(value)
