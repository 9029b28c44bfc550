"""Animations of a derivative subgraph being built, on a layout that never moves.

``animate`` runs the gen_graph passes (or Taylor mode) itself, on a copy of the term's nodes
(``record.carry``), and records which nodes each pass appends (``record.py``): so the whole
build is shown even when the derivatives were computed already, and the caller's tape is left
exactly as it was. The *final* graph is laid out once by Graphviz; every frame is drawn
from that one layout by hiding the nodes that do not exist yet and highlighting the new one. So
a node sits at the same place from the frame it appears in to the last frame. Outputs carry
their names (f, df/dx, …) and the nodes of each derivative order share a box.

- no path: an ``Animation`` that Jupyter shows as the player below, inline.
- ``.html``: one self-contained page (the final SVG, a slider, play/pause, arrow keys, zoom and
  pan, a caption naming the derivative order and the new node); it needs no network access.
  The player is the package file ``player.html`` (``player.py``).
- ``.svg``: the final SVG with CSS keyframes that reveal the nodes in order, and each frame's
  caption above the graph; a viewer without CSS animation shows the final graph.
- ``.gif``: frames drawn at the final layout's positions and assembled with Pillow (``gif.py``).
"""

from __future__ import annotations

import hashlib
import html
import importlib.util
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from ..ad.diff import METHODS
from ..core import Term
from ..core.checks import choice, diff_spec
from .dot import MAX_NODES, check_size
from .gif import MAX_GIF_FRAMES, check_frames, write_gif
from .player import Player, new_uid
from .record import HOLD, NEW, PER, Recording, carry, notation, record
from .render import find_program, svg_text

FORMATS = ("html", "svg", "gif")

#: Seconds a frame is shown, by default, per node and per pass (the SVG and GIF then hold the last for HOLD).
INTERVALS = {"node": 0.5, "pass": 1.5}
#: Height, in points, of the caption line above an animated SVG, and its font size.
CAPTION_STRIP, CAPTION_FONT = 22.0, 12.0

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Animation:
    """What ``animate`` made: the file written (None: none, the animation is for display), its
    format, the derivative Terms (one per pass) and counts. The derivatives live on the
    animation's own copy of the tape, with ``term`` and ``wrts`` (f and the vars there), so
    they draw and compare together. Jupyter shows ``player`` inline."""

    path: str | None
    format: str
    derivatives: tuple[Term, ...]
    frames: int
    nodes: int
    new_nodes: int
    added: tuple[int, ...]  # how much each pass (each order) grew the tape
    term: Term = field(repr=False)
    wrts: tuple[Term, ...] = field(repr=False)
    player: Player | None = field(default=None, repr=False, compare=False)

    @property
    def result(self) -> Term:
        """The last derivative, e.g. d³f/dx³ for ``order=3``."""
        return self.derivatives[-1]

    def _repr_html_(self) -> str | None:
        """The player, with ids of its own each time, so any number can share a notebook page."""
        return None if self.player is None else self.player.fragment(new_uid())


def _path_like(value: Any) -> bool:
    return isinstance(value, (str, os.PathLike))


def _split_args(args: tuple[Any, ...]) -> tuple[tuple[Any, ...], Any]:
    """``diff``-style args, then optionally where to write: ``(x, 4, "d4.html")``."""
    last = args[-1] if args else None
    if _path_like(last) or (isinstance(last, (list, tuple)) and all(_path_like(p) for p in last)):
        return args[:-1], last
    return args, None


# -- the HTML player and the animated SVG: both show the one final SVG ------------------------------
def _draw_options(rec: Recording, options: dict[str, Any]) -> dict[str, Any]:
    """The ``dot_source`` options of the final graph: f and each derivative drawn named."""
    return {"outputs": rec.outputs, "labels": rec.labels, **options}


def _first_frames(rec: Recording) -> dict[int, int]:
    """The frame in which each derivative order's box first has a node to show."""
    first: dict[int, int] = {}
    for i in rec.indices:
        order = rec.tape.orders[i]
        first[order] = min(first.get(order, rec.appear[i]), rec.appear[i])
    return first


def _player(rec: Recording, options: dict[str, Any], interval: float, title: str) -> Player:
    svg = svg_text(rec.drawn, max_nodes=None, **_draw_options(rec, options))
    present = set(re.findall(r'\bid="([^"]+)"', svg))  # constants written into their users have none
    appear = {f"n{i}": a for i, a in rec.appear.items() if a > 0}
    appear.update({f"e{i}_{k}": rec.appear[i] for i, k in rec.edges if rec.appear[i] > 0})
    appear.update({f"o{order}": f for order, f in _first_frames(rec).items() if f > 0})
    frames = []
    for frame in rec.frames:
        new = [f"n{i}" for i in frame.new] + [f"e{i}_{k}" for i in frame.new for k in range(len(rec.tape.nodes[i].args))]
        frames.append({"caption": frame.caption, "new": [key for key in new if key in present]})
    data = {"interval": round(interval * 1000), "appear": {k: a for k, a in appear.items() if k in present},
            "frames": frames}
    return Player(svg, title, data)


