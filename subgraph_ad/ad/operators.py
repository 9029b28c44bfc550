"""Differential operators as derivative subgraphs: the Laplacian Δu = Σ ∂²u/∂xᵢ² (weighted:
Σ aᵢⱼ ∂ᵢⱼu), the biharmonic Δ²u, directional Taylor jets ∂ʲu[v,…,v] and symmetric derivative
tensors, each appended to u's tape as ordinary Terms.

The Laplacian is ONE forward pass over the nodes u needs, by a rule per op (``LAPLACIAN``):
Δ(a ± b) = Δa ± Δb, Δ(ab) = aΔb + bΔa + 2∇a·∇b, and for a function (``fn``, ``pow``)
Δf(a, …) = Σₖ fₖ Δaₖ + Σₖₗ fₖₗ ∇aₖ·∇aₗ, where fₖ are the function's own local partials
(``Function.partials``, from its ``fdiff``) and fₖₗ those differentiated once more with the
operand as the variable (``Pass.second``): every built-in and user function works with no rule
of its own. With weights A the pairing ∇a·∇b becomes ∇aᵀA∇b.

Gradients are not carried forward — along a product of d factors that would build d²/2
entries. A pairing reads the gradients it needs on demand (``Pass.gradient``): one reverse sweep
from the node, stopping at gradients already built, for only the vars both sides reach (a
sparse gradient carries only the vars that reach its node; a pairing of disjoint sides is a
structural zero and builds nothing). Numbers stay out of the graph while they can: values are
linear combinations Σ cᵢ·Tᵢ of nodes with number coefficients (``Lin``), turned into nodes only
where a product needs them, summed by coefficient so that Σ 4·xᵢ·xᵢ meets the Σ xᵢ·xᵢ u already
has. Δ of Π sin xᵢ is then −d·Π sin xᵢ without a node.

Directional jets (``directional_taylor``, ``JETS``) propagate the truncated Taylor coefficients
of t ↦ u(x + t·v) with the same local partials (the ODE recurrence k·y_k = Σ j·a_j·f′_{k−j}).

>>> from subgraph_ad import Tape, exp, sin
>>> tape = Tape(); x = tape.var("x", 0.5); y = tape.var("y", 1.0)
>>> laplacian(x**2 * y + sin(y), [x, y]).to_sympy()
2*y - sin(y)
>>> [d.to_sympy() for d in directional_taylor(x * y, {x: 1.0, y: 2.0}, 2)]
[2*x + y, 4]
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction
from typing import Any, Callable, Iterator, Mapping, Optional, Sequence, Union

import numpy as np

from ..core import Callback, LimitError, Tape, Term, checks, dependencies
from ..core.ops import exact_value
from ..functions import Function, QuadraticSlope, power_partial
from .forward import derivative_order, gen_graph, gen_graph_many
from .reverse import grad_graph

Scalar = Union[Fraction, float]
#: A value: Σ c·T over nodes T (index; None: the constant 1) with number coefficients c;
#: None is a structural zero.
Lin = Optional[dict]
#: A sum of more terms than this becomes one node (an add chain over n terms stays O(n)).
MAX_TERMS = 64
ONE = Fraction(1)


def bits(mask: int) -> Iterator[int]:
    """The positions of the set bits of ``mask``, ascending."""
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


class Algebra:
    """Linear combinations of nodes with number coefficients, and the nodes they become.

    Constant factors and signs of a node (3·T, −T) move into the coefficient (``canon``);
    coefficients are Fractions while exact, floats otherwise. ``squares`` names the node that
    already is T·T (T ** 2 in u), so a pairing's squares meet u's own."""

    def __init__(self, tape: Tape) -> None:
        self.tape = tape
        self.made: dict[tuple, Term] = {}
        self.squares: dict[int, int] = {}

    def number(self, i: int) -> Optional[Scalar]:
        """The value of the constant node i as a coefficient: a Fraction, or a finite float;
        None for one that stays a node (pi, log(2), inf, nan: exact forms and IEEE at run time)."""
        node = self.tape.nodes[i]
        exact = exact_value(node)
        if isinstance(exact, Fraction):
            return exact
        return node.payload if exact is None and math.isfinite(node.payload) else None

    def canon(self, i: int) -> tuple[Scalar, Optional[int]]:
        """Node i as c·T with T free of constant factors and signs (T None: the number c)."""
        c: Scalar = ONE
        nodes = self.tape.nodes
        while True:
            node = nodes[i]
            if node.op == "const":
                value = self.number(i)
                if value is not None and math.isfinite(c * value):
                    return c * value, None
                return c, i
            if node.op == "neg":
                c, i = -c, node.args[0]
                continue
            if node.op == "fn" and node.payload.arity == 1 and node.payload.negative_of is not None:
                # −sin(u) (cos′) as −1 times the sin(u) u has: f = −g reads g's node
                c, i = -c, node.payload.negative_of(Term(self.tape, node.args[0])).index
                continue
            if node.op == "mul" and nodes[node.args[0]].op == "const":
                value = self.number(node.args[0])
                if value is not None and math.isfinite(c * value):
                    c, i = c * value, node.args[1]
                    continue
            return c, i

    def of(self, term: Term | int | None) -> Lin:
        """A node (Term or index; None: zero) as a Lin."""
        if term is None:
            return None
        c, t = self.canon(term.index if isinstance(term, Term) else term)
        return None if c == 0 else {t: c}

    def constant(self, c: Scalar) -> Lin:
        return None if c == 0 else {None: c}

    def add(self, a: Lin, b: Lin) -> Lin:
        if a is None:
            return b
        if b is None:
            return a
        out = dict(a)
        self.accumulate(out, b)
        if not out:
            return None
        return self.of(self.make(out)) if len(out) > MAX_TERMS else out

    def accumulate(self, total: dict, b: Lin) -> None:
        """total += b, in place (a sum this caller owns)."""
        if b is None:
            return
        for k, c in b.items():
            s = total.get(k, 0) + c
            if s == 0:
                total.pop(k, None)
            else:
                total[k] = s

    def scale(self, a: Lin, c: Scalar) -> Lin:
        if a is None or c == 0:
            return None
        return {k: v * c for k, v in a.items()}

    def single(self, a: dict) -> dict:
        """``a`` with at most one node besides its constant: more become one node first."""
        if len(a) > 2 or (len(a) == 2 and None not in a):
            c, t = self.canon(self.make(a).index)  # type: ignore[union-attr]
            return {t: c}
        return a

    def product(self, i: int, j: int) -> tuple[Scalar, Optional[int]]:
        """The node i·j as c·T; a square u has (T ** 2) is reused."""
        if i == j and i in self.squares:
            return self.canon(self.squares[i])
        return self.canon((Term(self.tape, i) * Term(self.tape, j)).index)

    def mul(self, a: Lin, b: Lin) -> Lin:
        if a is None or b is None:
            return None
        out: dict = {}
        for ka, ca in self.single(a).items():
            for kb, cb in self.single(b).items():
                if ka is None or kb is None:
                    c, k = ca * cb, (kb if ka is None else ka)
                else:
                    c0, k = self.product(ka, kb)
                    c = ca * cb * c0
                self.accumulate(out, None if c == 0 else {k: c})
        return out or None

    def div(self, a: Lin, b: int) -> Lin:
        """a / node b: (c·T)/b = c·(T/b), and c/b = c·(1/b)."""
        if a is None:
            return None
        out: dict = {}
        for k, c in self.single(a).items():
            numerator = self.tape.const(1) if k is None else Term(self.tape, k)
            c0, t = self.canon((numerator / Term(self.tape, b)).index)
            self.accumulate(out, None if c * c0 == 0 else {t: c * c0})
        return out or None

    def make(self, a: Lin) -> Optional[Term]:
        """The node(s) of a Lin (None for zero): its terms summed by coefficient — each group in
        tape order, so that a sum u already has is met — scaled once per group."""
        if a is None:
            return None
        key = tuple(sorted(a.items(), key=lambda kv: -1 if kv[0] is None else kv[0]))
        found = self.made.get(key)
        if found is not None:
            return found
        tape = self.tape
        groups: dict[Scalar, list[int]] = {}
        for k, c in key:
            if k is not None:
                groups.setdefault(c, []).append(k)
        total: Optional[Term] = None
        for c, ks in groups.items():
            part = Term(tape, ks[0])
            for k in ks[1:]:
                part = part + Term(tape, k)
            if total is None:
                total = c * part
            elif c < 0:
                total = total - (-c) * part
            else:
                total = total + c * part
        const = a.get(None)
        if const is not None:
            total = tape.const(const) if total is None else total + const
        self.made[key] = total  # type: ignore[assignment]
        return total

    def term(self, a: Lin) -> Term:
        """``make``, with the tape's 0 for a structural zero."""
        made = self.make(a)
        return self.tape.zero if made is None else made


