"""Animations: what is recorded per frame, and that node positions and canvas never change."""

import json
import math
import re
import sys
import xml.etree.ElementTree as ET

import pytest
from PIL import Image

import subgraph_ad as sad
from subgraph_ad import Tape, exp, sin
from subgraph_ad.viz import gif
from subgraph_ad.viz.record import carry, notation, record
from subgraph_ad.viz.render import run_graphviz

SVG = "{http://www.w3.org/2000/svg}"


def gaussian():
    tape = Tape()
    x = tape.var("x", 0.5)
    return tape, x, exp(-x**2 / 2)


def gaussian_derivative(n: int, x: float) -> float:
    """(-1)^n He_n(x) exp(-x^2/2), with the probabilists' Hermite polynomials He_n."""
    he = [1.0, x]
    for k in range(1, n):
        he.append(x * he[k] - k * he[k - 1])
    return (-1) ** n * he[n] * math.exp(-x * x / 2)


def test_record_per_node_has_one_frame_per_used_new_node():
    tape, x, f = gaussian()
    rec = record(f, [x] * 4)
    assert [d.eval() for d in rec.derivatives] == pytest.approx([gaussian_derivative(n, 0.5) for n in range(1, 5)],
                                                                rel=1e-12)
    new = [i for frame in rec.frames for i in frame.new]
    assert len(rec.frames) == 1 + len(new) and all(len(fr.new) == 1 for fr in rec.frames[1:])
    assert len(new) == len(set(new)) and all(i >= 6 for i in new)  # appended after f's nodes
    assert [fr.pass_no for fr in rec.frames] == sorted(fr.pass_no for fr in rec.frames)
    assert {fr.pass_no for fr in rec.frames} == {0, 1, 2, 3, 4}
    # a node never appears before its operands, and f's nodes are there from the first frame
    for i in rec.indices:
        assert all(rec.appear[a] <= rec.appear[i] for a in tape.nodes[i].args)
    assert all(rec.appear[i] == 0 for i in sad.core.dependencies(tape, [f.index]))
    for fr in rec.frames[1:]:
        assert fr.caption.startswith(f"{notation(['x'] * fr.pass_no)} (pass {fr.pass_no} of 4) · new node {fr.new[0]}")


def test_record_per_pass_and_mixed_vars():
    tape = Tape()
    x, y = tape.var("x", 0.5), tape.var("y", 4.2)
    f = x * y + sin(x)
    rec = record(f, [x, y], per="pass")
    assert len(rec.frames) == 3
    assert rec.derivatives[1].eval() == 1.0  # d2/dxdy (xy + sin x) = 1
    assert rec.frames[1].caption.startswith("df/dx (pass 1 of 2)")
    assert rec.frames[2].caption.startswith("d²f/dxdy (pass 2 of 2)")


def test_record_taylor_mode_shows_one_order_per_pass():
    tape, x, f = gaussian()
    rec = record(f, [x] * 4, per="pass", method="taylor")
    assert [d.eval() for d in rec.derivatives] == pytest.approx([gaussian_derivative(n, 0.5) for n in range(1, 5)],
                                                                rel=1e-12)
    assert [fr.caption.split(" · ")[0] for fr in rec.frames[1:]] == [
        f"{notation(['x'] * k)} (Taylor-mode order {k} of 4)" for k in range(1, 5)]
    assert all(tape.orders[i] == fr.pass_no for fr in rec.frames[1:] for i in fr.new)
    for i in rec.indices:
        assert all(rec.appear[a] <= rec.appear[i] for a in tape.nodes[i].args)
    with pytest.raises(ValueError, match="method must be 'auto', 'graph' or 'taylor', got 'fast'"):
        sad.animate(f, x, 2, "never.html", method="fast")


def test_a_pass_that_appends_nothing_still_gets_a_frame():
    tape = Tape()
    x = tape.var("x", 0.3)
    rec = record(sin(x), [x] * 4)  # the 4th derivative of sin is sin itself: nothing new
    assert rec.added[3] == 0 and rec.derivatives[3].index == sin(x).index
    assert rec.frames[-1].new == () and "no new nodes" in rec.frames[-1].caption


