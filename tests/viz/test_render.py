"""DOT text, rendered files, the Jupyter bundle and the errors for a missing `dot` or a huge graph."""

import re
import xml.etree.ElementTree as ET

import pytest

import subgraph_ad as sad
from subgraph_ad import Tape, exp, sin
from subgraph_ad.viz.dot import MAX_LABEL, ORDER_COLOURS, to_dot
from subgraph_ad.viz.render import prefix_ids

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
    dot = d.to_dot()
    attrs = dict(NODE.findall(dot))
    fills = {int(i): re.search(r'fillcolor="([^"]*)"', a).group(1) for i, a in attrs.items()}
    assert fills[f.index] == ORDER_COLOURS[0]
    assert fills[d.index] == ORDER_COLOURS[2]
    assert tape.orders[d.index] == 2
    assert "derivative order" in dot
    assert "derivative order" not in d.to_dot(color_by_order=False)


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


def test_max_nodes_cap_and_override():
    tape = Tape()
    x = tape.var("x", 0.1)
    z = x
    for k in range(40):
        z = sin(z) * (k + 2)
    with pytest.raises(sad.GraphTooLarge, match="max_nodes=None"):
        z.to_dot(max_nodes=50)
    assert len(NODE.findall(z.to_dot(max_nodes=None))) > 50


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
    bundle = d._repr_mimebundle_()
    assert "image/svg+xml" not in bundle and "Graphviz" in bundle["text/plain"]


def test_jupyter_bundle_is_svg_with_ids_unique_per_display():
    _, _, f, d = gaussian(1)
    first, second = d._repr_mimebundle_(), d.tape._repr_mimebundle_()
    assert set(first) == {"image/svg+xml"} and set(second) == {"image/svg+xml"}
    ids = []
    for bundle in (first, second):
        root = ET.fromstring(bundle["image/svg+xml"])
        ids.append({el.get("id") for el in root.iter() if el.get("id")})
    prefixes = [{i.split("_")[0] for i in group} for group in ids]
    assert all(len(p) == 1 for p in prefixes) and prefixes[0] != prefixes[1]
    assert not ids[0] & ids[1]


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
