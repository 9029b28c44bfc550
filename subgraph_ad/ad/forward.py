"""Derivative subgraphs: ``gen_graph`` appends the nodes of dz/dx to the tape.

One forward pass in tape order over the nodes z depends on. Each node's derivative is built
by the rule of its op in ``RULES``, written with Terms (so it can be differentiated again);
a function node's row asks the function for its local derivative (``differentiate``).
Derivatives are memoised per node on the tape, and ``None`` stands for a structural zero that
every rule short-circuits on.

>>> from subgraph_ad import Tape, sin
>>> tape = Tape(); x = tape.var("x", 0.5); y = tape.var("y", 4.2)
>>> (x * y + sin(x)).gen_graph(x).to_sympy()
y + cos(x)
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Optional, Sequence

from ..core import checks
from ..core import Callback, Tape, Term, array_build, dependencies
from ..core.graph import live_since
from ..functions import chain, differentiate, power_partial
from ..functions.dual import Dual
from ..functions.view import view
from ..tables import rule_table
from .arrays import FORWARD

D = Optional[Term]  # a derivative: a Term, or None for a structural zero


def add(a: D, b: D) -> D:
    if a is None:
        return b
    return a if b is None else a + b


def sub(a: D, b: D) -> D:
    if b is None:
        return a
    return -b if a is None else a - b


def mul(a: D, b: D) -> D:
    return None if a is None or b is None else a * b


def _pow_rule(a: Term, b: Term, out: Term, da: D, db: D) -> D:
    # the power's partials, stated once (functions/binary.py), each only where it is needed
    return add(chain(power_partial(0, a, b, out), da) if da is not None else None,
               chain(power_partial(1, a, b, out), db) if db is not None else None)


def _div_rule(a: Term, b: Term, out: Term, da: D, db: D) -> D:
    # d(a/b) = (da - out*db) / b reuses the node's own output
    num = sub(da, mul(out, db))
    return None if num is None else num / b


#: The forward rules, one per op: (operands, output, operand derivatives) -> derivative.
#: ``fn`` rows receive the function first.
RULES: dict[str, Callable[..., D]] = rule_table("forward RULES", {
    "add": lambda a, b, out, da, db: add(da, db),
    "sub": lambda a, b, out, da, db: sub(da, db),
    "mul": lambda a, b, out, da, db: add(mul(da, b), mul(a, db)),
    "div": _div_rule,
    "pow": _pow_rule,
    "neg": lambda a, out, da: None if da is None else -da,
    "fn": differentiate,
})


def derivative_order(term: Term) -> int:
    """How many gen_graph passes produced this node (0 for user-built nodes)."""
    return term.tape.orders[term.index]


def gen_graph(z: Term, wrt: Term | Mapping[Term, Any], callback: Callback | None = None) -> Term:
    """Append the nodes of dz/d(wrt) and return them; the tape's 0 for a structural zero.

    ``wrt`` is a var, or a direction ``{x: vx, y: vy}`` (components Terms or numbers): then the
    result is the directional derivative Σ v_w·∂z/∂w, from one forward sweep (``directional``).
    Transactional: if anything raises, the tape is restored exactly.
    """
    if not isinstance(z, Term):
        raise TypeError(f"gen_graph differentiates a Term, got {type(z).__name__} {z!r}")
    if isinstance(wrt, Mapping):
        return directional([z], wrt, callback)[0]
    tape = z.tape
    w = tape.check_var(wrt, "wrt").index
    if wrt.shape:
        raise TypeError(f"gen_graph differentiates by a scalar var; {wrt.name!r} is an array of shape {wrt.shape}: "
                        f"give a direction {{{wrt.name}: array}}, or use grad_graph for its gradient")
    unused: list[bool] = []
    with tape.transaction(callback, order=derivative_order(z) + 1):
        (result,) = tape.pruned(lambda: _forward(tape, [z.index], w, unused), needed=lambda: bool(unused))
        return Term(tape, result) if result >= 0 else tape.zero


def gen_graph_many(terms: Sequence[Term], wrt: Term, callback: Callback | None = None) -> list[Term]:
    """d(term)/d(wrt) for several terms in one pass over what they need (memoised per node and
    var like ``gen_graph``): a column of a Jacobian or Hessian.

    >>> from subgraph_ad import Tape
    >>> tape = Tape(); x = tape.var("x", 1.0)
    >>> [d.to_sympy() for d in gen_graph_many([x * x, x ** 3], x)]
    [2*x, 3*x**2]
    """
    terms, _ = checks.terms(list(terms) if isinstance(terms, tuple) else terms, "terms", "gen_graph_many")
    tape = terms[0].tape
    w = tape.check_var(wrt, "wrt").index
    unused: list[bool] = []
    order = max(derivative_order(t) for t in terms) + 1
    with tape.transaction(callback, order=order):
        found = tape.pruned(lambda: _forward(tape, [t.index for t in terms], w, unused), needed=lambda: bool(unused))
        return [Term(tape, i) if i >= 0 else tape.zero for i in found]


def directional(outputs: Sequence[Term], tangents: Mapping[Term, Any], callback: Callback | None = None) -> list[Term]:
    """Σ_w v_w·∂out/∂w for every output, in ONE forward sweep seeded with the direction
    ``tangents`` ({var: Term or number}); vars not named have tangent 0. Not memoised (the memo
    is per var), so a direction costs one pass over what the outputs need.

    >>> from subgraph_ad import Tape
    >>> tape = Tape(); x = tape.var("x", 1.0); y = tape.var("y", 2.0)
    >>> directional([x * y, x + y], {x: 1.0, y: 3.0})[0].to_sympy()
    3*x + y
    """
    outputs, _ = checks.terms(outputs, "outputs", "directional derivatives")
    tape = outputs[0].tape
    unused: list[bool] = []
    order = max(derivative_order(t) for t in outputs) + 1
    with tape.transaction(callback, order=order):
        seeds: dict[int, Term] = {}
        for var, value in tangents.items():  # numbers become constants: inside the transaction
            tape.check_var(var, "direction key")
            seeds[var.index] = outputs[0]._lift(value)
        found = tape.pruned(lambda: _sweep(tape, [t.index for t in outputs], seeds, unused), needed=lambda: bool(unused))
        return [Term(tape, i if i >= 0 else array_build.zeros(tape, t.shape)) for i, t in zip(found, outputs)]


def _sweep(tape: Tape, roots: list[int], seeds: dict[int, Term], unused: list[bool]) -> list[int]:
    d: dict[int, D] = {}
    for i in dependencies(tape, roots):
        node = tape.nodes[i]
        if node.op in ("var", "const"):
            d[i] = seeds.get(i)
        else:
            d[i] = _rule(tape, i, node, d, unused)
    return [-1 if d[r] is None else d[r].index for r in roots]  # type: ignore[union-attr]


def _rule(tape: Tape, i: int, node: Any, d: dict[int, D], unused: list[bool]) -> D:
    """Node i's derivative from its operands' by the row of its op; a function's rule that
    appended nodes its result does not need says so in ``unused``."""
    operands = [Term(tape, a) for a in node.args]
    if node.op in FORWARD:
        return FORWARD[node.op](node, operands, Term(tape, i), [d[a] for a in node.args])
    if node.op != "fn":
        return RULES[node.op](*operands, Term(tape, i), *(d[a] for a in node.args))
    mark = len(tape)
    through = view(tape, i).through() if d[node.args[0]] is not None else None
    if through is not None:
        # q = Q(g(u)) (tanh′, σ′) differentiated through g's derivative, the node dg the pass
        # builds for g(u) too: d tanh′ = −2·tanh·d tanh, as d(1 − tanh²) reads
        g, q = through
        dg = RULES["fn"](g.node.payload, operands[0], g, d[node.args[0]])
        result = None if dg is None else q(Dual(g, dg)).tangent
    else:
        result = RULES["fn"](node.payload, *operands, Term(tape, i), *(d[a] for a in node.args))
    if len(tape) > mark and not all(live_since(tape, mark, [-1 if result is None else result.index])):
        unused.append(True)
    return result


def _forward(tape: Tape, roots: list[int], w: int, unused: list[bool]) -> list[int]:
    """The pass itself: the indices of d(root)/dw, -1 for a structural zero. A function's rule
    that appended nodes its result does not need (a reciprocal f′ chained as a quotient) says
    so in ``unused``, and the pass is pruned."""
    cache = tape.deriv_cache
    order = dependencies(tape, roots, stop=lambda i: (i, w) in cache)
    d: dict[int, D] = {}
    nodes = tape.nodes
    for i in order:
        key = (i, w)
        if key in cache:
            known = cache[key]
            d[i] = None if known is None else Term(tape, known)
            continue
        node = nodes[i]
        if node.op == "var":
            result: D = tape.const(1.0) if i == w else None
        elif node.op == "const":
            result = None
        else:
            result = _rule(tape, i, node, d, unused)
        d[i] = result
        tape.remember(i, w, None if result is None else result.index)
    return [-1 if d[r] is None else d[r].index for r in roots]  # type: ignore[union-attr]