def node_boxes(svg: bytes) -> tuple[tuple[str, str], dict[str, list[tuple[str, ...]]]]:
    """Canvas size and, per visible node id, the coordinates of its drawn shapes."""
    root = ET.fromstring(svg)
    boxes = {}
    for g in root.iter(f"{SVG}g"):
        if g.get("class", "").startswith("node"):
            shapes = [(e.get("cx"), e.get("cy"), e.get("rx"), e.get("ry")) for e in g.iter(f"{SVG}ellipse")]
            shapes += [(p.get("points"),) for p in g.iter(f"{SVG}polygon")]
            shapes += [(p.get("d"),) for p in g.iter(f"{SVG}path")]  # rounded boxes
            if shapes:  # an invisible node draws nothing
                boxes[g.get("id")] = shapes
    return (root.get("width"), root.get("height")), boxes


def test_gif_frames_keep_every_node_in_place_and_the_canvas_fixed():
    tape, x, f = gaussian()
    rec = record(f, [x] * 3)
    sources = gif.frame_sources(rec)
    assert len(sources) == len(rec.frames)
    early, late = 2, len(sources) - 1
    size_early, early_boxes = node_boxes(run_graphviz(sources[early], "svg", "neato", 2))
    size_late, late_boxes = node_boxes(run_graphviz(sources[late], "svg", "neato", 2))
    assert size_early == size_late
    shared = set(early_boxes) & set(late_boxes)
    assert len(shared) == len(early_boxes) == sum(rec.appear[i] <= early for i in rec.indices)
    assert len(late_boxes) == len(rec.indices) > len(early_boxes)
    for node in shared:
        assert early_boxes[node] == late_boxes[node], node
    # the positions are the ones the final layout chose
    layout = json.loads(run_graphviz(gif._final_dot(rec, {}), "json0"))
    pos = {o["name"]: o["pos"] for o in layout["objects"]}
    for i in rec.indices:
        assert re.search(rf'\bn{i} \[.*pos="{re.escape(pos[f"n{i}"])}!"', sources[late])


def test_gif_file_has_one_frame_per_node_all_the_same_size(tmp_path):
    tape, x, f = gaussian()
    out = sad.animate(f, x, 2, tmp_path / "g.gif")
    assert out.format == "gif" and out.result.eval() == pytest.approx(gaussian_derivative(2, 0.5), rel=1e-12)
    with Image.open(out.path) as gif:
        assert gif.n_frames == out.frames
        sizes = set()
        for k in range(gif.n_frames):
            gif.seek(k)
            sizes.add(gif.size)
    assert len(sizes) == 1


def player_data(page: str) -> dict:
    return json.loads(re.search(r"var data = (\{.*?\});\n", page).group(1))


def test_html_player_is_self_contained_and_names_every_element(tmp_path):
    tape, x, f = gaussian()
    out = sad.animate(f, x, 3, tmp_path / "g.html")
    page = (tmp_path / "g.html").read_text(encoding="utf-8")
    assert page.count("<svg") == 1  # one layout for every frame
    assert not re.search(r'(src|href)="https?:|<link|@import|fetch\(', page)
    for control in ("sad-slider", "sad-play", "sad-caption", "sad-in", "sad-out", "sad-fit", "ArrowRight", "wheel"):
        assert control in page
    data = player_data(page)
    assert len(data["frames"]) == out.frames
    svg_ids = set(re.findall(r'id="([^"]+)"', page))
    assert all(data["prefix"] + key in svg_ids for key in data["appear"])
    assert all(data["prefix"] + key in svg_ids for fr in data["frames"] for key in fr["new"])
    assert any(fr["caption"].startswith("d³f/dx³") for fr in data["frames"])
    assert max(data["appear"].values()) == out.frames - 1
    # every output carries its name on the picture, in bold above its own label
    for name in ("f", "df/dx", "d²f/dx²", "d³f/dx³"):
        assert f'font-weight="bold" font-size="14.00">{name}</text>' in page
    # the same animation written twice gives the same bytes
    tape2, x2, f2 = gaussian()
    sad.animate(f2, x2, 3, tmp_path / "twice.html")
    assert (tmp_path / "twice.html").read_bytes() == page.encode("utf-8")


