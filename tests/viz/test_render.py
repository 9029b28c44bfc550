"""DOT text, rendered files, the Jupyter bundle and the errors for a missing `dot` or a huge graph."""

import json
import re
import xml.etree.ElementTree as ET

import pytest

import subgraph_ad as sad
from subgraph_ad import Tape, exp, progress, sin
from subgraph_ad.viz.dot import COMPACT_FROM, ORDER_COLOURS, drawn_nodes, to_dot
from subgraph_ad.viz.labels import MAX_LABEL
from subgraph_ad.viz.render import (PROGRESS_FROM, prefix_ids, repr_mimebundle, run_graphviz, svg_text,
                                    to_graphviz)

NODE = re.compile(r'^  n(\d+) \[(.*)\];$', re.M)
EDGE = re.compile(r'^  n(\d+) -> n(\d+) \[(.*)\];$', re.M)


def gaussian(order: int = 2):
    tape = Tape()
    x = tape.var("x", 0.5)
    f = exp(-x**2 / 2)
    return tape, x, f, f.diff(x, order)


def build_twice(order: int) -> tuple[str, str]:
    """The same expression built on two fresh tapes: the DOT must not depend on object ids."""
    return gaussian(order)[3].to_dot(), gaussian(order)[3].to_dot()


def test_dot_is_byte_identical_for_the_same_graph():
    first, second = build_twice(3)
    assert first == second
    _, _, _, d = gaussian(3)
    assert d.to_dot(precision=5, rankdir="LR") == d.to_dot(precision=5, rankdir="LR")


def test_nodes_and_edges_are_in_tape_order():
    tape, x, f, d = gaussian(3)
    dot = tape.to_dot()
    nodes = [int(i) for i, _ in NODE.findall(dot)]
    assert nodes == list(range(len(tape)))
    heads = [int(h) for _, h, _ in EDGE.findall(dot)]
    assert heads == sorted(heads)
    edge_count = sum(len(tape.nodes[i].args) for i in range(len(tape)))
    assert len(heads) == edge_count


def test_term_dot_has_only_its_dependencies():
    tape = Tape()
    x, y = tape.var("x", 1.0), tape.var("y", 2.0)
    unrelated = sin(y)
    z = x * 3
    drawn = {int(i) for i, _ in NODE.findall(z.to_dot())}
    assert drawn == {x.index, tape.const(3.0).index, z.index}
    assert unrelated.index not in drawn and y.index not in drawn


def test_leaves_are_boxes_and_operations_ellipses():
    tape = Tape()
    x = tape.var("x", 1.0)
    z = sin(x) + 2
    attrs = dict(NODE.findall(z.to_dot()))
    assert 'shape="box"' in attrs[str(x.index)]
    assert 'shape="box"' in attrs[str(tape.const(2.0).index)]
    assert "shape" not in attrs[str(z.index)]  # the default ellipse
    assert 'label="sin"' in attrs[str(sin(x).index)]


@pytest.mark.parametrize("build, op", [(lambda x, y: x - y, "sub"), (lambda x, y: x / y, "div"),
                                       (lambda x, y: x ** y, "pow")])
def test_operand_order_is_labelled_for_non_commutative_ops(build, op):
    tape = Tape()
    x, y = tape.var("x", 2.0), tape.var("y", 3.0)
    z = build(y, x)  # y first: the labels must follow the operands, not the tape order
    assert z.op == op
    edges = {(int(a), int(b)): attrs for a, b, attrs in EDGE.findall(z.to_dot())}
    assert 'headlabel="a"' in edges[(y.index, z.index)]
    assert 'headlabel="b"' in edges[(x.index, z.index)]


def test_commutative_ops_have_no_operand_labels():
    tape = Tape()
    x, y = tape.var("x"), tape.var("y")
    assert "headlabel" not in (x * y + x).to_dot()