# -- the local partials of an op, as every pass reads them -----------------------------------------
def _fn_partials(p: Pass, node: Any, operands: list[Term], out: Term) -> tuple[Optional[Term], ...]:
    fn: Function = node.payload  # an fn node's payload is its function
    return fn.partials(*operands, out)


def _pow_partials(p: Pass, node: Any, operands: list[Term], out: Term) -> tuple[Optional[Term], ...]:
    a, b = operands
    return tuple(power_partial(k, a, b, out) if p.mask(operands[k].index) else None for k in range(2))


#: The local partials ∂out/∂operand of the ops a pass differentiates generically (None: zero),
#: from the function's own ``fdiff`` or the power's ``power_partial``.
PARTIALS: dict[str, Callable[..., tuple[Optional[Term], ...]]] = {"fn": _fn_partials, "pow": _pow_partials}


class Local:
    """The local partial derivatives of one kind of node (an op or function applied to operands
    of a pattern) to any order, built on a scratch tape where every operand that is not a
    constant is a var, by ``gen_graph``. On the real tape an operand is a node that folding
    may dissolve in a derivative's graph (2·(0.5·s) is s), so a sweep seeded at that node would
    miss it; a var cannot be dissolved. ``copy`` puts the operands back."""

    def __init__(self, tape: Tape, node: Any) -> None:
        self.scratch = Tape(max_nodes=None)
        operands = Local.operands(tape, node)
        self.vars = [self.scratch.var(f"t{k}") for k in range(len(operands))]
        args = tuple(self.vars[operands.index(a)].index if a in operands else
                     self.scratch.constant(tape.nodes[a].payload, exact_value(tape.nodes[a])) for a in node.args)
        self.output = Term(self.scratch, self.scratch.append(node.op, args, node.payload))
        self.found: dict[tuple[int, ...], Optional[Term]] = {(): self.output}

    @staticmethod
    def operands(tape: Tape, node: Any) -> list[int]:
        """The distinct operands of a node that are not constants: the scratch vars t0, t1."""
        return list(dict.fromkeys(a for a in node.args if tape.nodes[a].op != "const"))

    @staticmethod
    def key(tape: Tape, node: Any) -> tuple:
        """Nodes of one op and function whose operands repeat alike and whose constants are the
        same share their local derivatives."""
        distinct = Local.operands(tape, node)
        pattern = tuple(("var", distinct.index(a)) if tape.nodes[a].op != "const" else
                        ("const", float(tape.nodes[a].payload).hex(), tape.nodes[a].exact) for a in node.args)
        return (node.op, node.payload, pattern)

    def derivative(self, slots: tuple[int, ...]) -> Optional[Term]:
        """∂ᵏf/∂t_{slots[0]}… on the scratch tape (None: a structural zero)."""
        if slots not in self.found:
            done = max(k for k in range(len(slots)) if slots[:k] in self.found)
            for k in range(done + 1, len(slots) + 1):
                previous = self.found[slots[:k - 1]]
                d = None if previous is None else gen_graph(previous, self.vars[slots[k - 1]])
                self.found[slots[:k]] = None if d is None or d == self.scratch.zero else d
        return self.found[slots]

    def copy(self, term: Optional[Term], tape: Tape, node: Any, index: int) -> Optional[Term]:
        """A scratch Term rebuilt on ``tape`` with each var t_k the operand node it stands for
        and the scratch output the node ``index`` itself."""
        if term is None:
            return None
        scratch = self.scratch
        mapped = {v.index: a for v, a in zip(self.vars, Local.operands(tape, node))}
        mapped[self.output.index] = index
        for j in dependencies(scratch, [term.index], stop=lambda j: j in mapped):
            if j in mapped:
                continue
            other = scratch.nodes[j]
            if other.op == "const":
                mapped[j] = tape.constant(other.payload, exact_value(other))
            else:
                mapped[j] = tape.append(other.op, tuple(mapped[a] for a in other.args), other.payload)
        return Term(tape, mapped[term.index])


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
        return {(k, l): self.derivative(i, (k, l)) for k in range(n) for l in range(k, n)}

    def times(self, value: Lin, f: Optional[Term]) -> Lin:
        """value · f for a local partial f; a reciprocal c/v is applied as a quotient (value·c)/v,
        so no 1/v is built (``functions.chain`` does the same)."""
        if f is None or value is None:
            return None
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
        built already; memoised. Missing entries are structural zeros."""
        missing = wanted & self.mask(root) & ~self.known.get(root, 0)
        if missing:
            self._sweep(root, missing)
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
        else None. Then ∇i·∇j = s·(∇a·∇j), and the entries of ∇i are never built."""
        node = self.tape.nodes[i]
        moving = [a for a in dict.fromkeys(node.args) if self.mask(a)]
        if len(moving) != 1 or not node.args:
            return None
        (a,) = moving
        alg, op = self.alg, node.op
        if op in ("add", "neg") or (op == "sub" and a == node.args[0]):
            sign = -1 if op == "neg" else 1
            return a, lambda value: alg.scale(value, sign)
        if op == "sub":
            return a, lambda value: alg.scale(value, -1)
        if op == "mul":
            other = alg.of(node.args[1] if a == node.args[0] else node.args[0])
            factor = alg.scale(alg.of(a), 2) if node.args[0] == node.args[1] else other
            return a, lambda value: alg.mul(value, factor)
        if op == "div":
            b = node.args[1]
            if a == node.args[0]:
                return a, lambda value: alg.div(value, b)
            return a, lambda value: alg.scale(alg.div(alg.mul(value, alg.of(i)), b), -1)
        ((_, f),) = self.partials(i)
        return a, lambda value: self.times(value, f)

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


