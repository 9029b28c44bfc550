"""Many variables as derivative subgraphs: Jacobians, symmetric Hessians (dense or sparse),
Hessian-vector products and Hutchinson's estimate of the trace.

- ``jacobian(outputs, inputs)``: J[i][j] = ∂f_i/∂x_j. With fewer outputs than inputs, one
  reverse sweep per output (``grad_graph``, a row each); otherwise one forward pass per input
  (``gen_graph``, a column each, memoised per var). Either way the Terms are the same
  derivatives; the choice only changes what is built to get them.
- ``hessian(z, inputs)``: forward over reverse. g = ∇z in one reverse sweep, then H[i][j] =
  ∂g_i/∂x_j for j ≥ i only, and H[j][i] is the same node: a symmetric matrix costs one triangle.
  Entries that are zero by structure are the tape's 0 (Rosenbrock: 3N − 2 nonzeros).
- ``hvp(z, inputs, v)``: H·v without H: one directional forward sweep over the gradient.
- ``hutchinson_trace``: E[vᵀHv] over Rademacher probes v, one compiled HVP for all samples.

>>> from subgraph_ad import Tape
>>> tape = Tape(); x = tape.var("x", 1.0); y = tape.var("y", 2.0)
>>> H = hessian(x**2 * y + y**3, [x, y])
>>> [[h.to_sympy() for h in row] for row in H]
[[2*y, 2*x], [2*x, 6*y]]
>>> H[0][1] is H[1][0]
True
"""

from __future__ import annotations

from typing import Any, NamedTuple, Sequence

import numpy as np

from ..core import Term, dependencies
from .forward import directional, gen_graph_many
from .reverse import grad_graph


def _terms(items: Any, what: str) -> list[Term]:
    if isinstance(items, Term):
        return [items]
    if isinstance(items, (list, tuple)) and items and all(isinstance(t, Term) for t in items):
        return list(items)
    raise TypeError(f"{what} must be a Term or a non-empty list of Terms, got {type(items).__name__} {items!r}")


def _vars(z: Term, inputs: Any) -> list[Term]:
    xs = _terms(inputs, "inputs")
    for x in xs:
        z.tape.check_var(x, "input")
    if len({x.index for x in xs}) != len(xs):
        raise ValueError(f"inputs repeat a var: {[x.name for x in xs]}")
    return xs


def jacobian(outputs: Term | Sequence[Term], inputs: Term | Sequence[Term]) -> list[list[Term]]:
    """Rows of Terms: J[i][j] = ∂outputs[i]/∂inputs[j] (reverse sweeps when there are fewer
    outputs than inputs, forward passes otherwise). Structural zeros are the tape's 0."""
    fs = _terms(outputs, "outputs")
    xs = _vars(fs[0], inputs)
    for f in fs:
        fs[0]._lift(f)
    tape = fs[0].tape
    with tape.transaction():
        if len(fs) < len(xs):
            return [list(grad_graph(f, xs)) for f in fs]  # type: ignore[arg-type]
        columns = [gen_graph_many(fs, x) for x in xs]
    return [[columns[j][i] for j in range(len(xs))] for i in range(len(fs))]


def hessian(output: Term, inputs: Term | Sequence[Term], sparse: bool = False) -> Any:
    """The Hessian of ``output``: rows of Terms, H[i][j] and H[j][i] one node, structural zeros
    the tape's 0; or, with ``sparse=True``, a ``Sparse`` matrix of its structural nonzeros."""
    if not isinstance(output, Term):
        raise TypeError(f"hessian takes one output Term, got {type(output).__name__} {output!r}")
    xs = _vars(output, inputs)
    tape = output.tape
    zero = None
    with tape.transaction():
        gradient = list(grad_graph(output, xs))  # type: ignore[arg-type]
        zero = tape.zero
        reach = _var_sets(tape, [g.index for g in gradient], [x.index for x in xs])
        upper: dict[tuple[int, int], Term] = {}
        for j, x in enumerate(xs):  # column j: only the g_i (i <= j) that depend on x_j at all
            rows = [i for i in range(j + 1) if j in reach[gradient[i].index]]
            if rows:
                upper.update(zip(((i, j) for i in rows), gen_graph_many([gradient[i] for i in rows], x)))
    dense = [[upper.get((min(i, j), max(i, j)), zero) for j in range(len(xs))] for i in range(len(xs))]
    if not sparse:
        return dense
    entries = [(i, j, dense[i][j]) for i in range(len(xs)) for j in range(len(xs)) if dense[i][j] != zero]
    return Sparse(tuple(e[0] for e in entries), tuple(e[1] for e in entries), tuple(e[2] for e in entries),
                  (len(xs), len(xs)))