def test_labels_are_short_and_made_from_the_node():
    tape = Tape()
    long = tape.var("a_really_long_variable_name_for_testing", 1.0)
    z = exp(long) * long
    attrs = dict(NODE.findall(z.to_dot()))
    label = re.search(r'label="([^"]*)"', attrs[str(long.index)]).group(1)
    assert len(label) == MAX_LABEL and label.endswith("…")
    assert "a_really_long_variable_name_for_testing" in attrs[str(long.index)]  # the tooltip keeps it
    op_label = re.search(r'label="([^"]*)"', attrs[str(z.index)]).group(1)
    assert op_label == "×"  # never the operands' names glued together


def test_precision_shows_values_checked_against_closed_form():
    tape, x, f, d = gaussian(2)
    # d2/dx2 exp(-x^2/2) = (x^2 - 1) exp(-x^2/2) = -0.661872676938447 at 0.5
    attrs = dict(NODE.findall(d.to_dot(precision=6)))
    assert r"\n= -0.661873" in attrs[str(d.index)]
    assert r"x\n= 0.5" in attrs[str(x.index)]


def test_colour_by_order_uses_tape_orders_and_a_legend():
    tape, x, f, d = gaussian(2)
    dot = d.to_dot(group_by_order=False)
    attrs = dict(NODE.findall(dot))
    fills = {int(i): re.search(r'fillcolor="([^"]*)"', a).group(1) for i, a in attrs.items()}
    assert fills[f.index] == ORDER_COLOURS[0]
    assert fills[d.index] == ORDER_COLOURS[2]
    assert tape.orders[d.index] == 2
    assert "derivative order" in dot
    assert "derivative order" not in d.to_dot(color_by_order=False, group_by_order=False)


CLUSTER = re.compile(r"^  subgraph cluster_o(\d+) \{\n    graph \[(.*)\];\n    (?:b\d+; )?((?:n\d+; ?)*)\n  \}$", re.M)


def test_nodes_are_grouped_by_derivative_order():
    tape, x, f, d = gaussian(3)
    dot = d.to_dot()
    drawn = {int(i) for i, _ in NODE.findall(dot)}
    groups = {int(k): {int(n) for n in re.findall(r"n(\d+);", members)} for k, _, members in CLUSTER.findall(dot)}
    assert sorted(groups) == sorted({tape.orders[i] for i in drawn}) and len(groups) >= 3
    for order, members in groups.items():
        assert members == {i for i in drawn if tape.orders[i] == order}
    assert "derivative order" not in dot  # each box is labelled instead of a colour key
    assert f'label="order {tape.orders[d.index]}"' in dot
    assert "cluster" not in d.to_dot(group_by_order=False)
    assert "cluster" not in f.to_dot()  # one order: nothing to group
    # Graphviz draws each order's box around exactly that order's nodes
    geometry = json.loads(run_graphviz(dot, "json0"))
    boxes = {o["name"]: [float(v) for v in o["bb"].split(",")] for o in geometry["objects"] if "bb" in o}
    placed = [o for o in geometry["objects"] if "pos" in o and o["name"].startswith("n")]
    assert {int(o["name"][1:]) for o in placed} == drawn
    heights: dict[int, list[float]] = {}
    for o in placed:
        px, py = map(float, o["pos"].split(","))
        order = tape.orders[int(o["name"][1:])]
        x0, y0, x1, y1 = boxes[f"cluster_o{order}"]
        assert x0 <= px <= x1 and y0 <= py <= y1, o["name"]
        heights.setdefault(order, []).append(py)
    # the orders read top to bottom: every node of an order lies below every node of the one before
    orders = sorted(heights)
    for before, after in zip(orders, orders[1:]):
        assert max(heights[after]) < min(heights[before]), (before, after)