# -- the reverse rules of ``Pass.gradient``: (operand, its share of the adjoint) ------------------------
def _mul_adjoint(p: Pass, i: int, node: Any, bar: Lin) -> list[tuple[int, Lin]]:
    a, b = node.args
    if a == b:
        return [(a, p.alg.scale(p.alg.mul(bar, p.alg.of(a)), 2))]
    return [(a, p.alg.mul(bar, p.alg.of(b))), (b, p.alg.mul(bar, p.alg.of(a)))]


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
ADJOINTS: dict[str, Callable[[Pass, int, Any, Lin], list[tuple[int, Lin]]]] = {
    "add": lambda p, i, node, bar: [(node.args[0], bar), (node.args[1], bar)],
    "sub": lambda p, i, node, bar: [(node.args[0], bar), (node.args[1], p.alg.scale(bar, -1))],
    "neg": lambda p, i, node, bar: [(node.args[0], p.alg.scale(bar, -1))],
    "mul": _mul_adjoint,
    "div": _div_adjoint,
    "pow": _chain_adjoint,
    "fn": _chain_adjoint,
}


# -- the Laplacian: one rule per op --------------------------------------------------------------------
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


def _linear_share(p: Pass, i: int, operand: int, value: Lin) -> Lin:
    """f(…, value, …) for a function linear in ``operand`` (xlogy(p, a) = p·log(a)), which is 0
    wherever value is: the strong zero that f′·value (log(0)·0 = nan) would lose."""
    node = p.tape.nodes[i]
    if value is None:
        return None
    moved = p.alg.term(value)
    args = [moved if a == operand else Term(p.tape, a) for a in node.args]
    return p.alg.of(node.payload(*args))


