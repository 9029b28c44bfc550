"""What a real JupyterLab shows, in headless Chromium: a notebook with a Term, a player and a
Hessian opened trusted (signed, as after running it) and untrusted (every notebook reopened from
disk, whose HTML goes through JupyterLab's sanitizer and whose SVG outputs are refused).

JupyterLab picks one MIME type per output by its own ranking, which the nbclient test cannot see:
the test asks the page which type each output was rendered from, and what is on screen — pictures
that loaded and take space, and the text a reader sees (``innerText``, which skips hidden
elements). One server and one browser serve every case; the browser is driven over the DevTools
protocol, polling until JupyterLab has rendered the outputs, within a bounded wait.
"""

import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest

CHROMIUM = "/usr/bin/chromium"
if not Path(CHROMIUM).exists():
    pytest.skip(f"needs Chromium at {CHROMIUM} (Debian: apt-get install chromium)", allow_module_level=True)

import jupyterlab  # noqa: E402,F401  (the server below; in the dev extra, as are the rest)
import nbformat  # noqa: E402
import websocket  # noqa: E402  (websocket-client, which jupyter-server depends on)
from IPython.core.formatters import DisplayFormatter  # noqa: E402
from nbformat.sign import NotebookNotary  # noqa: E402

import subgraph_ad as sad  # noqa: E402

T = TypeVar("T")

WAIT = 90.0  # seconds: the most any one step (server up, notebook rendered) may take

# What each output shows, read from the page: the MIME type JupyterLab rendered it from, the
# pictures that take space on screen, and the text a reader sees.
PROBE = """JSON.stringify(Array.prototype.map.call(document.querySelectorAll(".jp-OutputArea-output"), function (o) {
  function shown(el) { var r = el.getBoundingClientRect(); return r.width > 0 && r.height > 0; }
  return {
    mime: o.getAttribute("data-mime-type"),
    images: Array.prototype.filter.call(o.querySelectorAll("img"), shown).map(function (img) {
      return {loaded: img.complete && img.naturalWidth > 0, width: img.naturalWidth, src: img.src.slice(0, 26)}; }),
    svgNodes: Array.prototype.filter.call(o.querySelectorAll("svg g.node"), shown).length,
    text: o.innerText,
    view: Array.prototype.map.call(o.querySelectorAll(".sad-view"), function (v) { return v.innerText.trim(); }),
    count: Array.prototype.map.call(o.querySelectorAll(".sad-count"), function (c) { return c.textContent; })
  };
}))"""

# Ready: the new page (not the one before it) has its three outputs, every picture decoded or failed.
READY = """(function () {
  if (window.sadBefore) return false;
  var outs = document.querySelectorAll(".jp-OutputArea-output");
  return outs.length === 3 && Array.prototype.every.call(document.querySelectorAll(".jp-OutputArea-output img"),
    function (img) { return img.complete; });
})()"""


def cells() -> tuple[list[tuple[str, object]], dict[str, object]]:
    """The notebook's cells and their values; ``expect`` holds what the page should show."""
    tape = sad.Tape()
    x = tape.var("x", 0.5)
    y = tape.var("y", 2.0)
    f = sad.exp(-x**2 / 2)
    d2 = f.diff(x, 2)
    values = [
        ("f = sad.exp(-x**2 / 2).diff(x, 2)\nf", d2),
        ("sad.animate(sad.exp(-x**2 / 2), x, 2)", sad.animate(f, x, 2)),
        ("sad.hessian(x**2 * y + sad.sin(y), [x, y], sparse=True)",
         sad.hessian(x**2 * y + sad.sin(y), [x, y], sparse=True)),
    ]
    dot = d2.to_dot()
    expect = {"formula": str(d2), "nodes": len(re.findall(r"^\s*n\d+ \[", dot, re.M))}
    return values, expect


