"""Animations of a derivative subgraph being built, on a layout that never moves.

``animate`` runs the gen_graph passes (or Taylor mode) itself and records, through their
per-node callback, which nodes each pass appends. The *final* graph is laid out once by Graphviz; every frame is
drawn from that one layout by hiding the nodes that do not exist yet and highlighting the new
one. So a node sits at the same place from the frame it appears in to the last frame.

- ``.html``: one self-contained page (the final SVG, a slider, play/pause, arrow keys, a caption
  naming the derivative order and the new node); it needs no network access.
- ``.svg``: the final SVG with CSS keyframes that reveal the nodes in order; a viewer without
  CSS animation shows the final graph.
- ``.gif``: positions from ``dot -Tjson0`` pinned with ``pos="x,y!"`` and drawn by ``neato -n2``
  (hidden nodes stay in the drawing as invisible, so every frame has the same canvas), then
  assembled with Pillow.

>>> from subgraph_ad import Tape, exp
>>> tape = Tape(); x = tape.var("x", 0.5)
>>> rec = record(exp(-x * x), [x, x])
>>> [d.eval() for d in rec.derivatives] == [exp(-x * x).diff(x).eval(), exp(-x * x).diff(x, 2).eval()]
True
>>> rec.frames[1].caption
'df/dx (pass 1 of 2) · new node 5: constant -2.0 · 1 of 3 in this pass'
"""

from __future__ import annotations

import html
import importlib.util
import itertools
import json
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from .render import (
    MAX_NODES,
    GraphTooLarge,
    describe,
    dot_source,
    find_program,
    run_graphviz,
    svg_text,
)
from ..ad.diff import derivatives as derivative_steps
from ..core import Tape, Term, dependencies

FORMATS = ("html", "svg", "gif")
PER = ("node", "pass")
METHODS = ("graph", "taylor", "auto")
#: GIFs hold every frame as an image: past this many frames, use per="pass" or .html instead.
MAX_GIF_FRAMES = 200
#: Seconds a frame is shown, by default, per node and per pass; the last frame is held longer.
INTERVALS = {"node": 0.5, "pass": 1.5}
HOLD = 2.5
NEW = "#d62728"

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Frame:
    """One picture: which pass it belongs to (0 = before any), the nodes it adds, its caption."""

    pass_no: int
    new: tuple[int, ...]
    caption: str


@dataclass(frozen=True)
class Recording:
    """What the passes did (gen_graph passes, or the orders of a Taylor run): the drawn nodes,
    the frame each appears in, the frames."""

    tape: Tape
    term: Term
    wrts: tuple[Term, ...]
    derivatives: tuple[Term, ...]
    indices: tuple[int, ...]
    appear: dict[int, int]
    frames: tuple[Frame, ...]
    added: tuple[int, ...]  # how much each pass grew the tape (unused nodes included)

    @property
    def new_nodes(self) -> int:
        return sum(len(f.new) for f in self.frames)


@dataclass(frozen=True)
class Animation:
    """What ``animate`` wrote: the file, its format, the derivative Terms (one per pass) and counts."""

    path: str
    format: str
    derivatives: tuple[Term, ...]
    frames: int
    nodes: int
    new_nodes: int
    added: tuple[int, ...]  # how much each pass (each order) grew the tape

    @property
    def result(self) -> Term:
        """The last derivative, e.g. d³f/dx³ for ``order=3``."""
        return self.derivatives[-1]


# -- recording -------------------------------------------------------------------------------------
_SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


def notation(names: Sequence[str], plain: bool = False) -> str:
    """Leibniz notation for differentiating f by ``names`` in turn (none: f itself).

    >>> notation(["x", "x", "x"]), notation(["x", "y"]), notation(["x", "x"], plain=True), notation([])
    ('d³f/dx³', 'd²f/dxdy', 'd^2f/dx^2', 'f')
    """
    if not names:
        return "f"

    def power(n: int) -> str:
        if n == 1:
            return ""
        return f"^{n}" if plain else str(n).translate(_SUPERSCRIPT)

    groups = [(name, len(list(run))) for name, run in itertools.groupby(names)]
    return f"d{power(len(names))}f/" + "".join(f"d{name}{power(count)}" for name, count in groups)


