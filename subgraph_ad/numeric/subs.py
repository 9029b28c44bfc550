"""``term.subs({x: …})`` and ``term.evalf()`` with SymPy's meaning.

``subs`` replaces vars: given a number for every var the term depends on it is that value (a
float, or an array), as SymPy's numeric substitution is a number; otherwise it rebuilds the
term on the same tape with each named var replaced by its Term (or constant), in one walk in
tape order, so the result is an ordinary Term that differentiates, compiles and draws.

>>> from subgraph_ad import Tape, sin
>>> tape = Tape(); x = tape.var("x", 0.5); y = tape.var("y", 2.0)
>>> f = x * y + sin(x)
>>> f.subs({x: 0.0, y: 3.0})
0.0
>>> f.subs({x: y * y}).to_sympy()
y**3 + sin(y**2)
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from ..core import Term, dependencies
from ..core.var_names import var_of
from .modes import evaluate


#: subs(mapping) with no second argument (None is a value one could pass, so a marker of its own).
_ONE: Any = object()


def subs(term: Term, mapping: Any, value: Any = _ONE) -> Any:
    """``term`` with the vars in ``mapping`` (var Terms, SymPy Symbols or names) replaced: a value
    when every var it depends on gets a number, else a new Term. ``subs(x, v)`` is
    ``subs({x: v})``, as in SymPy. Transactional: the tape is left as it was if anything raises."""
    if value is not _ONE:
        mapping = {mapping: value}
    if not isinstance(mapping, Mapping):
        raise TypeError(f"subs() takes a dict {{var: number or Term}}, got {type(mapping).__name__} {mapping!r:.80}")
    tape = term.tape
    replaced: dict[int, Any] = {}
    for key, value in mapping.items():
        var = var_of(tape, key, "subs")
        replaced[tape.check_var(var, "subs key").index] = value
    order = dependencies(tape, [term.index])
    needed = [i for i in order if tape.nodes[i].op == "var"]
    if all(i in replaced and not isinstance(replaced[i], Term) for i in needed):
        return evaluate(term, {Term(tape, i): replaced[i] for i in needed})
    with tape.transaction():
        built: dict[int, Term] = {}
        for i in order:
            node = tape.nodes[i]
            if node.op == "var":
                built[i] = term._lift(replaced[i]) if i in replaced else Term(tape, i)
            elif node.op == "const":
                built[i] = Term(tape, i)
            elif node.op == "fn":
                built[i] = tape.apply(node.payload, *(built[a] for a in node.args))
            else:
                built[i] = tape.op(node.op, *(built[a] for a in node.args))
        return built[term.index]


def evalf(term: Term, n: int = 15, subs: Mapping[Any, Any] | None = None) -> Any:
    """The value to ``n`` significant digits as a SymPy number, SymPy's ``evalf``: the term's
    SymPy form at the vars' current values, overridden by ``subs``."""
    import sympy

    tape = term.tape
    values = {v.name: v.value for v in tape.vars.values() if isinstance(v.value, (int, float, np.floating))}
    for key, value in (subs or {}).items():
        values[key if isinstance(key, str) else tape.check_var(key, "evalf subs key").name] = value
    expr = term.to_sympy()
    return expr.evalf(n, subs={sympy.Symbol(name): sympy.Float(value, n + 5) for name, value in values.items()
                               if name is not None})