def _linear_slot(p: Pass, i: int, operand: int) -> bool:
    """Whether node i is a function linear in ``operand`` whose other operands do not move."""
    node = p.tape.nodes[i]
    if node.op != "fn":
        return False
    return any(a == operand and node.payload.is_linear(k) for k, a in enumerate(node.args)) and \
        all(a == operand or not p.mask(a) for a in node.args)


def _chain_laplacian(p: Pass, i: int, node: Any, lap: Values) -> Lin:
    """Δf(a₁, a₂) = Σₖ fₖ Δaₖ + Σₖₗ fₖₗ ∇aₖ·∇aₗ over the moving operands, from the local partials."""
    alg = p.alg
    parts = p.partials(i)
    total: Lin = None
    for a, f in parts:
        share = _linear_share(p, i, a, lap.get(a)) if _linear_slot(p, i, a) else p.times(lap.get(a), f)
        total = alg.add(total, share)
    for (k, l), f in p.second(i).items():
        if f is not None:
            weight = 1 if k == l else 2
            total = alg.add(total, alg.scale(p.times(p.pair(parts[k][0], parts[l][0]), f), weight))
    return total


def _fn_laplacian(p: Pass, i: int, node: Any, lap: Values) -> Lin:
    """A function's Laplacian by the chain rule; g′(a) of a ``QuadraticSlope`` (tanh′, σ′) as
    its quadratic q(g): Δq(g) = q′(g)·Δg + 2·square·∇g·∇g, which reuses g's own Laplacian where
    the pass has built it (g is then a node the root needs)."""
    fn = node.payload
    if isinstance(fn, QuadraticSlope):
        g = fn.of(Term(p.tape, node.args[0])).index
        if g in lap:
            alg = p.alg
            slope = alg.add(alg.constant(Fraction(fn.linear_part)), {g: Fraction(2 * fn.square)})
            return alg.add(alg.mul(slope, lap[g]), alg.scale(p.pair(g, g), 2 * fn.square))
    return _chain_laplacian(p, i, node, lap)