def _wrt_list(tape: Tape, wrt: Any, order: Any) -> list[Term]:
    if isinstance(wrt, Term):
        if isinstance(order, bool) or not isinstance(order, int) or order < 1:
            raise ValueError(f"order must be an int >= 1, got {order!r}")
        wrts = [wrt] * order
    elif isinstance(wrt, (list, tuple)) and wrt:
        wrts = list(wrt)
        if order is not None and order != len(wrts):
            raise ValueError(f"with a list of {len(wrts)} vars, order must be None or {len(wrts)}, got {order!r}")
    else:
        raise TypeError(f"wrt must be a var Term or a non-empty list of them, got {type(wrt).__name__} {wrt!r}")
    for w in wrts:
        tape.check_var(w, "wrt")
    return wrts


def record(term: Term, wrts: Sequence[Term], per: str = "node", include_unused: bool = False,
           method: str = "graph") -> Recording:
    """Differentiate once per var in ``wrts`` and record the frames (appends to the tape): one
    gen_graph pass each, or with ``method="taylor"`` / ``"auto"`` (the rule of ``diff``) the
    orders of a Taylor-mode run, each node shown with the order that first needed it.

    Folding can leave a few appended nodes that no derivative uses (``x * 1`` becomes ``x``
    after ``1`` was appended); they are left out of the drawing unless ``include_unused``.
    """
    if per not in PER:
        raise ValueError(f"per must be 'node' or 'pass', got {per!r}")
    tape = term.tape
    initial = dependencies(tape, [term.index])
    steps = derivative_steps(term, *wrts, method=method)
    passes = [list(step.appended) for step in steps]
    derivatives = [step.term for step in steps]
    added = [len(step.appended) for step in steps]
    if not include_unused:
        used = set(dependencies(tape, sorted({term.index, *(d.index for d in derivatives)})))
        passes = [[i for i in appended if i in used] for appended in passes]

    total = len(wrts)
    names = [w.name or "?" for w in wrts]
    frames = [Frame(0, (), f"f: {len(initial)} nodes, before differentiating")]
    shown_at: dict[int, int] = {}  # node -> first frame it must be visible in
    for p, (appended, result, step) in enumerate(zip(passes, derivatives, steps), 1):
        how = "Taylor-mode order" if step.method == "taylor" else "pass"
        head = f"{notation(names[:p])} ({how} {p} of {total})"
        if not appended:
            frames.append(Frame(p, (), f"{head} · no new nodes: the result, node {result.index}, "
                                       "was already on the tape"))
        elif per == "pass":
            frames.append(Frame(p, tuple(appended), f"{head} · {len(appended)} new nodes, "
                                                    f"result: node {result.index}"))
        else:
            for k, i in enumerate(appended, 1):
                frames.append(Frame(p, (i,), f"{head} · new {describe(tape, i, with_order=False)} · {k} of {len(appended)} "
                                             "in this pass"))
        for f in range(len(frames) - 1, 0, -1):
            if frames[f].pass_no != p:
                break
            for i in frames[f].new:
                shown_at.setdefault(i, f)
        shown_at[result.index] = min(shown_at.get(result.index, len(frames) - 1), len(frames) - 1)

    roots = {term.index, *(d.index for d in derivatives), *(i for a in passes for i in a)}
    indices = dependencies(tape, sorted(roots))
    start = set(initial)
    never = len(frames)
    appear = {i: 0 if i in start else shown_at.get(i, never) for i in indices}
    # A node that existed before but is first used by a derivative appears with its first user.
    for i in reversed(indices):
        for a in tape.nodes[i].args:
            if appear[a] > appear[i]:
                appear[a] = appear[i]
    return Recording(tape, term, tuple(wrts), tuple(derivatives), tuple(indices), appear, tuple(frames),
                     tuple(added))


# -- drawing ---------------------------------------------------------------------------------------
#: Prefix of the element ids of an animation's SVG, so a page can hold it next to other graphs.
PREFIX = "sad_"


def _final_dot(rec: Recording, options: dict[str, Any], **hooks: Any) -> str:
    terms = [Term(rec.tape, i) for i in rec.indices]
    return dot_source(terms, outputs=[rec.term, *rec.derivatives], **options, **hooks)


