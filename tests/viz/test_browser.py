"""Players, viewers and animated SVGs in a real headless Chromium. Two players on one page, as a
notebook shows two ``_repr_html_`` outputs (written into the page, or added by script as JupyterLab
does): each shows its own caption and first frame, and stepping or zooming one leaves the other
alone.

The page drives the players itself (button clicks, a key press) from a script after both, and
writes what it saw into the DOM, which ``chromium --dump-dom`` prints once the scripts have run.
"""

import base64
import html
import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

import subgraph_ad as sad
from subgraph_ad import Tape, exp, sin

CHROMIUM = "/usr/bin/chromium"
pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                reason=f"needs Chromium at {CHROMIUM} (Debian: apt-get install chromium)")

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--virtual-time-budget=2000"]

# Reads each player's state, clicks "next" three times on the first, presses the right arrow on
# the second, zooms the second in, and records each state in <pre id="seen">.
DRIVER = """
<pre id="seen"></pre>
<script>
(function () {
  var players = Array.prototype.slice.call(document.querySelectorAll(".sad-player"));
  function state(p) {
    var svg = p.querySelector(".sad-view svg");
    return {caption: p.querySelector(".sad-caption").textContent, count: p.querySelector(".sad-count").textContent,
            hidden: p.querySelectorAll(".sad-hidden").length, lit: p.querySelectorAll(".sad-new").length,
            scale: p.querySelector(".sad-scale").textContent, width: parseFloat(svg.style.width)};
  }
  var seen = {start: players.map(state)};
  for (var k = 0; k < 3; k++) players[0].querySelector(".sad-next").click();
  seen.stepped = players.map(state);
  players[1].dispatchEvent(new KeyboardEvent("keydown", {key: "ArrowRight", bubbles: true}));
  seen.keyed = players.map(state);
  players[1].querySelector(".sad-in").click();
  seen.zoomed = players.map(state);
  document.getElementById("seen").textContent = JSON.stringify(seen);
})();
</script>
"""


# How JupyterLab shows an HTML output: set innerHTML (which runs no script), then replace each
# script by a fresh copy, which the browser runs.
INSERT = """<script>
function addOutput(html) {
  var div = document.createElement("div");
  div.className = "output";
  div.innerHTML = html;
  document.body.appendChild(div);
  Array.prototype.forEach.call(div.querySelectorAll("script"), function (old) {
    var fresh = document.createElement("script");
    fresh.textContent = old.textContent;
    old.parentNode.replaceChild(fresh, old);
  });
}
</script>
"""


def notebook_page(fragments: list[str], inserted: bool = False) -> str:
    """Outputs one under the other, each in its own output div, as Jupyter lays out cells: written
    into the page, or (``inserted``) added by script the way JupyterLab adds an output."""
    if inserted:
        quoted = [json.dumps(f).replace("</", "<\\/") for f in fragments]  # no "</script>" inside a script
        cells = INSERT + "".join(f"<script>addOutput({q});</script>\n" for q in quoted)
    else:
        cells = "".join(f'<div class="output">{fragment}</div>\n' for fragment in fragments)
    return f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"></head><body>\n{cells}{DRIVER}</body></html>\n'


def chromium(*args: str) -> str:
    with tempfile.TemporaryDirectory() as profile:
        done = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args],
                              capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def data_of(fragment: str) -> dict:
    return json.loads(re.search(r"var data = (\{.*?\});\n", fragment).group(1))


@pytest.mark.parametrize("inserted", [False, True], ids=["written", "inserted"])
def test_two_players_on_one_page_each_show_their_own_frames(tmp_path, inserted):
    tape = Tape()
    x = tape.var("x", 0.5)
    first = sad.animate(exp(-x**2 / 2), x, 2)
    tape2 = Tape()
    y = tape2.var("y", 1.0)
    second = sad.animate(sin(y) * y, y, 3, per="pass")
    fragments = [first._repr_html_(), second._repr_html_()]
    datas = [data_of(f) for f in fragments]
    assert datas[0]["frames"][0]["caption"] != datas[1]["frames"][0]["caption"]
    page = tmp_path / "two.html"
    page.write_text(notebook_page(fragments, inserted), encoding="utf-8")

    dom = chromium("--dump-dom", page.as_uri())
    seen = json.loads(html.unescape(re.search(r'<pre id="seen">(.*?)</pre>', dom, re.S).group(1)))

    def hidden_at(data: dict, frame: int) -> int:
        return sum(1 for first_frame in data["appear"].values() if first_frame > frame)

    for k, data in enumerate(datas):  # each shows its own caption and its first frame
        start = seen["start"][k]
        assert start["caption"] == data["frames"][0]["caption"]
        assert start["count"] == f"frame 0 of {len(data['frames']) - 1}"
        assert start["hidden"] == hidden_at(data, 0) > 0
        assert int(start["scale"].rstrip("%")) >= 60  # readable text from the start
    stepped = seen["stepped"]
    assert stepped[0]["caption"] == datas[0]["frames"][3]["caption"] and stepped[0]["count"].startswith("frame 3 ")
    assert stepped[0]["hidden"] == hidden_at(datas[0], 3) and stepped[0]["lit"] > 0
    assert stepped[1] == seen["start"][1]  # the other player did not move
    keyed = seen["keyed"]
    assert keyed[1]["caption"] == datas[1]["frames"][1]["caption"] and keyed[0] == stepped[0]
    zoomed = seen["zoomed"]
    assert zoomed[1]["width"] == pytest.approx(keyed[1]["width"] * 1.25, rel=1e-3)
    assert zoomed[0] == keyed[0]


