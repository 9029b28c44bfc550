"""Many variables as derivative subgraphs: Jacobians, symmetric Hessians (dense or sparse),
Hessian-vector products and Hutchinson's estimate of the trace.

- ``jacobian(outputs, inputs)``: J[i][j] = ∂f_i/∂x_j. With fewer outputs than inputs, one
  reverse sweep per output (``grad_graph``, a row each); otherwise one forward pass per input
  (``gen_graph``, a column each, memoised per var). Either way the Terms are the same
  derivatives; the choice only changes what is built to get them, and an entry whose output
  cannot reach the input is not differentiated at all.
- ``hessian(z, inputs)``: forward over reverse. g = ∇z in one reverse sweep, then H[i][j] =
  ∂g_i/∂x_j for j ≥ i only, and H[j][i] is the same node: a symmetric matrix costs one triangle.
  Entries that are zero by structure are the tape's 0 (Rosenbrock: 3N − 2 nonzeros).
- Dense results are ``Dense``: rows of Terms that print and show in a notebook as a matrix.
- ``sparse=True`` (either matrix): a ``Sparse`` of the structural nonzeros (indices and Terms);
  ``Sparse.compile`` evaluates them as one array for a batch of points, or as a
  ``scipy.sparse`` matrix for one point.
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

import functools
from dataclasses import dataclass
from typing import Any, NamedTuple, Sequence

import numpy as np

from ..core import checks
from ..core import Term, dependencies
from ..core.arrays import has_arrays
from ..core.expand import element_vars, expand_many
from . import matrix_display as display
from .forward import directional, gen_graph_many
from .reverse import grad_graph


def _terms(items: Any, what: str) -> list[Term]:
    """A Term, a list or tuple of Terms, or an array of them (in row-major order) as a list."""
    if isinstance(items, Term):
        return [items]
    if isinstance(items, np.ndarray) and items.dtype == object:
        items = list(items.ravel())
    if isinstance(items, (list, tuple)) and items and all(isinstance(t, Term) for t in items):
        return list(items)
    raise TypeError(f"{what} must be a Term or a non-empty list or array of Terms, got {type(items).__name__} {items!r}")


def _vars(z: Term, inputs: Any) -> list[Term]:
    xs = _terms(inputs, "inputs")
    for x in xs:
        z.tape.check_var(x, "input")
    if len({x.index for x in xs}) != len(xs):
        raise ValueError(f"inputs repeat a var: {[x.name for x in xs]}")
    return xs


def _scalar_form(outputs: list[Term], inputs: Any) -> tuple[list[Term], Any]:
    """Outputs and inputs as scalar nodes where array nodes are involved: each output expanded
    (an array output gives a row per element, in C order), each array var among the inputs its
    element vars, so that the matrices keep the scalar form's structural zeros."""
    tape = outputs[0].tape
    if not tape.var_shapes and not tape.array_nodes:
        return outputs, inputs
    listed = [inputs] if isinstance(inputs, Term) else list(inputs) if isinstance(inputs, (list, tuple)) else inputs
    if not isinstance(listed, list):
        return outputs, inputs  # refused by _vars, by name
    arrays = [x for x in listed if isinstance(x, Term) and x.tape is tape and x.op == "var" and x.shape]
    if not arrays and not has_arrays(tape, dependencies(tape, [f.index for f in outputs])):
        return outputs, inputs
    flat: list[Term] = []
    for part in expand_many(tape, [f.index for f in outputs]):
        flat += list(part.ravel()) if isinstance(part, np.ndarray) else [part]
    xs = [v for x in listed for v in (element_vars(tape, x.name).ravel() if x in arrays else [x])]
    return flat, xs


