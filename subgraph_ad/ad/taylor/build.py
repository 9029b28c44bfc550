"""Taylor-mode derivative subgraphs: every derivative up to order n in O(S·n²) nodes.

Repeated ``gen_graph`` differentiates the *derivative graph* again at each order. Taylor mode
instead propagates the univariate Taylor coefficients y_k = y⁽ᵏ⁾/k! of every node of z along
x ↦ x + t, with the standard recurrences:

- add, sub, neg: coefficient-wise;
- mul: the Cauchy product  c_k = Σ_{j=0..k} a_j·b_{k−j};
- div: q_k = (a_k − Σ_{j=1..k} b_j·q_{k−j}) / b_0;
- a unary node y = f(u): the ODE recurrence  k·y_k = Σ_{j=1..k} j·u_j·g_{k−j},  where g = f′(u)
  is built by the function's own ``gen_graph`` rule (called with ``derived`` = the constant 1)
  and is itself Taylor-propagated. So a user ``UnaryFn`` needs no Taylor rule, and exp, tanh,
  sigmoid, log and the sin/cos family close on themselves because their rules reuse ``output``;
- sqrt(u) and u ** 0.5: from y·y = u,  2·y_0·y_k = u_k − Σ_{j=1..k−1} y_j·y_{k−j}, whose products
  pair up under interning (half the products, and no g = 1/(2y) series);
- ``a ** p`` with p constant in x is the unary case with g = p·a**(p−1) (a whole number p ≥ 0,
  or a linear in x: exact at a = 0) or g = p·y/a; ``a ** b`` otherwise is exp(b·log(a)): the
  unary case with g = y.

Coefficients are requested on demand: each node has a degree bound (0 free of x, 1 for x, sums
for products, unbounded past a function), so only coefficients that can be non-zero are planned
and a Cauchy product visits only the pairs that can be non-zero. They carry a lazy scalar
factor, so the 1/k, j and k! factors and signs are Python floats folded into the few constants
that must exist rather than nodes of their own. The results are ordinary Terms on the same tape:
they evaluate, compile, render and can be differentiated again.

>>> from subgraph_ad import Tape, exp
>>> tape = Tape(); x = tape.var("x", 0.5)
>>> d = taylor_graph(exp(-x**2 / 2), x, 4)
>>> [t.to_sympy() for t in d[:2]]
[-x*exp(-x**2/2), x**2*exp(-x**2/2) - exp(-x**2/2)]
>>> round(d[3].eval(), 6)
1.378901
"""

from __future__ import annotations

import math
from typing import Optional

from ...functions import SinFn, Sqrt, local_derivative, log
from ..closed_form import horner
from ...core import Callback, Node, Tape, Term

#: A coefficient value c·T held as (c, index of T); index None means the plain number c.
Lazy = Optional[tuple[float, Optional[int]]]
#: coefficient · coefficient · factor, the coefficients as (node, order).
Product = tuple[tuple[int, int], tuple[int, int], float]
#: How a node's coefficients are computed: a kind and its operands (see ``_Taylor.form``).
Form = tuple
#: How many leading operands of a form enter coefficient k linearly (a_k in add, u_k in root, ...).
_LINEAR = {"add": 2, "sub": 2, "neg": 1, "div": 1, "root": 1}
#: The degree of a node whose Taylor series does not end (exp, a division by x, ...).
UNBOUNDED = 1 << 30


def _whole(node: Node) -> bool:
    """A constant exponent p = 0, 1, 2, ...: then a ** p is a polynomial in a."""
    return node.op == "const" and float(node.payload).is_integer() and 0 <= node.payload < UNBOUNDED


def _snap(c: float) -> float:
    """Scalars are products of 1/k, j and k! in floating point, so k!·(1/k!) may come out as
    1.0000000000000002. Within a few ulps of a whole number it is that number, and needs no
    constant node of its own (what snapping changes is the rounding error itself)."""
    r = round(c)
    return float(r) if r != c and abs(c - r) <= 1e-15 * abs(c) else c  # 1e-15: about 4 ulps


