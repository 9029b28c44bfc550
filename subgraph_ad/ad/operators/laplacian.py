"""The Laplacian Δu (weighted: Σ aᵢⱼ ∂ᵢⱼu) by one forward pass with a rule per op (``LAPLACIAN``),
and the biharmonic Δ²u: that pass twice, or one fourth-order pass (``_Direct``)."""

from __future__ import annotations

import itertools
from typing import Any, Callable, Optional

from ...core import Callback, LimitError, Tape, Term, checks, dependencies
from ...functions.dual import Dual
from ...functions.view import view
from ..forward import derivative_order
from . import array_laplacian as arrays
from .algebra import Lin, bits
from .arguments import check_vars, check_weights, metric
from .passes import Pass, linear_share, linear_slot
from ...tables import rule_table


Values = dict[int, Lin]


def _mul_laplacian(p: Pass, i: int, node: Any, lap: Values) -> Lin:
    alg = p.alg
    a, b = node.args
    if a == b:  # Δ(a²) = 2(aΔa + ∇a·∇a)
        return alg.scale(alg.add(alg.mul(alg.of(a), lap.get(a)), p.pair(a, a)), 2)
    total = alg.add(alg.mul(alg.of(a), lap.get(b)), alg.mul(alg.of(b), lap.get(a)))
    return alg.add(total, alg.scale(p.pair(a, b), 2))


def _div_laplacian(p: Pass, i: int, node: Any, lap: Values) -> Lin:
    # c = a/b: Δc = (Δa − cΔb − 2(∇a·∇b − c∇b·∇b)/b)/b, reusing c itself
    alg = p.alg
    a, b = node.args
    if not p.mask(b):
        return alg.div(lap.get(a), b)
    c = alg.of(i)
    cross = alg.add(p.pair(a, b), alg.scale(alg.mul(c, p.pair(b, b)), -1))
    numerator = alg.add(lap.get(a), alg.scale(alg.mul(c, lap.get(b)), -1))
    numerator = alg.add(numerator, alg.scale(alg.div(cross, b), -2))
    return alg.div(numerator, b)


def _chain_laplacian(p: Pass, i: int, node: Any, lap: Values) -> Lin:
    """Δf(a₁, a₂) = Σₖ fₖ Δaₖ + Σⱼₖ fⱼₖ ∇aⱼ·∇aₖ over the moving operands, from the local partials."""
    alg = p.alg
    parts = p.partials(i)
    total: Lin = None
    for a, f in parts:
        share = linear_share(p, i, a, lap.get(a)) if linear_slot(p, i, a) else p.times(lap.get(a), f)
        total = alg.add(total, share)
    for (j, k), f in p.second(i).items():
        if f is not None:
            weight = 1 if j == k else 2
            total = alg.add(total, alg.scale(p.times(p.pair(parts[j][0], parts[k][0]), f), weight))
    return total


def _fn_laplacian(p: Pass, i: int, node: Any, lap: Values) -> Lin:
    """A function's Laplacian by the chain rule; q = Q(g(a)) declared to run through g (tanh′,
    σ′) as Δq = Q′(g)·Δg + Q″(g)·∇g·∇g, which reuses g's own Laplacian where the pass has built
    it (g is then a node the root needs)."""
    through = view(p.tape, i).through()
    if through is not None and through[0].index in lap:
        g, q = through
        one = p.tape.const(1.0)
        slope = q(Dual(Dual(g, one), 1.0))  # Q′(g) and Q″(g): Q differentiated twice
        first, second = (None if t is None else g._lift(t) for t in (slope.value.tangent, slope.tangent.tangent))
        total = p.times(lap[g.index], first)
        return p.alg.add(total, p.times(p.pair(g.index, g.index), second))
    return _chain_laplacian(p, i, node, lap)


