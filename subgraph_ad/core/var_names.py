"""A var named three ways: its Term, the SymPy Symbol of its name (what ``to_sympy`` makes of
it) or the name itself. ``subs``, ``diff``, ``check_against_sympy`` and ``lambdify`` resolve
their vars here; SymPy is never imported to do it."""

from __future__ import annotations

from typing import Any

from .tape import Tape


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