#: The Laplacian rules, one per op: (pass, node index, node, the operands' Laplacians) -> Lin.
LAPLACIAN: dict[str, Callable[[Pass, int, Any, Values], Lin]] = {
    "add": lambda p, i, node, lap: p.alg.add(lap.get(node.args[0]), lap.get(node.args[1])),
    "sub": lambda p, i, node, lap: p.alg.add(lap.get(node.args[0]), p.alg.scale(lap.get(node.args[1]), -1)),
    "neg": lambda p, i, node, lap: p.alg.scale(lap.get(node.args[0]), -1),
    "mul": _mul_laplacian,
    "div": _div_laplacian,
    "pow": _chain_laplacian,
    "fn": _fn_laplacian,
}


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

    def sandwich(self, m: int, k: int, l: int) -> Lin:
        """∇mᵀH_k∇l."""
        alg = self.p.alg
        total: dict = {}
        for q in bits(self.p.mask(m) & self.p.mask(k)):
            dm = self.p.gradient(m, 1 << q).get(q)
            alg.accumulate(total, alg.mul(dm, self.pair_terms(self.entry(k, q), Term(self.p.tape, l))))
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
        r = range(len(ops))
        f = lambda *index: alg.of(p.derivative(i, index))  # noqa: E731
        total = None
        for k in r:
            total = alg.add(total, p.times(bih.get(ops[k]), p.derivative(i, (k,))))
        for k, l in itertools.product(r, r):
            a, b = ops[k], ops[l]
            inner = alg.mul(lap.get(a), lap.get(b))
            cross = alg.add(self.pair_terms(Term(p.tape, a), self.lap_term(b)),
                            self.pair_terms(Term(p.tape, b), self.lap_term(a)))
            inner = alg.add(inner, alg.scale(cross, 2))
            inner = alg.add(inner, alg.scale(self.hessians(a, b), 2))
            total = alg.add(total, alg.mul(f(k, l), inner))
        for k, l, m in itertools.product(r, r, r):
            inner = alg.add(alg.scale(alg.mul(lap.get(ops[k]), p.pair(ops[l], ops[m])), 2),
                            alg.scale(self.sandwich(ops[m], ops[k], ops[l]), 4))
            total = alg.add(total, alg.mul(f(k, l, m), inner))
        for k, l, m, n in itertools.product(r, r, r, r):
            total = alg.add(total, alg.mul(f(k, l, m, n), alg.mul(p.pair(ops[k], ops[l]), p.pair(ops[m], ops[n]))))
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


# -- checks ------------------------------------------------------------------------------------------
def check_vars(u: Any, xs: Any, caller: str) -> list[Term]:
    """u a Term and xs distinct vars of its tape (a Term, a list, a tuple or an array of them)."""
    if not isinstance(u, Term):
        raise TypeError(f"{caller} takes a Term (or, at the top level, a Python function), got "
                        f"{type(u).__name__} {u!r:.80}")
    if isinstance(xs, np.ndarray) and xs.dtype == object:
        xs = list(xs.ravel())
    if isinstance(xs, Term):
        xs = [xs]
    if not isinstance(xs, (list, tuple)) or not xs:
        raise TypeError(f"{caller}: xs must be a var or a non-empty list of vars, got {type(xs).__name__} {xs!r:.80}")
    out = [u.tape.check_var(x, f"{caller}: xs[{k}]") for k, x in enumerate(xs)]
    if len({x.index for x in out}) != len(out):
        raise ValueError(f"{caller}: xs repeats a var: {[x.name for x in out]}")
    return out


def _weight(u: Term, value: Any, where: str) -> Any:
    """One weight: a real number or a Term of u's tape (Terms are compared as nodes)."""
    if isinstance(value, Term):
        u._lift(value)  # the same tape, or a ValueError naming both
        return value
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, Fraction, np.integer, np.floating)):
        raise TypeError(f"laplacian: weights{where} must be a real number or a Term, got {type(value).__name__} {value!r}")
    return value


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, Term) or isinstance(b, Term):
        return isinstance(a, Term) and isinstance(b, Term) and a.index == b.index
    if a == b:
        return True
    return bool(math.isfinite(a) and math.isfinite(b) and abs(a - b) <= 1e-12 * max(abs(a), abs(b)))


def check_weights(u: Term, weights: Any, d: int) -> dict[tuple[int, int], Any]:
    """The weight matrix A (d×d) as its nonzero entries {(i, j): number or Term}, both
    triangles: a dense nested list or ndarray, or a dict {(i, j): value} (a pair given once
    stands for both). A must be symmetric (to a relative 1e-12 for numbers; Terms: the same
    node)."""
    entries: dict[tuple[int, int], Any] = {}
    if isinstance(weights, Mapping):
        for key, value in weights.items():
            if not (isinstance(key, tuple) and len(key) == 2 and all(isinstance(k, (int, np.integer))
                                                                    and not isinstance(k, bool) for k in key)):
                raise TypeError(f"laplacian: a weights dict maps (i, j) pairs of ints to values, got the key {key!r}")
            i, j = int(key[0]), int(key[1])
            if not (0 <= i < d and 0 <= j < d):
                raise ValueError(f"laplacian: weights entry {key!r} is out of range for {d} vars (0..{d - 1})")
            value = _weight(u, value, f"[{i}, {j}]")
            mirror = weights.get((j, i), value)  # a pair given once stands for both
            if not _same(value, _weight(u, mirror, f"[{j}, {i}]")):
                raise ValueError(f"laplacian: weights must be symmetric, but ({i}, {j}) is {value!r} and ({j}, {i}) "
                                 f"is {mirror!r}")
            entries[(i, j)] = entries[(j, i)] = value
    else:
        rows = weights.tolist() if isinstance(weights, np.ndarray) and weights.dtype != object else weights
        if isinstance(rows, np.ndarray):
            rows = [list(r) for r in rows]
        if not (isinstance(rows, (list, tuple)) and len(rows) == d
                and all(isinstance(r, (list, tuple, np.ndarray)) and len(r) == d for r in rows)):
            shape = np.shape(weights) if not isinstance(weights, (str, bytes)) else type(weights).__name__
            raise ValueError(f"laplacian: weights must be a {d}×{d} matrix (one row and column per var) or a dict "
                             f"{{(i, j): value}}, got {type(weights).__name__} of shape {shape}")
        for i in range(d):
            for j in range(d):
                value = _weight(u, rows[i][j], f"[{i}][{j}]")
                if j < i and not _same(value, entries.get((j, i), 0) if (j, i) in entries else rows[j][i]):
                    raise ValueError(f"laplacian: weights must be symmetric, but A[{i}][{j}] = {value!r} and "
                                     f"A[{j}][{i}] = {rows[j][i]!r}")
                if j >= i:
                    entries[(i, j)] = entries[(j, i)] = value
    return {key: v for key, v in entries.items() if isinstance(v, Term) or v != 0}