def _final_svg(rec: Recording, options: dict[str, Any], **hooks: Any) -> str:
    terms = [Term(rec.tape, i) for i in rec.indices]
    return svg_text(terms, outputs=[rec.term, *rec.derivatives], id_prefix=PREFIX, **options, **hooks)


def _edges(rec: Recording) -> list[tuple[int, int]]:
    return [(i, k) for i in rec.indices for k in range(len(rec.tape.nodes[i].args))]


def _new_edges(rec: Recording, frame: Frame) -> list[str]:
    return [f"e{i}_{k}" for i in frame.new for k in range(len(rec.tape.nodes[i].args))]


def _html(rec: Recording, options: dict[str, Any], interval: float, title: str) -> str:
    prefix = PREFIX
    svg = _final_svg(rec, options)
    appear = {f"n{i}": a for i, a in rec.appear.items() if a > 0}
    appear.update({f"e{i}_{k}": rec.appear[i] for i, k in _edges(rec) if rec.appear[i] > 0})
    data = {
        "prefix": prefix,
        "interval": round(interval * 1000),
        "appear": appear,
        "frames": [{"caption": f.caption, "new": [f"n{i}" for i in f.new] + _new_edges(rec, f)}
                   for f in rec.frames],
    }
    payload = json.dumps(data, ensure_ascii=True, separators=(",", ":")).replace("</", "<\\/")
    return _PLAYER.format(title=html.escape(title), svg=svg, data=payload, new=NEW, last=len(rec.frames) - 1)


def _animated_svg(rec: Recording, options: dict[str, Any], interval: float) -> str:
    prefix = PREFIX
    new_at = {i: f for f, frame in enumerate(rec.frames) for i in frame.new}
    node_attrs = {}
    for i in rec.indices:
        classes = []
        if rec.appear[i] > 0:
            classes.append(f"{prefix}f{rec.appear[i]}")
        if i in new_at:
            classes.append(f"{prefix}h{new_at[i]}")
        if classes:
            node_attrs[i] = {"class": " ".join(classes)}
    edge_attrs = {(i, k): {"class": f"{prefix}f{rec.appear[i]}"} for i, k in _edges(rec) if rec.appear[i] > 0}
    svg = _final_svg(rec, options, node_attrs=node_attrs, edge_attrs=edge_attrs)

    last = len(rec.frames) - 1
    cycle = last * interval + HOLD

    def pct(f: int) -> str:
        return f"{100.0 * f * interval / cycle:.4f}%"

    rules = ["/* Frames of the derivative graph, revealed in order; without CSS animation "
             "this is the final graph. */"]
    used_f = sorted({a for a in rec.appear.values() if 0 < a <= last})
    for f in used_f:
        rules.append(f"@keyframes {prefix}f{f} {{ 0% {{ opacity: 0 }} {pct(f)} {{ opacity: 1 }} "
                     f"100% {{ opacity: 1 }} }}")
        rules.append(f".{prefix}f{f} {{ animation: {prefix}f{f} {cycle:.3f}s step-end infinite; }}")
    plain = "stroke: #000000; stroke-width: 1px"
    for f in sorted(set(new_at.values())):
        rules.append(f"@keyframes {prefix}h{f} {{ 0% {{ {plain} }} {pct(f)} {{ stroke: {NEW}; stroke-width: 3px }} "
                     f"{pct(f + 1) if f < last else '100%'} {{ {plain} }} 100% {{ {plain} }} }}")
        rules.append(f".{prefix}h{f} ellipse, .{prefix}h{f} polygon {{ animation: {prefix}h{f} {cycle:.3f}s "
                     "step-end infinite; }")
    style = "<style>\n" + "\n".join(rules) + "\n</style>\n"
    cut = svg.index(">", svg.index("<svg")) + 1
    return svg[:cut] + "\n" + style + svg[cut:]


def _layout(rec: Recording, options: dict[str, Any]) -> tuple[dict[str, dict], dict[str, dict]]:
    """Node and edge geometry of the final graph from one ``dot -Tjson0`` run, keyed by DOT id."""
    layout = json.loads(run_graphviz(_final_dot(rec, options), "json0"))
    nodes = {o["name"]: o for o in layout.get("objects", []) if "pos" in o}
    edges = {e["id"]: e for e in layout.get("edges", []) if "id" in e}
    return nodes, edges


