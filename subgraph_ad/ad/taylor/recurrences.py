"""The recurrence table: how each kind of node gets its Taylor coefficient k.

Coefficients y_k of every node along x ↦ x + t·v (v the seed: 1 for a var, a direction's
components otherwise; ``Series.seeds``), by the standard recurrences:

- add, sub, neg: coefficient-wise;
- mul: the Cauchy product  c_k = Σ_{j=0..k} a_j·b_{k−j};
- div: q_k = (a_k − Σ_{j=1..k} b_j·q_{k−j}) / b_0;
- root (sqrt(u), u ** 0.5): from y·y = u,  2·y_0·y_k = u_k − Σ_{j=1..k−1} y_j·y_{k−j}, whose
  products pair up under interning (half the products, and no g = 1/(2y) series);
- unary (a function y = f(u), or a power): the ODE recurrence  k·y_k = Σ_{j=1..k} j·u_j·g_{k−j},
  and binary (y = f(a, b), a BinaryFn) the same over both operands with g = ∂f/∂a and ∂f/∂b,
  where g = f′(u) is the function's own local derivative (``fdiff``), itself Taylor-propagated.
  So a user function needs no Taylor rule, and exp, tanh, sigmoid, log and the sin/cos family
  close on themselves because their f′ reuses the output. ``a ** p`` with p constant in x is the
  unary case with g = p·a**(p−1) (a whole p, or a linear in x: exact at a = 0) or g = p·y/a;
  ``a ** b`` otherwise is exp(b·log(a)): the unary case with g = y; with a constant in x but not
  a positive number (0 ** b, a var base) it is dy = xlogy(y, a)·db (pow's own partial), so that 0 ** b has the
  derivatives 0 where b > 0 rather than 0·(−inf);
- a function whose value is Q(g(u)), declared to run through g (``Function.through``: sech² is
  1 − tanh², σ′ is σ − σ²): coefficient 0 is its own node (accurate where Q cancels),
  coefficient k that of the node Q(g) ("through"), whose products pair up under interning;
- a function whose partials are gates (``functions.is_gate``: relu′ = u > 0, maximum′): its
  partials have degree 0, and coefficient k is the gate applied to the operand's coefficient k
  ("gated"), a selection, so the flat piece's inf or nan never meets a product;
- a function linear in one argument (``linear``: xlogy(p, a) = p·log(a), 0 where p is 0) whose
  other arguments are constant in x: coefficient k is f(p_k, a).

``FORMS`` maps each op to the form of its nodes — a kind and its operands — and ``PRODUCTS`` and
``COMPUTE`` map each kind to its products and to the coefficient they sum to.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Callable, Optional, Union

from ...core import Node, Term
from ...functions import gate, log, power_partial
from ...functions.view import view
from .coefficients import Lazy
from .plan import whole
from ...tables import rule_table

if TYPE_CHECKING:  # pragma: no cover - typing only
    from .series import Series

#: How a node's coefficients are computed: a kind and its operands, e.g. ("mul", a, b),
#: ("root", u), ("unary", u, g, c) with dy = c·g·du (g None: a zero derivative).
Form = tuple
#: coefficient · coefficient · factor, the coefficients as (node, order); the factor is a
#: Fraction in exact builds (the c of a form times j).
Product = tuple[tuple[int, int], tuple[int, int], Union[float, Fraction]]


def _chained(s: Series, kind: str, build: Callable[[], list[tuple[int, Optional[Term]]]]) -> Form:
    """(kind, u₁, g₁, c₁, u₂, g₂, c₂, …) with dy = Σ cᵢ·gᵢ·duᵢ for the pairs (u, g) that ``build``
    makes, each g's constant factor and sign split off (``canon``): cos′ = −sin reads the
    coefficients of sin, not a forwarding series of its own. What building the g left unused
    (that −sin, a constant folded away) leaves the tape at once, while it is still the tape's
    tail: ``Tape.pruned``."""
    tape = s.tape
    scalars: list[float | Fraction] = []

    def made() -> list[int]:
        roots: list[int] = []
        scalars.clear()
        for u, g in build():
            c, t = 1.0, -1
            if g is not None:
                sign = 1.0
                fn = g.node.payload if g.node.op == "fn" and g.node.payload.arity == 1 else None
                if fn is not None and fn.negative_of is not None:  # −sin(v): keep sin(v), sign apart
                    sign, g = -1.0, fn.negative_of(Term(tape, g.node.args[0]))
                value = s.arith.canon((sign, g.index))
                if value is not None:
                    scalar, node = value
                    c, t = (1.0, g.index) if node is None else (scalar, node)
            roots += [u, t]
            scalars.append(c)
        return roots

    roots = tape.pruned(made)
    form: list = [kind]
    for k, c in enumerate(scalars):
        u, g = roots[2 * k], roots[2 * k + 1]
        form += [u, None if g < 0 else g, c]
    return tuple(form)


def _unary(s: Series, build: Callable[[], tuple[int, Optional[Term]]]) -> Form:
    """("unary", u, g, c) with dy = c·g·du (see ``_chained``)."""
    return _chained(s, "unary", lambda: [build()])


def _fn_form(s: Series, i: int, node: Node) -> Form:
    v = view(s.tape, i)
    linear = [k for k, a in enumerate(node.args) if v.linear(k)
              and all(s.degree(b) == 0 for j, b in enumerate(node.args) if j != k)]
    if linear:  # linear in the one argument that moves: coefficient k is f(p_k, a)
        return ("linear", node.args[linear[0]], i)
    through = v.through()
    if through is not None:  # coefficients past 0 from Q(g)'s
        g, q = through
        return ("through", q(g).index)
    if v.all_gated(s.degree):  # each moving operand's coefficient k selected by its gate
        return ("gated", node.args[0], node.args[-1])
    if v.fn.arity == 2:  # ("binary", a, ga, ca, b, gb, cb): the ODE recurrence over both operands
        return _chained(s, "binary", lambda: list(zip(node.args, v.partials())))
    (u,) = node.args
    if getattr(v.fn, "power", None) == 0.5:
        return ("root", u)
    if s.negated(i) is not None:
        return ("neg", s.negated(i))
    return _unary(s, lambda: (u, v.partials()[0]))


def _pow_form(s: Series, i: int, node: Node) -> Form:
    tape = s.tape
    a, b = (Term(tape, k) for k in node.args)
    p = tape.nodes[b.index]
    if p == Node("const", (), 0.5):
        return ("root", a.index)
    y = Term(tape, i)
    base = tape.nodes[a.index]
    if s.degree(b.index) > 0 and s.degree(a.index) == 0 and not (base.op == "const" and 0.0 < base.payload < math.inf):
        # dy = xlogy(y, a)·db: 0 where y is 0 at a base of 0 (0 ** b), where log(a)·y is nan; a
        # positive constant base keeps log(a) as a number in the scalars (below)
        return _unary(s, lambda: (b.index, power_partial(1, a, b, y)))
    if s.degree(b.index) > 0:
        return _unary(s, lambda: ((b * log(a)).index, y))
    # g = p·a**(p−1) is exact at a = 0 (0 or ±inf, as gen_graph gives), and for a whole p ends
    # at p = 0. For a fractional p it starts a chain a**(p−k), one power per order, cheap only
    # when a is linear in wrt (u_j = 0 for j >= 2); otherwise g = p·y/a closes on y itself.
    if whole(p) or s.degree(a.index) == 1:
        return _unary(s, lambda: (a.index, b * a ** (b - 1.0)))  # folded: p − 1 exact where p is
    return _unary(s, lambda: (a.index, b * y / a))


#: The form of a node that depends on wrt, by op.
FORMS: dict[str, Callable[[Series, int, Node], Form]] = rule_table("Taylor FORMS", {
    "add": lambda s, i, node: ("add", *node.args),
    "sub": lambda s, i, node: ("sub", *node.args),
    "mul": lambda s, i, node: ("mul", *node.args),
    "div": lambda s, i, node: ("div", *node.args),
    "neg": lambda s, i, node: ("neg", node.args[0]),
    "pow": _pow_form,
    "fn": _fn_form,
})


def _mul_products(s: Series, form: Form, i: int, k: int) -> list[Product]:
    a, b = form[1], form[2]
    low, high = max(0, k - s.degree(b)), min(k, s.degree(a))
    return [((a, j), (b, k - j), 1.0) for j in range(low, high + 1)]


def _div_products(s: Series, form: Form, i: int, k: int) -> list[Product]:
    b = form[2]
    return [((b, j), (i, k - j), -1.0) for j in range(1, min(k, s.degree(b)) + 1)]


def _linear_coefficient(s: Series, form: Form, i: int, k: int, terms: list[Lazy]) -> Lazy:
    """f(…, p, …) linear in p (``Function.linear``; xlogy(p, a) = p·log(a)) with its other
    arguments constant in wrt: coefficient k is f(…, p_k, …), the scalar of p_k kept apart
    (f(c·T, a) = c·f(T, a); f(c, a) = c·f(1, a))."""
    value = s.get(form[1], k)
    if value is None:
        return None
    c, t = value
    node = s.tape.nodes[i]
    tape = s.tape
    moving = Term(tape, t) if t is not None else tape.const(1.0)
    args = [moving if a == form[1] else Term(tape, a) for a in node.args]
    return s.arith.canon((c, node.payload(*args).index))


def _gated_coefficient(s: Series, form: Form, i: int, k: int, terms: list[Lazy]) -> Lazy:
    """Σ gate(p_m, a_{m,k}) over the moving operands: each gate (degree 0) selects the operand's
    coefficient k, its scalar kept apart (select(c, c′·T) = c′·select(c, T))."""
    tape = s.tape
    v = view(tape, i)
    shares: list[Lazy] = []
    for a, p in zip(v.operands, v.partials()):
        value = s.get(a, k) if p is not None and k <= s.degree(a) else None
        if p is not None and value is not None:
            c, t = value
            moving = Term(tape, t) if t is not None else tape.const(1.0)
            shares.append(s.arith.canon((c, gate(p, moving).index)))
    return s.arith.total(shares)


def _unary_products(s: Series, form: Form, i: int, k: int) -> list[Product]:
    """k·y_k = Σ_{j=1..k} j·u_j·g_{k−j} summed over the form's (u, g, c) triples: one for a
    function of one operand, two for a BinaryFn."""
    out: list[Product] = []
    for at in range(1, len(form), 3):
        u, g, c = form[at], form[at + 1], form[at + 2]
        if g is not None:
            low, high = max(1, k - s.degree(g)), min(k, s.degree(u))
            out += [((u, j), (g, k - j), c * j) for j in range(low, high + 1)]
    return out


def _none(s: Series, form: Form, i: int, k: int) -> list[Product]:
    return []


#: The products (coefficient, coefficient, factor) that coefficient k of a node sums, by kind.
PRODUCTS: dict[str, Callable[[Series, Form, int, int], list[Product]]] = rule_table("Taylor PRODUCTS", {
    "zero": _none, "var": _none, "add": _none, "sub": _none, "neg": _none,
    "mul": _mul_products,
    "div": _div_products,
    "root": lambda s, form, i, k: [((i, j), (i, k - j), -1.0) for j in range(1, k)],
    "unary": _unary_products,
    "binary": _unary_products,
    "linear": _none,
    "through": _none,
    "gated": _none,
}, keys=lambda: COMPUTE)


def _negative(value: Lazy) -> Lazy:
    return None if value is None else (-value[0], value[1])


def _root(s: Series, form: Form, i: int, k: int, terms: list[Lazy]) -> Lazy:
    half = s.arith.quotient([s.get(form[1], k)] + terms, i)
    return None if half is None else (half[0] / 2, half[1])  # / 2: 0.5·c, and keeps a Fraction exact


def _unary_coefficient(s: Series, form: Form, i: int, k: int, terms: list[Lazy]) -> Lazy:
    value = s.arith.total(terms)
    return None if value is None else (value[0] / k, value[1])


def _linear_scale(s: Series, form: Form, i: int, k: int, value: Callable[[int], Any]) -> Any:
    node = s.tape.nodes[i]
    return node.payload.f(*[1.0 if a == form[1] else value(a) for a in node.args])


#: The signs of a form's linear operands in its coefficient k (a_k − b_k, −a_k); + otherwise.
SIGNS: dict[str, tuple[float, ...]] = {"sub": (1.0, -1.0), "neg": (-1.0,)}
#: Coefficient k of a node as a number: its signed linear operands plus its products, times this
#: factor, by kind (the same sums ``COMPUTE`` builds; ``value(node)``: a node's value, coefficient
#: 0): q_k = (a_k − Σ b_j·q_{k−j}) / b_0, y_k = (u_k − Σ y_j·y_{k−j}) / (2·y_0), (Σ j·u_j·g_{k−j}) / k,
#: f(p_k, a) = p_k·f(1, a); 1 for the rest. Read by the accuracy estimate (``Series.rounding``).
SCALES: dict[str, Callable[[Series, Form, int, int, Callable[[int], Any]], Any]] = {
    "div": lambda s, form, i, k, value: 1.0 / value(form[2]),
    "root": lambda s, form, i, k, value: 0.5 / value(i),
    "unary": lambda s, form, i, k, value: 1.0 / k,
    "binary": lambda s, form, i, k, value: 1.0 / k,
    "linear": _linear_scale,
}

#: Coefficient k of a node from its form and its products' values, by kind.
COMPUTE: dict[str, Callable[[Series, Form, int, int, list[Lazy]], Lazy]] = rule_table("Taylor COMPUTE", {
    "zero": lambda s, form, i, k, terms: None,
    "var": lambda s, form, i, k, terms: s.seeds[i] if k == 1 else None,
    "add": lambda s, form, i, k, terms: s.arith.total([s.get(form[1], k), s.get(form[2], k)]),
    "sub": lambda s, form, i, k, terms: s.arith.total([s.get(form[1], k), _negative(s.get(form[2], k))]),
    "neg": lambda s, form, i, k, terms: _negative(s.get(form[1], k)),
    "mul": lambda s, form, i, k, terms: s.arith.total(terms),
    "div": lambda s, form, i, k, terms: s.arith.quotient([s.get(form[1], k)] + terms, form[2]),
    "root": _root,
    "unary": _unary_coefficient,
    "binary": _unary_coefficient,
    "linear": _linear_coefficient,
    "through": lambda s, form, i, k, terms: s.get(form[1], k),
    "gated": _gated_coefficient,
}, keys=lambda: PRODUCTS)
