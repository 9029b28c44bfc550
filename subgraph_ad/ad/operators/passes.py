"""What every operator pass shares (``Pass``): the vars that reach each node, the local partials
(``Local``, per kind of node), gradients read on demand by a reverse sweep and the pairings
∇a·∇b."""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

from ...core import Tape, Term, dependencies
from ...functions import Function, gate, is_gate, power_partial
from .algebra import ONE, Algebra, Lin, Scalar, bits
from .local import Local
from ...tables import rule_table


def _fn_partials(p: Pass, node: Any, operands: list[Term], out: Term) -> tuple[Optional[Term], ...]:
    fn: Function = node.payload  # an fn node's payload is its function
    return fn.partials(*operands, out)


def _pow_partials(p: Pass, node: Any, operands: list[Term], out: Term) -> tuple[Optional[Term], ...]:
    a, b = operands
    return tuple(power_partial(k, a, b, out) if p.mask(operands[k].index) else None for k in range(2))


#: The local partials ∂out/∂operand of the ops a pass differentiates generically (None: zero),
#: from the function's own ``fdiff`` or the power's ``power_partial``.
#: The other ops have rules of their own in each pass (``ADJOINTS``, ``LAPLACIAN``).
PARTIALS: dict[str, Callable[..., tuple[Optional[Term], ...]]] = rule_table(
    "operator PARTIALS", {"fn": _fn_partials, "pow": _pow_partials}, without=("add", "sub", "mul", "div", "neg"))