def notebook(values: list[tuple[str, object]], title: str) -> "nbformat.NotebookNode":
    """A notebook as a kernel leaves it after running the cells: each value formatted by IPython's
    own display formatter, as the kernel sends it."""
    formatter = DisplayFormatter()
    made = []
    for n, (source, value) in enumerate(values, 1):
        data, metadata = formatter.format(value)
        cell = nbformat.v4.new_code_cell(source, execution_count=n)
        cell.outputs = [nbformat.v4.new_output("execute_result", data=data, metadata=metadata, execution_count=n)]
        made.append(cell)
    kernel = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nbformat.v4.new_notebook(cells=made, metadata={"kernelspec": kernel, "title": title})


def wait_for(what: str, check: Callable[[], T]) -> T:
    """Poll ``check`` until it returns something true, or fail naming ``what`` after ``WAIT`` seconds."""
    deadline = time.monotonic() + WAIT
    while True:
        try:
            got = check()
            if got:
                return got
        except (OSError, ValueError):  # not listening yet, or a file half written
            pass
        if time.monotonic() > deadline:
            pytest.fail(f"gave up waiting for {what}")
        time.sleep(0.2)


def stop(process: subprocess.Popen) -> None:
    """End a process we started: politely, then for sure."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class Page:
    """One browser tab driven over the DevTools protocol: go to a URL, evaluate an expression."""

    def __init__(self, url: str) -> None:
        self.socket = websocket.create_connection(url, timeout=WAIT)
        self.calls = 0

    def call(self, method: str, **params: object) -> dict:
        self.calls += 1
        self.socket.send(json.dumps({"id": self.calls, "method": method, "params": params}))
        while True:
            reply = json.loads(self.socket.recv())
            if reply.get("id") == self.calls:
                assert "error" not in reply, reply
                return reply["result"]

    def evaluate(self, expression: str) -> object:
        return self.call("Runtime.evaluate", expression=expression, returnByValue=True)["result"].get("value")


def get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=5) as answer:
        return answer.read()


@pytest.fixture(scope="module")
def lab() -> Iterator[tuple[str, Page, dict]]:
    """A JupyterLab server with a trusted and an untrusted notebook, and a headless Chromium, each
    with its own folders; both are shut down whatever the test does."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        env = dict(os.environ, JUPYTER_CONFIG_DIR=str(root / "config"), JUPYTER_DATA_DIR=str(root / "data"),
                   JUPYTER_RUNTIME_DIR=str(root / "runtime"), JUPYTERLAB_SETTINGS_DIR=str(root / "settings"),
                   JUPYTERLAB_WORKSPACES_DIR=str(root / "workspaces"))
        values, expect = cells()
        for folder in ("data", "notebooks"):
            (root / folder).mkdir()
        notary = NotebookNotary(data_dir=str(root / "data"))  # the server below reads the same key
        trusted, untrusted = notebook(values, "trusted"), notebook(values, "untrusted")
        notary.sign(trusted)  # what `jupyter trust` (or running the notebook) does
        assert notary.check_signature(trusted) and not notary.check_signature(untrusted)
        nbformat.write(trusted, root / "notebooks" / "trusted.ipynb")
        nbformat.write(untrusted, root / "notebooks" / "untrusted.ipynb")
        processes: list[subprocess.Popen] = []
        with open(root / "server.log", "w") as log:
            try:
                processes.append(subprocess.Popen(
                    [sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root", "--ServerApp.ip=127.0.0.1",
                     "--ServerApp.port=0", "--ServerApp.token=", "--ServerApp.password=",
                     f"--ServerApp.root_dir={root / 'notebooks'}"],
                    env=env, stdout=log, stderr=subprocess.STDOUT))

                def base() -> str:
                    found = re.search(r"http://127\.0\.0\.1:(\d+)/", (root / "server.log").read_text())
                    return f"http://127.0.0.1:{found.group(1)}" if found and get(f"{found.group(0)}api/status") else ""

                url = wait_for("the JupyterLab server", base)
                processes.append(subprocess.Popen(
                    [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync",
                     "--disable-background-networking", "--disable-component-update", "--window-size=1200,2400",
                     f"--user-data-dir={root / 'profile'}", "--remote-debugging-port=0", "about:blank"],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))

                def tab() -> str:
                    port = (root / "profile" / "DevToolsActivePort").read_text().split()[0]
                    pages = [t for t in json.loads(get(f"http://127.0.0.1:{port}/json/list")) if t["type"] == "page"]
                    return pages[0]["webSocketDebuggerUrl"] if pages else ""

                page = Page(wait_for("Chromium's DevTools", tab))
                try:
                    yield url, page, expect
                finally:
                    page.socket.close()
            finally:
                for process in reversed(processes):
                    stop(process)


