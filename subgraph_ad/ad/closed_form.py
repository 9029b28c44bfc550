"""Closed forms of one derivative: expand it over its non-polynomial nodes, write it in Horner form.

Taylor mode computes order k from the orders before it, which keeps *all* orders up to n small,
but the n-th derivative alone often has a short closed form: exp(−x²/2)'s is a polynomial of
degree n in x times exp(−x²/2), 10 operations at n = 10 against the recurrence's 28.
``closed_form`` expands a derivative into a sum of monomials c·a₁^e₁·a₂^e₂⋯ over its *atoms* (vars,
function nodes, divisions by a sum, non-integer powers; whole exponents, negative ones too), then
writes that sum back in nested Horner form, factoring out what its terms share. It is kept when
it needs fewer nodes and agrees with the recurrence to 1e-13 of the value at every probe point
(an expanded sum can cancel where the recurrence does not). The expansion stops as soon as it
has far more terms than the graph it would replace has nodes, so where nothing can be gained
(nested tanh) it costs a fraction of the build. The same expansion, with exact coefficients,
differentiates an expression n times as a polynomial in ``exact_derivative``.

>>> from subgraph_ad import Tape, exp
>>> tape = Tape(); x = tape.var("x", 0.5)
>>> d = exp(-x**2 / 2).diff(x, 4, method="taylor")  # diff's last step keeps the smaller form
>>> d.to_sympy()
(x**2*(x**2 - 6) + 3)*exp(-x**2/2)
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Optional, Union

import numpy as np

from ..numeric.modes import values_of
from ..core import Tape, Term, appended, dependencies
from ..core.ops import Node, exact_value
from ..core.rationals import Exact, fraction, rational
from ..tables import rule_table

#: a monomial: (atom index, non-zero exponent) pairs, by atom index
Monomial = tuple[tuple[int, int], ...]
#: a coefficient: exact (an int or a ``core.rationals`` scalar) while every constant it comes
#: from is, else a float
Coefficient = Union[float, int, Exact]
#: a sum of monomials with their coefficients (never 0)
Poly = dict[Monomial, Coefficient]
#: whole exponents up to this size are expanded (x**3 of a sum, 1/x**2); larger ones stay atoms
MAX_EXPONENT = 64
#: While expanding, a monomial is one int: the exponent of atom number s is its digit s in the
#: balanced base 2**WIDTH, so multiplying two monomials is adding two ints. A degree bound per
#: polynomial keeps every digit far below 2**(WIDTH − 1).
WIDTH = 32
MAX_DEGREE = 1 << 20
#: Atoms of one expansion: a closed form is a short polynomial over a few functions of x; a sum of
#: hundreds of distinct functions has none, and splitting its terms atom by atom for the Horner
#: form costs atoms × terms (a 2,000-operand sum of sines: 17 s at order 3), so it is not tried.
MAX_ATOMS = 64
#: A closed form is kept only if, at every probe point where the recurrence's value is finite, it
#: agrees with that value to this much of the value's own magnitude: a relative test per point,
#: so a form that cancels where the derivative is small (Legendre's (x² − 1)¹⁷ at x = ±1, far
#: below its size at x = 4) is refused there, not excused by the largest value elsewhere.
AGREE = 1e-13
#: Where that is checked: the var at 33 multiples of 1/4 across [-4, 4] (zeros of lower
#: derivatives such as ±1, the origin, the regions where the derivative is small) and 32 points
#: between them, offset by an irrational fraction of the step: at multiples of 1/4 the powers of
#: x are exact in floating point and would hide the rounding of a Horner form. The other vars
#: are fixed generic values (positive, so that logs and roots of them are real).
PROBES = np.concatenate([np.linspace(-4.0, 4.0, 33), np.linspace(-4.0, 3.75, 32) + 0.25 * (np.sqrt(5.0) - 1.0) / 2])
#: Fewer finite probe values than this (a function real on a small interval only) and the
#: recurrence stays: too little evidence that the form is accurate.
MIN_FINITE = 8
OTHERS = (0.7, 1.3, 0.45, 1.9, 0.85)


class Expansion:
    """The polynomials (int monomial -> coefficient) of the nodes a root needs, within a budget:
    at most about a quarter as many terms as the graph has nodes (a sum of T terms costs at least
    T − 1 additions), and a few term products per node."""

    def __init__(self, tape: Tape, size: int) -> None:
        self.tape = tape
        self.limit = size // 4 + 2
        self.budget = 4 * size + 64
        self.work = 0
        self.over = False  # the expansion has outgrown the graph it would replace
        self.atoms: list[int] = []  # slot -> node index
        self.exact = True  # every constant so far has an exact value: coefficients stay exact

    def atom(self, i: int) -> dict[int, Coefficient]:
        self.atoms.append(i)
        self.over = self.over or len(self.atoms) > MAX_ATOMS
        return {1 << (WIDTH * (len(self.atoms) - 1)): 1}

    def add(self, p: dict[int, Coefficient], q: dict[int, Coefficient], sign: int) -> dict[int, Coefficient]:
        out = dict(p)
        for m, c in q.items():
            out[m] = out.get(m, 0) + sign * c
        return self.checked(out)

    def mul(self, p: dict[int, Coefficient], q: dict[int, Coefficient]) -> dict[int, Coefficient]:
        self.work += len(p) * len(q)
        if self.work > self.budget:
            self.over = True
            return {}
        out: dict[int, Coefficient] = {}
        get = out.get
        for m1, c1 in p.items():
            for m2, c2 in q.items():
                out[m1 + m2] = get(m1 + m2, 0) + c1 * c2
        return self.checked(out)

    def checked(self, p: dict[int, Coefficient]) -> dict[int, Coefficient]:
        p = {m: c for m, c in p.items() if c != 0}
        if len(p) > self.limit:
            self.over = True
            return {}
        return p

    def power(self, p: dict[int, Coefficient], e: int) -> Optional[dict[int, Coefficient]]:
        """p ** e for a whole e: any e for a single term, e >= 0 for a sum, else None (an atom)."""
        if len(p) == 1:
            ((m, c),) = p.items()
            return {m * e: self.powered(c, e)}
        if e < 0:
            return None
        out: dict[int, Coefficient] = {0: 1}
        for _ in range(e):
            out = self.mul(out, p)
        return out

    def number(self, node: Node) -> Optional[Coefficient]:
        """A constant as a coefficient: exact in an exact expansion, else its float; None for an
        atom (``_exact_number``)."""
        found = _exact_number(node)
        if found is None:
            return None
        return rational(found) if self.exact else float(node.payload)

    def powered(self, c: Coefficient, e: int) -> Coefficient:
        """c ** e for a non-zero coefficient: exact in an exact expansion (1 ** -1 would be the
        float 1.0), else ±inf past the floats instead of Python's OverflowError (the form then
        fails its accuracy check; building never raises for a value)."""
        if self.exact:
            return rational(c) ** e
        try:
            return float(c) ** e
        except OverflowError:
            return -math.inf if c < 0 and e % 2 else math.inf

    def expand(self, root: int) -> Optional[Poly]:
        """The polynomial of root over its atoms (iterative, in tape order), or None when it
        outgrows its budget."""
        nodes = self.tape.nodes
        polys: dict[int, dict[int, Coefficient]] = {}
        degree: dict[int, int] = {}  # a bound on the largest |exponent| of each polynomial
        order = list(dependencies(self.tape, [root], stop=lambda i: nodes[i].op in ("var", "fn")))
        # exact scalars do not mix with floats: one constant known only as a float, and all are
        self.exact = all(_exact_number(nodes[i]) is not INEXACT for i in order if nodes[i].op == "const")
        for i in order:
            node = nodes[i]
            op, args = node.op, node.args
            p: Optional[dict[int, Coefficient]] = None
            d = 0
            if op == "const":
                c = self.number(node)  # None: an atom (pi stays pi)
                p = None if c is None else {0: c} if c != 0 else {}
            elif op in EXPAND:
                p, d = EXPAND[op](self, [polys[a] for a in args], [degree[a] for a in args], args)
            if p is None:
                p, d = self.atom(i), 1
            if d > MAX_DEGREE or self.over:
                return None
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


#: ``_exact_number`` of a constant known only as a float
INEXACT = object()


def _exact_number(node: Node) -> Any:
    """A constant's exact value as a coefficient (a Fraction), ``INEXACT`` where it is known
    only as a float (or is a SymPy Float), None for an exact form that is not a number (pi,
    log(2)): that stays a node, an atom."""
    exact = exact_value(node)
    if exact is None or (isinstance(exact, tuple) and exact[0] == "float"):
        return INEXACT
    return exact if isinstance(exact, Fraction) else None


def _div(e: Expansion, p: list[dict[int, Coefficient]], d: list[int], args: tuple[int, ...]) -> tuple:
    inverse = e.power(p[1], -1) if p[1] else None
    return (None, 0) if inverse is None else (e.mul(p[0], inverse), d[0] + d[1])


def _pow(e: Expansion, p: list[dict[int, Coefficient]], d: list[int], args: tuple[int, ...]) -> tuple:
    exponent = e.tape.nodes[args[1]]
    if exponent.op == "const" and float(exponent.payload).is_integer() and abs(exponent.payload) <= MAX_EXPONENT:
        k = int(exponent.payload)
        return e.power(p[0], k), d[0] * abs(k)
    return None, 0


#: How each op combines its operands' polynomials: (expansion, operand polynomials, their degree
#: bounds, operand indices) -> (polynomial or None for an atom, degree bound). Vars and function
#: nodes are atoms.
EXPAND = rule_table("closed-form EXPAND", {
    "add": lambda e, p, d, args: (e.add(p[0], p[1], 1), max(d)),
    "sub": lambda e, p, d, args: (e.add(p[0], p[1], -1), max(d)),
    "neg": lambda e, p, d, args: ({m: -c for m, c in p[0].items()}, d[0]),
    "mul": lambda e, p, d, args: (e.mul(p[0], p[1]), d[0] + d[1]),
    "div": _div,
    "pow": _pow,
}, without=("fn",))


def times(a: Monomial, b: Monomial) -> Monomial:
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
    return common, {times(m, inverse): c for m, c in poly.items()}


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


def emit(tape: Tape, poly: Poly) -> int:
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
            rhs, lhs = out.pop(), out.pop()
            out.append(fold("add", (lhs, rhs)))
            continue
        p: Poly = arg  # type: ignore[assignment]
        if not p:
            out.append(tape.zero.index)
            continue
        common, p = _split(p)
        if common:
            todo.append(("times", common))
        if len(p) == 1 and () in p:
            out.append(_constant(tape, p[()]))
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


def _constant(tape: Tape, c: Coefficient) -> int:
    """The constant node of a coefficient: exact where the coefficient is."""
    if isinstance(c, float):
        return tape.const(c).index
    return tape.constant(rounded(fraction(c)), fraction(c))


def _agrees(tape: Tape, root: int, new: int, wrt: int) -> bool:
    """Whether the closed form ``new`` matches the recurrence's ``root`` to ``AGREE`` of the
    recurrence's value at every probe point where that value is finite (``probe_values``).
    A recurrence's intermediate values stay of the size of the result; an expanded sum's terms
    may not: tanh⁽⁹⁾ is a polynomial in tanh(x) whose terms reach 10⁷ where the value is 10⁴.
    Points where the recurrence is not finite (log of a negative) do not count; a form that is
    not finite where the recurrence is fails."""
    try:
        vals = values_of(tape, [root, new], probe_values(tape, wrt))
    except Exception:  # a user function that refuses these points: keep the recurrence
        return False
    with np.errstate(all="ignore"):  # inf − inf, overflow: answers here, not warnings
        recurrence = np.broadcast_to(np.asarray(vals[root], dtype=float), PROBES.shape)
        form = np.broadcast_to(np.asarray(vals[new], dtype=float), PROBES.shape)
        finite = np.isfinite(recurrence)
        close = np.abs(form - recurrence) <= AGREE * np.abs(recurrence)
    return bool(finite.sum() >= MIN_FINITE and np.all(close[finite]))


def probe_values(tape: Tape, wrt: int) -> dict[Term, Any]:
    """The fixed points where a closed form is checked: wrt at ``PROBES``, every other var at
    ``OTHERS[k]`` by its creation order k (cycling). Fixed, so that the form ``diff`` returns
    depends only on the expression, the var and the order, never on current values."""
    values: dict[Term, Any] = {}
    for k, var in enumerate(tape.vars.values()):
        values[var] = PROBES if var.index == wrt else OTHERS[k % len(OTHERS)]
    return values


def closed_form(tape: Tape, root: int, mark: int, wrt: int) -> int:
    """root, or its Horner form when that needs fewer of the nodes appended since ``mark`` and
    agrees with it (``_agrees``). The caller prunes what the returned root does not need."""
    size = appended(tape, root, mark)
    if size < 3:
        return root
    poly = Expansion(tape, size).expand(root)
    if poly is None:
        return root
    new = emit(tape, poly)
    return new if appended(tape, new, mark) < size and _agrees(tape, root, new, wrt) else root


def rounded(c: Fraction) -> float:
    """An exact coefficient as the float of its constant node: ±inf past the floats."""
    try:
        return float(c)
    except OverflowError:
        return math.inf if c > 0 else -math.inf
