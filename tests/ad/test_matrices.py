"""Sparse Jacobians and Hessians (structure and values against SymPy and hand derivatives,
compiled for one point and for batches), and the node counts of the many-variables benchmark
pinned below CasADi SX's counts for the same functions."""

import numpy as np
import pytest
import scipy.sparse
import sympy

import subgraph_ad as sad
from subgraph_ad.benchmark_functions import MANY_VARIABLES, SAD
from subgraph_ad.core import dependencies


def system(xs, np_):
    """A sparse system: output i reads x_i, x_{i+1} and x_{i+3} when they exist."""
    n = len(xs)
    return [np_.sin(xs[i] * xs[(i + 1) % n]) + xs[i] ** 2 * (xs[i + 3] if i + 3 < n else 1.0) for i in range(n - 2)]


@pytest.mark.parametrize("outputs", [4, 6], ids=["rows by reverse sweeps", "columns by forward passes"])
def test_sparse_jacobian_has_sympys_structure_and_values(outputs):
    """Both shapes (fewer outputs than inputs: reverse rows; as many: forward columns): the
    structural nonzeros are exactly SymPy's nonzero entries, and the values at a point and on
    a batch match SymPy's Jacobian to 1e-13."""
    n = outputs + 2
    rng = np.random.default_rng(outputs)
    point = rng.uniform(-1, 1, n)
    tape = sad.Tape()
    xs = [tape.var(f"x{i}", float(point[i])) for i in range(n)]
    fs = system(xs, sad)
    sparse = sad.jacobian(fs, xs, sparse=True)
    symbols = sympy.symbols(f"x0:{n}")
    expected = sympy.Matrix(system(list(symbols), sympy)).jacobian(symbols)
    pattern = {(i, j) for i in range(expected.rows) for j in range(n) if expected[i, j] != 0}
    assert set(zip(sparse.rows, sparse.cols)) == pattern and len(sparse.terms) == len(pattern)
    assert sparse.shape == (n - 2, n)
    dense = sad.jacobian(fs, xs)
    zero = tape.zero
    assert all((dense[i][j] != zero) == ((i, j) in pattern) for i in range(n - 2) for j in range(n))
    numeric = sympy.lambdify(symbols, expected, "numpy")
    compiled = sparse.compile(xs)
    matrix = compiled(*point)
    assert isinstance(matrix, scipy.sparse.csr_matrix) and matrix.nnz == len(pattern)
    np.testing.assert_allclose(matrix.toarray(), np.array(numeric(*point), dtype=float), rtol=1e-13, atol=1e-15)
    batch = point[:, None] + 0.1 * rng.standard_normal((n, 5))
    values = compiled.values(*batch)
    assert values.shape == (len(pattern), 5)
    stacked = compiled.dense(*batch)
    for k in range(5):
        reference = np.array(numeric(*batch[:, k]), dtype=float)
        np.testing.assert_allclose(stacked[k], reference, rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(values[:, k], reference[compiled.rows, compiled.cols], rtol=1e-13, atol=1e-15)


def test_a_sparse_hessian_compiles_each_symmetric_pair_once():
    """S from the benchmark (tridiagonal sines plus a dense exp of squares) in 6 vars: every
    entry is nonzero, the 21 distinct entries are computed once each, and the values on a batch
    equal SymPy's Hessian."""
    n = 6
    tape = sad.Tape()
    xs = [tape.var(f"x{i}") for i in range(n)]
    f, _ = MANY_VARIABLES["S"]
    sparse = sad.hessian(f(xs, SAD), xs, sparse=True)
    assert len(sparse.terms) == n * n and len({t.index for t in sparse.terms}) == n * (n + 1) // 2
    compiled = sparse.compile(xs)
    assert len(compiled.compiled.program.outputs) == n * (n + 1) // 2
    symbols = sympy.symbols(f"x0:{n}")
    numeric = sympy.lambdify(symbols, sympy.hessian(f(list(symbols), sympy), symbols), "numpy")
    batch = np.random.default_rng(3).uniform(-0.5, 0.5, (n, 4))
    for k, matrix in enumerate(compiled.dense(*batch)):
        np.testing.assert_allclose(matrix, np.array(numeric(*batch[:, k]), dtype=float), rtol=1e-13)


def test_traced_sparse_matrices_of_numpy_code():
    """sad.hessian(f, sparse=True) and sad.jacobian(F, sparse=True) on NumPy code: scipy.sparse
    matrices with Rosenbrock's 3N − 2 nonzeros and the hand-written derivatives."""
    v = np.linspace(-0.8, 1.1, 40)
    n = len(v)
    H = sad.hessian(lambda x: np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2), sparse=True)(v)
    assert isinstance(H, scipy.sparse.csr_matrix) and H.nnz == 3 * n - 2
    hand = np.zeros((n, n))
    for i in range(n - 1):
        hand[i, i] += 1200 * v[i] ** 2 - 400 * v[i + 1] + 2
        hand[i + 1, i + 1] += 200
        hand[i, i + 1] = hand[i + 1, i] = -400 * v[i]
    np.testing.assert_allclose(H.toarray(), hand, rtol=1e-13)
    J = sad.jacobian(lambda x: x[1:] ** 2 - x[:-1], sparse=True)(v)
    assert J.shape == (n - 1, n) and J.nnz == 2 * (n - 1)
    np.testing.assert_allclose(J.toarray(), np.eye(n - 1, n, 1) * 2 * v[None, :] - np.eye(n - 1, n), rtol=1e-15)
    constant = sad.jacobian(lambda x: x * 0.0 + 1.0, sparse=True)(v[:3])
    assert constant.shape == (3, 3) and constant.nnz == 0


