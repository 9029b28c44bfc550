"""Numbers from a graph: ``evaluate`` (values), ``derive`` (forward mode), ``grad`` (reverse mode).

All three are single iterative sweeps over the nodes the outputs need, in tape order. Values
follow IEEE/NumPy semantics (log(-1) is nan, 1/0 is inf) and never raise; NumPy arrays broadcast.

>>> from subgraph_ad import Tape, sin
>>> tape = Tape(); x = tape.var("x", 0.5); y = tape.var("y", 4.2)
>>> z = x * y + sin(x)
>>> round(z.eval(), 6), round(z.derive(x), 6), z.grad()[y]
(2.579426, 5.077583, 0.5)

Warnings: NumPy's floating-point warnings (overflow, invalid value, divide by zero) are off, since
nan and inf are the answer here, not an accident — whatever ``np.seterr`` says. ``warn=True``
(on ``eval``, ``derive``, ``grad``, ``jvp``, ``vjp`` and ``lambdify``) turns them on as
``RuntimeWarning``s, to find where a nan first appears:

>>> import warnings
>>> from subgraph_ad import log
>>> tape = Tape(); x = tape.var("x", -1.0)
>>> log(x).eval()
nan
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     _ = log(x).eval(warn=True)
>>> [str(w.message) for w in caught]
['invalid value encountered in log']
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np

from ..core import checks
from ..core import OPS, UNFED, Tape, Term, UnfedPlaceholder, dependencies
from ..core.values import _Placeholder
from ..functions import Function, power_partial
from ..functions.view import gates
from ..tables import html_table, text_table
from ..core.arrays import ARRAY_OPS, shape_of
from ..tables import rule_table
from . import array_sweeps

Values = Mapping[Any, Any]


def floating(warn: bool) -> np.errstate:
    """The ``np.errstate`` of a numeric sweep: NumPy's floating-point events ignored (nan and inf
    are values), or reported as RuntimeWarnings when ``warn`` is true."""
    return np.errstate(all="warn" if warn else "ignore")


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
    found = {i: v if v is UNFED else _as_number(v) for i, v in bound.items()}
    if tape.elements:  # an expanded array var's elements read its value
        for name, names in tape.elements.items():
            whole = found[tape._vars[name]]
            if isinstance(whole, _Placeholder):  # unfed: so are its elements
                continue
            shape = tape.var_shapes[name]
            for flat, element in enumerate(names):
                found[tape._vars[element]] = whole[(Ellipsis,) + np.unravel_index(flat, shape)]
    return found


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
    if node.op in ARRAY_OPS:
        return ARRAY_OPS[node.op].value(node, [vals[a] for a in node.args], [shape_of(tape, a) for a in node.args])
    return OPS[node.op].value(*(vals[a] for a in node.args))  # the op registry's NumPy semantics


def values_of(tape: Tape, roots: list[int], values: Values | None, *, warn: bool = False) -> dict[int, Any]:
    """Value of every node the roots depend on (``warn``: see the module's docstring)."""
    bound = bind(tape, values)
    order = dependencies(tape, roots)
    unfed = [tape.nodes[i].payload for i in order if bound.get(i, None) is UNFED]
    if unfed:
        raise UnfedPlaceholder(
            f"unfed placeholder{'s' if len(unfed) > 1 else ''} {', '.join(map(repr, unfed))}: "
            f"give {'them' if len(unfed) > 1 else 'it'} a value, e.g. eval({{{unfed[0]}: 1.0}})"
        )
    vals: dict[int, Any] = {}
    with floating(warn):
        for i in order:
            vals[i] = _node_value(tape, i, vals, bound)
    return vals


def evaluate(term: Term, values: Values | None = None, *, warn: bool = False) -> Any:
    """Value of ``term``: a float, or an ndarray when a value is an array. ``warn=True``
    reports NumPy's floating-point warnings (off by default: nan and inf are answers)."""
    if not isinstance(term, Term):
        raise TypeError(f"evaluate() takes a Term, got {type(term).__name__} {term!r}")
    return _scalar(values_of(term.tape, [term.index], values, warn=warn)[term.index])


def _pow_partials(a: Any, b: Any, out: Any, exponent_is_constant: bool) -> tuple[Any, Any]:
    # the power's partials, stated once; the exponent's is skipped for a constant exponent (it
    # would be 0 * log(a) = nan for a <= 0)
    return power_partial(0, a, b, out), None if exponent_is_constant else power_partial(1, a, b, out)


#: The local partial derivatives of each op with respect to its operands, as values:
#: (operand values, output value, whether the last operand is a constant) -> partials;
#: None for a partial that is structurally zero. ``fn`` rows receive the function first.
PARTIALS: dict[str, Callable[..., tuple[Any, ...]]] = rule_table("numeric PARTIALS", {
    "add": lambda a, b, out, const: (1.0, 1.0),
    "sub": lambda a, b, out, const: (1.0, -1.0),
    "mul": lambda a, b, out, const: (b, a),
    "div": lambda a, b, out, const: (1.0 / b, -out / b),
    "pow": _pow_partials,
    "neg": lambda a, out, const: (-1.0,),
    "fn": lambda fn, *values: fn.numeric_partials(*values[:fn.arity], output=values[fn.arity]),
})


def _partials(tape: Tape, i: int, vals: dict[int, Any]) -> tuple[Any, ...]:
    """Local partial derivatives of node i with respect to each of its operands."""
    node = tape.nodes[i]
    extra = (node.payload,) if node.op == "fn" else ()
    constant = tape.nodes[node.args[-1]].op == "const"
    return PARTIALS[node.op](*extra, *(vals[a] for a in node.args), vals[i], constant)


def _times(partial: Any, tangent: Any) -> Any:
    """partial · tangent, 0 wherever the tangent (or adjoint) is 0 even where the partial is
    infinite or nan: the strong zero. A zero tangent means the node does not move that way, so
    its partial there has no say: sqrt(x)·b along (0, 1) at x = 0 is b′·sqrt(0), not
    0·inf; an adjoint that a selection zeroed (``where``) stops at the untaken branch's
    log(0). The graph engines get the same from structural zeros and selections."""
    product = partial * tangent
    if np.ndim(product) == 0:
        return product if tangent != 0.0 else np.float64(0.0)
    return np.where(tangent == 0.0, 0.0, product)


def _gated(partial: Any, product: Any) -> Any:
    """partial · tangent for a partial that is a gate (``functions.view.gates``: relu′ = u > 0):
    0 wherever the gate is, also where the tangent is inf or nan, as the graph engines'
    selection gives."""
    if np.ndim(product) == 0:
        return product if partial != 0.0 else np.float64(0.0)
    return np.where(np.asarray(partial) == 0.0, 0.0, product)


def _tangents(tape: Tape, roots: list[int], seeds: dict[int, Any], values: Values | None,
              warn: bool) -> dict[int, Any]:
    """One forward tangent sweep over what the roots need, seeded with var tangents. A node
    that depends on no seeded var has no tangent at all, so a singular value elsewhere cannot
    leak in as 0 * inf; a function linear in an argument applies itself to that argument's
    tangent, as the graph engines do (``Function.linear``), so a selection passes on the
    taken branch's tangent and 0, never 0 · the untaken branch's inf."""
    vals = values_of(tape, roots, values, warn=warn)
    tangent: dict[int, Any] = {}
    with floating(warn):
        for i in vals:  # insertion order is tape order
            if i in seeds:
                tangent[i] = seeds[i]
                continue
            args = tape.nodes[i].args
            if not any(a in tangent for a in args):
                continue
            total = None
            fn = tape.nodes[i].payload
            for k, (a, p) in enumerate(zip(args, _partials(tape, i, vals))):
                if a not in tangent or p is None:
                    continue
                if isinstance(fn, Function) and fn.is_linear(k):  # f(…, da, …): select(c, inf) is 0
                    contribution = fn.f(*(tangent[a] if j == k else vals[b] for j, b in enumerate(args)))
                else:
                    contribution = _times(p, tangent[a])
                    if isinstance(fn, Function) and gates(fn)[k]:
                        contribution = _gated(p, contribution)
                total = contribution if total is None else total + contribution
            if total is not None:
                tangent[i] = total
    return tangent


def _seeds(tape: Tape, tangents: Any) -> dict[int, Any]:
    if not isinstance(tangents, Mapping):
        raise TypeError(f"tangents must be a dict {{var: number}}, got {type(tangents).__name__} {tangents!r}")
    return {tape.check_var(v, "tangent key").index: _as_number(t) for v, t in tangents.items()}


def derive(term: Term, wrt: Term | Mapping[Term, Any], values: Values | None = None, *, warn: bool = False) -> Any:
    """Forward mode: d(term)/d(wrt) numerically, in one tangent sweep; ``wrt`` may be a
    direction ``{x: 1.0, y: 2.0}`` (the directional derivative). ``values`` are temporary var
    values, as in ``eval`` — for a higher derivative, ``term.diff(x, 2).eval()``; ``warn`` as
    in ``eval``."""
    tape = term.tape
    if values is not None and not isinstance(values, Mapping):
        raise TypeError(
            f"derive(wrt, values): values must be a dict of var values, got {type(values).__name__} "
            f"{values!r}; for the n-th derivative use term.diff(x, n).eval()"
        )
    seeds = _seeds(tape, wrt) if isinstance(wrt, Mapping) else {tape.check_var(wrt, "wrt").index: np.float64(1.0)}
    if array_sweeps.holds_arrays(tape, [term.index]):
        return _scalar(array_sweeps.tangents(tape, [term.index], seeds, values, warn)[0])
    return _scalar(_tangents(tape, [term.index], seeds, values, warn).get(term.index, 0.0))


def jvp(outputs: Sequence[Term], tangents: Mapping[Term, Any], values: Values | None = None, *,
        warn: bool = False) -> list[Any]:
    """Σ_w t_w·∂out/∂w for every output (a float each, or an array), from ONE forward tangent
    sweep over what they all need: the Jacobian-vector product."""
    outs = _outputs(outputs)
    tape = outs[0].tape
    if array_sweeps.holds_arrays(tape, [t.index for t in outs]):
        return [_scalar(v) for v in array_sweeps.tangents(tape, [t.index for t in outs], _seeds(tape, tangents),
                                                          values, warn)]
    found = _tangents(tape, [t.index for t in outs], _seeds(tape, tangents), values, warn)
    return [_scalar(found.get(t.index, 0.0)) for t in outs]


#: How many partials ``repr(grad)`` lists before it says how many more there are.
REPR_VARS = 6


def _shown(value: Any) -> Any:
    """A partial as a table cell: a float, or an array on one line."""
    if np.ndim(value) == 0:
        return float(value)
    return np.array2string(np.asarray(value), threshold=6, max_line_width=10**6).replace("\n", "")


def _counted(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


class Grad(Mapping):
    """The adjoints of one backward sweep, as a read-only mapping from var to partial
    derivative: ``g[x]``, ``g["x"]``, ``dict(g)``, ``len(g)``, iteration over the tape's vars.
    ``g[a]`` of any other node a of the output is its adjoint ∂z/∂a (a constant's is 0)."""

    def __init__(self, tape: Tape, adjoints: dict[int, Any]) -> None:
        self.tape = tape
        self._adjoints = adjoints

    def wrt(self, node: Term | str) -> Any:
        """The adjoint of a var (or of a var's name, or of any node); 0.0 where the output does
        not depend on it."""
        if isinstance(node, str):
            found = self.tape.find_var(node)
            if found is None:
                raise KeyError(f"no var named {node!r} on this tape; vars are {list(self.tape.vars)}")
            node = found
        if not isinstance(node, Term) or node.tape is not self.tape:
            raise KeyError(f"a Grad is indexed by a Term of its tape or a var name, got {type(node).__name__} {node!r}")
        return _scalar(self._adjoints.get(node.index, 0.0))

    __getitem__ = wrt

    def __iter__(self) -> Iterator[Term]:
        return iter(self.tape.vars.values())

    def __len__(self) -> int:
        return len(self.tape.vars)

    def _rows(self) -> list[tuple[str, Any]]:
        return [(v.name, _shown(p)) for v, p in self.items()]

    def __repr__(self) -> str:
        """One line, the first ``REPR_VARS`` partials and how many more."""
        items = [f"{name}: {value!r}" if isinstance(value, float) else f"{name}: {value}"
                 for name, value in self._rows()[:REPR_VARS]]
        more = len(self) - REPR_VARS
        return f"Grad({{{', '.join(items + ([f'… {more} more'] if more > 0 else []))}}})"

    def __str__(self) -> str:
        """A table of every var and its partial.

        >>> from subgraph_ad import Tape
        >>> tape = Tape(); x = tape.var("x", 2.0); y = tape.var("y", 3.0)
        >>> print((x * y).grad())
        var  partial
        ---  -------
        x        3.0
        y        2.0
        """
        return text_table(("var", "partial"), self._rows())

    def _repr_html_(self) -> str:
        """The same table in HTML, for Jupyter."""
        return html_table(("var", "partial"), self._rows(), f"gradient: {_counted(len(self), 'var')}")


def _outputs(outputs: Any) -> list[Term]:
    return checks.terms(outputs, "outputs", "jvp/vjp")[0]


def vjp(outputs: Term | Sequence[Term], cotangents: Sequence[Any], values: Values | None = None, *,
        warn: bool = False) -> Grad:
    """Σ_i c_i·∇out_i as a Grad, from ONE backward sweep seeded with the output cotangents:
    the vector-Jacobian product."""
    outs = _outputs(outputs)
    if isinstance(cotangents, (str, bytes)) or not hasattr(cotangents, "__len__") or len(cotangents) != len(outs):
        raise ValueError(f"vjp: one cotangent per output ({len(outs)}) is expected, got {cotangents!r}")
    tape = outs[0].tape
    if array_sweeps.holds_arrays(tape, [t.index for t in outs]):
        return Grad(tape, array_sweeps.adjoints(tape, [t.index for t in outs], [_as_number(c) for c in cotangents],
                                                values, warn))
    vals = values_of(tape, [t.index for t in outs], values, warn=warn)
    adjoint: dict[int, Any] = {}
    with floating(warn):
        for t, c in zip(outs, cotangents):
            c = _as_number(c)
            adjoint[t.index] = c if t.index not in adjoint else adjoint[t.index] + c
        for i in reversed(list(vals)):
            if i not in adjoint or not tape.nodes[i].args:
                continue
            fn = tape.nodes[i].payload
            flags = gates(fn) if isinstance(fn, Function) else ()
            for k, (a, p) in enumerate(zip(tape.nodes[i].args, _partials(tape, i, vals))):
                if p is None:
                    continue
                contribution = _times(p, adjoint[i])
                if k < len(flags) and flags[k]:
                    contribution = _gated(p, contribution)
                adjoint[a] = contribution if a not in adjoint else adjoint[a] + contribution
    return Grad(tape, adjoint)


def grad(term: Term, values: Values | None = None, *, warn: bool = False) -> Grad:
    """Reverse mode: all partials of ``term`` (and the adjoint of every node it needs) in one
    backward sweep; ``warn`` as in ``eval``."""
    if not isinstance(term, Term):
        raise TypeError(f"grad() takes a Term, got {type(term).__name__} {term!r}")
    return vjp([term], [1.0], values, warn=warn)