def _prefix(rec: Recording) -> str:
    """Ids and class names of an animated SVG, from its content: two on one page never clash, and
    the same animation gives the same bytes."""
    digest = hashlib.sha1(repr((rec.indices, [f.caption for f in rec.frames])).encode("utf-8")).hexdigest()
    return f"sad{digest[:8]}_"


_SIZE = re.compile(r'<svg width="([0-9.]+)pt" height="([0-9.]+)pt"\s+viewBox="([-0-9.]+) ([-0-9.]+) ([0-9.]+) ([0-9.]+)"')


def _with_captions(svg: str, rec: Recording, prefix: str, style: list[str], pct: Callable[[int], str],
                   cycle: float) -> str:
    """The SVG grown by a strip on top holding every frame's caption, each shown during its frame.

    Without CSS animation only the last caption shows, as the final graph does.
    """
    size = _SIZE.search(svg)
    if size is None:
        raise ValueError("expected Graphviz's <svg width=...pt height=...pt viewBox=...> header, found none")
    width, height = float(size.group(1)), float(size.group(2))
    x0, y0, box_w, box_h = (float(size.group(k)) for k in range(3, 7))
    widest = max(len(f.caption) for f in rec.frames) * CAPTION_FONT * 0.55 + 8  # Helvetica averages ~0.55 em
    new_w, new_h = max(box_w, widest), box_h + CAPTION_STRIP
    header = (f'<svg width="{width * new_w / box_w:.0f}pt" height="{height * new_h / box_h:.0f}pt"\n'
              f' viewBox="{x0:.2f} {y0 - CAPTION_STRIP:.2f} {new_w:.2f} {new_h:.2f}"')
    last = len(rec.frames) - 1
    texts = []
    for f, frame in enumerate(rec.frames):
        start = "" if f == 0 else f" {pct(f)} {{ opacity: 1 }}"
        end = "" if f == last else f" {pct(f + 1)} {{ opacity: 0 }}"
        style.append(f"@keyframes {prefix}c{f} {{ 0% {{ opacity: {1 if f == 0 else 0} }}{start}{end} "
                     f"100% {{ opacity: {1 if f == last else 0} }} }}")
        style.append(f".{prefix}c{f} {{ animation: {prefix}c{f} {cycle:.3f}s step-end infinite; }}")
        hidden = "" if f == last else ' opacity="0"'
        texts.append(f'<text class="{prefix}c{f}" x="{x0 + 4:.2f}" y="{y0 - 7:.2f}"{hidden}>'
                     f"{html.escape(frame.caption)}</text>")
    captions = (f'<g id="{prefix}captions" font-family="Helvetica,Arial,sans-serif" font-size="{CAPTION_FONT:.0f}" '
                'fill="#222222">\n' + "\n".join(texts) + "\n</g>\n")
    cut = svg.index(">", size.end()) + 1
    styled = "<style>\n" + "\n".join(style) + "\n</style>\n"
    return header + svg[size.end():cut] + "\n" + styled + captions + svg[cut:]


def _animated_svg(rec: Recording, options: dict[str, Any], interval: float) -> str:
    prefix = _prefix(rec)
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
    group_attrs = {order: {"class": f"{prefix}f{f}"} for order, f in _first_frames(rec).items() if f > 0}
    svg = svg_text(rec.drawn, max_nodes=None, id_prefix=prefix, node_attrs=node_attrs, edge_attrs=edge_attrs,
                   group_attrs=group_attrs, **_draw_options(rec, options))

    last = len(rec.frames) - 1
    cycle = last * interval + HOLD

    def pct(f: int) -> str:
        return f"{100.0 * f * interval / cycle:.4f}%"

    rules = ["/* Frames of the derivative graph, revealed in order, each with its caption; without CSS "
             "animation this is the final graph. */"]
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
    return _with_captions(svg, rec, prefix, rules, pct, cycle)