def test_sparse_errors_say_what_was_expected():
    tape = sad.Tape()
    x, y = tape.var("x", 1.0), tape.var("y", 2.0)
    compiled = sad.hessian(x * x * y, [x, y], sparse=True).compile([x, y])
    with pytest.raises(ValueError, match=r"one point; use \.values\(\.\.\.\)"):
        compiled(np.array([1.0, 2.0]), 2.0)
    with pytest.raises(ValueError, match="not among the inputs"):
        sad.hessian(x * x * y, [x, y], sparse=True).compile([x])
    product = x * y
    size = len(tape)
    with pytest.raises(TypeError, match="non-empty list or array of Terms"):
        sad.jacobian([product], "x", sparse=True)
    with pytest.raises(ValueError, match="repeat a var"):
        sad.jacobian([product], [x, x], sparse=True)
    assert len(tape) == size


def test_a_matrix_without_nonzeros_compiles_to_zeros():
    """The Hessian of a linear function: no structural nonzero, an all-zero CSR matrix at a
    point and (0, points) values on a batch."""
    tape = sad.Tape()
    x, y, z = tape.var("x"), tape.var("y"), tape.var("z")
    empty = sad.hessian(3 * x + 2 * y - z, [x, y, z], sparse=True)
    assert empty.terms == () and empty.shape == (3, 3)
    compiled = empty.compile([x, y, z])
    matrix = compiled(1.0, 2.0, 3.0)
    assert matrix.shape == (3, 3) and matrix.nnz == 0
    assert compiled.values(np.ones(4), 2.0, 3.0).shape == (0, 4)
    assert not compiled.dense(np.ones(4), 2.0, 3.0).any()
    with pytest.raises(TypeError, match="non-empty list"):
        empty.compile([])