def test_animate_without_a_path_displays_inline_and_two_players_never_share_ids(tmp_path):
    tape, x, f = gaussian()
    before = len(tape)
    movie = sad.animate(f, x, 2)
    assert movie.path is None and movie.format == "html" and not list(tmp_path.iterdir())
    assert math.isclose(movie.result.eval(), gaussian_derivative(2, 0.5), rel_tol=1e-12)
    assert len(tape) == before and movie.result.tape is not tape  # recorded on a copy
    first, second = movie._repr_html_(), movie._repr_html_()
    ids = [set(re.findall(r'\bid="([^"]+)"', html)) for html in (first, second)]
    assert len(ids[0]) > 20 and not ids[0] & ids[1]
    for html, own in zip((first, second), ids):
        root = re.search(r'<div class="sad-player" id="([^"]+)"', html).group(1)
        assert player_data(html)["prefix"] == root + "_"
        assert all(i == root or i.startswith(root + "_") for i in own)
        assert f'.sad-player[id="{root}"]' in html and "document.getElementById" not in html
        assert "<body" not in html and "<html" not in html  # a fragment for a notebook cell
    # an animation written only to .svg has no player to show
    tape2, x2, f2 = gaussian()
    assert sad.animate(f2, x2, 1, tmp_path / "g.svg")._repr_html_() is None


def test_animated_svg_reveals_in_order_shows_each_caption_and_falls_back_to_the_final_graph(tmp_path):
    tape, x, f = gaussian()
    out = sad.animate(f, x, 2, tmp_path / "g.svg", per="pass")
    tape2, x2, f2 = gaussian()
    captions = [fr.caption for fr in record(*carry(f2, [x2] * 2), per="pass").frames]
    root = ET.parse(out.path).getroot()  # well-formed XML
    style = root.find(f"{SVG}style").text
    prefix = re.search(r"@keyframes (sad[0-9a-f]+_)f1 ", style).group(1)
    assert f"@keyframes {prefix}f2" in style
    classes = [g.get("class", "") for g in root.iter(f"{SVG}g")]
    assert any(f"{prefix}f2" in c for c in classes)
    # one caption per frame, each animated in its own window; the last one is the fallback
    texts = [t for t in root.iter(f"{SVG}text") if t.get("class", "").startswith(f"{prefix}c")]
    assert [t.text for t in texts] == captions and len(texts) == 3
    assert texts[-1].text.startswith("d²f/dx² (pass 2 of 2)")
    assert [t.get("opacity") for t in texts] == ["0", "0", None]
    assert all(f"@keyframes {prefix}c{k} " in style for k in range(3))
    # the caption strip is inside the picture: the viewBox starts above the graph
    x0, y0, w, h = map(float, root.get("viewBox").split())
    assert all(y0 < float(t.get("y")) < y0 + 22 for t in texts)
    # without CSS animation nothing else is hidden: no node or edge carries opacity or visibility
    assert all(e.get("opacity") is None and e.get("visibility") is None for e in root.iter() if e not in texts)


def test_a_list_of_paths_writes_one_recording_in_each_format(tmp_path):
    tape, x, f = gaussian()
    paths = [tmp_path / "g.svg", tmp_path / "g.html"]
    movies = sad.animate(f, x, 3, paths)
    assert [m.format for m in movies] == ["svg", "html"] and all(p.stat().st_size > 0 for p in paths)
    assert movies[0].frames == movies[1].frames == movies[0].new_nodes + 1  # frame 0 is f alone
    assert movies[0].result == movies[1].result
    assert math.isclose(movies[0].result.eval(), gaussian_derivative(3, 0.5), rel_tol=1e-12)
    again = sad.animate(f, x, 3, tmp_path / "again.html")  # each animation records on a copy of its own
    assert again.new_nodes == movies[0].new_nodes and "already on the tape" not in (tmp_path / "again.html").read_text()
    with pytest.raises(ValueError, match="empty list"):
        sad.animate(f, x, 3, [])


