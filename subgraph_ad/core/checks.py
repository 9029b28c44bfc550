"""The arguments every public entry takes, checked in one place: derivative specs, counts and
orders, Terms or lists of Terms, method names.

Each check returns the argument in the form its callers use, or raises a TypeError/ValueError
that names the caller, what was given and what is expected, before anything is built.

>>> from subgraph_ad import Tape
>>> tape = Tape(); x = tape.var("x"); y = tape.var("y")
>>> [v.name for v in diff_spec((x, 2, y), "diff")]
['x', 'x', 'y']
>>> count(3, "order", "diff")
3
"""

from __future__ import annotations

from typing import Any, Sequence

from .term import Term


def count(value: Any, what: str, caller: str, low: int = 0) -> int:
    """``value`` if it is an int (not a bool) of at least ``low``: an order, a number of
    samples or steps."""
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{caller}: {what} must be an int >= {low}, got {value!r}")
    return value


def diff_spec(args: Sequence[Any], caller: str = "diff", tape: Any = None) -> list[Term]:
    """SymPy-style ``(x, 3, y)`` -> ``[x, x, x, y]``: vars of one tape, each optionally followed
    by how many times (a count of 0 drops it). With the ``tape``, a SymPy Symbol or a name stands
    for the var of that name (``sympy.diff(term, X)`` calls ``term.diff(X)``)."""
    if tape is not None:
        args = [_by_name(a, tape, caller) for a in args]
    if not args:
        raise TypeError(f"{caller}() needs at least one var, e.g. z.diff(x) or z.diff(x, 2, y)")
    out: list[Term] = []
    for i, a in enumerate(args):
        if isinstance(a, Term):
            out.append(a.tape.check_var(a, "wrt"))
        elif isinstance(a, int) and not isinstance(a, bool):
            if i == 0 or not isinstance(args[i - 1], Term):
                raise TypeError(f"{caller}(): the count {a} at position {i} must follow a var")
            if a < 0:
                raise ValueError(f"{caller}(): a derivative order must be >= 0, got {a}")
            out.extend([out[-1]] * (a - 1))
            if a == 0:
                out.pop()
        else:
            raise TypeError(f"{caller}() takes vars and int counts, got {type(a).__name__} {a!r} at position {i}")
    return out


def _by_name(arg: Any, tape: Any, caller: str) -> Any:
    """A SymPy Symbol or a name as the var of that name on ``tape`` (anything else as it is)."""
    symbol = getattr(arg, "is_Symbol", False) is True
    if not (symbol or isinstance(arg, str)):
        return arg
    name = arg.name if symbol else arg
    var = tape.find_var(name)
    if var is None:
        given = f"the SymPy symbol {name!r}" if symbol else f"the name {name!r}"
        raise ValueError(f"{caller}(): {given} names no var of this tape; vars are {list(tape.vars)}")
    return var


def terms(items: Any, what: str, caller: str) -> tuple[list[Term], bool]:
    """A Term or a non-empty list of Terms of one tape, as a list, and whether it was one Term."""
    if isinstance(items, Term):
        return [items], True
    if isinstance(items, (list, tuple)) and items and all(isinstance(t, Term) for t in items):
        for t in items:
            items[0]._lift(t)  # one tape, or a ValueError naming both
        return list(items), False
    raise TypeError(f"{caller}: {what} must be a Term or a non-empty list of Terms, got "
                    f"{type(items).__name__} {items!r:.200}")


def choice(value: Any, what: str, choices: Sequence[str], caller: str) -> str:
    """``value`` if it is one of ``choices``."""
    if not isinstance(value, str) or value not in choices:
        names = [repr(c) for c in choices]
        listed = ", ".join(names[:-1]) + " or " + names[-1] if len(names) > 1 else names[0]
        raise ValueError(f"{caller}: {what} must be {listed}, got {value!r}")
    return value
