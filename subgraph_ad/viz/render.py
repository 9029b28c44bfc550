"""Running Graphviz: rendered files (svg, png, pdf, dot), inline SVG and what Jupyter shows.

Layout is done by the Graphviz ``dot`` program, called with ``subprocess``: that keeps the
error for a missing program ours (``GraphvizNotFound``, which says how to install it) and lets
the animations run ``neato`` on the same source. The DOT text comes from ``dot.py``, which
needs no Graphviz at all.
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any, Sequence

from .dot import Drawable, GraphTooLarge, to_dot

FORMATS = ("svg", "png", "pdf", "dot")

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
    """Path of a Graphviz program, or GraphvizNotFound saying how to install it."""
    found = shutil.which(program)
    if found is None:
        raise GraphvizNotFound(f"the Graphviz program {program!r} was not found on PATH; {INSTALL_HINT}")
    return found


def run_graphviz(source: str, fmt: str, program: str = "dot", args: Sequence[str] = ()) -> bytes:
    """Lay out and draw DOT ``source`` in format ``fmt`` with ``program``; returns the output bytes."""
    exe = find_program(program)
    try:
        done = subprocess.run([exe, f"-T{fmt}", *args], input=source.encode("utf-8"), capture_output=True)
    except FileNotFoundError:  # removed between which() and run()
        raise GraphvizNotFound(f"the Graphviz program {program!r} could not be run; {INSTALL_HINT}") from None
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise GraphvizError(f"{program} -T{fmt} failed with exit code {done.returncode}: "
                            f"{message[0] if message else 'no message'}")
    return done.stdout


_ID = re.compile(r'\b(id="|href="#|url\(#)([^"\)]*)')


def prefix_ids(svg: str, prefix: str) -> str:
    """Give every id (and every reference to one) in ``svg`` the ``prefix``, so graphs can share a page.

    >>> prefix_ids('<g id="a_n1"><use xlink:href="#n2"/></g>', "p_")
    '<g id="p_a_n1"><use xlink:href="#p_n2"/></g>'
    """
    return _ID.sub(lambda m: m.group(1) + (m.group(2) if m.group(2).startswith(prefix) else prefix + m.group(2)), svg)


def svg_element(raw: bytes | str) -> str:
    """Only the ``<svg>...</svg>`` element of Graphviz's output, for inlining into HTML or Jupyter."""
    text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    start = text.find("<svg")
    return text[start:].strip() + "\n" if start >= 0 else text


def svg_text(obj: Drawable, **options: Any) -> str:
    """The drawing as an SVG string (the ``<svg>`` element only); ids start with ``id_prefix``."""
    prefix = options.get("id_prefix", "")
    svg = svg_element(run_graphviz(to_dot(obj, **options), "svg"))
    return prefix_ids(svg, prefix) if prefix else svg


def output_format(path: str | os.PathLike) -> str:
    """The format named by a path's suffix, or ValueError listing the supported ones."""
    fmt = Path(path).suffix.lower().lstrip(".")
    if fmt == "gv":
        fmt = "dot"
    if fmt not in FORMATS:
        raise ValueError(f"cannot tell the format of {str(path)!r} from its suffix: use .svg, .png, .pdf or .dot")
    return fmt


def render(obj: Drawable, path: str | os.PathLike, **options: Any) -> str:
    """Write the graph to ``path`` in the format its suffix names (svg, png, pdf, dot); returns the path.

    Takes the options of ``to_dot``. ``.dot`` needs no Graphviz; the other formats run ``dot``
    and raise GraphvizNotFound when it is missing.
    """
    fmt = output_format(path)
    source = to_dot(obj, **options)
    data = source.encode("utf-8") if fmt == "dot" else run_graphviz(source, fmt)
    Path(path).write_bytes(data)
    return str(path)


_display_ids = itertools.count(1)


def repr_mimebundle(obj: Drawable) -> dict[str, str]:
    """What Jupyter shows: the SVG with ids unique to this display, or a note saying why there is none."""
    prefix = f"sad{next(_display_ids)}_"
    try:
        return {"image/svg+xml": svg_text(obj, id_prefix=prefix)}
    except (GraphvizError, GraphTooLarge) as exc:
        return {"text/plain": f"{obj!r}\n(no drawing: {exc})"}