def test_a_big_graph_opens_readable_in_the_viewer_and_zooms(tmp_path):
    tape = Tape()
    x = tape.var("x", 0.5)
    steps = sad.derivatives(sad.tanh(sad.tanh(sad.tanh(x))), x, 5, method="graph")  # 1330 pt wide
    bundle = sad.viz.render.repr_mimebundle(steps)
    page = tmp_path / "big.html"
    page.write_text(notebook_page([bundle["text/html"], sad.animate(sin(x), x, 1)._repr_html_()]), encoding="utf-8")
    dom = chromium("--window-size=1000,800", "--dump-dom", page.as_uri())
    seen = json.loads(html.unescape(re.search(r'<pre id="seen">(.*?)</pre>', dom, re.S).group(1)))
    viewer = seen["start"][0]
    assert viewer["caption"] == "" and viewer["hidden"] == 0  # a picture: nothing hidden, no frames
    assert viewer["scale"] == "60%"  # too wide to fit the window at a readable size: starts at 60 %
    assert seen["start"][1]["scale"] == "100%"  # a small graph starts at its natural size
    shot = tmp_path / "big.png"
    chromium("--window-size=1000,800", "--hide-scrollbars", f"--screenshot={shot}", page.as_uri())
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.skipif(shutil.which("dot") is None, reason="needs Graphviz")
def test_the_player_page_written_to_a_file_runs_on_its_own(tmp_path):
    tape = Tape()
    x = tape.var("x", 0.5)
    sad.animate(exp(-x**2 / 2), x, 2, tmp_path / "g.html")
    dom = chromium("--dump-dom", (tmp_path / "g.html").as_uri())
    caption = re.search(r'<div class="sad-caption" aria-live="polite">(.*?)</div>', dom).group(1)
    assert caption == "f: 6 nodes, before differentiating"
    assert re.search(r'<span class="sad-count">frame 0 of \d+</span>', dom)


SEEK = """<pre id="seen"></pre><script>
window.addEventListener("load", function () {  // once the page and its styles are complete
var seen = [];
[0.5, 2.0, 3.5, 5.0, 6.5].forEach(function (t) {  // seconds into the cycle: mid-frame 0, 1, 2, 3, hold
  document.getAnimations().forEach(function (a) { a.pause(); a.currentTime = t * 1000; });
  var captions = Array.prototype.filter.call(document.querySelectorAll("svg > g > text"), function (el) {
    return getComputedStyle(el).opacity === "1"; }).map(function (el) { return el.textContent; });
  var hidden = Array.prototype.filter.call(document.querySelectorAll("g.node"), function (el) {
    return getComputedStyle(el).opacity === "0"; }).length;
  seen.push([captions, hidden]);
});
document.getElementById("seen").textContent = JSON.stringify(seen);
});
</script>"""


def test_the_animated_svg_shows_each_frames_caption_in_turn(tmp_path):
    tape = Tape()
    x = tape.var("x", 0.5)
    movie = sad.animate(exp(-x**2 / 2), x, 3, tmp_path / "g.svg", method="graph", per="pass", interval=1.5)
    tape2 = Tape()
    x2 = tape2.var("x", 0.5)
    carried = sad.viz.record.carry(exp(-x2**2 / 2), [x2] * 3)
    captions = [f.caption for f in sad.viz.record.record(*carried, per="pass").frames]
    page = tmp_path / "svg.html"
    page.write_text(f"<!DOCTYPE html><html><body>{Path(movie.path).read_text()}{SEEK}</body></html>", encoding="utf-8")
    dom = chromium("--dump-dom", page.as_uri())
    seen = json.loads(html.unescape(re.search(r'<pre id="seen">(.*?)</pre>', dom, re.S).group(1)))
    assert [shown for shown, _ in seen] == [[captions[0]], [captions[1]], [captions[2]], [captions[3]], [captions[3]]]
    hidden = [count for _, count in seen]
    assert hidden[0] > hidden[1] > hidden[2] > hidden[3] == hidden[4] == 0  # nodes appear pass by pass


