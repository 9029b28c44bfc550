"""The GIF animation: every frame drawn at the final layout's positions, assembled with Pillow.

Positions come from one ``dot -Tjson0`` run and are pinned with ``pos="x,y!"`` for
``neato -n2``; nodes that do not exist yet stay in the drawing as invisible, so every frame has
the same canvas. Captions wrap to the frame's width (a strip on top as tall as the longest
needs). Pillow is optional (``pip install pillow``) and imported only when writing.
"""

from __future__ import annotations

import json
import struct
from io import BytesIO
from typing import Any, Callable

from ..progress import track
from .dot import GraphTooLarge, dot_source
from .record import HOLD, NEW, Recording, notation
from .render import layout

#: GIFs hold every frame as an image: past this many frames, use per="pass" or .html instead.
MAX_GIF_FRAMES = 200

# ASCII for the captions' symbols, which Pillow's default fonts may not have.
_PLAIN = str.maketrans({"×": "*", "−": "-", "…": "...", "·": "|"})


#: Pixels between a caption and the frame's edges, and between its lines.
MARGIN, LEADING = 6, 4


def wrap(caption: str, fits: Callable[[str], bool]) -> list[str]:
    """``caption`` in lines that each ``fits``: broken at spaces, and inside a word only where
    the word alone is too wide. Joined with spaces (or nothing, inside a word), the lines are
    the caption."""
    lines: list[str] = []
    line = ""
    for word in caption.split(" "):
        candidate = f"{line} {word}" if line else word
        if fits(candidate) or not line and len(word) <= 1:
            line = candidate
            continue
        if line:
            lines.append(line)
        line = word
        while len(line) > 1 and not fits(line):  # one word wider than the frame: cut it
            cut = len(line) - 1
            while cut > 1 and not fits(line[:cut]):
                cut -= 1
            lines.append(line[:cut])
            line = line[cut:]
    return lines + [line]


def check_frames(count: int, max_frames: int | None) -> None:
    """GraphTooLarge naming ``max_frames`` if a GIF of ``count`` frames would pass it (None: no cap)."""
    if max_frames is not None and count > max_frames:
        raise GraphTooLarge(
            f"the GIF would have {count} frames, more than max_frames={max_frames}; use per='pass' (one frame "
            f"per derivative order), write .html or .svg instead, or pass max_frames={count} (or None)",
            option="max_frames", size=count, limit=max_frames)


def _final_dot(rec: Recording, options: dict[str, Any], **hooks: Any) -> str:
    """DOT of the final graph, which every frame is cut from; ``hooks`` as for ``dot_source``.
    No boxes per derivative order: ``neato -n2`` would not draw them where ``dot`` put them."""
    options = {**options, "group_by_order": False}
    return dot_source(rec.drawn, outputs=rec.outputs, labels=rec.labels, **options, **hooks)


def _layout(rec: Recording, options: dict[str, Any]) -> tuple[dict[str, dict], dict[str, dict]]:
    """Node and edge geometry of the final graph from one ``dot -Tjson0`` run, keyed by DOT id
    (constants that a compact drawing writes into their users have none)."""
    geometry = json.loads(layout(_final_dot(rec, options), "json0", len(rec.indices)))
    nodes = {o["name"]: o for o in geometry.get("objects", []) if "pos" in o}
    edges = {e["id"]: e for e in geometry.get("edges", []) if "id" in e}
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
            geo = nodes.get(f"n{i}")
            if geo is None:
                continue
            attrs = {"pos": geo["pos"] + "!", "width": geo["width"], "height": geo["height"]}
            if rec.appear[i] > f:
                attrs["style"] = "invis"
            elif i in frame.new:
                attrs.update(color=NEW, penwidth="3")
            node_attrs[i] = attrs
        edge_attrs: dict[tuple[int, int], dict[str, str]] = {}
        for i, k in rec.edges:
            if f"e{i}_{k}" not in edges:
                continue
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


def write_gif(rec: Recording, options: dict[str, Any], interval: float, path: str,
              progress: Callable[[str], None], max_frames: int | None = MAX_GIF_FRAMES) -> None:
    """Draw every frame with one ``neato`` run, caption each, and save them as one looping GIF;
    more than ``max_frames`` frames is GraphTooLarge (None: no cap)."""
    from PIL import Image, ImageDraw, ImageFont

    check_frames(len(rec.frames), max_frames)
    progress(f"laying out {len(rec.indices)} nodes once")
    sources = frame_sources(rec, options)
    progress(f"drawing {len(sources)} frames")
    pngs = split_png_stream(layout("".join(sources), "png", len(rec.indices) * len(sources),
                                   engine="neato", neato_no_op=2))
    try:
        font: Any = ImageFont.load_default(size=14)
    except TypeError:  # Pillow < 10.1 has only the small bitmap font
        font = ImageFont.load_default()
    names = [w.name or "?" for w in rec.wrts]
    pictures = [Image.open(BytesIO(png)).convert("RGB") for png in pngs]
    width = pictures[0].width
    measure = ImageDraw.Draw(Image.new("RGB", (1, 1)))
    line_height = int(measure.textbbox((0, 0), "Ag", font=font)[3]) + LEADING

    def fits(text: str) -> bool:
        return measure.textbbox((MARGIN, MARGIN), text, font=font)[2] <= width - MARGIN

    captions = [wrap(frame.caption.replace(notation(names[:frame.pass_no]), notation(names[:frame.pass_no], True))
                     .translate(_PLAIN), fits) for frame in rec.frames]
    strip = 2 * MARGIN + line_height * max(len(lines) for lines in captions)  # one canvas for every frame
    images = []
    for lines, picture in track(list(zip(captions, pictures)), desc="GIF frames", unit="frame"):
        canvas = Image.new("RGB", (picture.width, picture.height + strip), "white")
        canvas.paste(picture, (0, strip))
        draw = ImageDraw.Draw(canvas)
        for k, line in enumerate(lines):
            draw.text((MARGIN, MARGIN + k * line_height), line, fill="black", font=font)
        images.append(canvas)
    # One palette for every frame, taken from the last (it shows every colour): quick and small.
    palette = images[-1].quantize(colors=128, method=Image.Quantize.FASTOCTREE)
    images = [im.quantize(palette=palette, dither=Image.Dither.NONE) for im in images]
    durations = [round(interval * 1000)] * (len(images) - 1) + [round(HOLD * 1000)]
    progress(f"writing {path}")
    images[0].save(path, format="GIF", save_all=True, append_images=images[1:], duration=durations, loop=0)
