"""Coefficient arithmetic: Taylor coefficients as lazy values c·T on the tape.

A coefficient is ``(c, t)``: a Python float c times the node t (t None: the plain number c),
or None for a structural zero (``FloatArithmetic``). Above ``EXACT_ABOVE`` orders c is a
exact rational instead (``exact.ExactArithmetic``, ``core.rationals``): 1/k! underflows a float near k = 180 and k! overflows at 171, while the
exact scalar k!·(1/k!) is 1; only the constants that become nodes are rounded (``to_float``). Signs, the 1/k, j and k! factors of the recurrences and the
constant factors of nodes live in c, so they cost no nodes until a sum needs a constant it does
not share with its other terms (``total``) or a result is written out (``materialize``).

A build whose inputs are exact (``exact.exact_inputs``: every constant it starts from has an exact
value, as ``x / 3`` has 1/3) keeps its scalars exact at every order, and each constant it
makes records its exact value (``ExactArithmetic(keep=True)``): its derivatives are then exactly
SymPy's, 1/3 and 9/40 rather than 0.333… and 0.22499…, while evaluation sees the same floats.
All nodes are built through the tape's public builder (``append``, ``intern``, ``constant``).

Memory. A build's plan (``planned``) and its exact scalars are held against the tape's node
budget (``Tape.hold``): the plan is made before any node is appended, and an exact scalar near
1/k! takes about k·log2(k)/8 bytes, so sin(x).diff(x, 100_000) would hold 10 GB of them while
appending three nodes. Either stops with LimitError when the budget says so.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import Callable, Generic, Optional, TypeVar, Union


from ...core import Node, Tape, Term
from ...core.rationals import Exact

#: The scalar c of a coefficient: a float, or an exact rational (``core.rationals``) in exact builds.
Scalar = TypeVar("Scalar", float, Exact)
#: A coefficient value c·T held as (c, index of T); index None means the plain number c.
Lazy = Optional[tuple[Scalar, Optional[int]]]
#: A value before ``canon``: its scalar may still be a float (a sign, 1.0) in an exact build.
Raw = Optional[tuple[Union[float, Scalar], Optional[int]]]
#: A coefficient named by (node, order).
Key = tuple[int, int]
#: Builds up to this order keep float scalars (fast; 1/k! and k! are finite floats well past it);
#: above it the scalars are exact (``ExactArithmetic``). Node counts below it are pinned by tests.
EXACT_ABOVE = 150
#: The memory a planned product holds until its build ends (its tuple, its two keys, its entry in
#: a list: 195–246 bytes allocated, by tracemalloc, and about a fifth more resident), and a
#: planned coefficient besides its products (its entries in the plan's and the series' tables,
#: its value), held against the budget (``planned``); set so that a build that meets its budget
#: has used at most about ``NODE_BYTES`` per node of it (tests/core/test_memory.py).
PRODUCT_BYTES = 300
COEFFICIENT_BYTES = 500

Planned = TypeVar("Planned", bound=list)


def to_float(c: float | Exact) -> float:
    """A scalar as the float of a constant node: a Fraction too large is ±inf (not an
    OverflowError), one too small is ±0.0."""
    if type(c) is float:
        return c
    try:
        return float(c)
    except OverflowError:
        return math.inf if c > 0 else -math.inf


def snap(c: Scalar) -> Scalar:
    """Scalars are products of 1/k, j and k! in floating point, so k!·(1/k!) may come out as
    1.0000000000000002. Within a few ulps of a whole number it is that number, and needs no
    constant node of its own (what snapping changes is the rounding error itself)."""
    if type(c) is not float or not math.isfinite(c):  # exact, or nothing to round to
        return c
    r = round(c)
    return float(r) if r != c and abs(c - r) <= 1e-15 * abs(c) else c  # 1e-15: about 4 ulps


class Arithmetic(ABC, Generic[Scalar]):
    """Sums, products, quotients and scaling of lazy coefficients, sharing the nodes they make,
    written once for both kinds of scalar; ``FloatArithmetic`` and ``ExactArithmetic`` say how a
    scalar enters (``canon``), becomes a node (``constant``) and leaves (``materialize``).

    ``negated(i)`` names the node that node i is the negative of (−sin(u) of sin(u)), or None;
    ``uses`` counts, per coefficient, the products that read it (set by the plan).
    """

    def __init__(self, tape: Tape, negated: Callable[[int], Optional[int]]) -> None:
        self.tape = tape
        self.negated = negated
        self.uses: dict[Key, int] = {}
        self.constants: dict[float | Exact, int] = {}  # value (never 0) -> its node
        self.inverses: dict[int, int] = {}  # node -> the node 1/node
        self.scaled: dict[tuple[Scalar, int], int] = {}  # (c, T) -> the node c·T

    def planned(self, products: Planned) -> Planned:
        """The ``products`` of one planned coefficient, their memory and the coefficient's held
        against the tape's budget until the build ends (``Tape.hold``)."""
        self.tape.hold(COEFFICIENT_BYTES + PRODUCT_BYTES * len(products), "planning a Taylor coefficient")
        return products

    @abstractmethod
    def canon(self, value: Raw[Scalar]) -> Lazy[Scalar]:
        """Move constant factors and signs of the Term into the scalar: -A, 3·A -> (c, A). A
        constant that is not finite, or would make the scalar so (log(0)·b), stays a node, so
        that 0·inf is nan where it is evaluated, not an exception while building."""

    @abstractmethod
    def constant(self, c: Union[float, Scalar]) -> int:
        """The node of a non-zero constant, looked up once per value."""

    def scale(self, c: Scalar, t: int) -> int:
        """The node c·T, made once per (c, T)."""
        key = (c, t)
        if key not in self.scaled:
            nodes = self.tape.nodes
            if nodes[t].op == "mul" and nodes[nodes[t].args[0]].op == "const":  # a shared c'·T
                self.scaled[key] = self.tape.append("mul", (self.constant(c), t))
            else:  # t canonical: no constant factor, no sign, so no folding rule applies
                self.scaled[key] = self.tape.intern(Node("mul", (self.constant(c), t)))
        return self.scaled[key]

    @abstractmethod
    def operand(self, c: Scalar, t: int, key: Key) -> tuple[Scalar, int]:
        """A Term factor c·T of a product. One used in two or more products (counted by the plan)
        becomes the shared node |c|·T, so the products' scalars agree and their sums need no
        scale node per term; otherwise an existing shared node is reused."""

    @abstractmethod
    def reuse(self, c: Scalar, t: int, times: Scalar) -> tuple[Scalar, int]:
        """times·c·T as ±times·N when the shared node N = |c|·T already exists (keeps sums'
        scalars equal)."""

    def product(self, a: Lazy[Scalar], ka: Key, b: Lazy[Scalar], kb: Key, factor: Scalar) -> Lazy[Scalar]:
        """factor · a · b for the canonical coefficients a (named ka) and b (kb); scalars
        multiply in Python, one node at most."""
        if a is None or b is None:
            return None
        (ca, ta), (cb, tb) = a, b
        ca *= factor
        if ta is None:
            return (ca * cb, None) if tb is None else self.reuse(cb, tb, ca)
        if tb is None:
            return self.reuse(ca, ta, cb)
        ca, ta = self.operand(ca, ta, ka)
        cb, tb = self.operand(cb, tb, kb)
        # canonical factors: no folding rule applies, only the operand order (lower index first)
        return ca * cb, self.tape.intern(Node("mul", (ta, tb) if ta < tb else (tb, ta)))

    def total(self, terms: list[Lazy[Scalar]]) -> Lazy[Scalar]:
        """Σ terms as one lazy value: equal Terms merge, the most common |scalar| is factored out,
        so only terms with a different scalar need a scale node. (Plain loops: it runs once
        per coefficient.)"""
        if len(terms) == 1:  # a unary node of a linear u, a product by a constant, ...
            term = terms[0]
            return term if term is None or term[0] != 0 else None
        merged: dict[Optional[int], Scalar] = {}
        for term in terms:
            if term is not None:
                merged[term[1]] = merged.get(term[1], 0) + term[0]  # 0: keeps a Fraction exact
        items: list[tuple[Scalar, Optional[int]]] = []
        counts: dict[Scalar, int] = {}
        negative = True
        for t, c in merged.items():
            if c != 0:  # an int: compared fast with a float and with a Fraction
                items.append((c, t))
                negative = negative and c < 0
                if t is not None:
                    counts[abs(c)] = counts.get(abs(c), 0) + 1
        if len(items) < 2:
            return items[0] if items else None
        factor = abs(items[0][0])
        if counts:  # the first of the most common
            most = 0
            for c, count in counts.items():
                if count > most:
                    factor, most = c, count
        if negative:
            factor = -factor
        pos: list[int] = []
        neg: list[int] = []
        for c, t in items:
            r = c / factor
            if abs(r) != 1:
                r = snap(r)
            if t is None:
                node = self.constant(abs(r))
            elif abs(r) == 1:
                node = t
            else:
                node = self.scale(abs(r), t)
            (pos if r > 0 else neg).append(node)
        append = self.tape.append  # by index: no Term per step
        acc = pos[0] if pos else append("neg", (neg.pop(0),))
        for node in pos[1:]:
            acc = append("add", (acc, node))
        for node in neg:
            acc = append("sub", (acc, node))
        return factor, acc

    def quotient(self, terms: list[Lazy[Scalar]], den: int) -> Lazy[Scalar]:
        """(Σ terms) / node den, as (Σ terms) · (1/den): the division and square-root
        recurrences divide by the same node at every order, so one reciprocal node serves them
        all and each order costs a multiplication (about half the price of a division)."""
        num = self.total(terms)
        if num is None:
            return None
        c, t = num
        inverse = self.inverses.get(den)
        if inverse is None:
            inverse = self.inverses[den] = self.tape.append("div", (self.constant(1.0), den))
        return c, inverse if t is None else self.tape.append("mul", (t, inverse))

    @abstractmethod
    def materialize(self, value: Lazy[Scalar], factor: Scalar) -> Optional[Term]:
        """factor·value as a Term (one scale node at most), or None for zero."""