def _scalar(value: Any) -> Scalar:
    """A weight as a coefficient: exact where it is a whole number or a Fraction."""
    if isinstance(value, Fraction):
        return value
    if isinstance(value, (int, np.integer)) or (float(value).is_integer() and abs(value) < 2 ** 53):
        return Fraction(int(value))
    return float(value)


def _metric(alg: Algebra, entries: dict[tuple[int, int], Any], d: int) -> list[dict[int, Lin]]:
    """The rows of the metric: {position: weight as a Lin} per position."""
    rows: list[dict[int, Lin]] = [{} for _ in range(d)]
    for (i, j), value in sorted(entries.items()):
        lin = alg.of(value) if isinstance(value, Term) else alg.constant(_scalar(value))
        if lin is not None:
            rows[i][j] = lin
    return rows


# -- public entries ------------------------------------------------------------------------------------
def laplacian(u: Term, xs: Any, weights: Any = None, callback: Callback | None = None) -> Term:
    """Δu = Σ ∂²u/∂xᵢ² as a Term, by one forward pass over u's nodes (``LAPLACIAN``); with
    ``weights`` A (symmetric; dense d×d rows or ndarray, or a dict {(i, j): value}; numbers or
    Terms), Σ aᵢⱼ ∂²u/∂xᵢ∂xⱼ by the same pass. The tape's 0 for a structural zero.
    Transactional: if anything raises, the tape is left as it was.

    >>> from subgraph_ad import Tape, exp
    >>> tape = Tape(); x = tape.var("x"); y = tape.var("y")
    >>> laplacian(exp(x) * y**3, [x, y]).to_sympy()
    y**3*exp(x) + 6*y*exp(x)
    >>> laplacian(x * y, [x, y], weights=[[0, 1], [1, 0]]).to_sympy()
    2
    """
    xs = check_vars(u, xs, "laplacian")
    entries = None if weights is None else check_weights(u, weights, len(xs))
    tape = u.tape
    with tape.transaction(callback, order=derivative_order(u) + 2):
        def build() -> list[int]:
            p = Pass(tape, xs)
            if entries is not None:
                p.metric = _metric(p.alg, entries, len(xs))
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
    Transactional.

    >>> from subgraph_ad import Tape, sin
    >>> tape = Tape(); x = tape.var("x"); y = tape.var("y")
    >>> biharmonic(x**4 * y**2 + sin(x), [x, y]).to_sympy()
    48*x**2 + 24*y**2 + sin(x)
    """
    xs = check_vars(u, xs, "biharmonic")
    checks.choice(method, "method", BIHARMONIC_METHODS, "biharmonic")
    tape = u.tape
    with tape.transaction(callback, order=derivative_order(u) + 4):
        chosen = _smaller(tape, xs, u.index) if method == "auto" else method
        (index,) = tape.pruned(lambda: _biharmonic_build(tape, xs, u.index, chosen))
        return Term(tape, index)


# -- directional Taylor jets ---------------------------------------------------------------------------
Jets = dict[int, list[Lin]]


def _coef(p: Pass, jets: Jets, i: int, k: int) -> Lin:
    """Coefficient k of node i: the node itself at k = 0, zero where it does not move."""
    if k == 0:
        return p.alg.of(i)
    found = jets.get(i)
    return found[k] if found is not None and k < len(found) else None


def _mul_jet(p: Pass, i: int, node: Any, jets: Jets, k: int) -> Lin:
    a, b = node.args
    alg = p.alg
    total: dict = {}
    if a == b:  # a square: each cross pair once, doubled
        for j in range((k + 1) // 2):
            alg.accumulate(total, alg.scale(alg.mul(_coef(p, jets, a, j), _coef(p, jets, a, k - j)), 2))
        if k % 2 == 0:
            half = _coef(p, jets, a, k // 2)
            alg.accumulate(total, alg.mul(half, half))
        return total or None
    for j in range(k + 1):
        alg.accumulate(total, alg.mul(_coef(p, jets, a, j), _coef(p, jets, b, k - j)))
    return total or None


def _div_jet(p: Pass, i: int, node: Any, jets: Jets, k: int) -> Lin:
    # q = a/b: q_k = (a_k − Σ_{j=1..k} b_j q_{k−j}) / b
    a, b = node.args
    alg = p.alg
    total: dict = {}
    alg.accumulate(total, _coef(p, jets, a, k))
    for j in range(1, k + 1):
        alg.accumulate(total, alg.scale(alg.mul(_coef(p, jets, b, j), _coef(p, jets, i, k - j)), -1))
    return alg.div(total or None, b)


def _chain_jet(p: Pass, i: int, node: Any, jets: Jets, k: int) -> Lin:
    """y = f(a, …): k·y_k = Σ_m Σ_{j=1..k} j·a_{m,j}·(f_m)_{k−j}, the partials f_m Taylor-propagated
    themselves; a function linear in its one moving operand gets f(…, a_k, …)."""
    alg = p.alg
    parts = p.partials(i)
    if len(parts) == 1 and _linear_slot(p, i, parts[0][0]):
        return _linear_share(p, i, parts[0][0], _coef(p, jets, parts[0][0], k))
    total: dict = {}
    for a, f in parts:
        if f is None:
            continue
        for j in range(1, k + 1):
            aj = _coef(p, jets, a, j)
            if aj is None:
                continue
            term = p.times(aj, f) if k == j else alg.mul(aj, _coef(p, jets, f.index, k - j))
            alg.accumulate(total, alg.scale(term, Fraction(j, k)))
    return total or None


#: The jet rules: coefficient k of a node from its operands' coefficients up to k.
JETS: dict[str, Callable[[Pass, int, Any, Jets, int], Lin]] = {
    "add": lambda p, i, node, jets, k: p.alg.add(_coef(p, jets, node.args[0], k), _coef(p, jets, node.args[1], k)),
    "sub": lambda p, i, node, jets, k: p.alg.add(_coef(p, jets, node.args[0], k),
                                                 p.alg.scale(_coef(p, jets, node.args[1], k), -1)),
    "neg": lambda p, i, node, jets, k: p.alg.scale(_coef(p, jets, node.args[0], k), -1),
    "mul": _mul_jet,
    "div": _div_jet,
    "pow": _chain_jet,
    "fn": _chain_jet,
}


def _jet_orders(p: Pass, root: int, n: int) -> dict[int, int]:
    """How many coefficients each node needs: n at the root, as many as a node's own at its
    operands, one fewer at a function's partials (their coefficients enter one order later)."""
    nodes = p.tape.nodes
    need = {root: n}
    stack = [root]
    while stack:
        i = stack.pop()
        r = need[i]
        node = nodes[i]
        if not node.args or not p.mask(i):
            continue
        follow = [(a, r) for a in node.args if p.mask(a)]
        if node.op in PARTIALS and r > 1:
            follow += [(f.index, r - 1) for _, f in p.partials(i) if f is not None and p.mask(f.index)]
        for a, order in follow:
            if need.get(a, 0) < order:
                need[a] = order
                stack.append(a)
    return need


