"""EXPR "-" with several lines: each line in turn where the command prints results, a clear
refusal where it writes one file; it was one expression, 'implicit multiplication is not accepted'."""

import io
import json
import math
import subprocess
import sys

import pytest

from subgraph_ad.cli import main


def feed(monkeypatch, text: str) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(text))


def test_diff_does_each_line_and_json_is_one_document_a_line(monkeypatch, capsys):
    feed(monkeypatch, "x^3\nsin(x)\n")
    assert main(["diff", "-", "--wrt", "x:2", "--at", "x=0.7", "--json"]) == 0
    out, err = capsys.readouterr()
    docs = [json.loads(line) for line in out.splitlines()]
    assert err == "" and [d["expression"] for d in docs] == ["x^3", "sin(x)"]
    assert [d["value"] for d in docs[0]["derivatives"]] == pytest.approx([0.7**3, 3 * 0.7**2, 6 * 0.7], rel=1e-15)
    assert [d["value"] for d in docs[1]["derivatives"]] == pytest.approx(
        [math.sin(0.7), math.cos(0.7), -math.sin(0.7)], rel=1e-15)


def test_text_blocks_are_apart_and_blank_lines_are_skipped(monkeypatch, capsys):
    feed(monkeypatch, "x*y\n\n  exp(x)*y  \n\n")
    assert main(["grad", "-", "--at", "x=0.5,y=2"]) == 0
    out, _ = capsys.readouterr()
    blocks = out.rstrip("\n").split("\n\n")
    assert len(blocks) == 2 and blocks[0].startswith("f = x*y") and blocks[1].startswith("f = y*exp(x)")
    partials = [{row.split()[0]: float(row.split()[1]) for row in block.splitlines() if row.startswith("∂f/∂")}
                for block in blocks]
    assert partials[0] == {"∂f/∂x": 2.0, "∂f/∂y": 0.5}
    assert partials[1] == pytest.approx({"∂f/∂x": 2 * math.exp(0.5), "∂f/∂y": math.exp(0.5)}, rel=1e-15)


def test_a_bad_line_is_named_the_others_go_on_and_the_status_is_1(monkeypatch, capsys):
    feed(monkeypatch, "x^2\nexp(x\n2*x\n")
    assert main(["laplacian", "-", "--at", "x=1.5", "--json"]) == 1
    out, err = capsys.readouterr()
    assert [json.loads(line)["operators"][0]["value"] for line in out.splitlines()] == [2.0, 0.0]
    assert err.startswith("subgraph-ad: error: standard input line 2: bad expression: column 4")
    assert len(err.splitlines()) == 1


@pytest.mark.parametrize("args, why", [
    (["render", "-", "-o", "f.svg"], "(render draws one graph, to f.svg)"),
    (["render", "-", "-o", "-"], "(render draws one graph, to standard output)"),
    (["diff", "-", "--wrt", "x", "--at", "x=1", "--svg", "f.svg"], "(--svg and --animate write one file each)"),
])
def test_a_command_that_writes_one_file_refuses_two_lines(args, why, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    feed(monkeypatch, "x^2\nx^3\n")
    assert main(args) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1
    assert f"error: standard input has 2 lines; give one expression per call {why}" in err
    assert list(tmp_path.iterdir()) == []


def test_a_line_past_max_length_is_named(monkeypatch, capsys):
    feed(monkeypatch, "x\nx^2\n" + "x" * 11 + "\nx^3\n")
    assert main(["grad", "-", "--at", "x=1", "--max-length", "10"]) == 2
    out, err = capsys.readouterr()
    assert "the expression on standard input line 3 is longer than --max-length 10 characters" in err
    assert out.count("f = x") == 2 and "x**3" not in out  # lines 1 and 2 were done, and nothing after 3


def test_a_real_pipe_of_two_lines():
    done = subprocess.run([sys.executable, "-m", "subgraph_ad.cli", "diff", "-", "--wrt", "x", "--at", "x=2"],
                          input="x^2\nx^3\n", capture_output=True, text=True)
    assert done.returncode == 0 and done.stderr == ""
    values = [float(line.split()[2]) for line in done.stdout.splitlines() if line.lstrip().startswith("1  df/dx")]
    assert values == [4.0, 12.0]
