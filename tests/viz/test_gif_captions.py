"""GIF captions fit their frame: the longest caption of the animations below (the last frame's,
which ends with the derivative's formula) is wrapped, never cut at the right edge."""

import numpy as np
from PIL import Image, ImageDraw, ImageFont

import subgraph_ad as sad
from subgraph_ad.viz import gif
from subgraph_ad.viz.record import record

# (expression, wrt): the CLI's `diff --animate d3.gif` of the Gaussian, a product, two vars
CORPUS = [("exp(-x^2/2)", ["x"] * 3), ("sin(x)*x", ["x"] * 2), ("x*y + sin(x)", ["x", "y"])]


def font():
    try:
        return ImageFont.load_default(size=14)
    except TypeError:
        return ImageFont.load_default()


def longest():
    """The corpus entry whose recording has the longest caption, and that caption."""
    best = None
    for text, wrt in CORPUS:
        term = sad.parse(text)
        caption = max((f.caption for f in record(term, [term.tape.vars[w] for w in wrt]).frames), key=len)
        if best is None or len(caption) > len(best[2]):
            best = (text, wrt, caption)
    return best


def test_wrap_keeps_every_word_and_each_line_fits():
    _, _, caption = longest()
    draw = ImageDraw.Draw(Image.new("RGB", (1, 1)))
    for width in (120, 200, 320):
        def fits(line, width=width):
            return draw.textbbox((0, 0), line, font=font())[2] <= width
        lines = gif.wrap(caption, fits)
        assert len(lines) > 1 and all(fits(line) for line in lines)
        assert "".join(lines).replace(" ", "") == caption.replace(" ", "")
    assert gif.wrap("abcdefgh", lambda line: len(line) <= 3) == ["abc", "def", "gh"]


def test_the_longest_caption_fits_its_gif_frame(tmp_path):
    text, wrt, caption = longest()
    term = sad.parse(text)
    movie = sad.animate(term, *[term.tape.vars[w] for w in wrt], path=tmp_path / "d.gif", method="graph")
    with Image.open(movie.path) as shown:
        width = shown.width
        # the caption, as drawn, is wider than the frame: without wrapping it would be cut
        draw = ImageDraw.Draw(Image.new("RGB", (1, 1)))
        assert draw.textbbox((gif.MARGIN, gif.MARGIN), caption, font=font())[2] > width
        for k in range(shown.n_frames):
            shown.seek(k)
            pixels = np.asarray(shown.convert("L"))
            # text drawn past the right edge would leave dark pixels in the last columns
            assert pixels[:, -3:].min() > 200, f"frame {k}: something touches the right edge"
        shown.seek(shown.n_frames - 1)
        pixels = np.asarray(shown.convert("L"))
        inked = np.flatnonzero((pixels[:, : width // 2] < 128).any(axis=1))
        # the last caption takes more than one line of text in the strip above the graph
        lines = np.split(inked, np.flatnonzero(np.diff(inked) > 2) + 1)
        assert len([rows for rows in lines if rows[0] < 80]) >= 2