#: The Laplacian rules, one per op: (pass, node index, node, the operands' Laplacians) -> Lin.
LAPLACIAN: dict[str, Callable[[Pass, int, Any, Values], Lin]] = rule_table("Laplacian LAPLACIAN", {
    "add": lambda p, i, node, lap: p.alg.add(lap.get(node.args[0]), lap.get(node.args[1])),
    "sub": lambda p, i, node, lap: p.alg.add(lap.get(node.args[0]), p.alg.scale(lap.get(node.args[1]), -1)),
    "neg": lambda p, i, node, lap: p.alg.scale(lap.get(node.args[0]), -1),
    "mul": _mul_laplacian,
    "div": _div_laplacian,
    "pow": _chain_laplacian,
    "fn": _fn_laplacian,
})


def _laplacian_pass(p: Pass, root: int) -> Values:
    """Δ of every node root needs that moves (absent: zero), in tape order."""
    tape = p.tape
    nodes = tape.nodes
    order = dependencies(tape, [root], stop=lambda i: not p.mask(i))
    p.note_squares(order)
    lap: Values = {}
    for i in order:
        node = nodes[i]
        if node.args and p.mask(i):
            found = LAPLACIAN[node.op](p, i, node, lap)
            if found is not None:
                lap[i] = found
    return lap


# -- the biharmonic in one pass (method="direct") -------------------------------------------------------
class _Direct:
    """Δ²c of a node c = f(u₁, …) from its operands' Δ²u, Δu, ∇u and Hessians, by the chain rule
    to the fourth order (G_kl = ∇u_k·∇u_l, H_k the Hessian of u_k, f_k… the local partials):

    Δ²c = Σ f_k Δ²u_k + Σ f_kl [Δu_kΔu_l + 2(∇u_k·∇Δu_l + ∇u_l·∇Δu_k) + 2⟨H_k, H_l⟩]
          + Σ f_klm [2Δu_k G_lm + 4 ∇u_mᵀH_k∇u_l] + Σ f_klmn G_kl G_mn,

    sums over ordered operand tuples. ⟨H_k, H_l⟩ = Σ_p ∇(∂_p u_k)·∇(∂_p u_l) and
    ∇u_mᵀH_k∇u_l = Σ_p ∂_p u_m·(∇(∂_p u_k)·∇u_l) are pairings of gradient entries."""

    def __init__(self, p: Pass, lap: Values) -> None:
        self.p, self.lap = p, lap
        self.terms: dict[int, Optional[Term]] = {}
        self.entry_terms: dict[tuple[int, int], Optional[Term]] = {}

    def lap_term(self, i: int) -> Optional[Term]:
        if i not in self.terms:
            self.terms[i] = self.p.alg.make(self.lap.get(i))
        return self.terms[i]

    def entry(self, i: int, q: int) -> Optional[Term]:
        """∂i/∂x_q as a node."""
        key = (i, q)
        if key not in self.entry_terms:
            self.entry_terms[key] = self.p.alg.make(self.p.gradient(i, 1 << q).get(q))
        return self.entry_terms[key]

    def pair_terms(self, a: Optional[Term], b: Optional[Term]) -> Lin:
        return None if a is None or b is None else self.p.pair(a.index, b.index)

    def hessians(self, a: int, b: int) -> Lin:
        """⟨H_a, H_b⟩ (Frobenius)."""
        total: dict = {}
        for q in bits(self.p.mask(a) & self.p.mask(b)):
            self.p.alg.accumulate(total, self.pair_terms(self.entry(a, q), self.entry(b, q)))
        return total or None

    def sandwich(self, m: int, k: int, n: int) -> Lin:
        """∇mᵀH_k∇n."""
        alg = self.p.alg
        total: dict = {}
        for q in bits(self.p.mask(m) & self.p.mask(k)):
            dm = self.p.gradient(m, 1 << q).get(q)
            alg.accumulate(total, alg.mul(dm, self.pair_terms(self.entry(k, q), Term(self.p.tape, n))))
        return total or None

    def rule(self, i: int, node: Any, bih: Values) -> Lin:
        p, alg, lap = self.p, self.p.alg, self.lap
        if node.op in ("add", "sub", "neg"):
            signs = (1, -1) if node.op == "sub" else (-1,) if node.op == "neg" else (1, 1)
            total: Lin = None
            for a, sign in zip(node.args, signs):
                total = alg.add(total, alg.scale(bih.get(a), sign))
            return total
        ops = p.moving(i)
        if len(ops) == 1 and linear_slot(p, i, ops[0]):  # f(…, a, …) linear in a: Δ²f = f(…, Δ²a, …)
            return linear_share(p, i, ops[0], bih.get(ops[0]))
        r = range(len(ops))
        f = lambda *index: alg.of(p.derivative(i, index))  # noqa: E731
        total = None
        for k in r:
            total = alg.add(total, p.times(bih.get(ops[k]), p.derivative(i, (k,))))
        for j, k in itertools.product(r, r):
            a, b = ops[j], ops[k]
            inner = alg.mul(lap.get(a), lap.get(b))
            cross = alg.add(self.pair_terms(Term(p.tape, a), self.lap_term(b)),
                            self.pair_terms(Term(p.tape, b), self.lap_term(a)))
            inner = alg.add(inner, alg.scale(cross, 2))
            inner = alg.add(inner, alg.scale(self.hessians(a, b), 2))
            total = alg.add(total, alg.mul(f(j, k), inner))
        for j, k, m in itertools.product(r, r, r):
            inner = alg.add(alg.scale(alg.mul(lap.get(ops[j]), p.pair(ops[k], ops[m])), 2),
                            alg.scale(self.sandwich(ops[m], ops[j], ops[k]), 4))
            total = alg.add(total, alg.mul(f(j, k, m), inner))
        for j, k, m, n in itertools.product(r, r, r, r):
            total = alg.add(total, alg.mul(f(j, k, m, n), alg.mul(p.pair(ops[j], ops[k]), p.pair(ops[m], ops[n]))))
        return total