def test_outputs_are_named_from_labels_or_from_a_derivatives_result():
    tape = Tape()
    x = tape.var("x", 0.5)
    f = sin(x)
    d1, d4 = f.diff(x), f.diff(x, 4)
    assert d4.index == f.index  # the 4th derivative of sin is sin: one node, two names
    dot = to_dot([f, d1, d4], labels=["f", "f'", "f''''"])
    attrs = dict(NODE.findall(dot))
    assert "<b>f = f''''</b>" in attrs[str(f.index)] and 'peripheries="2"' in attrs[str(f.index)]
    assert "<b>f'</b>" in attrs[str(d1.index)]
    assert "label=<" in attrs[str(d1.index)] and "cos" in attrs[str(d1.index)]  # its own label stays
    assert to_dot(d1, labels={d1: "slope"}).count("<b>slope</b>") == 1
    steps = sad.derivatives(exp(-x**2 / 2), x, 3, method="graph")
    named = dict(NODE.findall(to_dot(steps)))
    expected = {steps.f.index: "f", steps[0].term.index: "df/dx", steps[1].term.index: "d²f/dx²",
                steps[2].term.index: "d³f/dx³"}
    for i, name in expected.items():
        assert f"<b>{name}</b>" in named[str(i)]
    assert sum("<b>" in a for a in named.values()) == 4
    with pytest.raises(ValueError, match="labels has 2 names for 3 outputs"):
        to_dot([f, d1, d4], labels=["f", "f'"])
    with pytest.raises(TypeError, match="a label must be a str, got int 3"):
        to_dot(f, labels={f: 3})
    with pytest.raises(TypeError, match="labels must be a dict from Term to name or a list"):
        to_dot(f, labels="f")


def tanh3(order: int) -> "sad.Derivatives":
    tape = Tape()
    x = tape.var("x", 0.5)
    return sad.derivatives(sad.tanh(sad.tanh(sad.tanh(x))), x, order, method="graph")


def test_big_graphs_are_compact_with_constants_written_into_their_users():
    steps = tanh3(4)
    tape = steps.f.tape
    dot = to_dot(steps)
    attrs = dict(NODE.findall(dot))
    drawn = {int(i) for i in attrs}
    assert len(drawn) >= COMPACT_FROM and 'fontsize="10"' in dot and 'nodesep="0.12"' in dot
    # no constant is drawn on its own, and no edge leaves one; its users show it instead
    consts = {i for i in drawn_nodes(steps) if tape.nodes[i].op == "const"}
    assert consts and not drawn & consts
    assert not {int(a) for a, _, _ in EDGE.findall(dot)} & consts
    users = [i for i in drawn if any(a in consts for a in tape.nodes[i].args)]
    assert users
    for i in users:
        label = re.search(r'label="([^"]*)"|<br/>([^<]*)', attrs[str(i)])
        text = label.group(1) or label.group(2)
        for a in tape.nodes[i].args:
            if a in consts:
                assert f"{tape.nodes[a].payload:.6g}" in text, (i, text)
    small = gaussian(1)[3].to_dot()
    assert 'fontsize="12"' in small and "nodesep" not in small  # small graphs keep the full look
    assert 'fontsize="12"' in to_dot(steps, compact=False)


def svg_size(svg: str) -> tuple[float, float]:
    w, h = re.search(r'<svg width="([0-9.]+)pt" height="([0-9.]+)pt"', svg).groups()
    return float(w), float(h)


def test_big_graph_pictures_are_much_smaller_than_the_plain_layout():
    steps = tanh3(4)
    plain = svg_size(svg_text(steps, compact=False, group_by_order=False))
    grouped = svg_size(svg_text(steps))
    assert grouped[0] * grouped[1] < 0.5 * plain[0] * plain[1], (plain, grouped)


def test_to_dot_has_no_size_cap_but_layout_keeps_it(tmp_path):
    tape = Tape()
    x = tape.var("x", 0.1)
    z = x
    for k in range(300):
        z = sin(z) * (k + 2)
    dot = z.to_dot()  # 901 nodes: text needs no layout
    assert len(NODE.findall(dot)) + dot.count("× ") >= 901 and dot.endswith("}\n")
    with pytest.raises(sad.GraphTooLarge, match="901 nodes, more than max_nodes=500") as info:
        z.render(tmp_path / "z.svg")
    assert (info.value.option, info.value.size, info.value.limit) == ("max_nodes", 901, 500)
    assert not (tmp_path / "z.svg").exists()
    with pytest.raises(sad.GraphTooLarge, match="max_nodes=None"):
        svg_text(z)
    z.render(tmp_path / "z.dot")  # a .dot file is text too
    assert (tmp_path / "z.dot").read_text() == dot
    note = repr_mimebundle(z)
    assert set(note) == {"text/plain"} and "more than max_nodes=500" in note["text/plain"]
    with pytest.raises(sad.GraphTooLarge, match="max_nodes=None"):
        z.to_dot(max_nodes=50)  # a cap asked for is still honoured


