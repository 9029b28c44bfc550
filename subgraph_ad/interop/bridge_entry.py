"""The SymPy bridge's way in from the top: ``from_sympy`` builds an expression on a new tape
unless one is given, and its vars can then be named by Term, SymPy Symbol or name alike
(``subs``, ``diff``, ``check_against_sympy`` and ``lambdify`` resolve them in ``core.var_names``).

>>> import sympy, subgraph_ad as sad
>>> X = sympy.Symbol("x")
>>> f = sad.from_sympy(sympy.sin(X) * X)
>>> f.diff(X).to_sympy() == f.diff("x").to_sympy() == sympy.diff(sympy.sin(X) * X, X)
True
>>> f.subs(X, 2.0) == f.subs({"x": 2.0}) == f.subs({f.tape.vars["x"]: 2.0})
True
"""

from __future__ import annotations

from typing import Any

from ..core import Tape, Term


def from_sympy(expr: Any, tape: Tape | None = None) -> Term:
    """``expr`` (a SymPy expression, or what ``sympy.sympify`` takes) as a Term: on ``tape``,
    reusing its vars by name, or on a new tape. Transactional, as ``Tape.from_sympy``."""
    if tape is not None and not isinstance(tape, Tape):
        raise TypeError(f"from_sympy(): tape must be a Tape or None, got {type(tape).__name__} {tape!r:.80}")
    from .sympy_bridge import from_sympy as build

    return build(expr, Tape() if tape is None else tape)
