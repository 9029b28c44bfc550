"""Coefficient arithmetic with exact scalars (``core.rationals``): what a Taylor build uses above
``EXACT_ABOVE`` orders, where 1/k! underflows a float and k! overflows, and for a build whose
inputs are exact (``exact_inputs``), whose derivatives are then exactly SymPy's."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Callable, Optional

from ...core import Node, Tape, Term, dependencies
from ...core.ops import exact_value
from ...core.rationals import Q, Exact, fraction, rational
from .coefficients import Arithmetic, Key, Lazy, Raw, to_float

_TINY = 2.0 ** -1022  # the smallest normal float
_STEP = 1000  # a constant factor 2^±1000 of a long chain (ExactArithmetic.scale): normal floats

#: An exact scalar's memory: a Fraction and its two ints, and their digits, 30 bits in 4 bytes
#: (6 bits a byte leaves room for the big ints' allocator: sin(x).diff(x, 100_000) meets the
#: default budget at a peak of 4.7 GB resident when counted at 8).
FRACTION_BYTES = 120
BITS_PER_BYTE = 6


def exact_inputs(tape: Tape, roots: list[int], numbers: list[object]) -> bool:
    """Whether a build from the nodes ``roots`` and the seed components ``numbers`` has exact
    inputs: every constant under the roots has an exact value (a plain or recorded Fraction, or
    an exact form such as pi), and every number is an int, a Fraction or a plain float."""
    nodes = tape.nodes
    for i in dependencies(tape, roots):
        if nodes[i].op == "const" and exact_value(nodes[i]) is None:
            return False
    return all(isinstance(v, (int, Fraction)) or exact_value(Node("const", (), float(v))) is not None  # type: ignore[arg-type]
               for v in numbers)


class ExactArithmetic(Arithmetic[Exact]):
    """The same arithmetic with exact scalars (``core.rationals``), for builds above
    ``EXACT_ABOVE`` and for builds from exact inputs (``keep``).

    Without ``keep``, every float that enters a scalar (the payloads ``canon`` folds in, the
    factors of products) is made exact first (``rational``: the types do not mix with floats); a
    scalar becomes a float only as the value of a constant node (``to_float``), and constants are
    looked up by that float. With ``keep``, only constants with a Fraction value fold into scalars (pi,
    log(2) and floats known only as floats stay nodes), and each constant made records its
    scalar as its exact value."""

    def __init__(self, tape: Tape, negated: Callable[[int], Optional[int]], keep: bool = False) -> None:
        super().__init__(tape, negated)
        self.keep = keep

    def canon(self, value: Raw[Exact]) -> Lazy[Exact]:
        """``Arithmetic.canon`` with exact scalars, each held against the tape's budget: a series
        keeps the canonical value of every coefficient until its build ends."""
        found = self._canon(value)
        if found is not None:
            num, den = found[0].numerator, found[0].denominator
            self.tape.hold(FRACTION_BYTES + (num.bit_length() + den.bit_length()) // BITS_PER_BYTE, "an exact scalar")
        return found

    def _canon(self, value: Raw[Exact]) -> Lazy[Exact]:
        if value is None:
            return None
        c = rational(value[0])
        t = value[1]
        nodes = self.tape.nodes
        while t is not None:
            node = nodes[t]
            if node.op == "const":
                number = self.number(node)
                if number is None:  # ±inf, nan, pi: stays a node
                    break
                c *= number
                return (c, None) if c != 0 else None
            if node.op == "neg":
                c, t = -c, node.args[0]
            elif node.op == "fn" and self.negated(t) is not None:
                c, t = -c, self.negated(t)
            elif node.op == "mul" and nodes[node.args[0]].op == "const" and self.number(nodes[node.args[0]]) is not None:
                c, t = c * self.number(nodes[node.args[0]]), node.args[1]
            else:
                break
        return c, t

    def number(self, node: Node) -> Optional[Exact]:
        """A constant node's value as a scalar, or None for one that stays a node: not finite,
        or with ``keep`` not a Exact (pi, or a float known only as a float)."""
        if self.keep:
            exact = exact_value(node)
            return rational(exact) if isinstance(exact, Fraction) else None
        return rational(node.payload) if math.isfinite(node.payload) else None

    def constant(self, c: float | Exact) -> int:
        value = to_float(c)
        key = c if self.keep else value
        node = self.constants.get(key)
        if node is None:
            node = self.constants[key] = self.tape.constant(value, fraction(rational(c)) if self.keep else ...)
        return node

    def scale(self, c: Exact, t: int) -> int:
        """c·T; a c beyond the normal floats (k!, 1/k!, …) as a chain of factors all above 1 or
        all below 1 in magnitude: each partial product lies between T and c·T, so none
        overflows or underflows unless T or c·T does."""
        found = self.scaled.get((c, t))
        if found is not None:
            return found
        value = to_float(c)
        if _TINY <= abs(value) < math.inf:
            return super().scale(c, t)
        key = (c, t)
        if key not in self.scaled:
            node, sign = t, 1 if c > 0 else -1
            c = abs(c)
            step = Q(2) ** (_STEP if c > 1 else -_STEP)
            while not _TINY <= to_float(c) < math.inf:
                node, c = self.tape.intern(Node("mul", (self.constant(step), node))), c / step
            self.scaled[key] = self.tape.intern(Node("mul", (self.constant(sign * c), node)))  # unfolded
        return self.scaled[key]

    def operand(self, c: Exact, t: int, key: Key) -> tuple[Exact, int]:
        if c.denominator == 1 and c.numerator in (1, -1):  # abs(c) == 1 without a new Fraction
            return c, t
        if self.uses.get(key, 0) >= 2 and _TINY <= abs(to_float(c)) < math.inf:  # the sign by comparison: copysign would round c first
            return Q(1 if c > 0 else -1), self.scale(abs(c), t)
        return self.reuse(c, t)

    def reuse(self, c: Exact, t: int, times: Exact = Q(1)) -> tuple[Exact, int]:
        shared = self.scaled.get((abs(c), t)) if c.denominator != 1 or c.numerator not in (1, -1) else None
        return (times * c, t) if shared is None else (times if c.numerator > 0 else -times, shared)

    def product(self, a: Lazy[Exact], ka: Key, b: Lazy[Exact], kb: Key,
                factor: float | Exact) -> Lazy[Exact]:
        factor = rational(factor)
        if self.keep and a is not None and b is not None and a[1] is not None and b[1] is not None:
            nodes = self.tape.nodes
            if nodes[a[1]].op == "const" or nodes[b[1]].op == "const":  # log(2), pi: folded as Terms are
                return a[0] * b[0] * factor, self.tape.append("mul", (a[1], b[1]))
        return super().product(a, ka, b, kb, factor)

    def materialize(self, value: Lazy[Exact], factor: int | Exact) -> Optional[Term]:
        if value is None:
            return None
        c, t = value
        c = c * factor
        if t is None:
            return Term(self.tape, self.constant(c))
        if c == 1:
            return Term(self.tape, t)
        if c == -1:
            return -Term(self.tape, t)
        return Term(self.tape, self.scale(c, t))


__all__ = ["ExactArithmetic", "exact_inputs"]
