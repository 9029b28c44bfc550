"""Sparse Jacobians and Hessians (structure and values against SymPy and hand derivatives,
compiled for one point and for batches), and the node counts of the many-variables benchmark
pinned below CasADi SX's counts for the same functions."""

import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse
import sympy

import subgraph_ad as sad
from subgraph_ad.core import dependencies

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from many_variables import CASES, SAD  # noqa: E402


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
    f, _ = CASES["S"]
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
    empty = sad.hessian(x + y, [x, y], sparse=True)
    assert empty.terms == () and empty.shape == (2, 2)
    with pytest.raises(ValueError, match="2x2 matrix has no structural nonzero"):
        empty.compile([x, y])
    with pytest.raises(ValueError, match="not among the inputs"):
        sad.hessian(x * x * y, [x, y], sparse=True).compile([x])
    product = x * y
    size = len(tape)
    with pytest.raises(TypeError, match="non-empty list of Terms"):
        sad.jacobian([product], "x", sparse=True)
    with pytest.raises(ValueError, match="repeat a var"):
        sad.jacobian([product], [x, x], sparse=True)
    assert len(tape) == size


#: CasADi SX's node counts (``Function.n_nodes``; casadi 3.8.2, measured by
#: benchmarks/many_variables.py) for the gradient, the Hessian and jtimes (the HVP).
CASADI = {"R10": (93, 107, 165), "R100": (993, 1142, 1785), "S": (544, 2263, 1335)}


@pytest.mark.parametrize("name", sorted(CASADI))
def test_node_counts_are_pinned_below_casadi(name):
    """The graphs the benchmark measures: gradient appended ≤ 1.25 × f's nodes, and the Hessian
    and HVP graphs (f's part included, as CasADi counts) no larger than CasADi's."""
    f, n = CASES[name]
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
