"""The HTML viewer around one SVG: zoom and pan for any graph, and frame controls for an animation.

The markup, style and script are the package file ``player.html``, a fragment that works both
as the body of a standalone page and inlined in a notebook next to other players: every element
id and every id inside the SVG carries the player's own prefix, the style is scoped to the
player's class, and keys act on the focused player only.

A sanitizer (an untrusted notebook, every notebook reopened from disk) strips the script, the
style and the inline SVG, but keeps the text inside the SVG. So the markup holds the final graph
as an ``<img>`` with a ``data:`` URI (``still_image``), which sanitizers keep, and a line saying
how to get the player; the live SVG and the controls start ``hidden="hidden"`` (with a value:
JupyterLab's sanitizer drops empty attributes). The script removes the image and the line and
shows the rest, so a trusted view shows the player alone.

>>> viewer = Player(svg='<svg width="10pt" height="5pt"><g id="n1"/></svg>')
>>> one, two = viewer.fragment("sad1"), viewer.fragment("sad2")
>>> 'id="sad1"' in one and 'id="sad1_n1"' in one and 'id="sad2_n1"' in two and "sad1" not in two
True
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
import secrets
from dataclasses import dataclass, field
from importlib import resources
from string import Template
from typing import Any

from .record import NEW

_ID = re.compile(r'\b(id="|href="#|url\(#)([^"\)]*)')


def prefix_ids(svg: str, prefix: str) -> str:
    """Give every id (and every reference to one) in ``svg`` the ``prefix``, so graphs can share a page.

    >>> prefix_ids('<g id="a_n1"><use xlink:href="#n2"/></g>', "p_")
    '<g id="p_a_n1"><use xlink:href="#p_n2"/></g>'
    """
    return _ID.sub(lambda m: m.group(1) + (m.group(2) if m.group(2).startswith(prefix) else prefix + m.group(2)), svg)


def still_image(svg: str) -> str:
    """The SVG as a ``data:`` URI for an ``<img>``: what a sanitized view keeps of a drawing.

    >>> still_image("<svg/>")
    'data:image/svg+xml;base64,PHN2Zy8+'
    """
    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode("utf-8")).decode("ascii")


def new_uid() -> str:
    """A fresh id for one display: random, so outputs of earlier kernel sessions never clash."""
    return "sad" + secrets.token_hex(5)


@dataclass(frozen=True)
class Player:
    """An SVG (its ids without prefix) and, for an animation, the frames that reveal it.

    ``data`` holds ``interval`` (ms per frame), ``appear`` (SVG id -> first frame it shows in)
    and ``frames`` (caption and new SVG ids of each); without frames it is a zoomable picture.
    """

    svg: str
    title: str = ""
    data: dict[str, Any] = field(default_factory=lambda: {"interval": 0, "appear": {}, "frames": []})

    def fragment(self, uid: str) -> str:
        """The player as an HTML fragment whose ids all start with ``uid``."""
        frames = self.data["frames"]
        payload = json.dumps({"prefix": uid + "_", **self.data}, ensure_ascii=True, separators=(",", ":"))
        template = Template(resources.files(__package__).joinpath("player.html").read_text(encoding="utf-8"))
        svg = prefix_ids(self.svg, uid + "_")
        still_note = ("The final frame. Run the cell (or trust the notebook) to step through the frames."
                      if frames else "Run the cell (or trust the notebook) to zoom and pan.")
        return template.substitute(
            uid=uid, title=html.escape(self.title), svg=svg, still=still_image(svg), still_note=still_note,
            data=payload.replace("</", "<\\/"), new=NEW, last=max(len(frames) - 1, 0),
            frames_hidden="" if frames else " hidden",
            hint="Keys: &#8592; &#8594; step, space plays or pauses, Home and End jump. " if frames else "")

    def page(self) -> str:
        """A standalone HTML page; its ids come from its content, so the same input gives the same bytes."""
        uid = "sad" + hashlib.sha1((self.svg + json.dumps(self.data, sort_keys=True)).encode("utf-8")).hexdigest()[:10]
        return (
            '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{html.escape(self.title)}</title>\n"
            "<style>body { margin: 1.5em; }</style>\n</head>\n<body>\n"
            f"{self.fragment(uid)}"
            f'<script>document.getElementById("{uid}").focus();</script>\n</body>\n</html>\n'
        )

    def _repr_html_(self) -> str:
        return self.fragment(new_uid())
