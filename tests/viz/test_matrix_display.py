"""Matrices of Terms in a terminal and a notebook: a Sparse, and rows of Terms through
``sad.viz.matrix``, print the matrix of formulas (checked against SymPy's Hessian)."""

import html.parser
import math
import re

import pytest
import sympy

import subgraph_ad as sad
from subgraph_ad.ad.matrix_display import CELL_CHARS, SHOW


def cells(text: str) -> list[list[str]]:
    """The entries of a printed matrix: one row per bracketed line, columns 2+ spaces apart."""
    rows = [line[1:-1] for line in text.splitlines() if line.startswith("[")]
    return [[c.strip() for c in re.split(r"\s{2,}", row.strip())] for row in rows]


def value(text: str, at: dict[str, float]) -> float:
    term = sad.parse(text)
    return term.eval({term.tape.vars[name]: v for name, v in at.items() if name in term.tape.vars})


def test_a_hessian_prints_as_the_matrix_of_its_formulas_aligned():
    tape = sad.Tape()
    x, y = tape.var("x", 1.0), tape.var("y", 2.0)
    f = sad.exp(x * y) + sad.sin(x)
    X, Y = sympy.symbols("x y")
    oracle = sympy.hessian(sympy.exp(X * Y) + sympy.sin(X), (X, Y))
    sparse, rows = sad.hessian(f, [x, y], sparse=True), sad.hessian(f, [x, y])
    text = str(sparse)
    assert str(sad.viz.matrix(rows)) == text and "Term(" not in text
    lines = text.splitlines()
    assert len(lines) == 2 and len({len(line) for line in lines}) == 1  # columns padded to one width
    second = [line.index(cells(text)[k][1]) for k, line in enumerate(lines)]
    assert second[0] == second[1]  # the second column starts at the same place in each row
    for at in ({"x": 1.0, "y": 2.0}, {"x": -0.3, "y": 0.7}):
        for i in range(2):
            for j in range(2):
                expected = float(oracle[i, j].subs({X: at["x"], Y: at["y"]}))
                assert math.isclose(value(cells(text)[i][j], at), expected, rel_tol=1e-12)
    # the notebook forms: a table of the same formulas, and a LaTeX matrix of 2 × 2 entries
    table = sparse._repr_html_()
    assert re.findall(r"<code>(.*?)</code>", table) == [html.escape(c) for row in cells(text) for c in row]
    assert table.count("<tr>") == 2 and "2×2 Sparse, 4 nonzeros" in table
    latex = sad.viz.matrix(rows)._repr_latex_()
    assert latex.startswith(r"$\left[\begin{matrix}") and latex.endswith(r"\end{matrix}\right]$")
    entries = [row.split(" & ") for row in latex[len(r"$\left[\begin{matrix}"):-len(r"\end{matrix}\right]$")].split(r" \\ ")]
    assert [len(row) for row in entries] == [2, 2] and entries[0][1] == entries[1][0]
    assert "e^{x y}" in entries[1][1] and r"\sin" in entries[0][0]


def test_a_big_matrix_is_capped_and_says_what_it_left_out():
    tape = sad.Tape()
    n = SHOW + 3
    xs = [tape.var(f"v{k}", 0.1 * k) for k in range(n)]
    g = sum(sad.sin(a) * b for a, b in zip(xs, xs[1:]))
    V = sympy.symbols(f"v0:{n}")
    oracle = sympy.hessian(sum(sympy.sin(a) * b for a, b in zip(V, V[1:])), V)
    text = str(sad.hessian(g, xs, sparse=True))
    grid = cells(text)
    assert len(grid) == SHOW and all(len(row) == SHOW + 1 and row[-1] == "…" for row in grid)
    assert text.splitlines()[SHOW].strip() == "⋮" and f"({n}×{n}, {sum(e != 0 for e in oracle)} nonzeros; showing the first 12×12)" in text
    at = {f"v{k}": 0.3 + 0.1 * k for k in range(n)}
    for i in range(SHOW):
        for j in range(SHOW):
            expected = float(oracle[i, j].subs({V[k]: at[f"v{k}"] for k in range(n)}))
            assert grid[i][j] == "0" if oracle[i, j] == 0 else math.isclose(value(grid[i][j], at), expected, rel_tol=1e-12)
    table = sad.hessian(g, xs, sparse=True)._repr_html_()
    assert table.count("<tr>") == SHOW + 1 and "showing the first 12×12" in table
    # an entry too long for a cell is cut with an ellipsis; in LaTeX it is named by its node
    x = tape.var("x", 0.5)
    long = sad.exp(-x**2 / 2).diff(x, 7, method="graph", closed_form=False)
    one = sad.viz.matrix([[long, x]])
    assert len(cells(str(one))[0][0]) == CELL_CHARS and cells(str(one))[0][0].endswith("…")
    assert rf"\text{{node {long.index}}}" in one._repr_latex_()


def test_matrix_refuses_what_is_not_rows_of_terms():
    tape = sad.Tape()
    x, y = tape.var("x"), tape.var("y")
    with pytest.raises(TypeError, match="rows of Terms.*got int 3"):
        sad.viz.matrix(3)
    with pytest.raises(ValueError, match="row 0 has 1 entries, row 1 has 2"):
        sad.viz.matrix([[x], [x, y]])
    with pytest.raises(TypeError, match="takes Terms, got float 2.0 in row 0"):
        sad.viz.matrix([[x, 2.0]])
    other = sad.Tape().var("x")
    with pytest.raises(ValueError, match="one tape"):
        sad.viz.matrix([[x, other]])
