"""Dense matrices of Terms (``hessian``, ``jacobian``, ``derivative_tensor`` slices) show as
matrices in text, HTML and LaTeX, headed truthfully "Dense" (a Sparse "Sparse, k nonzeros");
their entries are checked against SymPy's own Hessian and Jacobian."""

import html
import math
import re

import nbclient
import nbformat
import sympy

import subgraph_ad as sad


def table_cells(page: str) -> list[list[str]]:
    return [[html.unescape(c) for c in re.findall(r"<code>(.*?)</code>|<td[^>]*>(0)</td>", row) for c in c if c]
            for row in re.findall(r"<tr>(.*?)</tr>", page)]


def agrees(cells: list[list[str]], oracle: sympy.Matrix, at: dict[str, float]) -> bool:
    """Each shown formula, parsed back and evaluated, equals SymPy's entry at ``at``."""
    point = {sympy.Symbol(k): v for k, v in at.items()}
    for i, row in enumerate(cells):
        for j, text in enumerate(row):
            term = sad.parse(text)
            got = term.eval({term.tape.vars[n]: v for n, v in at.items() if n in term.tape.vars})
            if not math.isclose(got, float(oracle[i, j].subs(point)), rel_tol=1e-12, abs_tol=1e-15):
                return False
    return True


def test_a_dense_hessian_shows_as_a_matrix_headed_dense():
    tape = sad.Tape()
    x, y = tape.var("x", 1.0), tape.var("y", 2.0)
    H = sad.hessian(x**2 * y + sad.sin(y), [x, y])
    X, Y = sympy.symbols("x y")
    oracle = sympy.hessian(X**2 * Y + sympy.sin(Y), (X, Y))
    page = H._repr_html_()
    assert "<div>2×2 Dense</div>" in page and "Sparse" not in page
    assert agrees(table_cells(page), oracle, {"x": 0.3, "y": -1.2})
    assert "Term(" not in repr(H) and repr(H) == str(H) == str(sad.hessian(x**2 * y + sad.sin(y), [x, y], sparse=True))
    assert H[0][1] is H[1][0] and isinstance(H, list)  # still rows of Terms
    assert sad.viz.matrix(H) is H
    built = sad.viz.matrix([list(row) for row in H])
    assert "2×2 Dense" in built._repr_html_() and str(built) == str(H)
    latex = H._repr_latex_()
    assert latex.startswith(r"$\left[\begin{matrix}") and r"- \sin{\left(y \right)}" in latex


def test_jacobians_dense_and_sparse_say_which_they_are():
    tape = sad.Tape()
    x, y, z = tape.var("x", 1.0), tape.var("y", 2.0), tape.var("z", 0.5)
    fs = [x * y, sad.exp(z) + x]
    X, Y, Z = sympy.symbols("x y z")
    oracle = sympy.Matrix([X * Y, sympy.exp(Z) + X]).jacobian([X, Y, Z])
    dense, sparse = sad.jacobian(fs, [x, y, z]), sad.jacobian(fs, [x, y, z], sparse=True)
    assert "<div>2×3 Dense</div>" in dense._repr_html_()
    assert "<div>2×3 Sparse, 4 nonzeros</div>" in sparse._repr_html_()
    assert table_cells(dense._repr_html_()) == table_cells(sparse._repr_html_())
    assert agrees(table_cells(dense._repr_html_()), oracle, {"x": 0.7, "y": -0.4, "z": 1.1})
    assert str(dense).splitlines()[0].startswith("[y  x  0")


def test_a_derivative_tensor_slice_is_a_dense_matrix():
    tape = sad.Tape()
    x, y = tape.var("x", 0.5), tape.var("y", 1.5)
    T = sad.derivative_tensor(x**3 * y**2 + sad.sin(x) * y, [x, y], 3)
    X, Y = sympy.symbols("x y")
    u = X**3 * Y**2 + sympy.sin(X) * Y
    for i, v in enumerate((X, Y)):
        block = T[i]
        assert isinstance(block, sad.Dense) and block.shape == (2, 2) and block == T[i, :, :]
        oracle = sympy.hessian(sympy.diff(u, v), (X, Y))
        assert agrees(table_cells(block._repr_html_()), oracle, {"x": 0.5, "y": 1.5})
    assert [t.index for t in T[0, 1]] == [T[0, 1, 0].index, T[0, 1, 1].index]
    assert len(T[:]) == 2 and all(isinstance(b, sad.Dense) for b in T[:])


def test_a_notebook_shows_a_hessian_as_a_table_of_its_entries():
    """A real kernel (nbclient): the cell's value reaches the front end as HTML, a table of its
    entries, with the matrix text as its text/plain."""
    cell = ("import subgraph_ad as sad\ntape = sad.Tape(); x = tape.var('x', 1.0); y = tape.var('y', 2.0)\n"
            "g = sad.exp(x * y) + x**3\nsad.hessian(g, [x, y])")
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(cell)])
    nbclient.NotebookClient(notebook, timeout=120, kernel_name="python3").execute()
    (output,) = notebook.cells[0].outputs
    page, text = output["data"]["text/html"], output["data"]["text/plain"]
    assert "<table" in page and "2×2 Dense" in page and "Term(" not in text
    X, Y = sympy.symbols("x y")
    oracle = sympy.hessian(sympy.exp(X * Y) + X**3, (X, Y))
    cells = table_cells(page)
    assert [len(row) for row in cells] == [2, 2] and agrees(cells, oracle, {"x": 1.0, "y": 2.0})
    assert "text/latex" in output["data"]
