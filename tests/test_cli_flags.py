"""Typo'd and abbreviated flags: the error names the subcommand and the nearest option, exit 2."""

import subprocess
import sys

import pytest

from subgraph_ad.cli import build_parser, main


@pytest.mark.parametrize("args, message", [
    (["diff", "x^3", "--wrt", "x", "--oder", "2", "--at", "x=2"],
     "subgraph-ad diff: error: unrecognized argument --oder; did you mean --order?"),
    # abbreviations are off: a prefix is a typo to name, not a silent --order
    (["diff", "x^3", "--wrt", "x", "--ord", "2", "--at", "x=2"],
     "subgraph-ad diff: error: unrecognized argument --ord; did you mean --order?"),
    (["verify", "x^3", "--wrt", "x", "--order", "2", "--point", "3"],
     "subgraph-ad verify: error: unrecognized argument --point; did you mean --points?"),
    (["grad", "x*y", "--at", "x=1,y=2", "--hess"],
     "subgraph-ad grad: error: unrecognized argument --hess; did you mean --hessian?"),
    (["laplacian", "x*y", "--at", "x=1,y=2", "--biharm"],
     "subgraph-ad laplacian: error: unrecognized argument --biharm; did you mean --biharmonic?"),
    # a typo'd required flag: the typo is named, not "the following arguments are required"
    (["render", "x", "--out", "f.svg"],
     "subgraph-ad render: error: unrecognized argument --out; did you mean --output?"),
    (["--quite", "diff", "x", "--wrt", "x"],
     "subgraph-ad: error: unrecognized argument --quite; did you mean --quiet?"),
    (["diff", "x", "--wrt", "x", "--at=x=1", "--zzzzzz"],
     "subgraph-ad diff: error: unrecognized argument --zzzzzz; no option is like it"),
    (["diff", "x", "--wrt", "x", "--oder=2", "--svgg", "f.svg"],
     "subgraph-ad diff: error: unrecognized arguments --oder (did you mean --order?), --svgg (did you mean --svg?)"),
    (["diff", "x", "y", "--wrt", "x"],
     "subgraph-ad diff: error: unrecognized argument y; EXPR is already 'x' (one expression per call"),
])
def test_an_unknown_flag_names_the_subcommand_and_the_nearest_option(args, message, tmp_path, monkeypatch, capsys):
    """It was 'subgraph-ad: error: unrecognized arguments: --oder 2', and --ord was --order."""
    monkeypatch.chdir(tmp_path)  # where --out f.svg, taken for --output, would have drawn
    assert main(args) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1, err
    assert err.startswith(message), err
    assert err.rstrip().endswith("--help)")


def test_no_parser_accepts_abbreviations():
    parser = build_parser()
    subparsers = next(a for a in parser._actions if a.dest == "command").choices
    assert parser.allow_abbrev is False
    assert sorted(subparsers) == ["animate", "diff", "grad", "laplacian", "render", "verify"]
    assert all(p.allow_abbrev is False for p in subparsers.values())


def test_a_real_process_exits_2_on_a_typo():
    done = subprocess.run([sys.executable, "-m", "subgraph_ad.cli", "diff", "x^3", "--wrt", "x", "--oder", "2"],
                          capture_output=True, text=True)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == ("subgraph-ad diff: error: unrecognized argument --oder; did you mean --order? "
                           "(see subgraph-ad diff --help)\n")