def _directions(u: Term, direction: Any) -> tuple[list[Term], list[Any]]:
    if not isinstance(direction, Mapping):
        raise TypeError(f"taylor_graph: the direction must be a dict {{var: component}}, got "
                        f"{type(direction).__name__} {direction!r:.80}")
    keys = list(direction)
    xs = [u.tape.check_var(x, "direction key") for x in keys]
    if len({x.index for x in xs}) != len(xs):
        raise ValueError(f"taylor_graph: the direction names a var twice: {[x.name for x in xs]}")
    values = []
    for x in xs:
        v = direction[x]
        if isinstance(v, Term):
            u._lift(v)
        elif isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, Fraction, np.integer, np.floating)):
            raise TypeError(f"taylor_graph: the component of {x.name} must be a number or a Term, got "
                            f"{type(v).__name__} {v!r}")
        values.append(v)
    return xs, values


def directional_taylor(u: Term, direction: Mapping[Term, Any], n: int, callback: Callback | None = None) -> list[Term]:
    """The directional derivatives ∂ʲu[v,…,v] = dʲ/dtʲ u(x + t·v) at t = 0 for j = 1..n, as
    Terms: v is ``direction`` ({var: number or Term}; vars not named have component 0). One
    Taylor-mode sweep (``JETS``): every node's coefficients of t up to the order it is needed at.
    The tape's 0 marks a structural zero. Transactional.

    >>> from subgraph_ad import Tape, sin
    >>> tape = Tape(); x = tape.var("x"); y = tape.var("y")
    >>> [d.to_sympy() for d in directional_taylor(sin(x * y), {x: 1, y: 1}, 2)]
    [(x + y)*cos(x*y), -(x + y)**2*sin(x*y) + 2*cos(x*y)]
    """
    if not isinstance(u, Term):
        raise TypeError(f"taylor_graph differentiates a Term, got {type(u).__name__} {u!r:.80}")
    xs, values = _directions(u, direction)
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"taylor_graph: the order n must be an int >= 0, got {n!r}")
    if n == 0:
        return []
    tape = u.tape
    base = derivative_order(u)
    with tape.transaction(callback, order=base + 1):
        def build() -> list[int]:
            p = Pass(tape, xs)
            seeds = [p.alg.of(v) if isinstance(v, Term) else p.alg.constant(v if isinstance(v, float) else Fraction(v))
                     for v in values]
            need = _jet_orders(p, u.index, n)
            nodes = tape.nodes
            jets: Jets = {}
            for k in range(1, n + 1):
                tape.tag(base + k)
                for i in sorted(i for i, r in need.items() if r >= k and p.mask(i)):
                    node = nodes[i]
                    if node.op == "var":
                        value = seeds[p.position[i]] if k == 1 else None
                    else:
                        value = JETS[node.op](p, i, node, jets, k)
                    jets.setdefault(i, [None]).append(value)
            out = []
            for k in range(1, n + 1):
                tape.tag(base + k)
                out.append(p.alg.term(p.alg.scale(_coef(p, jets, u.index, k), math.factorial(k))).index)
            return out

        return [Term(tape, i) for i in tape.pruned(build)]