class _Zero(Exception):
    """Internal: the requested derivative is structurally zero; unwind the transaction."""


class _Taylor:
    """The Taylor coefficients of the nodes of one tape along one var, built on demand."""

    def __init__(self, tape: Tape, wrt: int) -> None:
        self.tape = tape
        self.wrt = wrt
        self.coef: dict[tuple[int, int], Lazy] = {}
        self.base: dict[int, Lazy] = {}  # coefficient 0, canonical
        self.consts: dict[float, int] = {}  # value (never 0) -> its node
        self.inverses: dict[int, int] = {}  # node -> the node 1/node
        self.deg: list[int] = []  # deg[i]: coefficients of node i above this order are zero
        self.scaled: dict[tuple[float, int], int] = {}
        self.aliases: dict[int, Optional[int]] = {}
        self.forms: dict[int, Form] = {}
        self.uses: dict[tuple[int, int], int] = {}
        self.terms: dict[tuple[int, int], list[Product]] = {}  # the products a coefficient sums
        #: whether the build may have left nodes no result needs (a sum that cancelled,
        #: u = b·log(a), a negated difference): then a last pass drops them
        self.leftovers = False

    # -- helpers ------------------------------------------------------------------------------
    def degree(self, i: int) -> int:
        """An upper bound on the orders at which node i has a non-zero coefficient: 0 for a node
        free of wrt, 1 for wrt, sums for products, ``UNBOUNDED`` past a function or a division
        by wrt. Only coefficients up to it are planned, and products of a zero are never built."""
        deg = self.deg
        if i < len(deg):
            return deg[i]
        nodes = self.tape.nodes
        for j in range(len(deg), i + 1):
            node = nodes[j]
            op, args = node.op, node.args
            top = max((deg[a] for a in args), default=0)
            if op in ("var", "const"):
                d = int(j == self.wrt)
            elif top == 0:
                d = 0
            elif op in ("add", "sub", "neg"):
                d = top
            elif op == "mul":
                d = min(deg[args[0]] + deg[args[1]], UNBOUNDED)
            elif op == "div" and deg[args[1]] == 0:
                d = deg[args[0]]
            elif op == "pow" and deg[args[1]] == 0 and _whole(nodes[args[1]]):
                d = min(deg[args[0]] * int(nodes[args[1]].payload), UNBOUNDED)
            else:
                d = UNBOUNDED
            deg.append(d)
        return deg[i]

    def depends(self, i: int) -> bool:
        return self.degree(i) > 0

    def negated(self, i: int) -> Optional[int]:
        """For -sin(u) and -cos(u) (``SinFn(n)``, n >= 2) the node sin(u) / cos(u) they negate:
        their coefficients are the same Terms with the sign in the scalar."""
        if i in self.aliases:
            return self.aliases[i]
        node = self.tape.nodes[i]
        fn = node.payload
        alias = None
        if node.op == "fn" and type(fn) is SinFn and fn.n >= 2:
            alias = SinFn(fn.n - 2)(self.term(node.args[0])).index
        self.aliases[i] = alias
        return alias

    def term(self, i: int) -> Term:
        return Term(self.tape, i)

    def canon(self, value: Lazy) -> Lazy:
        """Move constant factors and signs of the Term into the scalar: -A, 3·A -> (c, A)."""
        if value is None:
            return None
        c, t = value
        nodes = self.tape.nodes
        while t is not None:
            node = nodes[t]
            if node.op == "const":
                return (c * node.payload, None) if c * node.payload != 0.0 else None
            if node.op == "neg":
                c, t = -c, node.args[0]
            elif node.op == "fn" and self.negated(t) is not None:
                c, t = -c, self.negated(t)
            elif node.op == "mul" and nodes[node.args[0]].op == "const":
                c, t = c * nodes[node.args[0]].payload, node.args[1]
            else:
                break
        return c, t

    def operand(self, c: float, t: int, key: tuple[int, int]) -> tuple[float, int]:
        """A Term factor c·T of a product. One used in two or more products (counted by the plan)
        becomes the shared node |c|·T, so the products' scalars agree and their sums need no
        scale node per term; otherwise an existing shared node is reused."""
        if abs(c) == 1.0:
            return c, t
        if self.uses.get(key, 0) >= 2:
            return math.copysign(1.0, c), self.scale(abs(c), t)
        return self.reuse(c, t)

    def reuse(self, c: float, t: int, times: float = 1.0) -> tuple[float, int]:
        """times·c·T as ±times·N when the shared node N = |c|·T already exists (keeps sums'
        scalars equal)."""
        shared = self.scaled.get((abs(c), t)) if abs(c) != 1.0 else None
        return (times * c, t) if shared is None else (times * math.copysign(1.0, c), shared)

    def product(self, ka: tuple[int, int], kb: tuple[int, int], factor: float) -> Lazy:
        """factor · coefficient ka · coefficient kb; scalars multiply in Python, one node at most."""
        a, b = self.get(*ka), self.get(*kb)  # canonical already
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
        # canonical factors: no folding rule applies, only _fold's operand order (lower index first)
        return ca * cb, self.tape.intern(Node("mul", (ta, tb) if ta < tb else (tb, ta)))

    def total(self, terms: list[Lazy]) -> Lazy:
        """Σ terms as one lazy value: equal Terms merge, the most common |scalar| is factored out,
        so only terms with a different scalar need a scale node. (Plain loops: it runs once
        per coefficient.)"""
        if len(terms) == 1:  # a unary node of a linear u, a product by a constant, ...
            term = terms[0]
            return term if term is None or term[0] != 0.0 else None
        merged: dict[Optional[int], float] = {}
        for term in terms:
            if term is not None:
                merged[term[1]] = merged.get(term[1], 0.0) + term[0]
        items: list[tuple[float, Optional[int]]] = []
        counts: dict[float, int] = {}
        negative = True
        for t, c in merged.items():
            if c == 0.0 and t is not None:
                self.leftovers = True  # t's node may be needed by nothing else
            elif c != 0.0:
                items.append((c, t))
                negative = negative and c < 0
                if t is not None:
                    counts[abs(c)] = counts.get(abs(c), 0) + 1
        if len(items) < 2:
            return items[0] if items else None
        factor = abs(items[0][0])
        if counts:  # the first of the most common
            factor, most = 0.0, 0
            for c, count in counts.items():
                if count > most:
                    factor, most = c, count
        if negative:
            factor = -factor
        pos: list[int] = []
        neg: list[int] = []
        for c, t in items:
            r = c / factor
            if abs(r) != 1.0:
                r = _snap(r)
            if t is None:
                node = self.constant(abs(r))
            elif abs(r) == 1.0:
                node = t
            else:
                node = self.scale(abs(r), t)
            (pos if r > 0 else neg).append(node)
        fold = self.tape.append  # by index: no Term per step
        acc = pos[0] if pos else fold("neg", (neg.pop(0),))
        for node in pos[1:]:
            acc = fold("add", (acc, node))
        for node in neg:
            acc = fold("sub", (acc, node))
        return factor, acc

    def constant(self, c: float) -> int:
        """The node of a non-zero constant, looked up once per value."""
        node = self.consts.get(c)
        if node is None:
            node = self.consts[c] = self.tape.const(c).index
        return node

    def scale(self, c: float, t: int) -> int:
        key = (c, t)
        if key not in self.scaled:
            nodes = self.tape.nodes
            if nodes[t].op == "mul" and nodes[nodes[t].args[0]].op == "const":  # a shared c'·T
                self.scaled[key] = self.tape.append("mul", (self.constant(c), t))
            else:  # t canonical: no constant factor, no sign, so no folding rule applies
                self.scaled[key] = self.tape.intern(Node("mul", (self.constant(c), t)))
        return self.scaled[key]

    def materialize(self, value: Lazy, factor: float) -> Optional[Term]:
        """factor·value as a Term (one scale node at most), or None for zero."""
        if value is None:
            return None
        c, t = value
        c = _snap(c * factor)
        if t is None:
            return self.tape.const(c)
        if c == 1.0:
            return self.term(t)
        if c == -1.0:
            self.leftovers |= self.tape.nodes[t].op == "sub"  # -(a - b) folds to b - a
            return -self.term(t)
        return self.term(self.scale(c, t))

    def is_square_root(self, node: Node) -> bool:
        """sqrt(u) or u ** 0.5: squaring gives a recurrence whose products pair up
        (y_j·y_{k−j} is y_{k−j}·y_j), about a quarter of the unary recurrence's nodes."""
        if node.op == "fn":
            return type(node.payload) is Sqrt
        return node.op == "pow" and self.tape.nodes[node.args[1]] == Node("const", (), 0.5)

    def unary_form(self, i: int) -> tuple[int, Optional[int], float]:
        """(u, g, c) with dy = c·g·du for a fn or pow node. The constant factor and sign c are
        split off (``canon``), so products read g's own coefficients: cos' = -sin uses those of
        sin, not a forwarding series of its own; what the rule built and g does not need (that
        -sin, the constant 1 handed in as ``derived``) leaves the tape again."""
        scalar = [1.0]  # c, set by build()

        def build() -> list[int]:
            u, g = self.rule(i)
            value = None if g is None else self.canon((1.0, g.index))
            if value is None:
                return [u]
            c, t = value
            if t is None:
                return [u, g.index]
            scalar[0] = c
            return [u, t]

        mark = len(self.tape.nodes)
        roots = self.tape.pruned(build)
        del self.deg[mark:]  # the trimmed nodes were renumbered
        self.aliases = {k: v for k, v in self.aliases.items() if k < mark and (v is None or v < mark)}
        return roots[0], roots[1] if len(roots) > 1 else None, scalar[0]

    def rule(self, i: int) -> tuple[int, Optional[Term]]:
        """(u, g) with dy = g·du for a fn or pow node y, g built by the node's own rule."""
        tape = self.tape
        node = tape.nodes[i]
        y = self.term(i)
        if node.op == "fn":
            u = node.args[0]
            return u, local_derivative(node.payload, self.term(u), y)
        a, b = (self.term(k) for k in node.args)
        if self.depends(b.index):
            self.leftovers = True  # its coefficients may all come out as numbers
            return (b * log(a)).index, y
        # g = p·a**(p−1) is exact at a = 0 (0 or ±inf, as gen_graph gives), and for a whole p ends
        # at p = 0. For a fractional p it starts a chain a**(p−k), one power per order, cheap only
        # when a is linear in wrt (u_j = 0 for j >= 2); otherwise g = p·y/a closes on y itself.
        p = tape.nodes[b.index]
        if _whole(p) or self.degree(a.index) == 1:
            return a.index, b * a ** (p.payload - 1.0 if p.op == "const" else b - 1.0)
        return a.index, b * y / a

    # -- the recurrences ----------------------------------------------------------------------
    def form(self, i: int) -> Form:
        """How the coefficients of node i are computed, worked out once per node:
        ``("zero",)`` (free of wrt), ``("var",)`` (wrt itself), ``("add", a, b)``, ``("sub", a, b)``,
        ``("neg", a)`` (also -sin/-cos as their alias), ``("mul", a, b)``, ``("div", a, b)``,
        ``("root", u)`` (sqrt), ``("unary", u, g, c)`` (dy = c·g·du; g None: a zero derivative)."""
        found = self.forms.get(i)
        if found is not None:
            return found
        node = self.tape.nodes[i]
        op = node.op
        if op == "var" and i == self.wrt:
            found = ("var",)
        elif op in ("var", "const") or not self.depends(i):
            found = ("zero",)
        elif op in ("add", "sub", "mul", "div"):
            found = (op, *node.args)
        elif op == "neg":
            found = ("neg", node.args[0])
        elif self.is_square_root(node):
            found = ("root", node.args[0])
        elif op == "fn" and self.negated(i) is not None:
            found = ("neg", self.negated(i))
        else:
            found = ("unary", *self.unary_form(i))
        self.degree(len(self.tape.nodes) - 1)  # and of any node the form appended (g)
        self.forms[i] = found
        return found

    def products(self, form: Form, i: int, k: int) -> list[Product]:
        """The products (coefficient, coefficient, factor) that coefficient k of node i sums."""
        kind = form[0]
        if kind == "mul":
            a, b = form[1], form[2]
            low, high = max(0, k - self.degree(b)), min(k, self.degree(a))
            return [((a, j), (b, k - j), 1.0) for j in range(low, high + 1)]
        if kind == "div":
            b = form[2]
            return [((b, j), (i, k - j), -1.0) for j in range(1, min(k, self.degree(b)) + 1)]
        if kind == "root":  # y·y = u:  2·y_0·y_k = u_k − Σ_{j=1..k−1} y_j·y_{k−j}
            return [((i, j), (i, k - j), -1.0) for j in range(1, k)]
        if kind != "unary" or form[2] is None:
            return []
        u, g, c = form[1], form[2], form[3]
        low, high = max(1, k - self.degree(g)), min(k, self.degree(u))
        return [((u, j), (g, k - j), c * j) for j in range(low, high + 1)]

    def get(self, i: int, k: int) -> Lazy:
        """Coefficient k of node i in canonical form (see ``canon``), or None for zero."""
        if k:
            return self.coef.get((i, k))  # computed, or above the degree bound
        if i not in self.base:
            self.base[i] = self.canon((1.0, i))
        return self.base[i]

    def compute(self, i: int, k: int) -> Lazy:
        form = self.forms[i]  # settled by the plan
        kind = form[0]
        if kind == "var":
            return (1.0, None) if k == 1 else None
        if kind == "zero":
            return None
        get = self.get
        if kind == "add":
            return self.total([get(form[1], k), get(form[2], k)])
        if kind == "sub":
            b = get(form[2], k)
            return self.total([get(form[1], k), None if b is None else (-b[0], b[1])])
        if kind == "neg":
            a = get(form[1], k)
            return None if a is None else (-a[0], a[1])
        terms = [self.product(ka, kb, f) for ka, kb, f in self.terms[(i, k)]]
        if kind == "mul":
            return self.total(terms)
        if kind == "div":
            return self.quotient([get(form[1], k)] + terms, form[2])
        if kind == "root":
            half = self.quotient([get(form[1], k)] + terms, i)
            return None if half is None else (0.5 * half[0], half[1])
        value = self.total(terms)
        return None if value is None else (value[0] / k, value[1])

    def quotient(self, terms: list[Lazy], den: int) -> Lazy:
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

    def plan(self, root: int, wanted: range) -> list[tuple[int, int]]:
        """Every coefficient the wanted orders of root need, in an order that computes each after
        its needs (iterative depth-first). On the way back up, each coefficient's kind is settled
        from its needs' kinds, only the products whose factors are both non-zero are kept (most
        are zero where a factor is x, whose x_k = 0 for k >= 2), and the products that use each
        Term coefficient are counted. The hot loop of a build: helpers are inlined."""
        order: list[tuple[int, int]] = []
        state: dict[tuple[int, int], int] = {}
        kinds: dict[tuple[int, int], int] = {}  # 0 zero, 1 a plain number, 2 a Term
        terms, uses, forms = self.terms, self.uses, self.forms
        nodes, deg = self.tape.nodes, self.deg
        stack = [(root, k) for k in reversed(wanted) if k <= self.degree(root)]
        while stack:
            key = stack[-1]
            seen = state.get(key)
            if seen is None:  # on the way down: what it needs
                state[key] = 1
                i, k = key
                form = forms.get(i) or self.form(i)
                products = terms[key] = self.products(form, i, k)
                for ka, kb, _ in reversed(products):  # pushed last to first: visited in order
                    if kb[1] and kb not in state:
                        stack.append(kb)
                    if ka[1] and ka not in state:
                        stack.append(ka)
                for a in reversed(form[1:1 + _LINEAR.get(form[0], 0)]):
                    if k <= deg[a] and (a, k) not in state:
                        stack.append((a, k))
                continue
            stack.pop()
            if seen == 2:
                continue
            state[key] = 2  # on the way up: its needs are settled
            order.append(key)
            i, k = key
            form = forms[i]
            if form[0] == "var":
                kinds[key] = 1 if k == 1 else 0
                continue
            best = 0
            for a in form[1:1 + _LINEAR.get(form[0], 0)]:
                best = max(best, kinds.get((a, k), 0))
            live = []
            for ka, kb, f in terms[key]:
                x = kinds.get(ka, 0) if ka[1] else (1 if nodes[ka[0]].op == "const" else 2)
                y = kinds.get(kb, 0) if kb[1] else (1 if nodes[kb[0]].op == "const" else 2)
                if x and y:
                    best = max(best, x, y)
                    live.append((ka, kb, f))
                    if x == 2 and y == 2:
                        uses[ka] = uses.get(ka, 0) + 1
                        uses[kb] = uses.get(kb, 0) + 1
            terms[key] = live
            kinds[key] = 2 if best and form[0] in ("div", "root") else best
        return order

    def run(self, root: int, wanted: range, base_order: int) -> None:
        """Fill coef[(root, k)] for the wanted orders k and everything they need, iteratively (no
        recursion). Runs inside the caller's transaction, which undoes it all and restores the
        order tag."""
        self.tape.tag(base_order + 1)
        order = self.plan(root, wanted)
        for i, k in order:
            self.tape.tag(base_order + k)
            self.coef[(i, k)] = self.canon(self.compute(i, k))