def jacobian(outputs: Term | Sequence[Term], inputs: Term | Sequence[Term], sparse: bool = False) -> Any:
    """Rows of Terms: J[i][j] = ∂outputs[i]/∂inputs[j], structural zeros the tape's 0; or, with
    ``sparse=True``, a ``Sparse`` matrix of the structural nonzeros. Reverse sweeps (a row each)
    when there are fewer outputs than inputs, forward passes (a column each) otherwise; either
    way only the entries whose output depends on the input at all are differentiated."""
    fs = _terms(outputs, "outputs")
    for f in fs:
        fs[0]._lift(f)
    fs, inputs = _scalar_form(fs, inputs)
    xs = _vars(fs[0], inputs)
    tape = fs[0].tape
    entries: dict[tuple[int, int], Term] = {}
    with tape.transaction():
        reach = _var_sets(tape, [f.index for f in fs], [x.index for x in xs])
        if len(fs) < len(xs):
            for i, f in enumerate(fs):
                cols = sorted(reach[f.index])
                if cols:
                    entries.update(zip(((i, j) for j in cols), grad_graph(f, [xs[j] for j in cols])))
        else:
            for j, x in enumerate(xs):
                rows = [i for i, f in enumerate(fs) if j in reach[f.index]]
                if rows:
                    entries.update(zip(((i, j) for i in rows), gen_graph_many([fs[i] for i in rows], x)))
        zero = tape.zero
    return _assemble(entries, (len(fs), len(xs)), zero, sparse, symmetric=False)


def hessian(output: Term, inputs: Term | Sequence[Term], sparse: bool = False) -> Any:
    """The Hessian of ``output``: rows of Terms, H[i][j] and H[j][i] one node, structural zeros
    the tape's 0; or, with ``sparse=True``, a ``Sparse`` matrix of its structural nonzeros
    (both triangles listed, each pair one Term)."""
    if not isinstance(output, Term):
        raise TypeError(f"hessian takes one output Term, got {type(output).__name__} {output!r}")
    if output.shape:
        raise TypeError(f"hessian takes a scalar output; {output!r} is an array of shape {output.shape}")
    (output,), inputs = _scalar_form([output], inputs)
    xs = _vars(output, inputs)
    tape = output.tape
    upper: dict[tuple[int, int], Term] = {}
    with tape.transaction():
        gradient = list(grad_graph(output, xs))
        reach = _var_sets(tape, [g.index for g in gradient], [x.index for x in xs])
        for j, x in enumerate(xs):  # column j: only the g_i (i <= j) that depend on x_j at all
            rows = [i for i in range(j + 1) if j in reach[gradient[i].index]]
            if rows:
                upper.update(zip(((i, j) for i in rows), gen_graph_many([gradient[i] for i in rows], x)))
        zero = tape.zero
    return _assemble(upper, (len(xs), len(xs)), zero, sparse, symmetric=True)


def _assemble(entries: dict[tuple[int, int], Term], shape: tuple[int, int], zero: Term, sparse: bool,
              symmetric: bool) -> Any:
    """Dense rows (zero where no entry), or the nonzero entries in row-major order as ``Sparse``;
    a symmetric matrix's entries are its upper triangle, mirrored."""
    if symmetric:
        entries = {**entries, **{(j, i): t for (i, j), t in entries.items()}}
    if not sparse:
        return Dense([entries.get((i, j), zero) for j in range(shape[1])] for i in range(shape[0]))
    found = sorted((key, t) for key, t in entries.items() if t != zero)
    return Sparse(tuple(i for (i, _), _ in found), tuple(j for (_, j), _ in found), tuple(t for _, t in found), shape)


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


