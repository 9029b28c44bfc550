"""Closed forms of one derivative: expand it over its non-polynomial nodes, write it in Horner form.

Taylor mode computes order k from the orders before it, which keeps *all* orders up to n small,
but the n-th derivative alone often has a short closed form: exp(−x²/2)'s is a polynomial of
degree n in x times exp(−x²/2), 10 operations at n = 10 against the recurrence's 28.
``horner`` expands a derivative into a sum of monomials c·a₁^e₁·a₂^e₂⋯ over its *atoms* (vars,
function nodes, divisions by a sum, non-integer powers; whole exponents, negative ones too), then
writes that sum back in nested Horner form, factoring out what its terms share. It is kept when
it needs fewer nodes and evaluates as accurately (an expanded sum can cancel where the recurrence
does not). The expansion stops as soon as it has far more terms than the graph it would replace
has nodes, so where nothing can be gained (nested tanh) it costs a fraction of the build.

>>> from subgraph_ad import Tape, exp
>>> tape = Tape(); x = tape.var("x", 0.5)
>>> d = exp(-x**2 / 2).diff(x, 4, method="taylor")  # diff keeps the smaller form
>>> d.to_sympy()
(x**2*(x**2 - 6) + 3)*exp(-x**2/2)
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from ..numeric.modes import values_of
from ..core import Tape, Term, dependencies

#: a monomial: (atom index, non-zero exponent) pairs, by atom index
Monomial = tuple[tuple[int, int], ...]
#: a sum of monomials with their coefficients (never 0)
Poly = dict[Monomial, float]
#: whole exponents up to this size are expanded (x**3 of a sum, 1/x**2); larger ones stay atoms
MAX_EXPONENT = 64
#: While expanding, a monomial is one int: the exponent of atom number s is its digit s in the
#: balanced base 2**WIDTH, so multiplying two monomials is adding two ints. A degree bound per
#: polynomial keeps every digit far below 2**(WIDTH − 1).
WIDTH = 32
MAX_DEGREE = 1 << 20
#: A closed form is kept only if, on the probe points, its terms' magnitudes stay within this
#: factor of the largest value it takes (cancellation then costs at most 5 bits, relative to scale)
LOSS = 32.0
#: where that is checked: the var's current value v, and 33 points across v ± 4·(1 + |v|)
PROBES = np.linspace(-4.0, 4.0, 33)


class _TooBig(Exception):
    """Internal: the expansion has outgrown the graph it would replace."""


class _Expansion:
    """The polynomials (int monomial -> coefficient) of the nodes a root needs, within a budget:
    at most about a quarter as many terms as the graph has nodes (a sum of T terms costs at least
    T − 1 additions), and a few term products per node."""

    def __init__(self, tape: Tape, size: int) -> None:
        self.tape = tape
        self.limit = size // 4 + 2
        self.budget = 4 * size + 64
        self.work = 0
        self.atoms: list[int] = []  # slot -> node index

    def atom(self, i: int) -> dict[int, float]:
        self.atoms.append(i)
        return {1 << (WIDTH * (len(self.atoms) - 1)): 1.0}

    def add(self, p: dict[int, float], q: dict[int, float], sign: float) -> dict[int, float]:
        out = dict(p)
        for m, c in q.items():
            out[m] = out.get(m, 0.0) + sign * c
        return self.checked(out)

    def mul(self, p: dict[int, float], q: dict[int, float]) -> dict[int, float]:
        self.work += len(p) * len(q)
        if self.work > self.budget:
            raise _TooBig
        out: dict[int, float] = {}
        get = out.get
        for m1, c1 in p.items():
            for m2, c2 in q.items():
                out[m1 + m2] = get(m1 + m2, 0.0) + c1 * c2
        return self.checked(out)

    def checked(self, p: dict[int, float]) -> dict[int, float]:
        p = {m: c for m, c in p.items() if c != 0.0}
        if len(p) > self.limit:
            raise _TooBig
        return p

    def power(self, p: dict[int, float], e: int) -> Optional[dict[int, float]]:
        """p ** e for a whole e: any e for a single term, e >= 0 for a sum, else None (an atom)."""
        if len(p) == 1:
            ((m, c),) = p.items()
            return {m * e: c ** e}
        if e < 0:
            return None
        out = {0: 1.0}
        for _ in range(e):
            out = self.mul(out, p)
        return out

    def expand(self, root: int) -> Poly:
        """The polynomial of root over its atoms (iterative, in tape order)."""
        nodes = self.tape.nodes
        polys: dict[int, dict[int, float]] = {}
        degree: dict[int, int] = {}  # a bound on the largest |exponent| of each polynomial
        for i in dependencies(self.tape, [root], stop=lambda i: nodes[i].op in ("var", "fn")):
            node = nodes[i]
            op, args = node.op, node.args
            p: Optional[dict[int, float]] = None
            d = 0
            if op in ("var", "fn"):
                pass
            elif op == "const":
                p = {0: node.payload} if node.payload != 0.0 else {}
            elif op in ("add", "sub"):
                p = self.add(polys[args[0]], polys[args[1]], 1.0 if op == "add" else -1.0)
                d = max(degree[args[0]], degree[args[1]])
            elif op == "neg":
                p, d = {m: -c for m, c in polys[args[0]].items()}, degree[args[0]]
            elif op == "mul":
                p, d = self.mul(polys[args[0]], polys[args[1]]), degree[args[0]] + degree[args[1]]
            elif op == "div":
                inverse = self.power(polys[args[1]], -1) if polys[args[1]] else None
                if inverse is not None:
                    p, d = self.mul(polys[args[0]], inverse), degree[args[0]] + degree[args[1]]
            elif op == "pow":
                e = nodes[args[1]]
                if e.op == "const" and float(e.payload).is_integer() and abs(e.payload) <= MAX_EXPONENT:
                    p, d = self.power(polys[args[0]], int(e.payload)), degree[args[0]] * abs(int(e.payload))
            if p is None:
                p, d = self.atom(i), 1
            if d > MAX_DEGREE:
                raise _TooBig
            polys[i], degree[i] = p, d
        return {self.monomial(m): c for m, c in polys[root].items()}

    def monomial(self, m: int) -> Monomial:
        """The int monomial as (atom, exponent) pairs: its balanced base-2**WIDTH digits."""
        out = []
        half, mask = 1 << (WIDTH - 1), (1 << WIDTH) - 1
        slot = 0
        while m:
            e = m & mask
            if e >= half:
                e -= 1 << WIDTH
            if e:
                out.append((self.atoms[slot], e))
            m = (m - e) >> WIDTH
            slot += 1
        return tuple(sorted(out))


def _times(a: Monomial, b: Monomial) -> Monomial:
    powers = dict(a)
    for atom, e in b:
        powers[atom] = powers.get(atom, 0) + e
    return tuple(sorted((atom, e) for atom, e in powers.items() if e))


def _split(poly: Poly) -> tuple[Monomial, Poly]:
    """The monomial every term shares (same-signed powers of an atom, the smaller power), and
    poly divided by it."""
    terms = iter(poly)
    shared = dict(next(terms))
    for m in terms:
        powers = dict(m)
        shared = {a: (min(e, powers[a]) if e > 0 else max(e, powers[a]))
                  for a, e in shared.items() if a in powers and (e > 0) == (powers[a] > 0)}
    common = tuple(sorted(shared.items()))
    if not common:
        return common, poly
    inverse = tuple((a, -e) for a, e in common)
    return common, {_times(m, inverse): c for m, c in poly.items()}


def _monomial(tape: Tape, m: Monomial) -> int:
    """a₁^e₁·a₂^e₂⋯ as nodes; interning finds the powers f already has (x**2) and Taylor mode's
    reciprocals (1/b)."""
    fold = tape.append
    acc: Optional[int] = None
    for atom, e in m:
        if e == 1:
            node = atom
        elif e == -1:
            node = fold("div", (tape.const(1.0).index, atom))
        else:
            node = fold("pow", (atom, tape.const(float(e)).index))
        acc = node if acc is None else fold("mul", (acc, node))
    assert acc is not None
    return acc


def _emit(tape: Tape, poly: Poly) -> int:
    """Nested Horner form, iteratively: split off the monomial all terms share, else split the
    terms by the (atom, sign of its power) most of them contain: P = A + B, where A then shares
    a power of that atom. For a polynomial in x that is c₀ + x·(c₁ + x·(c₂ + ⋯))."""
    fold = tape.append
    out: list[int] = []
    todo: list[tuple[str, object]] = [("poly", poly)]
    while todo:
        task, arg = todo.pop()
        if task == "times":  # out[-1] times the monomial arg
            out.append(fold("mul", (_monomial(tape, arg), out.pop())))  # type: ignore[arg-type]
            continue
        if task == "plus":
            b, a = out.pop(), out.pop()
            out.append(fold("add", (a, b)))
            continue
        p: Poly = arg  # type: ignore[assignment]
        if not p:
            out.append(tape.zero.index)
            continue
        common, p = _split(p)
        if common:
            todo.append(("times", common))
        if len(p) == 1 and () in p:
            out.append(tape.const(p[()]).index)
            continue
        if common:
            todo.append(("poly", p))
            continue
        counts: dict[tuple[int, bool], int] = {}
        for m in p:
            for atom, e in m:
                counts[(atom, e > 0)] = counts.get((atom, e > 0), 0) + 1
        atom, positive = max(counts, key=lambda k: (counts[k], -k[0], k[1]))
        a: Poly = {}
        b: Poly = {}
        for m, c in p.items():
            (a if any(x == atom and (e > 0) == positive for x, e in m) else b)[m] = c
        todo += [("plus", None), ("poly", b), ("poly", a)]
    return out[0]


def appended(tape: Tape, root: int, mark: int) -> int:
    """How many nodes from ``mark`` on the root needs."""
    return sum(1 for i in dependencies(tape, [root], stop=lambda i: i < mark) if i >= mark)


def _conditioned(tape: Tape, poly: Poly, wrt: int) -> bool:
    """Whether the expanded sum can be evaluated without losing more than a few digits to
    cancellation. A recurrence's intermediate values stay of the size of the result; an expanded
    sum's terms may not: tanh⁽⁹⁾ is a polynomial in tanh(x) whose terms reach 10⁷ where the
    value is 10⁴. So the terms and the sum are evaluated on probe points of wrt (the other vars
    at their current values), and the largest term sum must stay within ``LOSS`` of the largest
    value. Points where the function is not finite (log of a negative) do not count."""
    center = np.asarray(tape.current_values()[wrt], dtype=float)
    center = float(np.mean(center)) if np.all(np.isfinite(center)) else 0.0
    probes = center + (1.0 + abs(center)) * PROBES
    atoms = sorted({a for m in poly for a, _ in m})
    try:
        vals = values_of(tape, atoms, {Term(tape, wrt): probes})
    except Exception:  # a user function that refuses these points: keep the recurrence
        return False
    total, absolute = np.zeros_like(probes), np.zeros_like(probes)
    with np.errstate(all="ignore"):
        for m, c in poly.items():
            term = np.full_like(probes, c)
            for atom, e in m:
                term = term * np.asarray(vals[atom], dtype=float) ** float(e)
            total, absolute = total + term, absolute + np.abs(term)
    finite = np.isfinite(total) & np.isfinite(absolute)
    if finite.sum() < 8:
        return False
    return bool(absolute[finite].max() <= LOSS * np.abs(total[finite]).max())


def horner(tape: Tape, root: int, mark: int, wrt: int) -> int:
    """root, or its Horner form when that needs fewer of the nodes appended since ``mark`` and
    is as accurate (``_conditioned``). The caller trims what the returned root does not need."""
    size = appended(tape, root, mark)
    if size < 3:
        return root
    try:
        poly = _Expansion(tape, size).expand(root)
    except _TooBig:
        return root
    new = _emit(tape, poly)
    return new if appended(tape, new, mark) < size and _conditioned(tape, poly, wrt) else root