def animate(
    term: Term,
    *args: Any,
    path: str | os.PathLike | Sequence[str | os.PathLike] | None = None,
    per: str = "node",
    interval: float | None = None,
    title: str | None = None,
    rankdir: str = "TB",
    precision: int | None = None,
    compact: bool | None = None,
    group_by_order: bool | None = None,
    max_nodes: int | None = MAX_NODES,
    max_frames: int | None = MAX_GIF_FRAMES,
    include_unused: bool = False,
    progress: Progress | None = None,
    method: str = "auto",
) -> Animation | list[Animation]:
    """Differentiate ``term`` as ``diff(term, *args)`` does (``animate(f, x, 4)``,
    ``animate(f, x, 2, y)``) and animate the graph growing.

    Without ``path``, nothing is written: the Animation shows as a player in Jupyter. With one
    (the keyword, or a last positional argument: ``animate(f, x, 4, "d4.html")``), the format
    comes from its suffix: ``.html``, ``.svg`` or ``.gif``; a list of paths writes one recording
    in several formats (and returns a list). One frame per appended node, or
    per pass with ``per="pass"``. ``interval`` is seconds per frame. ``rankdir``, ``precision``,
    ``compact`` and ``group_by_order`` are the drawing options of ``to_dot``. More than
    ``max_nodes`` nodes, or for GIFs more than ``max_frames`` frames, is GraphTooLarge (None
    lifts either cap). ``include_unused`` also draws appended nodes that folding left unused.
    ``method`` is ``"auto"`` (as in ``diff``), ``"graph"`` (one gen_graph pass per order: what
    the derivative-subgraph picture explains) or ``"taylor"`` (a Taylor-mode run shows one order
    per pass). The passes run on a copy of ``term``'s nodes, so the build is shown in full even
    after ``f.diff(x, n)``, and ``term``'s tape is left exactly as it was; the derivatives
    returned live on that copy.
    """
    if not isinstance(term, Term):
        raise TypeError(f"animate() draws a Term, got {type(term).__name__} {term!r}")
    args, trailing = _split_args(args)
    if trailing is not None:
        if path is not None:
            raise TypeError(f"animate() got two paths: {trailing!r} and path={path!r}")
        path = trailing
    wrts = diff_spec(args, "animate")
    if not wrts:
        raise ValueError(f"animate(): the derivative order must be at least 1, got {args!r}")
    for w in wrts:
        term.tape.check_var(w, "wrt")
    single = path is None or isinstance(path, (str, os.PathLike))
    paths: list[Any] = [path] if single else list(path)  # type: ignore[arg-type]
    if not paths:
        raise ValueError("animate() needs a path to write (.html, .svg or .gif), got an empty list")
    fmts = ["html" if p is None else Path(p).suffix.lower().lstrip(".") for p in paths]
    for p, fmt in zip(paths, fmts):
        if fmt not in FORMATS:
            raise ValueError(f"cannot tell the animation format of {str(p)!r}: use .html, .svg or .gif")
    if per not in PER:
        raise ValueError(f"per must be 'node' or 'pass', got {per!r}")
    choice(method, "method", METHODS, "animate")
    if interval is not None and not interval > 0:
        raise ValueError(f"interval must be a positive number of seconds, got {interval!r}")
    for p in paths:
        parent = Path(p).resolve().parent if p is not None else None
        if parent is not None and not parent.is_dir():
            raise FileNotFoundError(f"cannot write {str(p)!r}: directory {str(parent)!r} does not exist")
    find_program("dot")
    if "gif" in fmts:
        if importlib.util.find_spec("PIL") is None:
            raise ImportError("GIF animations need Pillow: pip install pillow "
                              "(or write .html or .svg, which do not)")
    say = progress or (lambda message: None)
    seconds = interval if interval is not None else INTERVALS[per]
    options: dict[str, Any] = {"rankdir": rankdir, "precision": precision, "compact": compact,
                               "group_by_order": group_by_order}
    player = None
    say(f"recording {len(wrts)} derivative{'s' if len(wrts) > 1 else ''} ({method})")
    copy, copied = carry(term, wrts)  # the caller's tape is only read
    rec = record(copy, copied, per, include_unused, method)
    check_size(len(rec.indices), max_nodes, "the animated graph")
    if "gif" in fmts:
        check_frames(len(rec.frames), max_frames)
    name = title or f"{notation([w.name or '?' for w in wrts])} of {len(rec.indices)} nodes"
    for p, fmt in zip(paths, fmts):
        if fmt == "html":
            if player is None:
                say(f"laying out {len(rec.indices)} nodes once")
                player = _player(rec, options, seconds, name)
            if p is not None:
                Path(p).write_text(player.page(), encoding="utf-8")
        elif fmt == "svg":
            say(f"laying out {len(rec.indices)} nodes once")
            Path(p).write_text(_animated_svg(rec, options, seconds), encoding="utf-8")
        else:
            write_gif(rec, options, seconds, str(p), say, max_frames)
    movies = [Animation(None if p is None else str(p), fmt, rec.derivatives, len(rec.frames), len(rec.indices),
                        rec.new_nodes, rec.added, rec.term, rec.wrts, player) for p, fmt in zip(paths, fmts)]
    return movies[0] if single else movies
