"""Animations of a derivative subgraph being built, on a layout that never moves.

``animate`` runs the gen_graph passes (or Taylor mode) itself and records which nodes each pass
appends (``record.py``). The *final* graph is laid out once by Graphviz; every frame is drawn
from that one layout by hiding the nodes that do not exist yet and highlighting the new one. So
a node sits at the same place from the frame it appears in to the last frame.

- ``.html``: one self-contained page (the final SVG, a slider, play/pause, arrow keys, a caption
  naming the derivative order and the new node); it needs no network access. The page around
  the SVG is the package file ``player.html``.
- ``.svg``: the final SVG with CSS keyframes that reveal the nodes in order; a viewer without
  CSS animation shows the final graph.
- ``.gif``: frames drawn at the final layout's positions and assembled with Pillow (``gif.py``).
"""

from __future__ import annotations

import html
import importlib.util
import json
import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from string import Template
from typing import Any, Callable, Sequence

from ..core import Tape, Term
from .dot import MAX_NODES
from .gif import MAX_GIF_FRAMES, write_gif
from .record import HOLD, NEW, PER, Frame, Recording, notation, record
from .render import GraphTooLarge, find_program, svg_text

FORMATS = ("html", "svg", "gif")
METHODS = ("graph", "taylor", "auto")
#: Seconds a frame is shown, by default, per node and per pass (the SVG and GIF then hold the last for HOLD).
INTERVALS = {"node": 0.5, "pass": 1.5}
#: Prefix of the element ids of an animation's SVG, so a page can hold it next to other graphs.
PREFIX = "sad_"

Progress = Callable[[str], None]


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


# -- the HTML player and the animated SVG: both show the one final SVG ------------------------------
def _final_svg(rec: Recording, options: dict[str, Any], **hooks: Any) -> str:
    return svg_text(rec.drawn, outputs=rec.outputs, id_prefix=PREFIX, **options, **hooks)


def _new_edges(rec: Recording, frame: Frame) -> list[str]:
    return [f"e{i}_{k}" for i in frame.new for k in range(len(rec.tape.nodes[i].args))]


def _html(rec: Recording, options: dict[str, Any], interval: float, title: str) -> str:
    svg = _final_svg(rec, options)
    appear = {f"n{i}": a for i, a in rec.appear.items() if a > 0}
    appear.update({f"e{i}_{k}": rec.appear[i] for i, k in rec.edges if rec.appear[i] > 0})
    data = {
        "prefix": PREFIX,
        "interval": round(interval * 1000),
        "appear": appear,
        "frames": [{"caption": f.caption, "new": [f"n{i}" for i in f.new] + _new_edges(rec, f)}
                   for f in rec.frames],
    }
    payload = json.dumps(data, ensure_ascii=True, separators=(",", ":")).replace("</", "<\\/")
    # ${name} placeholders (string.Template), so the page's CSS and JS braces stay as written
    page = Template(resources.files(__package__).joinpath("player.html").read_text(encoding="utf-8"))
    return page.substitute(title=html.escape(title), svg=svg, data=payload, new=NEW, last=len(rec.frames) - 1)


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
    edge_attrs = {(i, k): {"class": f"{prefix}f{rec.appear[i]}"} for i, k in rec.edges if rec.appear[i] > 0}
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
                write_gif(rec, options, seconds, str(p), say)
    movies = [Animation(str(p), fmt, rec.derivatives, len(rec.frames), len(rec.indices), rec.new_nodes, rec.added)
              for p, fmt in zip(paths, fmts)]
    return movies[0] if single else movies
