"""The differentiation view of a node: what every engine's function row asks about node i.

For a function node: its operands with their local partials (``fdiff``, asked once and only
when needed) and what is declared about them — linear in an argument (``Function.linear``),
constant to differentiation (``Function.constant``), a partial that is a gate (a condition,
which selects what it meets instead of multiplying it), and "my derivative runs through g"
(``Function.through``). Forward and reverse subgraphs, Taylor mode and its degree plan, the
operator passes and the numeric modes read these answers here rather than a function's
class, so they cannot disagree about a node.

>>> import subgraph_ad as sad
>>> tape = sad.Tape(); x = tape.var("x", 0.5)
>>> v = view(tape, sad.relu(sad.log(x)).index)
>>> v.gated(0), v.constant, v.linear(0)
(True, False, False)
"""

from __future__ import annotations

from typing import Any, Callable

from ..core.tape import Tape
from ..core.term import Term
from .base import Function, Partial
from .chain_rule import is_gate


class View:
    """Node i of a tape as the engines see it (a function node: ``fn`` is its function)."""

    def __init__(self, tape: Tape, i: int) -> None:
        node = tape.nodes[i]
        self.tape, self.index, self.node = tape, i, node
        self.fn: Function = node.payload
        self.operands: tuple[int, ...] = node.args
        self._partials: tuple[Partial, ...] | None = None

    @property
    def inputs(self) -> tuple[Term, ...]:
        return tuple(Term(self.tape, a) for a in self.operands)

    @property
    def output(self) -> Term:
        return Term(self.tape, self.index)

    @property
    def constant(self) -> bool:
        """Constant to differentiation (a condition, sign, floor): no engine moves it."""
        return self.fn.constant

    def linear(self, k: int) -> bool:
        """f is linear in argument k: the engines apply f itself to that argument's tangent."""
        return self.fn.is_linear(k)

    def partials(self) -> tuple[Partial, ...]:
        """The local partials as Terms (None: a structural zero), from ``fdiff``, built once."""
        if self._partials is None:
            self._partials = self.fn.partials(*self.inputs, self.output)
        return self._partials

    def gated(self, k: int) -> bool:
        """Whether the partial in argument k is a gate (``is_gate``): it selects."""
        return is_gate(self.partials()[k])

    def all_gated(self, degree: Callable[[int], int]) -> bool:
        """Whether every operand that moves (``degree`` > 0) has a gate for its partial, as
        the function declares it (``gates``: read without building this node's partials)."""
        flags = gates(self.fn)
        moving = [k for k, a in enumerate(self.operands) if degree(a) > 0]
        return bool(moving) and all(flags[k] for k in moving)

    def through(self, build: bool = True) -> tuple[Term, Callable[[Any], Any]] | None:
        """(g(u), Q) for a function declared to run through g (its value Q(g(u))): g(u) on the
        tape (appended if ``build``, else only where it is there already), or None."""
        declared = self.fn.through if self.fn.arity == 1 else None
        if declared is None:
            return None
        g, q = declared
        if build:
            return g(Term(self.tape, self.operands[0])), q
        found = self.tape.find("fn", self.operands, g)
        return None if found is None or found >= self.index else (Term(self.tape, found), q)


def view(tape: Tape, i: int) -> View:
    """The differentiation view of function node i."""
    return View(tape, i)


_GATES: dict[Any, tuple[bool, ...]] = {}


def gates(fn: Function) -> tuple[bool, ...]:
    """Per argument, whether ``fn``'s partial there selects: a gate, or a structural zero
    (heaviside in x), for the numeric modes and Taylor mode's plan, which ask without building
    the node's partials: read once from ``fdiff`` on a scratch tape of vars."""
    try:
        return _GATES[fn]
    except KeyError:
        pass
    except TypeError:  # an unhashable function: asked afresh
        return _scratch_gates(fn)
    found = _GATES[fn] = _scratch_gates(fn)
    return found


def _scratch_gates(fn: Function) -> tuple[bool, ...]:
    scratch = Tape(max_nodes=None)
    args = [scratch.var(f"t{k}") for k in range(fn.arity)]
    try:
        parts = fn.partials(*args, scratch.apply(fn, *args))
    except Exception:  # a function known by its numeric grad only: nothing is a gate
        return (False,) * fn.arity
    return tuple(p is None or is_gate(p) for p in parts)
