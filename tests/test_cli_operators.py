"""``subgraph-ad laplacian``: values against SymPy, the --sympy check, JSON, and errors as one
line with the documented exit status."""

import json
import os
import subprocess
import sys
from pathlib import Path

import sympy

from subgraph_ad.cli import main

ROOT = Path(__file__).resolve().parents[1]

X, Y, Z = sympy.symbols("x y z")


def at(expr, **point):
    return float(expr.evalf(30, subs={sympy.Symbol(k): sympy.Float(v, 30) for k, v in point.items()}))


def laplacian(expr, symbols):
    return sum(sympy.diff(expr, s, 2) for s in symbols)


def test_laplacian_and_biharmonic_values_match_sympy(capsys):
    f = sympy.exp(-X**2 - Y**2) * sympy.sin(X)
    assert main(["laplacian", "exp(-x^2-y^2)*sin(x)", "--at", "x=0.5,y=1", "--biharmonic", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    values = {row["operator"]: row["value"] for row in out["operators"]}
    lap = laplacian(f, (X, Y))
    assert abs(values["Δf"] - at(lap, x=0.5, y=1)) <= 1e-12 * abs(at(lap, x=0.5, y=1))
    bih = at(laplacian(lap, (X, Y)), x=0.5, y=1)
    assert abs(values["Δ²f"] - bih) <= 1e-12 * abs(bih)
    assert out["wrt"] == ["x", "y"] and out["nodes"]["f"] < out["nodes"]["tape"]


def test_wrt_restricts_the_vars_and_sympy_checks_each_operator(capsys):
    status = main(["laplacian", "x^2*y^2*z^2", "--at", "x=1,y=2,z=3", "--wrt", "x,y", "--biharmonic", "--sympy"])
    out = capsys.readouterr().out
    assert status == 0
    f = X**2 * Y**2 * Z**2
    lap = laplacian(f, (X, Y))  # 2y²z² + 2x²z²
    rows = {line.split()[0]: float(line.split()[1]) for line in out.splitlines() if line.startswith("Δ")}
    assert rows["Δf"] == at(lap, x=1, y=2, z=3) == 90.0
    assert rows["Δ²f"] == at(laplacian(lap, (X, Y)), x=1, y=2, z=3) == 8 * 9
    assert out.count("against SymPy: pass (symbolic equal") == 2


def test_the_command_line_process_exit_codes():
    """A real process: 0 done; 1 for a var without a value, one line on stderr; 2 for a bad flag."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # this checkout's package, whatever is installed
    run = lambda *args: subprocess.run([sys.executable, "-m", "subgraph_ad.cli", "laplacian", *args],  # noqa: E731
                                       capture_output=True, text=True, env=env)
    done = run("x*y + sin(x)", "--at", "x=0.5,y=4.2")
    assert done.returncode == 0 and done.stderr == ""
    value = next(float(line.split()[1]) for line in done.stdout.splitlines() if line.startswith("Δf"))
    assert abs(value - (-0.479425538604203)) < 1e-14  # Δ(xy + sin x) = −sin x
    missing = run("x*y", "--at", "x=1")
    assert missing.returncode == 1 and "no value for y" in missing.stderr and len(missing.stderr.splitlines()) == 1
    unknown = run("x*y", "--at", "x=1,y=2", "--wrt", "z")
    assert unknown.returncode == 1 and "'z' is not a variable" in unknown.stderr
    bad = run("x*y", "--at", "x=1,y=2", "--wrt", "x,x")
    assert bad.returncode == 2 and "twice" in bad.stderr
    constant = run("3 + 4", "--at", "")
    assert constant.returncode == 1 and "no variables" in constant.stderr