def frame_sources(rec: Recording, options: dict[str, Any] | None = None) -> list[str]:
    """One DOT graph per frame, every node pinned where the final layout put it (for ``neato -n2``).

    Nodes and edges that do not exist yet are drawn invisible rather than left out, so every
    frame has the same bounding box and canvas.
    """
    options = dict(options or {})
    nodes, edges = _layout(rec, options)
    sources = []
    for f, frame in enumerate(rec.frames):
        node_attrs: dict[int, dict[str, str]] = {}
        for i in rec.indices:
            geo = nodes[f"n{i}"]
            attrs = {"pos": geo["pos"] + "!", "width": geo["width"], "height": geo["height"]}
            if rec.appear[i] > f:
                attrs["style"] = "invis"
            elif i in frame.new:
                attrs.update(color=NEW, penwidth="3")
            node_attrs[i] = attrs
        edge_attrs: dict[tuple[int, int], dict[str, str]] = {}
        for i, k in _edges(rec):
            attrs = {"pos": edges[f"e{i}_{k}"]["pos"]}
            if rec.appear[i] > f:
                attrs["style"] = "invis"
            elif i in frame.new:
                attrs.update(color=NEW, penwidth="2")
            edge_attrs[(i, k)] = attrs
        source = _final_dot(rec, options, node_attrs=node_attrs, edge_attrs=edge_attrs,
                            graph_attrs={"splines": "true"})
        sources.append(source.replace("digraph subgraph_ad {", f"digraph frame{f} {{", 1))
    return sources


def split_png_stream(data: bytes) -> list[bytes]:
    """Split concatenated PNG files (what Graphviz writes for several graphs) at their IEND chunks."""
    signature = b"\x89PNG\r\n\x1a\n"
    images, pos = [], 0
    while pos < len(data):
        if data[pos:pos + 8] != signature:
            raise ValueError(f"expected a PNG signature at byte {pos} of Graphviz's output")
        end = pos + 8
        while True:
            (length,) = struct.unpack(">I", data[end:end + 4])
            kind = data[end + 4:end + 8]
            end += 12 + length
            if kind == b"IEND":
                break
        images.append(data[pos:end])
        pos = end
    return images


_PLAIN = str.maketrans({"×": "*", "−": "-", "…": "...", "·": "|"})


def _gif(rec: Recording, options: dict[str, Any], interval: float, path: str, progress: Progress) -> None:
    from io import BytesIO

    from PIL import Image, ImageDraw, ImageFont

    progress(f"laying out {len(rec.indices)} nodes once")
    sources = frame_sources(rec, options)
    progress(f"drawing {len(sources)} frames")
    pngs = split_png_stream(run_graphviz("".join(sources), "png", program="neato", args=["-n2"]))
    try:
        font: Any = ImageFont.load_default(size=14)
    except TypeError:  # Pillow < 10.1 has only the small bitmap font
        font = ImageFont.load_default()
    strip = 28
    names = [w.name or "?" for w in rec.wrts]
    images = []
    for frame, png in zip(rec.frames, pngs):
        picture = Image.open(BytesIO(png)).convert("RGB")
        canvas = Image.new("RGB", (picture.width, picture.height + strip), "white")
        canvas.paste(picture, (0, strip))
        caption = frame.caption.replace(notation(names[:frame.pass_no]), notation(names[:frame.pass_no], True))
        ImageDraw.Draw(canvas).text((6, 6), caption.translate(_PLAIN), fill="black", font=font)
        images.append(canvas)
    # One palette for every frame, taken from the last (it shows every colour): quick and small.
    palette = images[-1].quantize(colors=128, method=Image.Quantize.FASTOCTREE)
    images = [im.quantize(palette=palette, dither=Image.Dither.NONE) for im in images]
    durations = [round(interval * 1000)] * (len(images) - 1) + [round(HOLD * 1000)]
    progress(f"writing {path}")
    images[0].save(path, format="GIF", save_all=True, append_images=images[1:], duration=durations, loop=0)


