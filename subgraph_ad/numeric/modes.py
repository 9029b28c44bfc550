"""Numbers from a graph: ``evaluate`` (values), ``derive`` (forward mode), ``grad`` (reverse mode).

All three are single iterative sweeps over the nodes the outputs need, in tape order. Values
follow IEEE/NumPy semantics (log(-1) is nan, 1/0 is inf) and never raise; NumPy arrays broadcast.

>>> from subgraph_ad import Tape, sin
>>> tape = Tape(); x = tape.var("x", 0.5); y = tape.var("y", 4.2)
>>> z = x * y + sin(x)
>>> round(z.eval(), 6), round(z.derive(x), 6), z.grad()[y]
(2.579426, 5.077583, 0.5)
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping

import numpy as np

from ..core import OPS, Tape, Term, dependencies

Values = Mapping[Any, Any]


def _as_number(value: Any) -> Any:
    if isinstance(value, (bool, str)) or value is None:
        raise TypeError(f"a var value must be a number or an array, got {type(value).__name__} {value!r}")
    array = np.asarray(value, dtype=float)
    return array if array.ndim else np.float64(array)


def bind(tape: Tape, values: Values | None) -> dict[int, Any]:
    """Var index -> numeric value: the vars' current values overridden by ``values``.

    Keys may be var Terms of this tape or var names.
    """
    bound = tape.current_values()
    for key, value in (values or {}).items():
        if isinstance(key, str):
            var = tape.find_var(key)
            if var is None:
                raise KeyError(f"no var named {key!r} on this tape; vars are {list(tape.vars)}")
            index = var.index
        else:
            index = tape.check_var(key, "values key").index
        bound[index] = value
    return {i: _as_number(v) for i, v in bound.items()}


def _scalar(value: Any) -> Any:
    return float(value) if np.ndim(value) == 0 else value


def _node_value(tape: Tape, i: int, vals: dict[int, Any], bound: dict[int, Any]) -> Any:
    node = tape.nodes[i]
    if node.op == "var":
        return bound[i]
    if node.op == "const":
        return np.float64(node.payload)
    if node.op == "fn":
        return node.payload.f(*(vals[a] for a in node.args))
    return OPS[node.op].value(*(vals[a] for a in node.args))  # the op registry's NumPy semantics


def values_of(tape: Tape, roots: list[int], values: Values | None) -> dict[int, Any]:
    """Value of every node the roots depend on."""
    bound = bind(tape, values)
    vals: dict[int, Any] = {}
    with np.errstate(all="ignore"):
        for i in dependencies(tape, roots):
            vals[i] = _node_value(tape, i, vals, bound)
    return vals


def evaluate(term: Term, values: Values | None = None) -> Any:
    """Value of ``term``: a float, or an ndarray when a value is an array."""
    if not isinstance(term, Term):
        raise TypeError(f"evaluate() takes a Term, got {type(term).__name__} {term!r}")
    return _scalar(values_of(term.tape, [term.index], values)[term.index])


def _pow_partials(a: Any, b: Any, out: Any, exponent_is_constant: bool) -> tuple[Any, Any]:
    # the log term is skipped for a constant exponent (it would be 0 * log(a) = nan for a <= 0)
    return b * a ** (b - 1.0), None if exponent_is_constant else out * np.log(a)


#: The local partial derivatives of each op with respect to its operands, as values:
#: (operand values, output value, whether the last operand is a constant) -> partials;
#: None for a partial that is structurally zero. ``fn`` rows receive the function first.
PARTIALS: dict[str, Callable[..., tuple[Any, ...]]] = {
    "add": lambda a, b, out, const: (1.0, 1.0),
    "sub": lambda a, b, out, const: (1.0, -1.0),
    "mul": lambda a, b, out, const: (b, a),
    "div": lambda a, b, out, const: (1.0 / b, -out / b),
    "pow": _pow_partials,
    "neg": lambda a, out, const: (-1.0,),
    "fn": lambda fn, *values: (fn.grad(values[0]),) if fn.arity == 1 else tuple(fn.grad(*values[:2])),
}


def _partials(tape: Tape, i: int, vals: dict[int, Any]) -> tuple[Any, ...]:
    """Local partial derivatives of node i with respect to each of its operands."""
    node = tape.nodes[i]
    extra = (node.payload,) if node.op == "fn" else ()
    constant = tape.nodes[node.args[-1]].op == "const"
    return PARTIALS[node.op](*extra, *(vals[a] for a in node.args), vals[i], constant)


def derive(term: Term, wrt: Term, values: Values | None = None) -> Any:
    """Forward mode: d(term)/d(wrt) numerically, in one tangent sweep.

    A node that does not depend on ``wrt`` has no tangent at all, so a singular value
    elsewhere cannot leak in as 0 * inf.
    """
    tape = term.tape
    w = tape.check_var(wrt, "wrt").index
    vals = values_of(tape, [term.index], values)
    tangent: dict[int, Any] = {}
    with np.errstate(all="ignore"):
        for i in vals:  # insertion order is tape order
            if i == w:
                tangent[i] = np.float64(1.0)
                continue
            args = tape.nodes[i].args
            if not any(a in tangent for a in args):
                continue
            total = None
            for a, p in zip(args, _partials(tape, i, vals)):
                if a in tangent and p is not None:
                    contribution = p * tangent[a]
                    total = contribution if total is None else total + contribution
            if total is not None:
                tangent[i] = total
    return _scalar(tangent.get(term.index, 0.0))


class Grad:
    """Every partial derivative of one output, from one reverse sweep: ``g[x]`` or ``g.wrt(x)``."""

    def __init__(self, tape: Tape, adjoints: dict[int, Any]) -> None:
        self.tape = tape
        self._adjoints = adjoints

    def wrt(self, var: Term) -> Any:
        """The partial derivative with respect to ``var``; 0.0 if the output does not depend on it."""
        return _scalar(self._adjoints.get(self.tape.check_var(var).index, 0.0))

    __getitem__ = wrt

    def items(self) -> Iterable[tuple[Term, Any]]:
        """(var, partial) for every var of the tape, in creation order."""
        return [(v, self.wrt(v)) for v in self.tape.vars.values()]

    def __repr__(self) -> str:
        body = ", ".join(f"{v.name}: {p!r}" for v, p in self.items())
        return f"Grad({{{body}}})"


def grad(term: Term, values: Values | None = None) -> Grad:
    """Reverse mode: all partials of ``term`` in one backward sweep."""
    tape = term.tape
    vals = values_of(tape, [term.index], values)
    adjoint: dict[int, Any] = {term.index: np.float64(1.0)}
    with np.errstate(all="ignore"):
        for i in reversed(list(vals)):
            if i not in adjoint or not tape.nodes[i].args:
                continue
            for a, p in zip(tape.nodes[i].args, _partials(tape, i, vals)):
                if p is None:
                    continue
                contribution = adjoint[i] * p
                adjoint[a] = contribution if a not in adjoint else adjoint[a] + contribution
    return Grad(tape, {i: v for i, v in adjoint.items() if tape.nodes[i].op == "var"})
