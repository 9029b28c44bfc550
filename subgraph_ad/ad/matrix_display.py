"""How a matrix of Terms shows, dense or sparse alike: as text with its columns aligned, as an
HTML table and as a LaTeX matrix, headed by what it is ("2×2 Dense", "3×3 Sparse, 7 nonzeros").

At most ``SHOW`` rows and columns are shown (then ``…``, ``⋮`` and a line with the full size),
and an entry is cut at ``CELL_CHARS`` characters (in LaTeX, an entry too long is named by its
node). The renderers read the Terms and never change the tape.
"""

from __future__ import annotations

import html
from typing import Iterable

from ..core import Term

#: The most rows and columns a matrix shows (the rest is elided), and the characters of one entry.
SHOW, CELL_CHARS = 12, 40

Grid = list[list["Term | None"]]


def corner(entries: Iterable[tuple[int, int, Term]], shape: tuple[int, int]) -> Grid:
    """The top-left corner that is shown: the Term of each entry, None where zero by structure."""
    grid: Grid = [[None] * min(shape[1], SHOW) for _ in range(min(shape[0], SHOW))]
    for i, j, t in entries:
        if i < SHOW and j < SHOW:
            grid[i][j] = t
    return grid


def one_line(term: Term) -> str:
    """An entry's formula on one line (temporaries joined with ``;``), cut with an ellipsis."""
    text = "; ".join(str(term).splitlines())
    return text if len(text) <= CELL_CHARS else text[:CELL_CHARS - 1] + "…"


def cut(shape: tuple[int, int], nonzeros: int) -> str:
    """What is left out, said under the matrix; empty when all of it is shown."""
    if shape[0] <= SHOW and shape[1] <= SHOW:
        return ""
    return (f"({shape[0]}×{shape[1]}, {nonzeros} nonzeros; showing the first "
            f"{min(shape[0], SHOW)}×{min(shape[1], SHOW)})")


def text(grid: Grid, shape: tuple[int, int], nonzeros: int) -> str:
    texts = [["0" if t is None else one_line(t) for t in row] for row in grid]
    widths = [max((len(row[j]) for row in texts), default=1) for j in range(len(grid[0]) if grid else 0)]
    more = "  …" if shape[1] > SHOW else ""
    lines = ["[" + "  ".join(entry.ljust(w) for entry, w in zip(row, widths)) + more + "]" for row in texts]
    if not lines:
        return f"(empty {shape[0]}×{shape[1]} matrix)"
    if shape[0] > SHOW:
        lines.append(" ⋮")
    note = cut(shape, nonzeros)
    return "\n".join(lines + ([note] if note else []))


def table(grid: Grid, shape: tuple[int, int], heading: str, nonzeros: int) -> str:
    """An HTML table of the shown corner, each cell's tooltip naming its node."""
    more = '<td style="color:#777">…</td>' if shape[1] > SHOW else ""
    rows = ["<tr>" + "".join('<td style="color:#777">0</td>' if t is None else
                             f'<td title="node {t.index}"><code>{html.escape(one_line(t))}</code></td>'
                             for t in row) + more + "</tr>" for row in grid]
    if shape[0] > SHOW:
        rows.append('<tr><td style="color:#777">⋮</td></tr>')
    note = cut(shape, nonzeros)
    note_html = f"<div>{html.escape(note)}</div>" if note else ""
    return (f'<div class="sad-matrix"><div>{html.escape(heading)}</div>'
            f'<table style="border-collapse:collapse">{"".join(rows)}</table>{note_html}</div>')


def latex(grid: Grid, shape: tuple[int, int]) -> str:
    """The shown corner as a LaTeX matrix; an entry too long for one cell is named by its node."""
    done: dict[int, str] = {}

    def cell(t: Term | None) -> str:
        if t is None:
            return "0"
        if t.index not in done:
            formula = "; ".join(str(t).splitlines())
            form = t._repr_latex_().removeprefix("$").removesuffix("$").removeprefix("\\displaystyle ")
            done[t.index] = form if len(formula) <= CELL_CHARS else f"\\text{{node {t.index}}}"
        return done[t.index]

    lines = [" & ".join([cell(t) for t in row] + (["\\cdots"] if shape[1] > SHOW else [])) for row in grid]
    if shape[0] > SHOW:
        lines.append("\\vdots")
    return "$\\left[\\begin{matrix}" + " \\\\ ".join(lines) + "\\end{matrix}\\right]$"