def test_failures_leave_the_tape_as_it_was(tmp_path, monkeypatch):
    tape, x, f = gaussian()
    before = len(tape)
    with pytest.raises(ValueError, match=r"\.html, \.svg or \.gif"):
        sad.animate(f, x, 2, tmp_path / "g.mp4")
    with pytest.raises(sad.GraphTooLarge, match="max_frames"):
        sad.animate(f, x, 4, tmp_path / "g.gif", max_frames=3)
    assert len(tape) == before and not (tmp_path / "g.gif").exists()
    with pytest.raises(FileNotFoundError, match="does not exist"):
        sad.animate(f, x, 1, tmp_path / "missing" / "g.html")
    monkeypatch.setitem(sys.modules, "PIL", None)  # as if Pillow were not installed
    with pytest.raises(ImportError, match=r"Pillow: pip install pillow"):
        sad.animate(f, x, 2, tmp_path / "g.gif")
    assert len(tape) == before and not (tmp_path / "g.gif").exists()
    monkeypatch.setenv("PATH", "")
    with pytest.raises(sad.GraphvizNotFound, match="install Graphviz"):
        sad.animate(f, x, 2, tmp_path / "g.html")
    assert len(tape) == before


def test_bad_arguments_are_refused():
    tape, x, f = gaussian()
    with pytest.raises(ValueError, match="order"):
        sad.animate(f, x, 0, "g.html")
    with pytest.raises(ValueError, match="per"):
        sad.animate(f, x, 1, "g.html", per="frame")
    with pytest.raises(TypeError, match="takes vars and int counts, got str 'x'"):
        sad.animate(f, "x", 1, "g.html")
    with pytest.raises(ValueError, match="must be a var"):
        sad.animate(f, f, "g.html")
    with pytest.raises(TypeError, match="two paths"):
        sad.animate(f, x, "g.html", path="h.html")


def test_split_png_stream_round_trips():
    one = run_graphviz("digraph { a -> b }", "png")
    two = run_graphviz("digraph { c }", "png")
    assert gif.split_png_stream(one + two) == [one, two]


def test_demo_writes_the_gaussian_graph_and_animation(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).parents[2] / "examples" / "gaussian.py"
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    svg, page = tmp_path / "out" / "gaussian.svg", tmp_path / "out" / "gaussian.html"
    assert str(svg) in done.stdout and str(page) in done.stdout
    assert ET.parse(svg).getroot().tag.endswith("svg")
    frames = json.loads(re.search(r"var data = (\{.*?\});\n", page.read_text(encoding="utf-8")).group(1))["frames"]
    assert frames[-1]["caption"].startswith("d⁶f/dx⁶ (pass 6 of 6)")


def test_max_frames_is_named_and_checked_by_the_gif_writer_too(tmp_path):
    tape, x, f = gaussian()
    with pytest.raises(sad.GraphTooLarge, match=r"would have \d+ frames, more than max_frames=3") as info:
        sad.animate(f, x, 4, tmp_path / "g.gif", max_frames=3)
    assert info.value.option == "max_frames" and info.value.limit == 3 and info.value.size > 3
    rec = record(f, [x] * 2)
    with pytest.raises(sad.GraphTooLarge, match="max_frames=2"):
        gif.write_gif(rec, {}, 0.5, str(tmp_path / "w.gif"), lambda message: None, max_frames=2)
    assert not (tmp_path / "w.gif").exists()
    tape2, x2, f2 = gaussian()
    movie = sad.animate(f2, x2, 2, tmp_path / "ok.html", max_frames=3)  # the cap is for GIFs
    assert movie.frames > 3
    tape3, x3, f3 = gaussian()
    once = sad.animate(f3, x3)  # order defaults to one derivative
    assert len(once.derivatives) == 1 and math.isclose(once.result.eval(), gaussian_derivative(1, 0.5))


