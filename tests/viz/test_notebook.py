"""A notebook run headless (nbclient and a real IPython kernel): what each kind of result sends to
the front end. Skipped where the notebook packages are not installed."""

import re

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

CELLS = [
    "import subgraph_ad as sad\ntape = sad.Tape(); x = tape.var('x', 0.5)\nf = sad.exp(-x**2 / 2)\nf",
    "sad.animate(f, x, 2)",
    "sad.animate(sad.sin(x) * x, x, 3, per='pass')",
    "steps = sad.derivatives(f, x, 3)\nsteps",
    "big = sad.derivatives(sad.tanh(sad.tanh(sad.tanh(x))), x, 5, method='graph')\nbig.f.tape",
]


def run_notebook() -> list[list[dict]]:
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in CELLS])
    nbclient.NotebookClient(notebook, timeout=120, kernel_name="python3").execute()
    return [[dict(output) for output in cell.outputs] for cell in notebook.cells]


def test_a_notebook_shows_terms_animations_and_tables_in_their_rich_forms():
    term, first, second, table, big = run_notebook()
    assert [o["output_type"] for o in term] == ["execute_result"]
    assert {"text/html", "image/svg+xml", "text/latex", "text/plain"} <= set(term[0]["data"])
    assert "<svg" in term[0]["data"]["image/svg+xml"]
    # the graph in text/html, which JupyterLab, the classic notebook and VS Code all rank above
    # text/latex: the live SVG, its image for a sanitized view, and the formula under them
    shown = term[0]["data"]["text/html"]
    assert shown.count("<svg") == 1
    assert '<img class="sad-still" alt="the graph" src="data:image/svg+xml;base64,' in shown
    assert f'<pre class="sad-formula">{term[0]["data"]["text/plain"]}</pre>' in shown
    players = []
    for cell in (first, second):
        data = cell[0]["data"]
        assert {"text/html", "text/plain"} <= set(data) and data["text/plain"].startswith("Animation(")
        players.append(re.search(r'<div class="sad-player" id="([^"]+)"', data["text/html"]).group(1))
    assert players[0] != players[1]
    data = table[0]["data"]
    assert data["text/html"].startswith("<table>") and "<td>d³f/dx³</td>" in data["text/html"]
    assert data["text/plain"].splitlines()[0].split()[:3] == ["order", "derivative", "wrt"]
    shown = [o for o in big if o["output_type"] == "execute_result"][0]["data"]  # a big graph: the zoomable viewer
    assert "sad-fit" in shown["text/html"] and "image/svg+xml" not in shown
