"""Showing rows of Terms as a matrix: ``hessian`` and ``jacobian`` already return a ``Dense`` (or
a ``Sparse``), which prints as the matrix of formulas and shows as a table or in LaTeX in a
notebook; ``matrix`` gives rows of Terms built by hand the same display.

>>> from subgraph_ad import Tape, hessian
>>> tape = Tape(); x = tape.var("x", 1.0); y = tape.var("y", 2.0)
>>> print(matrix(hessian(x**2 * y, [x, y])))
[2*y  2*x]
[2*x  0  ]
"""

from __future__ import annotations

from typing import Any

from ..ad.matrices import Dense, Sparse
from ..core import Term


def matrix(rows: Any) -> Dense | Sparse:
    """``rows`` (a list of equal-length lists of Terms on one tape) as a ``Dense`` matrix, the
    same Terms; a ``Sparse`` or ``Dense`` as it is. Reads the tape and never changes it."""
    if isinstance(rows, (Sparse, Dense)):
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
    return Dense(list(row) for row in rows)
