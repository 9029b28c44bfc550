"""Linear combinations of nodes with number coefficients (``Lin``), the values every operator
pass propagates, and the nodes they become (``Algebra``)."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Iterator, Optional, Union

from ...core import Tape, Term
from ...core.ops import exact_value


Scalar = Union[Fraction, float]
#: A value: Σ c·T over nodes T (index; None: the constant 1) with number coefficients c;
#: None is a structural zero.
Lin = Optional[dict]
#: A sum of more terms than this becomes one node (an add chain over n terms stays O(n)).
MAX_TERMS = 64
ONE = Fraction(1)


def bits(mask: int) -> Iterator[int]:
    """The positions of the set bits of ``mask``, ascending."""
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


class Algebra:
    """Linear combinations of nodes with number coefficients, and the nodes they become.

    Constant factors and signs of a node (3·T, −T) move into the coefficient (``canon``);
    coefficients are Fractions while exact, floats otherwise. ``squares`` names the node that
    already is T·T (T ** 2 in u), so a pairing's squares meet u's own."""

    def __init__(self, tape: Tape) -> None:
        self.tape = tape
        self.made: dict[tuple, Term] = {}
        self.squares: dict[int, int] = {}

    def number(self, i: int) -> Optional[Scalar]:
        """The value of the constant node i as a coefficient: a Fraction, or a finite float;
        None for one that stays a node (pi, log(2), inf, nan: exact forms and IEEE at run time)."""
        node = self.tape.nodes[i]
        exact = exact_value(node)
        if isinstance(exact, Fraction):
            return exact
        return node.payload if exact is None and math.isfinite(node.payload) else None

    def canon(self, i: int) -> tuple[Scalar, Optional[int]]:
        """Node i as c·T with T free of constant factors and signs (T None: the number c)."""
        c: Scalar = ONE
        nodes = self.tape.nodes
        while True:
            node = nodes[i]
            if node.op == "const":
                value = self.number(i)
                if value is not None and math.isfinite(c * value):
                    return c * value, None
                return c, i
            if node.op == "neg":
                c, i = -c, node.args[0]
                continue
            if node.op == "fn" and node.payload.arity == 1 and node.payload.negative_of is not None:
                # −sin(u) (cos′) as −1 times the sin(u) u has: f = −g reads g's node
                c, i = -c, node.payload.negative_of(Term(self.tape, node.args[0])).index
                continue
            if node.op == "mul" and nodes[node.args[0]].op == "const":
                value = self.number(node.args[0])
                if value is not None and math.isfinite(c * value):
                    c, i = c * value, node.args[1]
                    continue
            return c, i

    def of(self, term: Term | int | None) -> Lin:
        """A node (Term or index; None: zero) as a Lin."""
        if term is None:
            return None
        c, t = self.canon(term.index if isinstance(term, Term) else term)
        return None if c == 0 else {t: c}

    def constant(self, c: Scalar) -> Lin:
        return None if c == 0 else {None: c}

    def add(self, a: Lin, b: Lin) -> Lin:
        if a is None:
            return b
        if b is None:
            return a
        out = dict(a)
        self.accumulate(out, b)
        if not out:
            return None
        return self.of(self.make(out)) if len(out) > MAX_TERMS else out

    def accumulate(self, total: dict, b: Lin) -> None:
        """total += b, in place (a sum this caller owns)."""
        if b is None:
            return
        for k, c in b.items():
            s = total.get(k, 0) + c
            if s == 0:
                total.pop(k, None)
            else:
                total[k] = s

    def scale(self, a: Lin, c: Scalar) -> Lin:
        if a is None or c == 0:
            return None
        return {k: v * c for k, v in a.items()}

    def single(self, a: dict) -> dict:
        """``a`` with at most one node besides its constant: more become one node first."""
        if len(a) > 2 or (len(a) == 2 and None not in a):
            c, t = self.canon(self.make(a).index)  # type: ignore[union-attr]
            return {t: c}
        return a

    def product(self, i: int, j: int) -> tuple[Scalar, Optional[int]]:
        """The node i·j as c·T; a square u has (T ** 2) is reused."""
        if i == j and i in self.squares:
            return self.canon(self.squares[i])
        return self.canon((Term(self.tape, i) * Term(self.tape, j)).index)

    def mul(self, a: Lin, b: Lin) -> Lin:
        if a is None or b is None:
            return None
        out: dict = {}
        for ka, ca in self.single(a).items():
            for kb, cb in self.single(b).items():
                if ka is None or kb is None:
                    c, k = ca * cb, (kb if ka is None else ka)
                else:
                    c0, k = self.product(ka, kb)
                    c = ca * cb * c0
                self.accumulate(out, None if c == 0 else {k: c})
        return out or None

    def div(self, a: Lin, b: int) -> Lin:
        """a / node b: (c·T)/b = c·(T/b), and c/b = c·(1/b)."""
        if a is None:
            return None
        out: dict = {}
        for k, c in self.single(a).items():
            numerator = self.tape.const(1) if k is None else Term(self.tape, k)
            c0, t = self.canon((numerator / Term(self.tape, b)).index)
            self.accumulate(out, None if c * c0 == 0 else {t: c * c0})
        return out or None

    def make(self, a: Lin) -> Optional[Term]:
        """The node(s) of a Lin (None for zero): its terms summed by coefficient — each group in
        tape order, so that a sum u already has is met — scaled once per group."""
        if a is None:
            return None
        key = tuple(sorted(a.items(), key=lambda kv: -1 if kv[0] is None else kv[0]))
        found = self.made.get(key)
        if found is not None:
            return found
        tape = self.tape
        groups: dict[Scalar, list[int]] = {}
        for k, c in key:
            if k is not None:
                groups.setdefault(c, []).append(k)
        total: Optional[Term] = None
        for c, ks in groups.items():
            part = Term(tape, ks[0])
            for k in ks[1:]:
                part = part + Term(tape, k)
            if total is None:
                total = c * part
            elif c < 0:
                total = total - (-c) * part
            else:
                total = total + c * part
        const = a.get(None)
        if const is not None:
            total = tape.const(const) if total is None else total + const
        self.made[key] = total  # type: ignore[assignment]
        return total

    def term(self, a: Lin) -> Term:
        """``make``, with the tape's 0 for a structural zero."""
        made = self.make(a)
        return self.tape.zero if made is None else made
