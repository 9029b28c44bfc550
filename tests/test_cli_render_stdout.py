"""``render -o -``: the drawing on standard output, in the format --format names."""

import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from subgraph_ad.cli import main

SVG = "{http://www.w3.org/2000/svg}"


def render(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "subgraph_ad.cli", "render", *args], capture_output=True)


def test_dash_writes_svg_to_standard_output_by_default():
    """It was refused: "-o -: unsupported file type '(none)'"."""
    done = render("x*y + sin(x)", "-o", "-")
    assert done.returncode == 0 and done.stderr == b""
    root = ET.fromstring(done.stdout)
    assert root.tag == f"{SVG}svg"
    texts = {t.text for t in root.iter(f"{SVG}text")}
    assert {"x", "y", "sin"} <= texts  # the vars and the function of the expression, as nodes
    assert b"wrote" not in done.stdout


def test_format_dot_is_the_same_text_as_a_dot_file(tmp_path):
    done = render("x*y + sin(x)", "-o", "-", "--format", "dot", "--at", "x=0.5,y=4.2")
    assert done.returncode == 0 and done.stderr == b""
    assert main(["render", "x*y + sin(x)", "-o", str(tmp_path / "f.dot"), "--at", "x=0.5,y=4.2"]) == 0
    assert done.stdout == (tmp_path / "f.dot").read_bytes()
    assert done.stdout.startswith(b"digraph") and rb"\n= 2.579" in done.stdout  # x*y + sin(x) at the point


@pytest.mark.parametrize("fmt, magic", [("png", b"\x89PNG\r\n\x1a\n"), ("pdf", b"%PDF-")])
def test_binary_formats_are_bytes_on_standard_output(fmt, magic):
    done = render("exp(-x^2/2)", "-o", "-", "--format", fmt)
    assert done.returncode == 0 and done.stderr == b""
    assert done.stdout.startswith(magic)
    if fmt == "png":  # IHDR: a picture of some size, not an empty stream
        width, height = int.from_bytes(done.stdout[16:20], "big"), int.from_bytes(done.stdout[20:24], "big")
        assert width > 10 and height > 10
    else:
        assert done.stdout.rstrip().endswith(b"%%EOF")


def test_in_process_binary_output_goes_to_the_byte_buffer(capsysbinary):
    assert main(["render", "x^2", "-o", "-", "--format", "png"]) == 0
    out, err = capsysbinary.readouterr()
    assert out.startswith(b"\x89PNG\r\n\x1a\n") and err == b""


@pytest.mark.parametrize("args, message", [
    (["-o", "f.png", "--format", "svg"], "-o f.png is a .png file but --format is svg"),
    (["-o", "-", "--format", "jpg"],
     "argument --format: invalid choice: 'jpg' (choose from 'svg', 'dot', 'png', 'pdf')"),
])
def test_a_format_that_cannot_be_is_a_usage_error(args, message, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["render", "x^2", *args]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1 and message in err, err
    assert list(tmp_path.iterdir()) == []


def test_a_binary_format_is_not_written_to_a_terminal(monkeypatch, capsys):
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert main(["render", "x^2", "-o", "-", "--format", "png"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "standard output is a terminal, not a place for a binary PNG" in err