def _direct_biharmonic(p: Pass, root: int) -> Lin:
    lap = _laplacian_pass(p, root)
    direct = _Direct(p, lap)
    nodes = p.tape.nodes
    bih: Values = {}
    for i in dependencies(p.tape, [root], stop=lambda i: not p.mask(i)):
        node = nodes[i]
        if node.args and p.mask(i):
            found = direct.rule(i, node, bih)
            if found is not None:
                bih[i] = found
    return bih.get(root)



# -- public entries ------------------------------------------------------------------------------------
def laplacian(u: Term, xs: Any, weights: Any = None, callback: Callback | None = None) -> Term:
    """Δu = Σ ∂²u/∂xᵢ² as a Term, by one forward pass over u's nodes (``LAPLACIAN``); with
    ``weights`` A (symmetric; dense d×d rows or ndarray, or a dict {(i, j): value}; numbers or
    Terms), Σ aᵢⱼ ∂²u/∂xᵢ∂xⱼ by the same pass. The tape's 0 for a structural zero.
    Over array nodes (u or a var of xs an array) the pass carries Jacobian blocks and
    Laplacians as array nodes (``array_laplacian``). Transactional: if anything raises, the
    tape is left as it was.

    >>> from subgraph_ad import Tape, exp
    >>> tape = Tape(); x = tape.var("x"); y = tape.var("y")
    >>> laplacian(exp(x) * y**3, [x, y]).to_sympy()
    y**3*exp(x) + 6*y*exp(x)
    >>> laplacian(x * y, [x, y], weights=[[0, 1], [1, 0]]).to_sympy()
    2
    """
    xs = check_vars(u, xs, "laplacian")
    tape = u.tape
    if arrays.holds_arrays(u, xs):
        entries = None if weights is None else check_weights(u, weights, arrays.columns(xs))
        try:
            with tape.transaction(callback, order=derivative_order(u) + 2):
                (index,) = tape.pruned(lambda: [arrays.laplacian(u, xs, entries).index])
                return Term(tape, index)
        except arrays.Unsupported:
            with tape.transaction():  # the expansion and the scalar pass: all or nothing
                return laplacian(*arrays.scalar_twin(u, xs), weights, callback)
    entries = None if weights is None else check_weights(u, weights, len(xs))
    with tape.transaction(callback, order=derivative_order(u) + 2):
        def build() -> list[int]:
            p = Pass(tape, xs)
            if entries is not None:
                p.metric = metric(p.alg, entries, len(xs))
                p.rows = [sum(1 << q for q in row) for row in p.metric]
            return [p.alg.term(_laplacian_pass(p, u.index).get(u.index)).index]

        (index,) = tape.pruned(build)
        return Term(tape, index)