# -- derivative tensors --------------------------------------------------------------------------------
class DerivativeTensor:
    """The symmetric tensor T[i, j, …] = ∂ᵏu/∂xᵢ∂xⱼ… of order k over the vars ``vars``: indexed
    in any order of its indices (T[0, 1, 1] is T[1, 0, 1], the same node), the tape's 0 where an
    entry is zero by structure. ``entries`` lists the distinct structural nonzeros by sorted
    index tuple.

    >>> from subgraph_ad import Tape
    >>> tape = Tape(); x = tape.var("x"); y = tape.var("y")
    >>> T = derivative_tensor(x**3 * y, [x, y], 3)
    >>> T[1, 0, 0].to_sympy(), T[0, 1, 0] is T[0, 0, 1], sorted(T.entries)
    (6*x, True, [(0, 0, 0), (0, 0, 1)])
    """

    def __init__(self, vars: list[Term], order: int, entries: dict[tuple[int, ...], Term]) -> None:
        self.vars = vars
        self.order = order
        self.entries = entries
        self.zero = vars[0].tape.zero

    @property
    def shape(self) -> tuple[int, ...]:
        return (len(self.vars),) * self.order

    def __getitem__(self, index: Any) -> Term:
        key = index if isinstance(index, tuple) else (index,)
        d = len(self.vars)
        if len(key) != self.order or not all(isinstance(k, (int, np.integer)) and not isinstance(k, bool) for k in key):
            raise IndexError(f"a derivative tensor of order {self.order} takes {self.order} int indices, got {index!r}")
        if not all(-d <= k < d for k in key):
            raise IndexError(f"index {index!r} is out of range for {d} vars")
        return self.entries.get(tuple(sorted(int(k) % d for k in key)), self.zero)

    def __repr__(self) -> str:
        return (f"DerivativeTensor(order {self.order} over {[x.name for x in self.vars]}, "
                f"{len(self.entries)} distinct nonzero entries)")


def derivative_tensor(u: Term, xs: Any, k: int, callback: Callback | None = None) -> DerivativeTensor:
    """The tensor of the k-th partial derivatives of u by ``xs`` (1 <= k <= 4): the gradient by one
    reverse sweep, then each order by forward passes over the entries of the previous one whose
    sorted index tuple ends at or before the new index and that reach its var — one node per
    distinct entry, memoised per node and var. Transactional."""
    xs = check_vars(u, xs, "derivative_tensor")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= 4:
        raise ValueError(f"derivative_tensor: the order k must be an int from 1 to 4, got {k!r}")
    tape = u.tape
    with tape.transaction(callback):
        zero = tape.zero
        first = grad_graph(u, xs)
        level: dict[tuple[int, ...], Term] = {(i,): g for i, g in enumerate(first) if g != zero}
        entries = dict(level)
        for _ in range(1, int(k)):
            p = Pass(tape, xs)
            following: dict[tuple[int, ...], Term] = {}
            for j, x in enumerate(xs):
                keys = [key for key, t in level.items() if key[-1] <= j and p.mask(t.index) >> j & 1]
                if keys:
                    for key, t in zip(keys, gen_graph_many([level[key] for key in keys], x)):
                        if t != zero:
                            following[key + (j,)] = t
            level = dict(sorted(following.items()))
            entries.update(level)
    return DerivativeTensor(xs, int(k), {key: t for key, t in entries.items() if len(key) == k})
