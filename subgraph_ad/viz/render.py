"""Running Graphviz: rendered files (svg, png, pdf, dot), inline SVG and what Jupyter shows.

Layout runs through the ``graphviz`` package (``graphviz.pipe``: the program found on PATH,
its errors, ``neato -n2`` for the GIF frames); its ``ExecutableNotFound`` becomes our
``GraphvizNotFound``, whose message says how to install Graphviz, and ``to_graphviz`` hands a
drawing to that package for anything else it does (``view()``, other engines, ``unflatten``).
The DOT text comes from ``dot.py``, which needs no Graphviz at all. Only layout is capped at
``max_nodes``.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Any

from ..progress import track
from .dot import MAX_NODES, Drawable, GraphTooLarge, check_size, drawn_nodes, to_dot
from .player import Player, new_uid, prefix_ids, still_image

__all__ = ["FORMATS", "GraphTooLarge", "GraphvizError", "GraphvizNotFound", "INSTALL_HINT", "find_program",
           "graph_html", "prefix_ids", "render", "repr_mimebundle", "run_graphviz", "svg_element", "svg_text",
           "to_graphviz"]

FORMATS = ("svg", "png", "pdf", "dot")
#: Layouts of this many nodes or more show a progress line on a terminal while ``dot`` works.
PROGRESS_FROM = 100
#: Jupyter shows an SVG wider or taller than this (in points) in the zoomable viewer.
VIEWER_FROM = (720.0, 900.0)

INSTALL_HINT = (
    "install Graphviz (Debian/Ubuntu: sudo apt-get install graphviz; Fedora: sudo dnf install graphviz; "
    "macOS: brew install graphviz; conda: conda install -c conda-forge graphviz; "
    "Windows: winget install graphviz) and make sure `dot` is on PATH; to_dot() works without it"
)


class GraphvizError(RuntimeError):
    """The Graphviz program failed on our input."""


class GraphvizNotFound(GraphvizError):
    """The Graphviz ``dot`` (or ``neato``) program is not installed or not on PATH."""


def find_program(program: str = "dot") -> str:
    """Path of a Graphviz program, or GraphvizNotFound saying how to install it; lets long work
    (an animation's recording) fail before it starts rather than at the end."""
    found = shutil.which(program)
    if found is None:
        raise GraphvizNotFound(f"the Graphviz program {program!r} was not found on PATH; {INSTALL_HINT}")
    return found


def run_graphviz(source: str, fmt: str, engine: str = "dot", neato_no_op: int | None = None) -> bytes:
    """Lay out and draw DOT ``source`` in format ``fmt`` with ``engine``; returns the output bytes.

    ``neato_no_op=2`` is ``neato -n2``: draw at the positions the source gives.
    """
    import graphviz

    try:
        image: bytes = graphviz.pipe(engine, fmt, source.encode("utf-8"), neato_no_op=neato_no_op, quiet=True)
        return image
    except graphviz.ExecutableNotFound:
        raise GraphvizNotFound(f"the Graphviz program {engine!r} was not found on PATH; {INSTALL_HINT}") from None
    except graphviz.CalledProcessError as exc:
        message = (exc.stderr or b"").decode("utf-8", "replace").strip().splitlines()
        raise GraphvizError(f"{engine} -T{fmt} failed with exit code {exc.returncode}: "
                            f"{message[0] if message else 'no message'}") from None


def layout(source: str, fmt: str, nodes: int, engine: str = "dot", neato_no_op: int | None = None) -> bytes:
    """``run_graphviz``, saying on a terminal what it waits for when the graph is big."""
    if nodes < PROGRESS_FROM:
        return run_graphviz(source, fmt, engine, neato_no_op)
    runs = [run_graphviz(source, fmt, engine, neato_no_op)
            for _ in track(range(1), desc=f"Graphviz {engine}: {nodes} nodes", total=1, unit="run")]
    return runs[0]


_NOISE = re.compile(r"<!--.*?-->\n?|<title>[^<]*</title>\n?", re.S)


def svg_element(raw: bytes | str) -> str:
    """Only the ``<svg>...</svg>`` element of Graphviz's output, for inlining into HTML or Jupyter.

    Graphviz's comments and ``<title>`` elements go: they repeat the ids (a tenth of a big
    graph's bytes), and the graph's title would be the tooltip over the whole picture; the
    nodes keep their own tooltips.

    >>> svg_element('<?xml version="1.0"?><svg><!-- n1 --><g id="n1"><title>n1</title><a/></g></svg>')
    '<svg><g id="n1"><a/></g></svg>\\n'
    """
    text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    start = text.find("<svg")
    return _NOISE.sub("", text[start:]).strip() + "\n" if start >= 0 else text


def svg_text(obj: Drawable, *, max_nodes: int | None = MAX_NODES, **options: Any) -> str:
    """The drawing as an SVG string (the ``<svg>`` element only); ids start with ``id_prefix``.

    Takes the options of ``to_dot``; more than ``max_nodes`` nodes is GraphTooLarge.
    """
    count = len(drawn_nodes(obj, options.get("outputs"), options.get("labels")))
    check_size(count, max_nodes)
    prefix = options.get("id_prefix", "")
    svg = svg_element(layout(to_dot(obj, **options), "svg", count))
    return prefix_ids(svg, prefix) if prefix else svg


def to_graphviz(obj: Drawable, **options: Any) -> Any:
    """The drawing as a ``graphviz.Source``, for what that package does (``view()``, ``render``
    with any engine or format, ``unflatten`` for wide graphs); options as for ``to_dot``."""
    import graphviz

    return graphviz.Source(to_dot(obj, **options))


def output_format(path: str | os.PathLike) -> str:
    """The format named by a path's suffix, checked with the folder it goes in before any
    layout runs: ValueError listing the supported suffixes, FileNotFoundError naming a missing
    folder, IsADirectoryError for a folder given as the file."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"render() writes to a path (str or os.PathLike), got {type(path).__name__} {path!r}")
    fmt = Path(path).suffix.lower().lstrip(".")
    if fmt == "gv":
        fmt = "dot"
    if fmt not in FORMATS:
        raise ValueError(f"cannot tell the format of {str(path)!r} from its suffix: use .svg, .png, .pdf or .dot")
    target = Path(path)
    if target.is_dir():
        raise IsADirectoryError(f"cannot write {str(path)!r}: it is a directory; give a file name ending in "
                                ".svg, .png, .pdf or .dot")
    folder = target.resolve().parent
    if not folder.is_dir():
        raise FileNotFoundError(f"cannot write {str(path)!r}: directory {str(folder)!r} does not exist; "
                                "create it first or write to an existing folder")
    return fmt


def render(obj: Drawable, path: str | os.PathLike, *, max_nodes: int | None = MAX_NODES, **options: Any) -> str:
    """Write the graph to ``path`` in the format its suffix names (svg, png, pdf, dot); returns the path.

    Takes the options of ``to_dot``. ``.dot`` needs no Graphviz and has no size cap; the other
    formats run ``dot``, raise GraphvizNotFound when it is missing and GraphTooLarge over
    ``max_nodes`` nodes.
    """
    fmt = output_format(path)
    source = to_dot(obj, **options)
    if fmt == "dot":
        data = source.encode("utf-8")
    else:
        count = len(drawn_nodes(obj, options.get("outputs"), options.get("labels")))
        check_size(count, max_nodes)
        data = layout(source, fmt, count)
    Path(path).write_bytes(data)
    return str(path)


_SIZE = re.compile(r'<svg width="([0-9.]+)pt" height="([0-9.]+)pt"')


def repr_mimebundle(obj: Drawable) -> dict[str, str]:
    """What Jupyter shows: the SVG, or for a big one the zoomable viewer around it; ids unique to
    this display; or a note saying why there is no drawing."""
    uid = new_uid()
    try:
        svg = svg_text(obj)
    except (GraphvizError, GraphTooLarge) as exc:
        return {"text/plain": f"{obj!r}\n(no drawing: {exc})"}
    size = _SIZE.search(svg)
    if size and (float(size.group(1)) > VIEWER_FROM[0] or float(size.group(2)) > VIEWER_FROM[1]):
        return {"text/html": Player(svg).fragment(uid)}
    return {"image/svg+xml": prefix_ids(svg, uid + "_")}


#: A drawing as HTML for a notebook: the live SVG where the output keeps its style, else (a
#: sanitized, untrusted view: no style, no SVG, the SVG's text left loose) the same drawing as an
#: image; no script needed. ``hidden`` has a value because JupyterLab's sanitizer drops empty ones.
_GRAPH_HTML = (
    '<div class="sad-graph">\n'
    '<style>.sad-graph > .sad-live[hidden] {{ display: block; }} .sad-graph > .sad-still {{ display: none; }}</style>\n'
    '<div class="sad-live" hidden="hidden">\n{svg}</div>\n'
    '<img class="sad-still" alt="the graph" src="{still}">\n{below}</div>\n'
)


def graph_html(svg: str, below: str = "") -> str:
    """The drawing as ``text/html``, the type every notebook frontend ranks first (JupyterLab ranks
    ``text/latex`` above ``image/svg+xml``, and shows no SVG output of an untrusted notebook, but
    does show its sanitized HTML); ``below`` is HTML shown under it.

    >>> print(graph_html('<svg width="8pt" height="4pt"></svg>', "<pre>x</pre>"))  # doctest: +ELLIPSIS
    <div class="sad-graph">
    <style>.sad-graph > .sad-live[hidden] { display: block; } .sad-graph > .sad-still { display: none; }</style>
    <div class="sad-live" hidden="hidden">
    <svg width="8pt" height="4pt"></svg></div>
    <img class="sad-still" alt="the graph" src="data:image/svg+xml;base64,...">
    <pre>x</pre></div>
    <BLANKLINE>
    """
    return _GRAPH_HTML.format(svg=svg, still=still_image(svg), below=below)
