"""A readable SymPy form of a term: repeated subexpressions as numbered temporaries
(``compact_sympy``), within a time budget where asked (``sympy_form``)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import sympy

from ..budget import budgeted
from ..core import Term


def sympy_form(term: Term, max_chars: int | None = 2000, timeout: float | None = None) -> tuple[str, bool] | None:
    """``compact_sympy(term, max_chars)`` within ``timeout`` seconds (None: no limit), or None
    when SymPy took longer."""
    got, finished = budgeted(_compact_sympy, (term, max_chars), timeout)
    return got[0] if finished else None


def _compact_sympy(term: Term, max_chars: int | None) -> Iterator[tuple[str, bool]]:
    yield compact_sympy(term, max_chars)


def compact_sympy(term: Term, max_chars: int | None = 2000) -> tuple[str, bool]:
    """``term``'s SymPy form with repeated subexpressions as numbered temporaries (``sympy.cse``),
    one per line before the result, and whether it was cut to ``max_chars`` (None: never).
    A high-order derivative printed flat repeats its shared parts exponentially (tanh at order
    14: 160 KB on one line); with temporaries it is about a hundred times shorter.

    >>> from subgraph_ad import Tape, tanh
    >>> tape = Tape(); x = tape.var("x")
    >>> print(compact_sympy(tanh(x).diff(x, 3))[0])
    t0 = tanh(x)**2
    t1 = 1 - t0
    4*t0*t1 - 2*t1**2
    """
    if max_chars is not None and max_chars < 1:
        raise ValueError(f"max_chars must be a positive number of characters or None, got {max_chars!r}")
    expr = term.to_sympy()
    taken = {str(s) for s in expr.free_symbols}
    prefix = next(p for p in ("t", "tmp", "_t", "_tmp") if not any(re.fullmatch(rf"{p}\d+", n) for n in taken))
    temporaries, (result,) = sympy.cse(expr, symbols=sympy.numbered_symbols(prefix))
    lines = [f"{name} = {value}" for name, value in temporaries] + [str(result)]
    text = "\n".join(lines)
    if max_chars is None or len(text) <= max_chars:
        return text, False
    # keep the result line (what the temporaries are for) and as many temporaries as fit before it
    last = lines[-1] if len(lines[-1]) <= max_chars // 2 else lines[-1][: max_chars // 2] + " …"
    kept: list[str] = []
    room = max_chars - len(last)
    for line in lines[:-1]:
        if len(line) + 1 > room:
            break
        kept.append(line)
        room -= len(line) + 1
    skipped = len(lines) - 1 - len(kept)
    middle = [f"… {skipped} more temporar{'y' if skipped == 1 else 'ies'}"] if skipped else []
    return "\n".join(kept + middle + [last]), True