def _check(term: Term, wrt: Term, n: int) -> int:
    if not isinstance(term, Term):
        raise TypeError(f"taylor_graph differentiates a Term, got {type(term).__name__} {term!r}")
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"taylor_graph: the order n must be an int >= 0, got {n!r}")
    return term.tape.check_var(wrt, "wrt").index


def _build(term: Term, w: int, wanted: range, callback: Callback | None,
           alone: bool = False) -> list[int]:
    """The derivatives of the ``wanted`` orders (indices; the tape's 0 for a zero one), in one
    transaction; ``alone`` (one order, ``taylor_diff``): a zero one appends nothing at all, and
    the closed form may replace the recurrence's result. Only the nodes they need stay: a
    coefficient that a sum cancelled, u = b·log(a) of a ** b whose coefficients all came out as
    numbers, or whichever of the two forms was not kept, leaves the tape again."""
    tape = term.tape
    base = tape.orders[term.index]
    mark = len(tape)

    def build() -> list[int]:
        taylor = _Taylor(tape, w)
        taylor.run(term.index, wanted, base)
        out = []
        for k in wanted:
            tape.tag(base + k)
            d = taylor.materialize(taylor.get(term.index, k), float(math.factorial(k)))
            if d is None and alone:
                raise _Zero
            out.append(tape.zero.index if d is None else d.index)
        if alone:  # the n-th derivative alone: its closed form may be smaller than the recurrence
            return [horner(tape, out[0], mark, w)]  # whichever form is not kept leaves the tape
        return out

    with tape.transaction(callback):
        return tape.pruned(build)


def taylor_graph(term: Term, wrt: Term, n: int, callback: Callback | None = None) -> list[Term]:
    """Append the derivatives of orders 1..n of ``term`` in ``wrt``; returns them as Terms.

    Each result equals ``term.diff(wrt, k)``; the tape's 0 marks a structurally zero one. Nodes
    are tagged with the derivative order that first needed them (``tape.orders``); ``callback``
    sees each appended Term. Transactional: if anything raises, the tape is left as it was.
    """
    w = _check(term, wrt, n)
    if n == 0:
        return []
    return [Term(term.tape, i) for i in _build(term, w, range(1, n + 1), callback)]


def taylor_diff(term: Term, wrt: Term, n: int, callback: Callback | None = None) -> Term:
    """The n-th derivative alone: only the coefficients order n needs, and its closed form instead
    when that is smaller and as accurate (``horner``). A structural zero appends nothing and
    returns the tape's 0."""
    w = _check(term, wrt, n)
    if n == 0:
        return term
    try:
        return Term(term.tape, _build(term, w, range(n, n + 1), callback, alone=True)[0])
    except _Zero:
        with term.tape.transaction(callback):  # the callback hears of the 0 if it is new
            return term.tape.zero
