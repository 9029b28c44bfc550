"""The Taylor coefficients of the nodes of one tape along a seed, built on demand.

The seed says how the vars move with t: a var by itself (x ↦ x + t, ``taylor_graph(f, x, n)``)
or a direction {var: component} (x ↦ x + t·v, ``taylor_graph(f, {x: a, y: b}, n)``). Coefficient
1 of a seeded var is its component, a number or a Term; everything else is the same build.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Mapping, Optional, Union

import numpy as np

from ...core import Tape, Term
from ...core.rationals import rational
from ...numeric.modes import values_of
from ..accuracy import PROBES, Noise, probe_values
from .coefficients import Arithmetic, FloatArithmetic, Key, Lazy, to_float
from .exact import ExactArithmetic
from .plan import LINEAR, Degrees, plan
from .recurrences import COMPUTE, FORMS, PRODUCTS, SCALES, SIGNS, Form, Product

#: A var's component in a seed: a number, or a Term (evaluated where the build is, not moved).
Component = Union[float, Fraction, Term]


class Series:
    """What one build knows: the seeded vars' coefficient 1 (``seeds``: canonical, none zero),
    the degree bound and form of each node it met, the plan's products, and the coefficients
    computed so far, ``coef[(node, k)]`` (canonical lazy values; absent: zero or above the
    degree bound). ``wrt`` is the var whose values the accuracy estimate probes (``PROBES``)."""

    def __init__(self, tape: Tape, seeds: Mapping[int, Component], exact: bool = False, keep: bool = False) -> None:
        self.tape = tape
        self.keep = keep
        # float or Fraction scalars, chosen per build (by its order, ``EXACT_ABOVE``, and its
        # inputs: ``keep`` records exact constants, see ``exact_inputs``)
        self.arith: Arithmetic[Any] = (ExactArithmetic(tape, self.negated, keep) if exact or keep
                                       else FloatArithmetic(tape, self.negated))
        self.aliases: dict[int, Optional[int]] = {}
        self.seeds: dict[int, tuple[Any, Optional[int]]] = {}
        for var, v in seeds.items():
            number: Any = (1.0 if isinstance(v, Term) else
                           rational(v) if (exact or keep) and isinstance(v, (int, Fraction)) else float(v))
            found = self.arith.canon((number, v.index if isinstance(v, Term) else None))
            if found is not None and found[0] != 0:  # a zero component: the var does not move
                self.seeds[var] = found
        self.wrt = next(iter(seeds), -1)
        self.degree = Degrees(tape, self.seeds.keys())
        self.forms: dict[int, Form] = {}
        self.terms: dict[tuple[int, int], list[Product]] = {}  # the products a coefficient sums
        self.coef: dict[tuple[int, int], Lazy] = {}
        self.base: dict[int, Lazy] = {}  # coefficient 0, canonical
        self.order: list[tuple[int, int]] = []  # the coefficients computed, in order (``plan``)

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
        if node.op == "var" and i in self.seeds:
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
        self.order = plan(self, root, wanted)
        for i, k in self.order:
            tape.tag(base_order + k)
            form = self.forms[i]  # settled by the plan
            terms = [arith.product(get(*ka), ka, get(*kb), kb, f) for ka, kb, f in self.terms.get((i, k), ())]
            self.coef[(i, k)] = arith.canon(COMPUTE[form[0]](self, form, i, k, terms))

    def sums(self) -> bool:
        """Whether some coefficient of order 3 or more sums two or more terms (its products and
        linear operands): where none does, nothing cancels that the product and chain rules'
        own sums at orders 1 and 2 (gen_graph's first two passes too) would not, and each order
        adds a few roundings at most."""
        forms, terms, coef = self.forms, self.terms, self.coef
        for key in self.order:
            i, k = key
            if k < 3:
                continue
            form = forms[i]
            count = len(terms.get(key, ()))
            for a in form[1:1 + LINEAR.get(form[0], 0)]:
                count += coef.get((a, k)) is not None
            if count > 1:
                return True
        return False

    def _read(self) -> set[int]:
        """The nodes whose coefficient 0 a product reads."""
        found: set[int] = set()
        for products in self.terms.values():
            for ka, kb, _ in products:
                if not ka[1]:
                    found.add(ka[0])
                if not kb[1]:
                    found.add(kb[0])
        return found

    def values(self) -> dict[int, Any]:
        """The values at the ``PROBES`` of the nodes the build met and those whose coefficient 0
        it reads (the other vars at the probes' fixed values); raises what a user function
        raises there."""
        with np.errstate(all="ignore"):
            return values_of(self.tape, sorted(self._read().union(self.forms)), probe_values(self.tape, self.wrt))

    def rounding(self, root: int, wanted: range, values: dict[int, Any], at: Optional[int]) -> list[Any]:
        """Coefficient k of root for each wanted k at probe number ``at`` (None: at all the
        ``PROBES``), as value + i·error: the sums the build made, redone in floats term by term
        (so what the lazy scalars' own sums lose counts too), each product and each partial sum
        with a random rounding error of its size (``Noise``), the factors' errors carried to first
        order by complex products, starting from the nodes' ``values`` with an error of their
        size. Each coefficient keeps a power-of-two exponent of its own, so that 1/k! stays in
        range. At one point the numbers are Python's: a NumPy call costs more than a build's
        step. None for a zero."""
        tape, forms, terms = self.tape, self.forms, self.terms
        one = at is not None
        noise = Noise(None if one else PROBES.size).next
        ldexp, frexp, inf = math.ldexp, math.frexp, math.inf

        def value(i: int) -> Any:
            """Node i's value at the point or the probes, as NumPy numbers (1/0 is inf)."""
            if i not in values:
                with np.errstate(all="ignore"):
                    values.update(values_of(tape, [i], probe_values(tape, self.wrt)))
            found = np.broadcast_to(np.asarray(values[i], dtype=float), PROBES.shape)
            return found[at] if one else found

        rows: dict[Key, tuple[Any, int]] = {}  # coefficient -> (values · 2^-power, power)
        for node in sorted(self._read()):  # a node's value, with its own rounding
            rows[(node, 0)] = ((float(value(node)) if one else value(node)) * noise(), 0)
        scales: dict[int, Any] = {}
        with np.errstate(all="ignore"):
            for key in self.order:
                i, k = key
                form = forms[i]
                kind = form[0]
                if kind == "var":
                    if k == 1:  # its seed: a number, or c times a node's value
                        c, t = self.seeds[i]
                        seed = to_float(c) * (1.0 if t is None else value(t))
                        rows[key] = (complex(seed) if one else np.broadcast_to(seed, PROBES.shape).astype(complex), 0)
                    continue
                items = []  # (values, values or None for 1, factor, power)
                for a, sign in zip(form[1:1 + LINEAR.get(kind, 0)], SIGNS.get(kind, (1.0, 1.0))):
                    found = rows.get((a, k))
                    if found is not None:
                        items.append((found[0], None, sign, found[1]))
                for ka, kb, factor in terms.get(key, ()):
                    ra, rb = rows.get(ka), rows.get(kb)
                    if ra is not None and rb is not None:
                        items.append((ra[0], rb[0], factor if type(factor) is float else to_float(factor), ra[1] + rb[1]))
                if not items:
                    continue
                top = max(item[3] for item in items)
                total: Any = None
                for a, b, factor, power in items:  # the product's rounding, and the sum's so far
                    w = factor if power == top else ldexp(factor, power - top)
                    term = a * w if b is None else a * b * (w * noise())
                    total = term if total is None else (total + term) * noise()
                scale = SCALES.get(kind)
                if scale is not None:
                    by = scales.get(i)
                    if by is None:
                        by = scale(self, form, i, k, value)
                        if type(by) is not float:  # from a node's value: the same at every order
                            by = scales[i] = float(by) if one else np.asarray(by, dtype=float)
                    total = total * by
                # back to about 1 when far from it, the exponent kept apart: 1/k! stays in range
                if one:
                    largest = abs(total.real) if not 2.0**-256 < abs(total.real) < 2.0**256 else 1.0
                else:
                    size = np.abs(total.real)
                    largest = float(np.max(size, where=size < inf, initial=0.0))
                if largest != 1.0 and 0.0 < largest < inf:
                    shift = frexp(largest)[1]
                    total = total * ldexp(1.0, -(shift // 2)) * ldexp(1.0, -(shift - shift // 2))  # halves: no overflow
                    top += shift
                rows[key] = (total, top)
        return [None if (root, k) not in rows else rows[(root, k)][0] for k in wanted]
