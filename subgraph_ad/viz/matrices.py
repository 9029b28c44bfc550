"""Showing a matrix of Terms, as ``hessian`` and ``jacobian`` return it: rows of Terms (a list,
which cannot get display methods of its own) become a ``Sparse``, which prints as the matrix of
formulas and shows as a table or in LaTeX in a notebook.

>>> from subgraph_ad import Tape, hessian
>>> tape = Tape(); x = tape.var("x", 1.0); y = tape.var("y", 2.0)
>>> print(matrix(hessian(x**2 * y, [x, y])))
[2*y  2*x]
[2*x  0  ]
"""

from __future__ import annotations

from typing import Any

from ..ad.matrices import Sparse
from ..core import Term


def matrix(rows: Any) -> Sparse:
    """``rows`` (a list of equal-length lists of Terms on one tape) as a ``Sparse`` of its
    entries that are not the constant 0; reads the tape and never changes it."""
    if isinstance(rows, Sparse):
        return rows
    if not isinstance(rows, (list, tuple)) or not rows or not all(isinstance(r, (list, tuple)) for r in rows):
        raise TypeError(f"matrix() takes rows of Terms (a non-empty list of lists, as hessian returns), "
                        f"got {type(rows).__name__} {rows!r:.80}")
    width = len(rows[0])
    for k, row in enumerate(rows):
        if len(row) != width:
            raise ValueError(f"matrix() needs rows of one length: row 0 has {width} entries, row {k} has {len(row)}")
        for t in row:
            if not isinstance(t, Term):
                raise TypeError(f"matrix() takes Terms, got {type(t).__name__} {t!r:.80} in row {k}")
            if t.tape is not rows[0][0].tape:
                raise ValueError(f"matrix() needs Terms of one tape, got {t!r} of another tape in row {k}")
    found = [(i, j, t) for i, row in enumerate(rows) for j, t in enumerate(row)
             if not (t.node.op == "const" and t.node.payload == 0.0)]
    return Sparse(tuple(i for i, _, _ in found), tuple(j for _, j, _ in found), tuple(t for _, _, t in found),
                  (len(rows), width))
