"""The n-th derivative of an expression by exact polynomial expansion (``derivative``): the
expression expanded over its atoms (``closed_form.Expansion``) with exact coefficients,
differentiated n times as a polynomial, each atom's derivative expanded too, and emitted once in
Horner form (``closed_form.emit``), each coefficient rounded once at the end. What ``diff``
takes where Taylor mode's float recurrences would lose digits (``accuracy``)."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Optional

from ..core import Tape, Term
from ..core.rationals import fraction
from .closed_form import Expansion, Monomial, emit, rounded, times
from .forward import gen_graph


#: ``derivative``: the most terms its expansion may have at any order (e^{2x}·cos 3x has two at
#: every order, a polynomial of degree n at most n + 1); more, and there is no short closed form.
DERIVATIVE_TERMS = 64


def _exact(tape: Tape, root: int) -> Optional[tuple[dict[Monomial, Fraction], bool]]:
    """root expanded over its atoms (``Expansion``, within a ``DERIVATIVE_TERMS`` budget), its
    coefficients as Fractions (exactly the floats they were), and whether none was a float;
    None if it outgrows that. An atom f(u) with f = −g (−sin: ``negative_of``) is −g(u), so that
    sin(u) and −sin(u) are one atom and their terms cancel exactly, not in the floats of a later
    rounding."""
    expansion = Expansion(tape, 4 * DERIVATIVE_TERMS)
    poly = expansion.expand(root)
    if poly is None or not all(not isinstance(c, float) or math.isfinite(c) for c in poly.values()):
        return None
    out: dict[Monomial, Fraction] = {}
    for m, c in poly.items():
        key: Monomial = ()
        exact = fraction(c) if expansion.exact else Fraction(c)
        for atom, e in m:
            node = tape.nodes[atom]
            g = node.payload.negative_of if node.op == "fn" and node.payload.arity == 1 else None
            if g is not None:
                atom, exact = g(Term(tape, node.args[0])).index, exact * (-1) ** (e % 2)
            key = times(key, ((atom, e),))
        out[key] = out.get(key, Fraction(0)) + exact
    return {m: c for m, c in out.items() if c}, expansion.exact


def derivative(tape: Tape, root: int, wrt: int, n: int) -> Optional[int]:
    """The n-th derivative of root in wrt in Horner form, differentiated n times as a polynomial
    over root's atoms with exact (Fraction) coefficients, each rounded once at the end; None
    where an atom's derivative (one gen_graph pass, expanded) leaves the polynomials or a sum
    passes ``DERIVATIVE_TERMS`` terms.

    Why: the n-th derivative of e^{2x}·cos 3x is Re((2 + 3i)ⁿ·e^{(2+3i)x}), two terms whose
    integer coefficients Taylor mode's float recurrences (and repeated gen_graph's sums) reach
    only through binomial sums of far larger terms, losing n/2 bits; exactly, nothing is lost
    but the final rounding, and where every constant involved is exact the coefficients stay
    exact constants. Appends the atoms' derivatives and the form; the caller prunes.
    """
    found = _exact(tape, root)
    if found is None:
        return None
    poly: Optional[dict[Monomial, Fraction]] = found[0]
    exact = found[1]
    slopes: dict[int, Optional[dict[Monomial, Fraction]]] = {}
    for _ in range(n):
        if poly is None:
            return None
        out: dict[Monomial, Fraction] = {}
        for m, c in poly.items():
            for atom, e in m:  # d(c·a^e·rest) = c·e·a^(e−1)·a′·rest
                if atom not in slopes:
                    expanded = _exact(tape, gen_graph(Term(tape, atom), Term(tape, wrt)).index)
                    slopes[atom] = None if expanded is None else expanded[0]
                    exact = exact and (expanded is None or expanded[1])
                slope = slopes[atom]
                if slope is None:
                    return None
                rest = tuple((a, x - 1 if a == atom else x) for a, x in m if a != atom or x != 1)
                for sm, sc in slope.items():
                    key = times(rest, sm)
                    out[key] = out.get(key, Fraction(0)) + c * e * sc
        poly = {m: c for m, c in out.items() if c}
        if len(poly) > DERIVATIVE_TERMS:
            return None
    if poly is None:
        return None
    return emit(tape, {m: c if exact else rounded(c) for m, c in poly.items()})


__all__ = ["DERIVATIVE_TERMS", "derivative"]