def test_a_big_animation_is_compact_and_names_what_it_shows(tmp_path):
    tape = Tape()
    x = tape.var("x", 0.5)
    f = sad.tanh(sad.tanh(sad.tanh(x)))
    movie = sad.animate(f, x, 4, per="pass")
    assert movie.nodes >= 60
    page = movie._repr_html_()
    data = player_data(page)
    ids = set(re.findall(r'\bid="([^"]+)"', page))
    assert all(data["prefix"] + key in ids for key in data["appear"])
    # each order's box appears with its pass, and the outputs carry their names
    assert {key: data["appear"][key] for key in ("o1", "o2", "o3", "o4")} == {"o1": 1, "o2": 2, "o3": 3, "o4": 4}
    for name in ("f", "df/dx", "d²f/dx²", "d³f/dx³", "d⁴f/dx⁴"):
        assert f">{name}</text>" in page
    # constants written into their users: none is a node of its own, in the player or the GIF frames
    copy = movie.result.tape
    consts = [i for i in sad.core.dependencies(copy, [d.index for d in movie.derivatives]) if copy.nodes[i].op == "const"]
    assert consts and not any(data["prefix"] + f"n{i}" in ids for i in consts)
    rec = record(sad.tanh(sad.tanh(sad.tanh(x))), [x], per="pass")
    sources = gif.frame_sources(rec, {"compact": True})
    assert all(re.search(r'^  n(\d+) \[(?!.*pos=")', s, re.M) is None for s in sources)  # every node pinned


def test_animating_what_diff_built_already_shows_the_whole_build_and_leaves_the_tape_alone():
    tape, x, f = gaussian()
    d5 = f.diff(x, 5, method="graph")
    nodes, orders, memo, values = list(tape.nodes), list(tape.orders), dict(tape.deriv_cache), tape.current_values()
    movie = sad.animate(f, x, 5, method="graph")
    assert tape.nodes == nodes and tape.orders == orders and tape.deriv_cache == memo and tape.current_values() == values
    assert movie.result.tape is not tape and movie.term.tape is movie.result.tape is movie.wrts[0].tape
    assert str(movie.term) == str(f) and movie.wrts[0].name == "x"
    # every pass appends nodes of its own, as on a tape that never saw a derivative
    assert all(n > 0 for n in movie.added) and movie.frames == 1 + movie.new_nodes
    assert math.isclose(movie.result.eval(), gaussian_derivative(5, 0.5), rel_tol=1e-12)
    assert math.isclose(movie.result.eval(), d5.eval(), rel_tol=1e-12)
    captions = [fr["caption"] for fr in player_data(movie._repr_html_())["frames"]]
    assert not any("already on the tape" in c for c in captions)
    assert {int(c.split(" (pass ")[1][0]) for c in captions[1:]} == {1, 2, 3, 4, 5}


def test_the_last_caption_shows_the_result_formula_capped_at_80_characters():
    tape, x, f = gaussian()
    short = sad.animate(f, x, 2, method="taylor")
    last = player_data(short._repr_html_())["frames"][-1]["caption"]
    head, text = last.split(" · d²f/dx² = ")
    assert head.startswith("d²f/dx² (")
    # the formula is the second derivative: read back, it has the closed form's value at other points
    back = sad.parse(text)
    for at in (-1.3, 0.2, 2.0):
        assert math.isclose(back.eval({back.tape.vars["x"]: at}), gaussian_derivative(2, at), rel_tol=1e-12)
    long = sad.animate(f, x, 8, method="graph", per="pass")
    last = player_data(long._repr_html_())["frames"][-1]["caption"]
    shown = last.split(" · d⁸f/dx⁸ = ")[1]
    assert len(shown) == 80 and shown.endswith("…")