class FloatArithmetic(Arithmetic[float]):
    """The arithmetic with float scalars: fast, for builds up to ``EXACT_ABOVE``."""

    def canon(self, value: Lazy[float]) -> Lazy[float]:
        if value is None:
            return None
        c, t = value
        nodes = self.tape.nodes
        while t is not None:
            node = nodes[t]
            if node.op == "const":
                if not math.isfinite(c * node.payload):  # ±inf, nan: stays a node (IEEE at run time)
                    break
                return (c * node.payload, None) if c * node.payload != 0.0 else None
            if node.op == "neg":
                c, t = -c, node.args[0]
            elif node.op == "fn" and self.negated(t) is not None:
                c, t = -c, self.negated(t)
            elif node.op == "mul" and nodes[node.args[0]].op == "const":
                if not math.isfinite(c * nodes[node.args[0]].payload):
                    break
                c, t = c * nodes[node.args[0]].payload, node.args[1]
            else:
                break
        return c, t

    def constant(self, c: float) -> int:
        node = self.constants.get(c)
        if node is None:
            node = self.constants[c] = self.tape.constant(c)
        return node

    def operand(self, c: float, t: int, key: Key) -> tuple[float, int]:
        if abs(c) == 1.0:
            return c, t
        if self.uses.get(key, 0) >= 2:
            return math.copysign(1.0, c), self.scale(abs(c), t)
        return self.reuse(c, t)

    def reuse(self, c: float, t: int, times: float = 1.0) -> tuple[float, int]:
        shared = self.scaled.get((abs(c), t)) if abs(c) != 1.0 else None
        return (times * c, t) if shared is None else (times * math.copysign(1.0, c), shared)

    def materialize(self, value: Lazy[float], factor: float) -> Optional[Term]:
        if value is None:
            return None
        c, t = value
        c = snap(c * factor)
        if t is None:
            return self.tape.const(c)
        if c == 1.0:
            return Term(self.tape, t)
        if c == -1.0:
            return -Term(self.tape, t)
        return Term(self.tape, self.scale(c, t))


__all__ = ["EXACT_ABOVE", "Arithmetic", "FloatArithmetic", "Key", "Lazy", "Raw", "Scalar", "to_float"]