class Pass:
    """What one operator pass knows: which of the vars ``xs`` reach each node (a bit mask, in
    tape order as far as asked, nodes the pass appends included), the gradients built so far,
    the local partials and the metric of the pairings (None: the identity; else rows
    {position: {position: Lin weight}})."""

    def __init__(self, tape: Tape, xs: Sequence[Term], metric: Optional[list[dict[int, Lin]]] = None) -> None:
        self.tape = tape
        self.alg = Algebra(tape)
        self.position = {x.index: k for k, x in enumerate(xs)}
        self.masks: list[int] = []
        self.metric = metric
        self.rows = None if metric is None else [sum(1 << q for q in row) for row in metric]
        self.grads: dict[int, dict[int, Lin]] = {}
        self.known: dict[int, int] = {}
        self.local_memo: dict[tuple, Optional[Term]] = {}
        self.locals: dict[tuple, Local] = {}
        self.partial_memo: dict[int, list[tuple[int, Optional[Term]]]] = {}
        self.pair_memo: dict[tuple[int, int], Lin] = {}

    def mask(self, i: int) -> int:
        masks = self.masks
        if i >= len(masks):
            nodes, position = self.tape.nodes, self.position
            for j in range(len(masks), i + 1):
                node = nodes[j]
                m = 0
                if node.op == "var":
                    k = position.get(j)
                    m = 0 if k is None else 1 << k
                elif node.op == "fn" and node.payload.constant:  # a condition does not move
                    m = 0
                else:
                    for a in node.args:
                        m |= masks[a]
                masks.append(m)
        return masks[i]

    def note_squares(self, order: list[int]) -> None:
        """Remember the squares u already has (T·T, T ** 2), for ``Algebra.product``."""
        nodes, squares = self.tape.nodes, self.alg.squares
        for i in order:
            node = nodes[i]
            if node.op == "mul" and node.args[0] == node.args[1]:
                squares.setdefault(node.args[0], i)
            elif node.op == "pow" and nodes[node.args[1]].op == "const" and nodes[node.args[1]].payload == 2.0:
                squares.setdefault(node.args[0], i)

    # -- local partials -------------------------------------------------------------------------
    def partials(self, i: int) -> list[tuple[int, Optional[Term]]]:
        """(operand, ∂node/∂operand) for each distinct operand that moves (a slot repeated, as in
        x ** x, is one operand with the partials summed), for ``fn`` and ``pow`` nodes."""
        found = self.partial_memo.get(i)
        if found is not None:
            return found
        tape = self.tape
        node = tape.nodes[i]
        operands = [Term(tape, a) for a in node.args]
        slots = PARTIALS[node.op](self, node, operands, Term(tape, i))
        merged: dict[int, Optional[Term]] = {}
        for a, part in zip(node.args, slots):
            if not self.mask(a):
                continue
            if a in merged and part is not None:
                merged[a] = part if merged[a] is None else merged[a] + part  # type: ignore[operator]
            else:
                merged.setdefault(a, part)
        found = list(merged.items())
        self.partial_memo[i] = found
        return found

    def moving(self, i: int) -> list[int]:
        """The distinct operands of node i that move (depend on a var of the pass)."""
        return [a for a in dict.fromkeys(self.tape.nodes[i].args) if self.mask(a)]

    def derivative(self, i: int, index: tuple[int, ...]) -> Optional[Term]:
        """∂ᵏnode/∂a_{index[0]}…, index naming operands by position in ``moving(i)``: the node's
        local partial derivative of any order (``Local``), on this tape."""
        index = tuple(sorted(index))
        key = (i, index)
        if key not in self.local_memo:
            node = self.tape.nodes[i]
            local = self.locals.get(Local.key(self.tape, node))
            if local is None:
                local = self.locals[Local.key(self.tape, node)] = Local(self.tape, node)
            moving, operands = self.moving(i), Local.operands(self.tape, node)
            slots = tuple(operands.index(moving[k]) for k in index)
            self.local_memo[key] = local.copy(local.derivative(slots), self.tape, node, i)
        return self.local_memo[key]

    def second(self, i: int) -> dict[tuple[int, int], Optional[Term]]:
        """The second local partials ∂²node/∂a∂b for its moving operands a <= b (by position)."""
        n = len(self.moving(i))
        return {(j, k): self.derivative(i, (j, k)) for j in range(n) for k in range(j, n)}

    def times(self, value: Lin, f: Optional[Term]) -> Lin:
        """value · f for a local partial f; a reciprocal c/v is applied as a quotient (value·c)/v,
        so no 1/v is built (``functions.chain`` does the same); a gate f (relu′ = u > 0) selects
        the value instead (``functions.gate``), so a flat piece's inf never meets it."""
        if f is None or value is None:
            return None
        if is_gate(f):
            return self.alg.of(gate(f, self.alg.term(value)))
        node = f.node
        if node.op == "div" and self.tape.nodes[node.args[0]].op == "const":
            c = self.alg.number(node.args[0])
            if c is not None:
                return self.alg.div(self.alg.scale(value, c), node.args[1])
        return self.alg.mul(value, self.alg.of(f))

    # -- gradients on demand --------------------------------------------------------------------
    def gradient(self, root: int, wanted: int) -> dict[int, Lin]:
        """The entries ∂root/∂x_p (p a position in ``xs``) for the positions in ``wanted`` that
        reach root, built by one reverse sweep from root that stops at nodes whose entries are
        built already; memoised. Missing entries are structural zeros.

        A function linear in its one moving operand a (select(c, a) of ``where``) has the entries
        f(…, ∂a/∂x_p, …), built first, in tape order, and the sweep stops there: an adjoint
        carried through it would be 0·∂a/∂x_p, nan where the branch not taken is."""
        missing = wanted & self.mask(root) & ~self.known.get(root, 0)
        if missing:
            nodes = self.tape.nodes
            stop = lambda i: nodes[i].op == "var" or not self.mask(i) & missing  # noqa: E731
            for i in dependencies(self.tape, [root], stop=stop):
                moving = self.moving(i) if nodes[i].op == "fn" else []
                if len(moving) == 1 and linear_slot(self, i, moving[0]):
                    a = moving[0]
                    need = missing & self.mask(i) & ~self.known.get(i, 0)
                    if need:
                        inner = self.gradient(a, need)  # its own linear nodes are built: no deeper call
                        grads = self.grads.setdefault(i, {})
                        for q in bits(need):
                            found = linear_share(self, i, a, inner.get(q))
                            if found is not None:
                                grads[q] = found
                        self.known[i] = self.known.get(i, 0) | need
            if missing & ~self.known.get(root, 0):
                self._sweep(root, missing & ~self.known.get(root, 0))
        return self.grads[root]

    def _stops(self, i: int, missing: int) -> bool:
        need = self.mask(i) & missing
        return i in self.grads and not need & ~self.known[i]

    def _sweep(self, root: int, missing: int) -> None:
        tape, alg, nodes = self.tape, self.alg, self.tape.nodes
        stop = lambda i: i != root and (nodes[i].op == "var" or not self.mask(i) & missing or self._stops(i, missing))  # noqa: E731
        order = dependencies(tape, [root], stop=stop)
        adjoint: dict[int, Lin] = {root: {None: ONE}}
        entries: dict[int, Lin] = {}
        for i in reversed(order):
            bar = adjoint.pop(i, None)
            if bar is None:
                continue
            node = nodes[i]
            if node.op == "var":
                p = self.position.get(i)
                if p is not None and missing >> p & 1:
                    entries[p] = alg.add(entries.get(p), bar)
            elif i != root and self._stops(i, missing):
                known = self.grads[i]
                for p in bits(self.mask(i) & missing):
                    entries[p] = alg.add(entries.get(p), alg.mul(bar, known.get(p)))
            else:
                for a, part in ADJOINTS[node.op](self, i, node, bar):
                    if part is not None and self.mask(a) & missing:
                        adjoint[a] = alg.add(adjoint.get(a), part)
        grads = self.grads.setdefault(root, {})
        for p in bits(missing):
            found = entries.get(p)
            if found is not None:
                grads[p] = found
        self.known[root] = self.known.get(root, 0) | missing

    # -- pairings ∇aᵀA∇b --------------------------------------------------------------------------
    def neighbours(self, mask: int) -> int:
        """The positions the metric pairs with those in ``mask``."""
        if self.rows is None:
            return mask
        out = 0
        for p in bits(mask):
            out |= self.rows[p]
        return out

    def scaling(self, i: int) -> Optional[tuple[int, Callable[[Lin], Lin]]]:
        """For a node with one moving operand a, whose gradient is s·∇a: (a, value ↦ value·s);
        else None. Then ∇i·∇j = s·(∇a·∇j), and the entries of ∇i are never built. s is the sum
        of the node's partials over every slot a fills (the reverse rule's shares summed): x − x
        has s = 0, x/x has 1/x − (x/x)/x, not the first slot's alone."""
        moving = self.moving(i)
        if len(moving) != 1:
            return None
        (a,) = moving
        node = self.tape.nodes[i]

        def apply(value: Lin) -> Lin:
            total: Lin = None
            for operand, share in ADJOINTS[node.op](self, i, node, value):
                if operand == a:
                    total = self.alg.add(total, share)
            return total

        return a, apply

    def pair(self, a: int, b: int) -> Lin:
        """∇a·∇b (∇aᵀA∇b with a metric): a structural zero when no var pairs them. Through a
        node of one moving operand the pairing is scaled (``scaling``), memoised at every step;
        the rest is summed over the entries both sides reach (``_entries``), and nothing is
        built for a var only one side reaches. Iterative: a chain of compositions never
        recurses."""
        steps: list[tuple[tuple[int, int], list[Callable[[Lin], Lin]]]] = []
        memo = self.pair_memo
        while True:
            key = (a, b) if a <= b else (b, a)
            if key in memo:
                result = memo[key]
                break
            if not self.mask(a) & self.neighbours(self.mask(b)):
                result = memo[key] = None
                break
            a, b = key[1], key[0]  # the later node first
            found = self.scaling(a) or (self.scaling(b) if a != b else None)
            if found is None:
                result = memo[key] = self._entries(a, b)
                break
            operand, apply = found
            if a == b:
                steps.append((key, [apply, apply]))
                a = b = operand
            elif self.scaling(a) is not None:
                steps.append((key, [apply]))
                a = operand
            else:
                steps.append((key, [apply]))
                b = operand
        for key, applies in reversed(steps):
            for apply in applies:
                result = apply(result)
            memo[key] = result
        return result

    def _entries(self, a: int, b: int) -> Lin:
        """Σ_p ∂a/∂x_p·∂b/∂x_p (Σ_pq A_pq ∂a/∂x_p·∂b/∂x_q) over the entries both sides reach.

        An entry is a Lin Σ c·T over a few nodes T (the tanh′ of a layer, say). Where the entries
        share few nodes among many vars, the sum is taken as a bilinear form in those nodes
        instead, Σ_ts (Σ_p c_pt·c_ps)·T·S, its coefficients summed as numbers: the nodes it
        builds then grow with the nodes, not with the vars (``_bilinear``); each way is costed
        and the cheaper built."""
        alg = self.alg
        need_a = self.mask(a) & self.neighbours(self.mask(b))
        need_b = self.mask(b) & self.neighbours(self.mask(a))
        ga, gb = self.gradient(a, need_a), self.gradient(b, need_b)
        pairs: list[Any] = [(ea, w, gb[q]) for p in bits(need_a) if (ea := ga.get(p)) is not None
                 for q, w in (((p, None),) if self.metric is None else self.metric[p].items())
                 if need_b >> q & 1 and gb.get(q) is not None]
        bilinear = self._bilinear(pairs)
        if bilinear is not None:
            return bilinear
        total: dict = {}
        for ea, w, eb in pairs:
            alg.accumulate(total, alg.mul(ea if w is None else alg.mul(w, ea), eb))
        return total or None

    def _bilinear(self, pairs: list[tuple[dict, Lin, dict]]) -> Lin:
        """The pairing as Σ_ts C_ts·T·S with C summed as numbers, if that builds fewer nodes than
        one product per entry (each entry of several nodes built first); None otherwise, or
        where a weight is a Term."""
        if any(w is not None and None not in w for w, in ((w,) for _, w, _ in pairs)) or \
                any(w is not None and len(w) > 1 for _, w, _ in pairs):
            return None
        weight = lambda w: 1 if w is None else w[None]  # noqa: E731
        coefficients: dict[tuple[Optional[int], Optional[int]], Scalar] = {}
        for ea, w, eb in pairs:
            c = weight(w)
            for t, ct in ea.items():
                for u, cu in eb.items():
                    key = (t, u) if (t if t is not None else -1) <= (u if u is not None else -1) else (u, t)
                    coefficients[key] = coefficients.get(key, 0) + c * ct * cu
        live = [c for (t, u), c in coefficients.items() if c != 0 and t is not None and u is not None]
        distinct = {id(e): e for ea, _, eb in pairs for e in (ea, eb)}.values()
        separate = sum(_make_cost(e) for e in distinct) + 2 * len(pairs)
        if 2 * len(live) + len(set(live)) >= separate:
            return None
        alg = self.alg
        total: dict = {}
        for (t, u), c in coefficients.items():
            if c == 0:
                continue
            if t is None or u is None:
                alg.accumulate(total, {u if t is None else t: c})
            else:
                c0, k = alg.product(t, u)
                alg.accumulate(total, None if c * c0 == 0 else {k: c * c0})
        return total or None


