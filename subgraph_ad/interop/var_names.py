"""One way to name a var, in both directions of the SymPy bridge: the var's Term, the SymPy
Symbol of its name (what ``to_sympy`` makes of it) or the name itself. ``subs``, ``diff``,
``check_against_sympy`` and ``lambdify`` all resolve their vars here, and ``from_sympy`` builds
an expression on a new tape unless one is given.

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


def is_symbol(key: Any) -> bool:
    """A SymPy Symbol (told by SymPy's own flag, so SymPy is not imported to ask)."""
    return getattr(key, "is_Symbol", False) is True and isinstance(getattr(key, "name", None), str)


def var_of(tape: Tape, key: Any, caller: str) -> Any:
    """The var of ``tape`` that ``key`` names when it is a name or a SymPy Symbol; anything else
    as it is (the caller checks Terms and refuses the rest)."""
    if not (isinstance(key, str) or is_symbol(key)):
        return key
    name = key if isinstance(key, str) else key.name
    var = tape.find_var(name)
    if var is None:
        given = f"the name {name!r}" if isinstance(key, str) else f"the SymPy symbol {name!r}"
        raise ValueError(f"{caller}(): {given} names no var of this tape; vars are {list(tape.vars)}")
    return var


def vars_of(tape: Tape, keys: Any, caller: str) -> Any:
    """``keys`` (one key or a list or tuple of them) with each name and Symbol resolved."""
    if isinstance(keys, (list, tuple)):
        return type(keys)(var_of(tape, k, caller) for k in keys)
    return var_of(tape, keys, caller)


def tape_of(items: Any) -> Tape | None:
    """The tape of the first Term in ``items`` (a Term or a list or tuple), None without one."""
    for item in items if isinstance(items, (list, tuple)) else [items]:
        if isinstance(item, Term):
            return item.tape
    return None


def from_sympy(expr: Any, tape: Tape | None = None) -> Term:
    """``expr`` (a SymPy expression, or what ``sympy.sympify`` takes) as a Term: on ``tape``,
    reusing its vars by name, or on a new tape. Transactional, as ``Tape.from_sympy``."""
    if tape is not None and not isinstance(tape, Tape):
        raise TypeError(f"from_sympy(): tape must be a Tape or None, got {type(tape).__name__} {tape!r:.80}")
    from .sympy_bridge import from_sympy as build

    return build(expr, Tape() if tape is None else tape)