def test_highlight_outputs_and_rankdir():
    tape, x, f, d = gaussian(1)
    dot = d.to_dot(highlight=[x], outputs=[f, d], rankdir="LR")
    attrs = dict(NODE.findall(dot))
    assert 'penwidth="3"' in attrs[str(x.index)]
    assert 'peripheries="2"' in attrs[str(f.index)] and 'peripheries="2"' in attrs[str(d.index)]
    assert 'rankdir="LR"' in dot
    with pytest.raises(ValueError, match="rankdir"):
        d.to_dot(rankdir="sideways")
    with pytest.raises(ValueError, match="precision"):
        d.to_dot(precision=0)


def test_dot_escapes_quotes_and_backslashes():
    class Weird(sad.UnaryFn):
        name = 'we"ird\\N'

        def f(self, v):
            return v

    tape = Tape()
    x = tape.var("x")
    dot = Weird()(x).to_dot()
    assert r'label="we\"ird\\N"' in dot


def test_render_svg_png_pdf_and_dot(tmp_path):
    _, _, _, d = gaussian(2)
    svg = d.render(tmp_path / "g.svg")
    root = ET.parse(svg).getroot()
    assert root.tag.endswith("svg")
    ids = {el.get("id") for el in root.iter() if el.get("id")}
    assert f"n{d.index}" in ids
    png = (tmp_path / "g.png")
    d.render(str(png))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    d.render(tmp_path / "g.pdf")
    assert (tmp_path / "g.pdf").read_bytes()[:5] == b"%PDF-"
    d.render(tmp_path / "g.dot")
    assert (tmp_path / "g.dot").read_text() == d.to_dot()
    with pytest.raises(ValueError, match=r"\.svg, \.png, \.pdf or \.dot"):
        d.render(tmp_path / "g.jpg")


def test_missing_dot_raises_with_install_hint_but_to_dot_works(tmp_path, monkeypatch):
    _, _, _, d = gaussian(1)
    monkeypatch.setenv("PATH", "")
    with pytest.raises(sad.GraphvizNotFound, match="apt-get install graphviz") as info:
        d.render(tmp_path / "g.svg")
    assert isinstance(info.value, RuntimeError)
    assert not (tmp_path / "g.svg").exists()
    assert d.to_dot().startswith("digraph")
    d.render(tmp_path / "g.dot")  # needs no Graphviz
    assert (tmp_path / "g.dot").exists()
    bundle = repr_mimebundle(d)
    assert set(bundle) == {"text/plain"} and "apt-get install graphviz" in bundle["text/plain"]


def test_jupyter_bundle_is_svg_with_ids_unique_per_display():
    _, _, f, d = gaussian(1)
    first, second = repr_mimebundle(d), repr_mimebundle(d.tape)
    assert set(first) == {"image/svg+xml"} and set(second) == {"image/svg+xml"}
    assert "image/svg+xml" in d._repr_mimebundle_()
    ids = []
    for bundle in (first, second):
        root = ET.fromstring(bundle["image/svg+xml"])
        ids.append({el.get("id") for el in root.iter() if el.get("id")})
    prefixes = [{i.split("_")[0] for i in group} for group in ids]
    assert all(len(p) == 1 for p in prefixes) and prefixes[0] != prefixes[1]
    assert not ids[0] & ids[1]