def animate(
    term: Term,
    wrt: Term | Sequence[Term],
    order: int | None,
    path: str | os.PathLike | Sequence[str | os.PathLike],
    *,
    per: str = "node",
    interval: float | None = None,
    title: str | None = None,
    rankdir: str = "TB",
    precision: int | None = None,
    max_nodes: int | None = MAX_NODES,
    max_frames: int | None = MAX_GIF_FRAMES,
    include_unused: bool = False,
    progress: Progress | None = None,
    method: str = "graph",
) -> Animation | list[Animation]:
    """Differentiate ``term`` ``order`` times by ``wrt`` and write an animation of the graph growing.

    ``wrt`` may also be a list of vars, one per pass (mixed derivatives; ``order`` then is None).
    The format comes from the suffix of ``path``: ``.html``, ``.svg`` or ``.gif``; a list of paths
    writes one recording in several formats (and returns a list). One frame per
    appended node, or per pass with ``per="pass"``. ``interval`` is seconds per frame. For GIFs,
    more than ``max_frames`` frames is an error (None lifts the cap). ``include_unused`` also draws
    appended nodes that folding left unused. ``method`` is ``"graph"`` (one gen_graph pass per
    order: what the derivative-subgraph picture explains), ``"taylor"`` or ``"auto"`` (as in
    ``diff``: a Taylor-mode run shows one order per pass). The derivative nodes stay on
    the tape, as with ``diff``; if anything fails, the tape is left as it was.
    """
    if not isinstance(term, Term):
        raise TypeError(f"animate() draws a Term, got {type(term).__name__} {term!r}")
    single = isinstance(path, (str, os.PathLike))
    paths = [path] if single else list(path)  # type: ignore[list-item, arg-type]
    if not paths:
        raise ValueError("animate() needs a path to write (.html, .svg or .gif), got an empty list")
    fmts = [Path(p).suffix.lower().lstrip(".") for p in paths]
    for p, fmt in zip(paths, fmts):
        if fmt not in FORMATS:
            raise ValueError(f"cannot tell the animation format of {str(p)!r}: use .html, .svg or .gif")
    if per not in PER:
        raise ValueError(f"per must be 'node' or 'pass', got {per!r}")
    if method not in METHODS:
        raise ValueError(f"method must be 'graph', 'taylor' or 'auto', got {method!r}")
    if interval is not None and not interval > 0:
        raise ValueError(f"interval must be a positive number of seconds, got {interval!r}")
    wrts = _wrt_list(term.tape, wrt, order)
    for p in paths:
        parent = Path(p).resolve().parent
        if not parent.is_dir():
            raise FileNotFoundError(f"cannot write {str(p)!r}: directory {str(parent)!r} does not exist")
    find_program("dot")
    if "gif" in fmts:
        find_program("neato")
        if importlib.util.find_spec("PIL") is None:
            raise ImportError("GIF animations need Pillow: pip install 'subgraph_ad[gif]' "
                              "(or write .html or .svg, which do not)")
    say = progress or (lambda message: None)
    seconds = interval if interval is not None else INTERVALS[per]
    options: dict[str, Any] = {"rankdir": rankdir, "precision": precision, "max_nodes": max_nodes}
    with term.tape.transaction():
        say(f"recording {len(wrts)} derivative{'s' if len(wrts) > 1 else ''} ({method})")
        rec = record(term, wrts, per, include_unused, method)
        if max_nodes is not None and len(rec.indices) > max_nodes:
            raise GraphTooLarge(
                f"the animated graph has {len(rec.indices)} nodes, more than max_nodes={max_nodes}; Graphviz "
                "layout time grows steeply with size, so pass max_nodes=None (or a larger number) to draw it anyway"
            )
        if "gif" in fmts and max_frames is not None and len(rec.frames) > max_frames:
            raise GraphTooLarge(
                f"the GIF would have {len(rec.frames)} frames, more than max_frames={max_frames}; use "
                "per='pass' (one frame per derivative order), write .html or .svg instead, or pass "
                f"max_frames={len(rec.frames)}"
            )
        name = title or f"{notation([w.name or '?' for w in wrts])} of {len(rec.indices)} nodes"
        for p, fmt in zip(paths, fmts):
            if fmt == "html":
                say(f"laying out {len(rec.indices)} nodes once")
                Path(p).write_text(_html(rec, options, seconds, name), encoding="utf-8")
            elif fmt == "svg":
                say(f"laying out {len(rec.indices)} nodes once")
                Path(p).write_text(_animated_svg(rec, options, seconds), encoding="utf-8")
            else:
                _gif(rec, options, seconds, str(p), say)
    movies = [Animation(str(p), fmt, rec.derivatives, len(rec.frames), len(rec.indices), rec.new_nodes, rec.added)
              for p, fmt in zip(paths, fmts)]
    return movies[0] if single else movies


