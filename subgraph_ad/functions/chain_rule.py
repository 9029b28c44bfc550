"""The chain rule every engine applies to a function's local partials: a partial times a tangent
(``chain``), a gate that selects rather than multiplies (``is_gate``, ``gate``), and each
argument's share of a node's derivative, forward or reverse (``shares``, ``differentiate``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from ..core.term import Term

if TYPE_CHECKING:
    from .base import Function, Partial


def add_optional(a: Term | None, b: Term | None) -> Term | None:
    """a + b where None is a structural zero."""
    if a is None:
        return b
    return a if b is None else a + b


def chain(local: Any, derived: Any) -> Any:
    """f′ · d(input), the chain rule. A reciprocal f′ = c / v is written as the quotient
    (c · d(input)) / v: the quotient rule reuses that node as its own output at the next order,
    where a product with 1/v would differentiate the reciprocal again. A partial that is a gate
    (a condition: relu′ = u > 0) selects d(input) rather than multiplying it (``gate``)."""
    if local is None or derived is None:
        return None
    if not isinstance(local, Term) or not isinstance(derived, Term):
        return local * derived  # numbers, or the Duals of a ``through`` declaration
    if is_gate(local):
        return gate(local, derived)
    node = local.node
    if node.op == "div" and local.tape.nodes[node.args[0]].op == "const":
        numerator, denominator = (Term(local.tape, a) for a in node.args)
        return (numerator * derived) / denominator
    return local * derived


def node_function(node: Any) -> Function | None:
    """The function a node applies: a function node's, or an elementwise array node's (a ``map``
    of a function), so that a condition, a gate and a selection read alike on arrays."""
    from .base import Function

    if node.op == "fn":
        return node.payload  # type: ignore[no-any-return]
    if node.op == "map" and isinstance(node.payload[1], Function):
        return node.payload[1]
    return None


def _is_condition(node: Any) -> bool:
    return bool(getattr(node_function(node), "condition", False))


def is_gate(partial: Any) -> bool:
    """Whether a local partial is a gate: a condition (1 or 0: relu′ = u > 0, heaviside in h),
    or a sum of conditions with constant weights (maximum′ = (a > b) + ½·(a == b)). A gate is
    0 exactly where its piece of the function is flat, so it selects what it meets instead of
    multiplying it: relu(log x) at x = 0 has derivative 0 at every order, not 0·inf."""
    if not isinstance(partial, Term):
        return False
    nodes = partial.tape.nodes
    stack = [partial.index]
    while stack:
        node = nodes[stack.pop()]
        if _is_condition(node):
            continue
        op = node.payload[1] if node.op == "map" and isinstance(node.payload[1], str) else node.op  # elementwise
        if op == "add":
            stack += node.args
        elif op == "mul" and any(nodes[a].op == "const" for a in node.args):
            stack += [a for a in node.args if nodes[a].op != "const"]
        else:
            return False
    return True


def gate(partial: Term, value: Term) -> Term:
    """partial · value for a gate ``partial``, exactly 0 where it is 0 (also for an inf or nan
    value): select(c, value) for a condition c, select(partial ≠ 0, partial · value) for a
    weighted sum of them."""
    from .conditions import not_equal, select

    if _is_condition(partial.node):
        return select(partial, value)
    return select(not_equal(partial, 0.0), partial * value)


def shares(fn: Function, inputs: Sequence[Term], output: Term, tangents: Sequence[Term | None],
           forward: bool = True) -> list[Term | None]:
    """Each argument's share of d(output) for its tangent (``forward``) or of its adjoint for
    the output's adjoint (reverse), None where that is None: partial · tangent, the partials
    from the one rule ``fdiff`` (asked once, and only if needed); going forward, f applied to
    the tangent where f is linear in the argument, which is 0 wherever the tangent is."""
    partials: tuple[Partial, ...] | None = None
    out: list[Term | None] = []
    for k, t in enumerate(tangents):
        if t is None:
            out.append(None)
        elif forward and fn.is_linear(k):
            out.append(fn(*(t if j == k else a for j, a in enumerate(inputs))))
        else:
            partials = partials or fn.partials(*inputs, output)
            out.append(chain(partials[k], t))
    return out


def differentiate(fn: Function, *terms: Term | None) -> Term | None:
    """d(output) as the forward engines call it, with ``terms`` = the inputs, the output and the
    inputs' derivatives (None: zero, which short-circuits): the sum of the arguments' shares."""
    n = fn.arity
    inputs, output, derived = terms[:n], terms[n], terms[n + 1:]
    total = None
    if any(d is not None for d in derived):
        for share in shares(fn, inputs, output, derived):  # type: ignore[arg-type]
            total = add_optional(total, share)
    return total


def local_derivatives(fn: Function, inputs: tuple[Term, ...], output: Term) -> tuple[Partial, ...]:
    """The partials of ``fn`` as Terms, for the engines that need them alone (Taylor mode)."""
    return fn.partials(*inputs, output)