def _var_sets(tape: Any, roots: list[int], wrts: list[int]) -> dict[int, frozenset[int]]:
    """For every node the roots need: the positions in ``wrts`` of the vars it depends on (one
    pass in tape order), so a Hessian column skips the gradient entries its var cannot reach —
    Rosenbrock's column j has three, not j + 1."""
    position = {w: k for k, w in enumerate(wrts)}
    sets: dict[int, frozenset[int]] = {}
    empty: frozenset[int] = frozenset()
    for i in dependencies(tape, roots):
        node = tape.nodes[i]
        if node.op == "var":
            sets[i] = frozenset((position[i],)) if i in position else empty
        elif not node.args:
            sets[i] = empty
        else:
            first = sets[node.args[0]]
            sets[i] = first.union(*(sets[a] for a in node.args[1:])) if len(node.args) > 1 else first
    return sets


class Sparse(NamedTuple):
    """A sparse matrix of Terms: entry k is ``terms[k]`` at (``rows[k]``, ``cols[k]``); every
    other entry is zero by structure."""

    rows: tuple[int, ...]
    cols: tuple[int, ...]
    terms: tuple[Term, ...]
    shape: tuple[int, int]

    def values(self, compiled: Any, *args: Any) -> Any:
        """The matrix at a point from ``compiled = lambdify(inputs, list(self.terms))``: a
        ``scipy.sparse.csr_matrix`` when SciPy is installed, else a dense ndarray."""
        data = np.asarray(compiled(*args), dtype=float)
        try:
            import scipy.sparse
        except ImportError:
            dense = np.zeros(self.shape)
            dense[list(self.rows), list(self.cols)] = data
            return dense
        return scipy.sparse.csr_matrix((data, (self.rows, self.cols)), shape=self.shape)


def hvp(output: Term, inputs: Term | Sequence[Term], v: Sequence[Any]) -> list[Term]:
    """H·v as Terms, without building H: the gradient in one reverse sweep, then its derivative
    along v in one forward sweep. ``v`` holds numbers or Terms, one per input."""
    if not isinstance(output, Term):
        raise TypeError(f"hvp takes one output Term, got {type(output).__name__} {output!r}")
    xs = _vars(output, inputs)
    if isinstance(v, (str, bytes)) or not hasattr(v, "__len__") or len(v) != len(xs):
        raise ValueError(f"hvp: v must have one component per input ({len(xs)}), got {v!r}")
    tape = output.tape
    with tape.transaction():
        gradient = grad_graph(output, xs)
        return directional(gradient, dict(zip(xs, v)))  # type: ignore[arg-type]


def hutchinson_trace(output: Term, inputs: Term | Sequence[Term], samples: int = 100, seed: int = 0,
                     backend: str = "numpy") -> float:
    """Hutchinson's estimate of tr(H) at the inputs' current values: the mean of vᵀHv over
    ``samples`` Rademacher probes v (entries ±1, NumPy generator seeded with ``seed``). One HVP
    program with v as inputs is compiled and run on all probes at once; the tape is left as it
    was."""
    from ..compile.lambdify import lambdify

    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
        raise ValueError(f"hutchinson_trace: samples must be an int >= 1, got {samples!r}")
    xs = _vars(output, inputs)
    tape = output.tape
    with tape.trial():
        vs = [tape.var(_fresh(tape, f"hutchinson_v{k}")) for k in range(len(xs))]
        hv = hvp(output, xs, vs)
        quadratic = hv[0] * vs[0]
        for a, b in zip(hv[1:], vs[1:]):
            quadratic = quadratic + a * b
        compiled = lambdify(xs + vs, quadratic, backend=backend)
    probes = np.random.default_rng(seed).choice([-1.0, 1.0], size=(len(xs), samples))
    at = [np.float64(tape.value_of(x)) for x in xs]
    return float(np.mean(compiled(*at, *probes)))


def _fresh(tape: Any, name: str) -> str:
    while tape.find_var(name) is not None:
        name += "_"
    return name