def _make_cost(a: dict) -> int:
    """About how many nodes ``Algebra.make`` appends for a Lin of several nodes (0 for one)."""
    nodes = [c for k, c in a.items() if k is not None]
    if len(a) <= 1:
        return 0
    return len(nodes) - 1 + len({abs(c) for c in nodes} - {1}) + (None in a)


def linear_share(p: Pass, i: int, operand: int, value: Lin) -> Lin:
    """f(…, value, …) for a function linear in ``operand`` (xlogy(p, a) = p·log(a)), which is 0
    wherever value is: the strong zero that f′·value (log(0)·0 = nan) would lose."""
    node = p.tape.nodes[i]
    if value is None:
        return None
    moved = p.alg.term(value)
    args = [moved if a == operand else Term(p.tape, a) for a in node.args]
    return p.alg.of(node.payload(*args))


def linear_slot(p: Pass, i: int, operand: int) -> bool:
    """Whether node i is a function linear in ``operand`` whose other operands do not move."""
    node = p.tape.nodes[i]
    if node.op != "fn":
        return False
    slots = [k for k, a in enumerate(node.args) if a == operand]  # xlogy(a, a) = a·log a is not linear in a
    return len(slots) == 1 and node.payload.is_linear(slots[0]) and \
        all(a == operand or not p.mask(a) for a in node.args)