class Dense(list[list[Term]]):
    """A dense matrix of Terms, as ``hessian`` and ``jacobian`` return it: a list of rows (plain
    lists of Terms, so ``H[i][j]`` and every list idiom work), zeros by structure the tape's 0.
    It prints as the matrix of formulas and shows in a notebook as a table or in LaTeX, headed
    "n×m Dense".

    >>> from subgraph_ad import Tape
    >>> tape = Tape(); x = tape.var("x", 1.0); y = tape.var("y", 2.0)
    >>> hessian(x**2 * y + y**3, [x, y])
    [2*y  2*x]
    [2*x  6*y]
    """

    @property
    def shape(self) -> tuple[int, int]:
        return (len(self), len(self[0]) if self else 0)

    def _entries(self) -> list[tuple[int, int, Term]]:
        return [(i, j, t) for i, row in enumerate(self) for j, t in enumerate(row)
                if not (t.node.op == "const" and t.node.payload == 0.0)]

    def __str__(self) -> str:
        entries = self._entries()
        return display.text(display.corner(entries, self.shape), self.shape, len(entries))

    __repr__ = __str__

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))

    def _repr_html_(self) -> str:
        entries = self._entries()
        heading = f"{self.shape[0]}×{self.shape[1]} Dense"
        return display.table(display.corner(entries, self.shape), self.shape, heading, len(entries))

    def _repr_latex_(self) -> str:
        return display.latex(display.corner(self._entries(), self.shape), self.shape)


class Sparse(NamedTuple):
    """A sparse matrix of Terms: entry k is ``terms[k]`` at (``rows[k]``, ``cols[k]``), in
    row-major order; every other entry is zero by structure.

    ``compile(inputs)`` turns it into numbers: the nonzeros as one array indexed by ``rows`` and
    ``cols`` (a batch of points at once), or a ``scipy.sparse`` matrix for a point. It prints
    as the matrix of formulas, columns aligned (at most ``SHOW`` rows and columns, entries cut
    at ``CELL_CHARS``: see ``matrix_display``), and a notebook shows it as a table
    (``_repr_html_``, headed "n×m Sparse, k nonzeros") or in LaTeX.

    >>> from subgraph_ad import Tape
    >>> tape = Tape(); x = tape.var("x", 1.0); y = tape.var("y", 2.0)
    >>> print(hessian(x**2 * y + y**3, [x, y], sparse=True))
    [2*y  2*x]
    [2*x  6*y]
    """

    rows: tuple[int, ...]
    cols: tuple[int, ...]
    terms: tuple[Term, ...]
    shape: tuple[int, int]

    def _grid(self) -> display.Grid:
        return display.corner(zip(self.rows, self.cols, self.terms), self.shape)

    def __str__(self) -> str:
        return display.text(self._grid(), self.shape, len(self.terms))

    def __repr__(self) -> str:
        return str(self)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))

    def _repr_html_(self) -> str:
        heading = f"{self.shape[0]}×{self.shape[1]} Sparse, {len(self.terms)} nonzeros"
        return display.table(self._grid(), self.shape, heading, len(self.terms))

    def _repr_latex_(self) -> str:
        return display.latex(self._grid(), self.shape)

    def compile(self, inputs: Term | Sequence[Term], backend: str | None = None, **options: Any) -> CompiledSparse:
        """Compile the nonzeros as functions of the vars ``inputs`` (``lambdify``'s backend and
        options); a Term listed twice (a symmetric pair) is computed once."""
        from ..compile.devices import on_host
        from ..compile.lambdify import lambdify

        unique: dict[int, Term] = {}
        for t in self.terms:
            unique.setdefault(t.index, t)
        position = {i: k for k, i in enumerate(unique)}
        # no nonzero at all (a linear function's Hessian): the program computes the tape's 0,
        # of which no entry is taken, so the inputs are still checked and batches still shaped
        outputs = list(unique.values()) or [_terms(inputs, "inputs")[0].tape.zero]
        return CompiledSparse(np.array(self.rows, dtype=np.intp), np.array(self.cols, dtype=np.intp), self.shape,
                              on_host(lambdify(inputs, outputs, backend, **options)),
                              np.array([position[t.index] for t in self.terms], dtype=np.intp))


