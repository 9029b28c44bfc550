"""How a ``through`` declaration (f = Q(g(u))) is differentiated: ``Dual`` carries a value and its
tangent through Q, and ``slope`` gives Q′(g) as a node of g alone where it needs one."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from ..core.tape import Tape
from ..core.term import Term
from .chain_rule import add_optional, chain

if TYPE_CHECKING:
    from .base import Function


class Dual:
    """A value and its tangent (None: zero) carried through arithmetic and functions: how a
    ``through`` declaration's Q is differentiated, on Terms, numbers or Duals of them, by the
    same local derivatives every engine reads."""

    def __init__(self, value: Any, tangent: Any) -> None:
        self.value, self.tangent = value, tangent

    @staticmethod
    def apply(fn: Function, args: Sequence[Any]) -> Dual:
        values = [a.value if isinstance(a, Dual) else a for a in args]
        out = fn(*values)
        found = fn.fdiff(*values, out)
        parts = (found,) if fn.arity == 1 else tuple(found)
        total = None
        for a, p in zip(args, parts):
            if isinstance(a, Dual):
                total = add_optional(total, chain(p, a.tangent))
        return Dual(out, total)

    def _pair(self, other: Any) -> tuple[Any, Any]:
        return (other.value, other.tangent) if isinstance(other, Dual) else (other, None)

    def __add__(self, other: Any) -> Dual:
        v, t = self._pair(other)
        return Dual(self.value + v, add_optional(self.tangent, t))

    __radd__ = __add__

    def __neg__(self) -> Dual:
        return Dual(-self.value, None if self.tangent is None else -self.tangent)

    def __sub__(self, other: Any) -> Dual:
        v, t = self._pair(other)
        return Dual(self.value - v, add_optional(self.tangent, None if t is None else -t))

    def __rsub__(self, other: Any) -> Dual:
        return (-self).__add__(other)

    def __mul__(self, other: Any) -> Dual:
        v, t = self._pair(other)
        return Dual(self.value * v, add_optional(chain(v, self.tangent), chain(self.value, t)))

    __rmul__ = __mul__

    def __truediv__(self, other: Any) -> Dual:
        v, t = self._pair(other)
        out = self.value / v
        return Dual(out, add_optional(self.tangent, None if t is None else -(out * t)) / v
                    if (self.tangent is not None or t is not None) else None)

    def __pow__(self, p: float) -> Dual:
        return Dual(self.value ** p, chain(p * self.value ** (p - 1), self.tangent))


_SCALED: dict[Any, bool] = {}


def slope(fn: Function, g: Term) -> Term | None:
    """Q′(g) for ``fn`` declared ``through`` (g, Q), as a node of g alone, where it needs one
    besides g (σ′ = ¼ − (σ − ½)²: −2·(σ − ½)). The local partial Q′(g)·g′(u) (``fdiff``) and
    the reverse adjoint bar·Q′(g) multiply it in, so every later pass meets that node again
    (4 repeated ``grad_graph`` passes of σ: 18 nodes, against 23 with Q′ written out through
    the tangent and the adjoint). None where Q′(g) is a constant times g (tanh′ = 1 − tanh²:
    −2·tanh): there the constant goes with the tangent, as Q(g) written out puts it (F4's 10th
    repeated ``grad_graph``: 18,359 nodes, against 19,833 for bar·(−2·tanh) and (−2·tanh)·g′))."""
    if _scaled(fn):
        return None
    return fn.through[1](Dual(g, 1.0)).tangent  # type: ignore[index, no-any-return]


def _scaled(fn: Function) -> bool:
    """Whether Q′(g) of ``fn``'s ``through`` is c·g: read once per function on a scratch tape."""
    try:
        return _SCALED[fn]
    except KeyError:
        pass
    except TypeError:  # an unhashable function: asked afresh
        return _scratch_scaled(fn)
    found = _SCALED[fn] = _scratch_scaled(fn)
    return found


def _scratch_scaled(fn: Function) -> bool:
    scratch = Tape(max_nodes=None)
    g = scratch.var("g")
    found = fn.through[1](Dual(g, 1.0)).tangent  # type: ignore[index]
    nodes, i = scratch.nodes, int(found.index)
    while nodes[i].op == "neg" or (nodes[i].op == "mul" and nodes[nodes[i].args[0]].op == "const"):
        i = nodes[i].args[-1]
    return i == g.index