#: How ``biharmonic`` builds: the Laplacian pass twice, one fourth-order pass, or whichever of
#: the two appends fewer nodes.
BIHARMONIC_METHODS = ("auto", "nested", "direct")


def _biharmonic_build(tape: Tape, xs: list[Term], root: int, method: str) -> list[int]:
    first = Pass(tape, xs)
    if method == "direct":
        return [first.alg.term(_direct_biharmonic(first, root)).index]
    lap = first.alg.term(_laplacian_pass(first, root).get(root))
    second = Pass(tape, xs)
    return [second.alg.term(_laplacian_pass(second, lap.index).get(lap.index)).index]


#: The direct trial of ``biharmonic(method="auto")`` stops past this many times the nodes of
#: the nested one: it is then larger, or too slow to be worth it.
DIRECT_BUDGET = 4


def _smaller(tape: Tape, xs: list[Term], root: int) -> str:
    """"direct" if it appends fewer nodes than "nested" (measured on trial; the direct trial,
    whose pass also builds nodes it then drops, is stopped by a budget of ``DIRECT_BUDGET``
    times the nested count), else "nested"."""
    with tape.trial() as nested:
        tape.pruned(lambda: _biharmonic_build(tape, xs, root, "nested"))
    saved = tape.max_nodes
    limit = len(tape) + DIRECT_BUDGET * nested.appended
    tape.max_nodes = limit if saved is None else min(saved, limit)
    try:
        with tape.trial() as direct:
            tape.pruned(lambda: _biharmonic_build(tape, xs, root, "direct"))
    except LimitError:
        return "nested"
    finally:
        tape.max_nodes = saved
    return "direct" if direct.appended < nested.appended else "nested"


def biharmonic(u: Term, xs: Any, method: str = "auto", callback: Callback | None = None) -> Term:
    """Δ²u = Σᵢⱼ ∂⁴u/∂xᵢ²∂xⱼ² as a Term. ``method="nested"``: the Laplacian pass run on the
    Laplacian's own graph; ``"direct"``: one pass of the fourth-order chain rule (``_Direct``),
    which pairs Hessians; ``"auto"`` (default): whichever appends fewer nodes, measured on
    trial (nested won on the benchmark functions but the smallest network; docs/operators.md).
    Over array nodes, "auto" and "nested" run the array Laplacian pass twice; "direct" expands
    u to scalar nodes. Transactional.

    >>> from subgraph_ad import Tape, sin
    >>> tape = Tape(); x = tape.var("x"); y = tape.var("y")
    >>> biharmonic(x**4 * y**2 + sin(x), [x, y]).to_sympy()
    48*x**2 + 24*y**2 + sin(x)
    """
    xs = check_vars(u, xs, "biharmonic")
    checks.choice(method, "method", BIHARMONIC_METHODS, "biharmonic")
    tape = u.tape
    if arrays.holds_arrays(u, xs):  # the array pass run on its own result; "direct" pairs scalar Hessians
        if method != "direct":
            try:
                with tape.transaction(callback, order=derivative_order(u) + 4):
                    (index,) = tape.pruned(lambda: [arrays.laplacian(arrays.laplacian(u, xs, None), xs, None).index])
                    return Term(tape, index)
            except arrays.Unsupported:
                pass
        with tape.transaction():
            return biharmonic(*arrays.scalar_twin(u, xs), method, callback)
    with tape.transaction(callback, order=derivative_order(u) + 4):
        chosen = _smaller(tape, xs, u.index) if method == "auto" else method
        (index,) = tape.pruned(lambda: _biharmonic_build(tape, xs, u.index, chosen))
        return Term(tape, index)