@dataclass(frozen=True, eq=False)
class CompiledSparse:
    """A compiled ``Sparse``: ``values(*args)`` gives the nonzeros (shape (nnz,) + the points'
    shape), in the order of the index arrays ``rows`` and ``cols`` — a lazy Dask array for Dask
    inputs; calling it on one point gives a ``scipy.sparse.csr_matrix`` (a dense ndarray without
    SciPy); ``dense(*args)`` scatters a batch into arrays of shape points' shape + ``shape``."""

    rows: np.ndarray
    cols: np.ndarray
    shape: tuple[int, int]
    compiled: Any  # the distinct Terms, lambdified
    take: np.ndarray  # entry k is compiled output take[k]

    def values(self, *args: Any) -> Any:
        results = self.compiled(*args)
        if hasattr(results[0], "__dask_graph__"):  # one lazy stack: every output from one task a chunk
            import dask.array as da

            return da.stack(results)[self.take].rechunk({0: -1})
        return np.array(results, dtype=float)[self.take]

    def dense(self, *args: Any) -> Any:
        data = self.values(*args)
        scatter = functools.partial(_scatter, self.rows, self.cols, shape=self.shape)
        if hasattr(data, "__dask_graph__"):
            return data.map_blocks(scatter, drop_axis=0, new_axis=[data.ndim - 1, data.ndim],
                                   chunks=data.chunks[1:] + tuple((n,) for n in self.shape), dtype=float)
        return scatter(data)

    def __call__(self, *args: Any) -> Any:
        data = self.values(*args)
        if data.ndim != 1:
            raise ValueError(f"a compiled sparse matrix called on a batch of shape {data.shape[1:]}: calling it "
                             "takes one point; use .values(...) (the nonzeros, indexed by .rows and .cols) or "
                             ".dense(...) for a batch")
        return sparse_matrix(self.rows, self.cols, data, self.shape)


def sparse_matrix(rows: Sequence[int] | np.ndarray, cols: Sequence[int] | np.ndarray, data: np.ndarray,
                  shape: tuple[int, int]) -> Any:
    """One point's matrix from its nonzeros in row-major order: ``scipy.sparse.csr_matrix`` when
    SciPy is installed (built from the index arrays directly, no sorting), else a dense ndarray."""
    try:
        import scipy.sparse
    except ImportError:
        return _scatter(rows, cols, data, shape)
    indptr = np.searchsorted(np.asarray(rows), np.arange(shape[0] + 1))
    return scipy.sparse.csr_matrix((data, np.asarray(cols), indptr), shape=shape)


def _scatter(rows: Sequence[int] | np.ndarray, cols: Sequence[int] | np.ndarray, data: np.ndarray,
             shape: tuple[int, int]) -> np.ndarray:
    """Dense matrices from nonzeros of shape (nnz,) + points: an array of points + ``shape``."""
    out = np.zeros(data.shape[1:] + shape)
    out[..., np.asarray(rows, dtype=np.intp), np.asarray(cols, dtype=np.intp)] = np.moveaxis(data, 0, -1)
    return out


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
                     backend: str | None = None) -> float:
    """Hutchinson's estimate of tr(H) at the inputs' current values: the mean of vᵀHv over
    ``samples`` Rademacher probes v (entries ±1, NumPy generator seeded with ``seed``). One HVP
    program with v as inputs is compiled and run on all probes at once; the tape is left as it
    was."""
    from ..compile.devices import on_host
    from ..compile.lambdify import lambdify

    checks.count(samples, "samples", "hutchinson_trace", low=1)
    xs = _vars(output, inputs)
    tape = output.tape
    with tape.trial():
        vs = [tape.var(_fresh(tape, f"hutchinson_v{k}")) for k in range(len(xs))]
        hv = hvp(output, xs, vs)
        quadratic = hv[0] * vs[0]
        for a, b in zip(hv[1:], vs[1:]):
            quadratic = quadratic + a * b
        compiled = on_host(lambdify(xs + vs, quadratic, backend=backend))
    probes = np.random.default_rng(seed).choice([-1.0, 1.0], size=(len(xs), samples))
    at = [np.float64(tape.value_of(x)) for x in xs]
    return float(np.mean(compiled(*at, *probes)))


def _fresh(tape: Any, name: str) -> str:
    while tape.find_var(name) is not None:
        name += "_"
    return name