@pytest.mark.parametrize("inserted", [False, True], ids=["written", "inserted"])
def test_two_copies_of_one_output_each_advance_on_their_own(tmp_path, inserted):
    """One output shown twice (JupyterLab's "New View for Output", a duplicated notebook): the
    same ids twice on one page. Each copy hides and lights its own nodes and steps on its own."""
    tape = Tape()
    x = tape.var("x", 0.5)
    fragment = sad.animate(exp(-x**2 / 2), x, 2)._repr_html_()
    data = data_of(fragment)
    page = tmp_path / "copies.html"
    page.write_text(notebook_page([fragment, fragment], inserted), encoding="utf-8")
    dom = chromium("--dump-dom", page.as_uri())
    seen = json.loads(html.unescape(re.search(r'<pre id="seen">(.*?)</pre>', dom, re.S).group(1)))

    def hidden_at(frame: int) -> int:
        return sum(1 for first_frame in data["appear"].values() if first_frame > frame)

    for start in seen["start"]:
        assert start["caption"] == data["frames"][0]["caption"] and start["hidden"] == hidden_at(0) > 0
    first, second = seen["stepped"]
    assert first["count"].startswith("frame 3 ") and first["hidden"] == hidden_at(3) and first["lit"] > 0
    assert second == seen["start"][1]  # the other copy did not move, nor light anything
    first, second = seen["keyed"]
    assert first == seen["stepped"][0]
    assert second["caption"] == data["frames"][1]["caption"] and second["hidden"] == hidden_at(1)
    assert second["lit"] == len(data["frames"][1]["new"]) > 0
    first, second = seen["zoomed"]
    assert first == seen["keyed"][0] and second["width"] == pytest.approx(seen["keyed"][1]["width"] * 1.25, rel=1e-3)


STILL = """<pre id="seen"></pre><script>
window.addEventListener("load", function () {
  var seen = Array.prototype.map.call(document.querySelectorAll(".sad-player"), function (p) {
    return Array.prototype.map.call(p.querySelectorAll("img"), function (img) {
      return {complete: img.complete, width: img.naturalWidth, height: img.naturalHeight}; }).concat(
      [{svgs: p.querySelectorAll("svg").length}]);
  });
  document.getElementById("seen").textContent = JSON.stringify(seen);
});
</script>"""


def test_a_sanitized_player_still_shows_the_final_graph_as_an_image(tmp_path):
    """What an untrusted notebook shows: the player's script, style and inline SVG stripped. An
    <img> of the final graph is left, loads, and holds every node of the live SVG; where the
    script runs, it removes the image, so a trusted view shows one picture."""
    tape = Tape()
    x = tape.var("x", 0.5)
    fragment = sad.animate(exp(-x**2 / 2), x, 2)._repr_html_()
    sanitized = re.sub(r"<(script|style|svg)\b.*?</\1>", "", fragment, flags=re.S)
    assert "<svg" not in sanitized and "<script" not in sanitized
    src = re.search(r'<img class="sad-still"[^>]* src="data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)"', sanitized)
    still = base64.b64decode(src.group(1)).decode("utf-8")
    live = re.search(r"<svg\b.*?</svg>", fragment, re.S).group(0)
    node_ids = re.compile(r'<g id="([^"]+)" class="node')
    assert node_ids.findall(still) == node_ids.findall(live) and len(node_ids.findall(live)) > 5
    page = tmp_path / "sanitized.html"
    page.write_text(f'<!DOCTYPE html><html><body><div class="output">{sanitized}</div>'
                    f'<div class="output">{fragment}</div>{STILL}</body></html>', encoding="utf-8")
    dom = chromium("--dump-dom", page.as_uri())
    stripped, trusted = json.loads(html.unescape(re.search(r'<pre id="seen">(.*?)</pre>', dom, re.S).group(1)))
    assert stripped[0]["complete"] and stripped[0]["width"] > 100 and stripped[0]["height"] > 100
    assert stripped[-1] == {"svgs": 0}
    assert trusted == [{"svgs": 1}]  # the script ran: the live SVG alone, the image removed