def shown(lab: tuple[str, Page, dict], name: str) -> list[dict]:
    """What each output of the notebook ``name`` shows, once JupyterLab has rendered it."""
    base, page, _ = lab
    page.evaluate("window.sadBefore = true")  # gone once the next page has loaded
    assert "errorText" not in page.call("Page.navigate", url=f"{base}/lab/tree/{name}.ipynb?reset")
    wait_for(f"JupyterLab to render {name}.ipynb", lambda: page.evaluate(READY) is True)
    return json.loads(str(page.evaluate(PROBE)))


def check_term(term: dict, trusted: bool, expect: dict) -> None:
    """The primary view is the drawing, in both trust states, with the formula under it; before,
    JupyterLab ranked text/latex over image/svg+xml and showed the formula alone."""
    assert term["mime"] == "text/html"
    assert expect["formula"].splitlines()[-1] in term["text"]
    if trusted:  # the live SVG, every node of it, and no second picture
        assert term["svgNodes"] == expect["nodes"] > 5 and term["images"] == []
    else:  # SVG stripped by the sanitizer: the picture as an image, and no stray label text
        assert term["svgNodes"] == 0
        assert [(i["loaded"], i["src"]) for i in term["images"]] == [(True, "data:image/svg+xml;base64,")]
        assert term["images"][0]["width"] > 100
        assert term["text"].strip() == expect["formula"]  # none of the stripped SVG's labels left loose


def check_player(player: dict, trusted: bool) -> None:
    """Trusted, the player runs (frame 0 of its frames, the live SVG); untrusted, its script and SVG
    are stripped and the final frame shows as an image, with none of the SVG's label text loose."""
    assert player["mime"] == "text/html"
    if trusted:
        assert player["count"][0].startswith("frame 0 of ") and player["svgNodes"] > 5 and player["images"] == []
    else:
        assert player["svgNodes"] == 0 and player["count"] == [""]
        assert len(player["images"]) == 1 and player["images"][0]["loaded"] and player["images"][0]["width"] > 100
        assert player["view"] == [""]  # before, the stripped SVG left its labels as loose text
        assert "Run the cell (or trust the notebook)" in player["text"] and "Play" not in player["text"]


def check_matrix(matrix: dict) -> None:
    """The Hessian of x²y + sin(y) is [[2y, 2x], [2x, -sin(y)]]: its table survives the sanitizer."""
    assert matrix["mime"] == "text/html"
    cells = [c.strip() for c in re.split(r"[\t\n]", matrix["text"]) if c.strip()]
    assert cells == ["2×2 Sparse, 4 nonzeros", "2*y", "2*x", "2*x", "-sin(y)"]


def test_jupyterlab_shows_each_output_trusted_and_untrusted(lab):
    """Both notebooks, every output: one test, as pytest-xdist would start a server per test."""
    expect = lab[2]
    for name in ("trusted", "untrusted"):
        term, player, matrix = shown(lab, name)
        check_term(term, name == "trusted", expect)
        check_player(player, name == "trusted")
        check_matrix(matrix)