_PLAYER = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>
body {{ font-family: Helvetica, Arial, sans-serif; margin: 1.5em; color: #222; }}
h1 {{ font-size: 1.1em; font-weight: normal; margin: 0 0 .6em; }}
#sad-controls {{ display: flex; gap: .5em; align-items: center; flex-wrap: wrap; }}
#sad-controls input[type=range] {{ flex: 1; min-width: 12em; }}
#sad-caption {{ margin: .6em 0; min-height: 1.4em; font-size: .95em; }}
#sad-graph svg {{ max-width: 100%; height: auto; }}
.sad-hidden {{ visibility: hidden; }}
.sad-new ellipse, .sad-new polygon, .sad-new path {{ stroke: {new}; stroke-width: 3px; }}
.hint {{ color: #777; font-size: .85em; }}
</style>
</head>
<body>
<h1>{title}</h1>
<div id="sad-controls">
<button id="sad-prev" title="previous frame (left arrow)">&#9664;</button>
<button id="sad-play" title="play or pause (space)">Play</button>
<button id="sad-next" title="next frame (right arrow)">&#9654;</button>
<input id="sad-slider" type="range" min="0" max="{last}" value="0" aria-label="frame">
<span id="sad-count"></span>
</div>
<div id="sad-caption" aria-live="polite"></div>
<div id="sad-graph">
{svg}</div>
<p class="hint">Keys: &#8592; &#8594; step, space plays or pauses, Home and End jump. Node positions never move.</p>
<script>
(function () {{
  "use strict";
  var data = {data};
  var byId = function (id) {{ return document.getElementById(data.prefix + id); }};
  var appear = Object.keys(data.appear).map(function (id) {{ return [byId(id), data.appear[id]]; }});
  var last = data.frames.length - 1, frame = 0, timer = null, lit = [];
  var slider = document.getElementById("sad-slider"), play = document.getElementById("sad-play");
  var caption = document.getElementById("sad-caption"), count = document.getElementById("sad-count");
  function show(f) {{
    frame = Math.max(0, Math.min(last, f));
    appear.forEach(function (pair) {{ if (pair[0]) pair[0].classList.toggle("sad-hidden", pair[1] > frame); }});
    lit.forEach(function (el) {{ el.classList.remove("sad-new"); }});
    lit = data.frames[frame].new.map(byId).filter(Boolean);
    lit.forEach(function (el) {{ el.classList.add("sad-new"); }});
    slider.value = frame;
    caption.textContent = data.frames[frame].caption;
    count.textContent = "frame " + frame + " of " + last;
  }}
  function stop() {{ if (timer !== null) clearInterval(timer); timer = null; play.textContent = "Play"; }}
  function start() {{
    if (frame >= last) show(0);
    play.textContent = "Pause";
    timer = setInterval(function () {{ if (frame >= last) stop(); else show(frame + 1); }}, data.interval);
  }}
  play.addEventListener("click", function () {{ if (timer === null) start(); else stop(); }});
  document.getElementById("sad-prev").addEventListener("click", function () {{ stop(); show(frame - 1); }});
  document.getElementById("sad-next").addEventListener("click", function () {{ stop(); show(frame + 1); }});
  slider.addEventListener("input", function () {{ stop(); show(parseInt(slider.value, 10)); }});
  document.addEventListener("keydown", function (e) {{
    if (e.target === slider && (e.key === "ArrowLeft" || e.key === "ArrowRight")) return;
    if (e.target.tagName === "BUTTON" && (e.key === " " || e.key === "Enter")) return;
    var keys = {{ArrowRight: frame + 1, ArrowLeft: frame - 1, Home: 0, End: last}};
    if (e.key in keys) {{ stop(); show(keys[e.key]); e.preventDefault(); }}
    else if (e.key === " ") {{ if (timer === null) start(); else stop(); e.preventDefault(); }}
  }});
  show(0);
}})();
</script>
</body>
</html>
"""