def test_jupyter_shows_a_big_graph_in_the_zoomable_viewer():
    steps = tanh3(4)
    bundle = repr_mimebundle(steps.f.tape)
    assert set(bundle) == {"text/html"}
    page = bundle["text/html"]
    assert page.count("<svg") == 1 and "sad-fit" in page and "wheel" in page
    root = re.search(r'<div class="sad-player" id="([^"]+)"', page).group(1)
    assert all(i == root or i.startswith(root + "_") for i in re.findall(r'\bid="([^"]+)"', page))
    assert re.search(r'class="sad-bar sad-frames" hidden', page)  # a picture: no frame controls


def test_graphviz_failures_and_the_graphviz_package():
    with pytest.raises(sad.GraphvizError, match=r"dot -Tsvg failed with exit code 1: .*syntax error"):
        run_graphviz("digraph { a -> }", "svg")
    d = gaussian(1)[3]
    source = to_graphviz(d, rankdir="LR")
    assert source.source == d.to_dot(rankdir="LR")
    assert b"<svg" in source.pipe(format="svg")


def test_big_layouts_report_progress_on_request(capsys):
    steps = tanh3(5)
    count = len(drawn_nodes(steps))
    assert count >= PROGRESS_FROM
    progress.enable(True)
    try:
        svg_text(steps)
    finally:
        progress.enable(None)
    assert f"Graphviz dot: {count} nodes" in capsys.readouterr().err
    svg_text(steps)  # off a terminal: quiet
    assert capsys.readouterr().err == ""


def test_prefix_ids_rewrites_references_too():
    svg = '<svg><defs><linearGradient id="l_0"/></defs><rect fill="url(#l_0)"/><a xlink:href="#n1"/></svg>'
    assert prefix_ids(svg, "p_") == (
        '<svg><defs><linearGradient id="p_l_0"/></defs><rect fill="url(#p_l_0)"/><a xlink:href="#p_n1"/></svg>'
    )


def test_rendering_does_not_change_the_tape(tmp_path):
    tape, _, _, d = gaussian(2)
    before = (list(tape.nodes), list(tape.orders))
    d.to_dot(precision=3)
    d.render(tmp_path / "g.svg")
    assert (list(tape.nodes), list(tape.orders)) == before


def test_bad_input_is_refused_with_a_clear_error():
    with pytest.raises(TypeError, match="Term, a Tape"):
        to_dot(3.0)
    a, b = Tape(), Tape()
    with pytest.raises(ValueError, match="different tapes"):
        to_dot([a.var("x"), b.var("x")])


def test_render_checks_the_path_before_any_work(tmp_path, monkeypatch):
    """A missing folder, a folder given as the file, a bad suffix or a non-path: a specific error
    naming the path and what is expected, before the graph is written out or laid out."""
    import subgraph_ad.viz.render as render_module

    tape, _, _, d = gaussian(2)
    before = list(tape.nodes)

    def no_work(*args, **kwargs):
        raise AssertionError("the graph was drawn before the path was checked")

    monkeypatch.setattr(render_module, "to_dot", no_work)
    monkeypatch.setattr(render_module, "layout", no_work)
    for suffix in ("svg", "png", "pdf", "dot"):
        missing = tmp_path / "no" / "such" / f"g.{suffix}"
        with pytest.raises(FileNotFoundError) as info:
            d.render(missing)
        assert str(missing) in str(info.value) and str(tmp_path / "no" / "such") in str(info.value)
        assert "does not exist" in str(info.value)
    (tmp_path / "folder.svg").mkdir()
    with pytest.raises(IsADirectoryError, match=r"folder\.svg.*is a directory.*\.svg, \.png, \.pdf or \.dot"):
        d.render(tmp_path / "folder.svg")
    with pytest.raises(ValueError, match=r"g\.jpg.*\.svg, \.png, \.pdf or \.dot"):
        d.render(tmp_path / "no" / "g.jpg")
    with pytest.raises(TypeError, match=r"a path \(str or os.PathLike\), got int 3"):
        d.render(3)
    assert list(tape.nodes) == before and sorted(p.name for p in tmp_path.iterdir()) == ["folder.svg"]