def test_sparse_values_of_dask_arrays_stay_lazy():
    """Dask inputs: values and dense are lazy Dask arrays, computed blockwise to the NumPy
    result (the Rosenbrock Hessian, 3N − 2 nonzeros, on 50 points in 3 chunks)."""
    import dask.array as da

    tape = sad.Tape()
    ws = [tape.var(f"w{i}") for i in range(6)]
    loss = sum(100 * (ws[i + 1] - ws[i] ** 2) ** 2 + (1 - ws[i]) ** 2 for i in range(5))
    compiled = sad.hessian(loss, ws, sparse=True).compile(ws)
    points = np.random.default_rng(0).uniform(-1, 1, (6, 50))
    lazy = [da.from_array(p, chunks=20) for p in points]
    values, dense = compiled.values(*lazy), compiled.dense(*lazy)
    assert isinstance(values, da.Array) and isinstance(dense, da.Array)
    assert values.shape == (16, 50) and dense.shape == (50, 6, 6)
    np.testing.assert_allclose(values.compute(), compiled.values(*points), rtol=1e-15)
    np.testing.assert_allclose(dense.compute(), compiled.dense(*points), rtol=1e-15)


def test_matrices_of_arrays_of_terms():
    """Array code makes object arrays of Terms: jacobian takes them as outputs and inputs (row-
    major), and sad.* functions apply elementwise to them as np.sin does."""
    tape = sad.Tape()
    v = np.array([tape.var(f"v{i}", float(i + 1)) for i in range(3)], dtype=object)
    F = sad.sin(v) * v[::-1]
    J = sad.jacobian(F, v)
    expected = np.diag(np.cos([1.0, 2.0, 3.0]) * [3.0, 2.0, 1.0]) + np.fliplr(np.diag(np.sin([1.0, 2.0, 3.0])))
    expected[1, 1] = np.cos(2.0) * 2.0 + np.sin(2.0)
    np.testing.assert_allclose([[t.eval() for t in row] for row in J], expected, rtol=1e-15)
    assert sad.atan2(v, 2.0).shape == (3,) and sad.atan2(v, 2.0)[0].eval() == np.arctan2(1.0, 2.0)


#: CasADi SX's node counts (``Function.n_nodes``; casadi 3.8.2, measured by
#: benchmarks/many_variables.py) for the gradient, the Hessian and jtimes (the HVP).
CASADI = {"R10": (93, 107, 165), "R100": (993, 1142, 1785), "S": (544, 2263, 1335)}


@pytest.mark.parametrize("name", sorted(CASADI))
def test_node_counts_are_pinned_below_casadi(name):
    """The graphs the benchmark measures: gradient appended ≤ 1.25 × f's nodes, and the Hessian
    and HVP graphs (f's part included, as CasADi counts) no larger than CasADi's."""
    f, n = MANY_VARIABLES[name]
    _, casadi_hessian, casadi_hvp = CASADI[name]
    sizes = {}
    for what in ("gradient", "hessian", "hvp"):
        tape = sad.Tape()
        xs = [tape.var(f"x{i}", 0.1) for i in range(n)]
        z = f(xs, SAD)
        start = len(tape)
        if what == "gradient":
            terms = z.grad_graph(xs)
            assert len(tape) - start <= 1.25 * start
        elif what == "hessian":
            terms = [h for row in sad.hessian(z, xs) for h in row]
        else:
            terms = sad.hvp(z, xs, [tape.var(f"v{i}") for i in range(n)])
        sizes[what] = len(dependencies(tape, [t.index for t in terms]))
    assert sizes["hessian"] <= casadi_hessian and sizes["hvp"] <= casadi_hvp, sizes


def test_a_square_has_one_adjoint_shared_by_its_hessian():
    """Σ x_i²: ∇ = (2·1)·x_i is one node per var (not x_i + x_i), and the Hessian is 2 on the
    diagonal with no other nonzero."""
    tape = sad.Tape()
    xs = [tape.var(f"x{i}", float(i)) for i in range(5)]
    z = xs[0] * xs[0]
    for x in xs[1:]:
        z = z + x * x
    start = len(tape)
    gradient = z.grad_graph(xs)
    assert [g.to_sympy() for g in gradient] == [2 * sympy.Symbol(f"x{i}") for i in range(5)]
    assert len(tape) - start == 5 + 1  # the products and the constant 2
    sparse = sad.hessian(z, xs, sparse=True)
    assert sparse.rows == sparse.cols == tuple(range(5)) and {t.eval() for t in sparse.terms} == {2.0}
