"""`subgraph-ad animate` writes the animation of a derivative being built in the format of each
-o suffix (html, svg, gif); `--help` lists the user-facing functions, `--all-functions` the rest."""

import json
import re
import xml.etree.ElementTree as ET

import pytest
import sympy
from PIL import Image

import subgraph_ad as sad
from subgraph_ad.cli import main

INTERNAL = ["dsigmoid", "sech2", "select", "equal", "greater", "greater_equal", "less", "less_equal", "not_equal"]


def final_formula(page: str) -> str:
    """The formula the HTML player's last caption ends with: `… · d³f/dx³ = <formula>`."""
    data = json.loads(re.search(r"var data = (\{.*?\});\n", page).group(1))
    return data["frames"][-1]["caption"].rsplit(" = ", 1)[1]


def test_animate_writes_html_svg_and_gif_from_one_recording(tmp_path, capsys):
    paths = [tmp_path / f"d3.{fmt}" for fmt in ("html", "svg", "gif")]
    assert main(["animate", "exp(-x^2/2)", "--wrt", "x", "--order", "3", "--per", "pass",
                 *[arg for p in paths for arg in ("-o", str(p))]]) == 0
    out = capsys.readouterr().out.splitlines()
    # one frame before any pass and one per pass: 4 frames, the same recording in each format
    assert out == [f"wrote {p} (4 frames, {out[0].split()[-2]} nodes)" for p in paths]
    page = paths[0].read_text(encoding="utf-8")
    X = sympy.Symbol("x")
    shown = final_formula(page).replace("…", "")
    assert sympy.simplify(sympy.sympify(shown) - sympy.diff(sympy.exp(-X**2 / 2), X, 3)) == 0
    svg = ET.parse(paths[1]).getroot()
    assert svg.tag.endswith("svg") and "@keyframes" in paths[1].read_text(encoding="utf-8")
    with Image.open(paths[2]) as gif:
        assert gif.format == "GIF" and gif.n_frames == 4


def test_animate_refuses_a_suffix_it_cannot_write(tmp_path, capsys):
    assert main(["animate", "sin(x)", "--wrt", "x", "-o", str(tmp_path / "d.png")]) == 2
    assert ".html, .svg, .gif" in capsys.readouterr().err and not (tmp_path / "d.png").exists()


def test_diff_animate_stays(tmp_path, capsys):
    assert main(["diff", "sin(x)", "--wrt", "x", "--at", "x=1", "--animate", str(tmp_path / "a.html")]) == 0
    assert (tmp_path / "a.html").exists()


def test_help_lists_user_facing_functions_and_all_functions_the_rest(capsys):
    assert main(["diff", "--help"]) == 0
    listed = capsys.readouterr().out
    listed = listed[listed.index("functions of one argument"):]
    assert not set(INTERNAL) & set(listed.split()), listed
    assert {"sin", "atan2", "sigmoid", "erf"} <= set(listed.split())
    assert f"({len(INTERNAL)} internal functions: --all-functions lists them)" in listed
    for argv in (["--all-functions"], ["diff", "--all-functions"]):
        assert main(argv) == 0
        every = capsys.readouterr().out
        assert set(INTERNAL) | {"sin", "atan2"} <= set(every.split())
        assert set(every.split()) >= {name for name in sad.FUNCTIONS}
    # an internal function is still usable in an expression
    assert main(["diff", "sech2(x)", "--wrt", "x", "--at", "x=0"]) == 0


def test_a_dunder_name_is_refused_as_a_name_starting_with_underscore(capsys):
    assert main(["diff", "__import__('os').system('ls')", "--wrt", "x", "--at", "x=1"]) == 1
    err = capsys.readouterr().err
    assert "names starting with `_` are not allowed" in err and "for a product" not in err
    with pytest.raises(sad.ParseError, match="column 5: _y: names starting with `_` are not allowed"):
        sad.parse("x + _y")
