"""The Taylor coefficients of the nodes of one tape along one var, built on demand."""

from __future__ import annotations

from typing import Optional

from ...core import Tape, Term
from .coefficients import Arithmetic, ExactArithmetic, Lazy
from .plan import Degrees, plan
from .recurrences import COMPUTE, FORMS, PRODUCTS, Form, Product


class Series:
    """What one build knows: the degree bound and form of each node it met, the plan's products,
    and the coefficients computed so far, ``coef[(node, k)]`` (canonical lazy values; absent:
    zero or above the degree bound)."""

    def __init__(self, tape: Tape, wrt: int, exact: bool = False) -> None:
        self.tape = tape
        self.wrt = wrt
        self.degree = Degrees(tape, wrt)
        self.arith = (ExactArithmetic if exact else Arithmetic)(tape, self.negated)
        self.forms: dict[int, Form] = {}
        self.aliases: dict[int, Optional[int]] = {}
        self.terms: dict[tuple[int, int], list[Product]] = {}  # the products a coefficient sums
        self.coef: dict[tuple[int, int], Lazy] = {}
        self.base: dict[int, Lazy] = {}  # coefficient 0, canonical

    def negated(self, i: int) -> Optional[int]:
        """For a function node f(u) with f = −g (−sin of sin: ``negative_of``) the node g(u):
        its coefficients are g's, with the sign in the scalar."""
        if i in self.aliases:
            return self.aliases[i]
        node = self.tape.nodes[i]
        g = node.payload.negative_of if node.op == "fn" and node.payload.arity == 1 else None
        if g is None:  # not cached: nodes a pruned scope renumbers must leave no stale entry
            return None
        self.aliases[i] = g(Term(self.tape, node.args[0])).index
        return self.aliases[i]

    def form(self, i: int) -> Form:
        """How the coefficients of node i are computed, worked out once per node."""
        found = self.forms.get(i)
        if found is not None:
            return found
        node = self.tape.nodes[i]
        if node.op == "var" and i == self.wrt:
            found = ("var",)
        elif node.op in ("var", "const") or self.degree(i) == 0:
            found = ("zero",)
        else:
            found = FORMS[node.op](self, i, node)
        self.degree(len(self.tape.nodes) - 1)  # and of any node the form appended (g)
        self.forms[i] = found
        return found

    def products(self, form: Form, i: int, k: int) -> list[Product]:
        """The products that coefficient k of node i sums."""
        return self.arith.planned(PRODUCTS[form[0]](self, form, i, k))

    def get(self, i: int, k: int) -> Lazy:
        """Coefficient k of node i in canonical form (see ``Arithmetic.canon``), or None for zero."""
        if k:
            return self.coef.get((i, k))
        if i not in self.base:
            self.base[i] = self.arith.canon((1.0, i))
        return self.base[i]

    def run(self, root: int, wanted: range, base_order: int) -> None:
        """Fill coef[(root, k)] for the wanted orders k and everything they need, iteratively (no
        recursion), each node tagged with the derivative order that first needed it. Runs inside
        the caller's transaction, which undoes it all and restores the order tag."""
        tape, get, arith = self.tape, self.get, self.arith
        tape.tag(base_order + 1)
        for i, k in plan(self, root, wanted):
            tape.tag(base_order + k)
            form = self.forms[i]  # settled by the plan
            terms = [arith.product(get(*ka), ka, get(*kb), kb, f) for ka, kb, f in self.terms.get((i, k), ())]
            self.coef[(i, k)] = arith.canon(COMPUTE[form[0]](self, form, i, k, terms))
