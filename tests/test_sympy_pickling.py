"""The SymPy forms of the rounding functions cross a process boundary: a budgeted SymPy check
(``timeout=``, the CLI's default) sends SymPy's derivative back from a worker by pickling it."""

import json
import math
import pickle

import pytest
import sympy

import subgraph_ad as sad
from subgraph_ad.cli import main
from subgraph_ad.testing import check_against_sympy

B = 0.7

#: name as the CLI parses it, the Term builder, and d/dx of f(x)·x by hand (f′ = 0 off the jumps)
ROUNDING = {
    "floor": (lambda x: sad.floor(x), lambda v: math.floor(v)),
    "ceil": (lambda x: sad.ceil(x), lambda v: math.ceil(v)),
    "round": (lambda x: sad.round(x), lambda v: round(v)),  # Python's round: half to even, as NumPy's
    "trunc": (lambda x: sad.trunc(x), lambda v: math.trunc(v)),
    "mod": (lambda x: sad.mod(x, B), lambda v: 2 * v - B * math.floor(v / B)),  # (x mod b)·x
    "fmod": (lambda x: sad.fmod(x, B), lambda v: 2 * v - B * math.trunc(v / B)),
}


def cli_expression(name: str) -> str:
    return f"{name}(x, {B})*x" if name in ("mod", "fmod") else f"{name}(x)*x"


@pytest.mark.parametrize("name", sorted(ROUNDING))
def test_sympy_forms_pickle_with_their_derivatives(name):
    build, _ = ROUNDING[name]
    tape = sad.Tape()
    x = tape.var("x", 0.3)
    form = build(x).to_sympy()
    back = pickle.loads(pickle.dumps(form))
    assert back == form and type(back) is type(form)
    # the derivative SymPy leaves unevaluated for its own floor, ceiling, Mod is a number here
    symbol = next(iter(back.free_symbols))
    slope = sympy.diff(back, symbol).subs(symbol, sympy.Float(0.3))
    assert slope.is_number and float(slope) == (1.0 if name in ("mod", "fmod") else 0.0)


@pytest.mark.parametrize("name", sorted(ROUNDING))
def test_budgeted_check_against_sympy(name):
    build, slope = ROUNDING[name]
    tape = sad.Tape()
    x = tape.var("x", 0.3)
    report = check_against_sympy(build(x) * x, x, 1, low=-2.3, high=2.3, timeout=30)
    assert report.status == "pass" and report.oracle == "sympy", str(report)
    for check in report.points:
        assert check.reference == pytest.approx(slope(check.point["x"]), rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("name", sorted(ROUNDING))
def test_cli_verify_and_diff_sympy(name, capsys):
    expression = cli_expression(name)
    assert main(["verify", expression, "--wrt", "x", "--order", "2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [row["status"] for row in out["orders"]] == ["pass", "pass"], out
    assert main(["diff", expression, "--wrt", "x", "--at", "x=1.3", "--sympy", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["check"]["status"] == "pass"
    assert out["derivatives"][1]["value"] == pytest.approx(ROUNDING[name][1](1.3), rel=1e-15)