# -- the reverse rules of ``Pass.gradient``: (operand, its share of the adjoint) ------------------------
def _mul_adjoint(p: Pass, i: int, node: Any, bar: Lin) -> list[tuple[int, Lin]]:
    a, b = node.args
    if a == b:
        return [(a, p.alg.scale(p.alg.mul(bar, p.alg.of(a)), 2))]
    return [(x, p.alg.mul(bar, p.alg.of(other))) for x, other in ((a, b), (b, a)) if p.mask(x)]


def _div_adjoint(p: Pass, i: int, node: Any, bar: Lin) -> list[tuple[int, Lin]]:
    a, b = node.args
    alg = p.alg
    shares = [(a, alg.div(bar, b) if p.mask(a) else None)]
    if p.mask(b):
        shares.append((b, alg.scale(alg.div(alg.mul(bar, alg.of(i)), b), -1)))
    return shares


def _chain_adjoint(p: Pass, i: int, node: Any, bar: Lin) -> list[tuple[int, Lin]]:
    return [(a, p.times(bar, f)) for a, f in p.partials(i)]


#: How an adjoint reaches the operands, by op (a square's one operand gets 2·bar·a).
ADJOINTS: dict[str, Callable[[Pass, int, Any, Lin], list[tuple[int, Lin]]]] = rule_table("operator ADJOINTS", {
    "add": lambda p, i, node, bar: [(node.args[0], bar), (node.args[1], bar)],
    "sub": lambda p, i, node, bar: [(node.args[0], bar), (node.args[1], p.alg.scale(bar, -1))],
    "neg": lambda p, i, node, bar: [(node.args[0], p.alg.scale(bar, -1))],
    "mul": _mul_adjoint,
    "div": _div_adjoint,
    "pow": _chain_adjoint,
    "fn": _chain_adjoint,
})
