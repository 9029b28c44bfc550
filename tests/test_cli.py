"""The subgraph-ad command: real processes for exit codes and stderr, in-process for the rest."""

import io
import json
import math
import os
import re
import subprocess
import sys
import time
import uuid
import xml.etree.ElementTree as ET

import pytest

import subgraph_ad as sad
import sympy

from subgraph_ad.cli import main


def run(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "subgraph_ad.cli", *args], capture_output=True, text=True,
                          env=env)


def gaussian_d4(x: float) -> float:
    return (x**4 - 6 * x**2 + 3) * math.exp(-x * x / 2)


def test_diff_prints_every_order_at_the_point():
    done = run("diff", "exp(-x^2/2)", "--wrt", "x", "--order", "4", "--at", "x=0.3")
    assert done.returncode == 0 and done.stderr == ""
    rows = {line.split()[1]: float(line.split()[2]) for line in done.stdout.splitlines()
            if line.strip()[:1].isdigit()}
    assert rows["d⁴f/dx⁴"] == pytest.approx(gaussian_d4(0.3), rel=1e-12)
    assert rows["f"] == pytest.approx(math.exp(-0.045), rel=1e-15)
    assert "tape: 8 nodes for f" in done.stdout


def test_method_chooses_taylor_mode_or_gen_graph_with_equal_values(capsys):
    counts, values = {}, {}
    for method in ("graph", "taylor", "auto"):
        assert main(["diff", "tanh(tanh(tanh(x)))", "--wrt", "x", "--order", "10", "--at", "x=0.3",
                     "--method", method, "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        counts[method] = [d.get("new_nodes") for d in out["derivatives"][1:]]
        values[method] = [d["value"] for d in out["derivatives"]]
        assert sum(counts[method]) == out["nodes"]["tape"] - out["nodes"]["f"]
    # F4 of the benchmark: 441 nodes for all ten orders in Taylor mode, 818 by repeated gen_graph
    assert sum(counts["taylor"]) == 441 and sum(counts["graph"]) == 818
    assert counts["auto"] == counts["taylor"]
    assert values["taylor"] == pytest.approx(values["graph"], rel=1e-10)
    assert main(["verify", "tanh(x)", "--wrt", "x", "--order", "4", "--method", "taylor"]) == 0
    assert "result: 4 pass" in capsys.readouterr().out


def test_json_output_with_mixed_derivative_and_sympy_check(capsys):
    status = main(["diff", "x*y + sin(x)", "--wrt", "x", "--wrt", "y", "--at", "x=0.5,y=4.2", "--sympy", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert status == 0
    assert out["value"] == 1.0 and out["wrt"] == ["x", "y"]
    assert out["derivatives"][1]["value"] == pytest.approx(4.2 + math.cos(0.5), rel=1e-15)
    assert out["check"]["status"] == "pass"
    assert sympy.sympify(out["sympy"]) == 1


def test_at_values_may_be_constant_expressions(capsys):
    assert main(["diff", "sin(x)", "--wrt", "x", "--order", "2", "--at", "x=pi/6", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["value"] == pytest.approx(-0.5, rel=1e-15)


def test_non_finite_values_are_json_strings(capsys):
    assert main(["diff", "log(x)", "--wrt", "x", "--at", "x=0", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["derivatives"][0]["value"] == "-inf" and out["value"] == "inf"


def test_svg_and_html_animation_are_written(tmp_path, capsys):
    svg, page = tmp_path / "d.svg", tmp_path / "d.html"
    status = main(["diff", "exp(-x^2/2)", "--wrt", "x", "--order", "3", "--at", "x=0.5",
                   "--svg", str(svg), "--animate", str(page)])
    out = capsys.readouterr().out
    assert status == 0
    assert ET.parse(svg).getroot().tag.endswith("svg")
    assert page.read_text(encoding="utf-8").count("<svg") == 1
    assert f"wrote {page}" in out and "frames" in out
    third = next(line for line in out.splitlines() if "d³f/dx³" in line)
    # d3/dx3 exp(-x^2/2) = (3x - x^3) exp(-x^2/2)
    assert float(third.split()[2]) == pytest.approx((1.5 - 0.125) * math.exp(-0.125), rel=1e-12)


def test_animate_twice_writes_one_recording_in_two_formats(tmp_path, capsys):
    svg, page = tmp_path / "d.svg", tmp_path / "d.html"
    status = main(["diff", "sin(x)*x", "--wrt", "x", "--order", "2", "--at", "x=0.5",
                   "--animate", str(svg), "--animate", str(page), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert status == 0 and [a["path"] for a in out["animations"]] == [str(svg), str(page)]
    assert out["animations"][0]["frames"] == out["animations"][1]["frames"] > 1
    assert svg.stat().st_size > 0 and page.stat().st_size > 0
    # d²/dx² (x sin x) = 2 cos x − x sin x
    assert out["value"] == pytest.approx(2 * math.cos(0.5) - 0.5 * math.sin(0.5), rel=1e-12)
    assert out["derivatives"][2]["new_nodes"] > 0


def test_a_drawing_over_max_nodes_names_the_flag(tmp_path, capsys):
    assert main(["render", "x*y + sin(x)", "-o", str(tmp_path / "f.svg"), "--max-nodes", "3"]) == 1
    assert capsys.readouterr().err == ("subgraph-ad: error: the drawing would have 5 nodes, more than --max-nodes 3; "
                                       "Graphviz layout time grows steeply with size: raise it (--max-nodes 5, "
                                       "or 0 for no cap)\n")


def test_render_command(tmp_path, capsys):
    target = tmp_path / "f.dot"
    assert main(["render", "x*y + sin(x)", "-o", str(target), "--at", "x=0.5,y=4.2"]) == 0
    text = target.read_text()
    assert text.startswith("digraph") and r"\n= 2.579" in text  # value of x*y + sin(x), 4 digits


def test_verify_table_and_exit_status():
    done = run("verify", "exp(-x^2/2)", "--wrt", "x", "--order", "3")
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in done.stdout.splitlines() if line.strip()[:1].isdigit()]
    assert [r[2] for r in rows] == ["pass"] * 3
    assert "result: 3 pass" in done.stdout


def test_verify_exits_non_zero_on_a_failing_check(monkeypatch, capsys):
    import subgraph_ad.cli.commands as cli
    from subgraph_ad.testing import Report

    monkeypatch.setattr(cli, "check_against_sympy", lambda *a, **k: Report("x", ["x"], "fail", "unknown"))
    assert main(["verify", "x^2", "--wrt", "x"]) == 1
    assert "result: 1 fail" in capsys.readouterr().out


@pytest.mark.parametrize("args, message", [
    (["diff", "exp(x", "--wrt", "x"], "bad expression: column"),
    (["diff", "x^2 +* 3", "--wrt", "x"], "bad expression: column"),
    (["diff", "x^2", "--wrt", "x", "--at", "y=1"], "'y', which is not a variable of the expression (variables: x)"),
    (["render", "x^2", "-o", "/nonexistent-dir/f.svg"], "cannot write /nonexistent-dir/f.svg: directory"),
])
def test_errors_are_one_line(args, message, capsys):
    assert main(args) == 1
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("subgraph-ad: error: "), err
    assert message in lines[0]


def test_a_real_process_reports_an_error_without_traceback():
    done = run("diff", "exp(x", "--wrt", "x")
    assert done.returncode == 1 and done.stdout == ""
    assert len(done.stderr.splitlines()) == 1  # the wording of the syntax error varies with Python
    assert done.stderr.startswith("subgraph-ad: error: bad expression: column ")


@pytest.mark.parametrize("args, message", [
    (["diff", "x"], "the following arguments are required: --wrt"),
    ([], "a command is required"),
    (["frobnicate"], "invalid choice: 'frobnicate'"),
    (["diff", "x^2", "--wrt", "x", "--order", "0"], "argument --order: must be at least 1, got 0"),
    (["verify", "x^2", "--wrt", "x", "--points", "0"], "argument --points: must be at least 1, got 0"),
    (["verify", "x^2", "--wrt", "x", "--range", "1", "0"], "--range needs LOW < HIGH, got 1 0"),
    (["diff", "x^2", "--wrt", "x", "--wrt", "y", "--order", "2"], "--order 2 goes with a single --wrt VAR"),
    (["diff", "x^2", "--wrt", "x:0"], "--wrt x:0: a count must be at least 1"),
    (["diff", "x^2", "--wrt", "x:two"], "--wrt takes VAR, VAR:N or a list like x:2,y"),
    (["diff", "x^2", "--wrt", "x", "--at", "x=abc"], "--at x: the value 'abc' must be a number"),
    (["diff", "x^2", "--wrt", "x", "--at", "x"], "--at takes name=value pairs"),
    (["render", "x^2", "-o", "f.jpg"], "unsupported file type '.jpg'"),
    (["diff", "x^2", "--wrt", "x", "--sympy-timeout", "-1"], "argument --sympy-timeout: must be a finite number"),
    (["grad", "x*y", "--wrt", "x:2", "--at", "x=1,y=1"], "--wrt names a var twice: x, x"),
])
def test_usage_errors_exit_2_with_one_line(args, message, capsys):
    """Usage errors (--order 0 was exit 1) are exit 2 everywhere, one line pointing at --help."""
    assert main(args) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1 and "--help)" in err, err
    assert message in err


def test_missing_graphviz_is_one_line_with_install_hint(tmp_path):
    env = dict(os.environ, PATH="")
    done = run("render", "x^2", "-o", str(tmp_path / "f.svg"), env=env)
    assert done.returncode == 1
    assert len(done.stderr.splitlines()) == 1 and "apt-get install graphviz" in done.stderr


def test_help_everywhere_has_examples(capsys):
    for args in ([], ["diff"], ["render"], ["verify"], ["grad"]):
        assert main([*args, "--help"]) == 0
        assert "examples:" in capsys.readouterr().out


def test_no_progress_messages_when_not_on_a_terminal(tmp_path):
    done = run("diff", "sin(x)*x", "--wrt", "x", "--order", "2", "--at", "x=1", "--animate", str(tmp_path / "a.svg"))
    assert done.returncode == 0 and done.stderr == ""


# -- functions, --fn and constants -----------------------------------------------------------------
MODULE = '''
import numpy as np
import subgraph_ad as sad
from subgraph_ad.functions import BinaryFn


class Softplus(sad.UnaryFn):
    name = "softplus"

    def f(self, v):
        return np.logaddexp(0.0, v)

    def grad(self, v):
        return 1 / (1 + np.exp(-v))

    def fdiff(self, input, output):
        return sad.sigmoid(input)


class Mean(BinaryFn):
    name = "mean2"

    def f(self, a, b):
        return (a + b) / 2

    def grad(self, a, b):
        return 0.5, 0.5

    def fdiff(self, lhs, rhs, output):
        return lhs.tape.const(0.5), lhs.tape.const(0.5)


softplus = Softplus()
mean2 = Mean()
number = 3
'''


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    """A module of user functions in a fresh current directory, under a name unique to the test
    (imported modules stay in sys.modules)."""
    name = f"userfns_{uuid.uuid4().hex[:12]}"
    (tmp_path / f"{name}.py").write_text(MODULE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    yield name
    sys.modules.pop(name, None)


def test_fn_registers_a_user_function_for_the_run(user_module, capsys):
    import subgraph_ad as sad

    before = dict(sad.FUNCTIONS)
    assert main(["diff", "softplus(x) + mean2(x, 3*x)", "--fn", f"{user_module}:softplus", "--default", "0",
                 "--fn", f"{user_module}:mean2", "--wrt", "x", "--order", "2", "--at", "x=0.5", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    s = 1 / (1 + math.exp(-0.5))
    assert [d["value"] for d in out["derivatives"]] == pytest.approx(
        [math.log1p(math.exp(0.5)) + 1.0, s + 2.0, s * (1 - s)], rel=1e-14)
    assert sad.FUNCTIONS == before  # known only while the command ran


def test_fn_with_sympy_check_is_inconclusive_not_a_failure(user_module, capsys):
    assert main(["verify", "softplus(x^2)", "--fn", f"{user_module}:softplus", "--wrt", "x", "--order", "2"]) == 0
    out = capsys.readouterr().out
    assert "note: SymPy cannot evaluate softplus: no to_sympy" in out
    assert "result: 2 inconclusive" in out


def test_fn_in_a_real_process_imports_from_the_current_directory(tmp_path):
    (tmp_path / "myfuncs.py").write_text(MODULE)
    done = subprocess.run([sys.executable, "-m", "subgraph_ad.cli", "render", "softplus(x)", "--fn",
                           "myfuncs:softplus", "-o", "f.dot"], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert "softplus" in (tmp_path / "f.dot").read_text()


@pytest.mark.parametrize("spec, message", [
    ("{m}", "--fn {m}: expected module:name, e.g. --fn myfuncs:softplus"),
    (":softplus", "--fn :softplus: expected module:name"),
    ("{m}:", "--fn {m}:: expected module:name"),
    ("no_such_module_xyz:softplus", "--fn no_such_module_xyz:softplus: no module named 'no_such_module_xyz' "
                                    "(looked in the current directory"),
    ("{m}:nope", "--fn {m}:nope: module {m} has no attribute 'nope' (its UnaryFn/BinaryFn instances: mean2, softplus)"),
    ("{m}:number", "--fn {m}:number: {m}.number is int 3; expected a UnaryFn or BinaryFn instance"),
    ("{m}:Softplus", "--fn {m}:Softplus: {m}.Softplus is the class Softplus; expected an instance of it"),
])
def test_a_bad_fn_spec_is_one_line_and_exit_status_2(user_module, spec, message, capsys):
    spec, message = spec.format(m=user_module), message.format(m=user_module)
    assert main(["diff", "x", "--wrt", "x", "--fn", spec]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1, err
    assert err.startswith(f"subgraph-ad: error: {message}"), err


def test_a_bad_fn_spec_in_a_real_process_has_no_traceback(tmp_path):
    done = subprocess.run([sys.executable, "-m", "subgraph_ad.cli", "verify", "x", "--wrt", "x", "--fn", "nomod:f"],
                          capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [done.stderr.strip()]
    assert done.stderr.startswith("subgraph-ad: error: --fn nomod:f: no module named 'nomod'")


def test_help_lists_the_registered_functions_and_the_constants(user_module, capsys):
    import subgraph_ad as sad

    for command in ("diff", "render", "verify"):
        assert main([command, "--help"]) == 0
        out = capsys.readouterr().out
        listed = out[out.index("functions of one argument"):]
        public = [name for name in sad.FUNCTIONS if name in sad.__all__]
        assert len(public) > 40 and all(name in listed.split() for name in public), command
        assert "sin" in listed.split() and "atan2" in listed.split()
        assert f"pi (also PI) = {math.pi!r}" in listed and f"e (also E) = {math.e!r}" in listed
        assert "--fn MODULE:NAME" in out
    # a function loaded before --help is listed too
    assert main(["diff", "--fn", f"{user_module}:softplus", "--help"]) == 0
    assert "softplus" in capsys.readouterr().out.split()


def test_e_is_the_constant(capsys):
    assert main(["diff", "e^x", "--wrt", "x", "--at", "x=0"]) == 0
    out = capsys.readouterr().out
    assert f"constants: e = {math.e!r}" in out.splitlines()[:2]
    rows = [line.split() for line in out.splitlines() if line.strip()[:1].isdigit()]
    assert [float(r[2]) for r in rows] == [1.0, 1.0]  # e^0 and d/dx e^x = e^x at 0
    assert main(["diff", "pi*sin(x) + E", "--wrt", "x", "--order", "2", "--at", "x=pi/2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["constants"] == {"pi": math.pi, "E": math.e}
    assert [d["value"] for d in out["derivatives"]] == pytest.approx([math.pi + math.e, 0.0, -math.pi], abs=1e-14)
    assert main(["verify", "x^e", "--wrt", "x", "--order", "2"]) == 0
    out = capsys.readouterr().out
    assert f"constants: e = {math.e!r}" in out and "result: 2 pass" in out
    assert main(["diff", "x^2", "--wrt", "x", "--at", "x=1", "--json"]) == 0
    assert "constants" not in json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("args, message", [
    (["diff", "e^x", "--wrt", "x", "--at", "e=1"],
     f"--at e: e is the constant {math.e!r} in expressions, not a variable of the expression (variables: x)"),
    (["diff", "x^2", "--wrt", "x", "--at", "x=1,pi=3"], f"--at pi: pi is the constant {math.pi!r}"),
    (["diff", "e^x", "--wrt", "e"], "--wrt e: e is the constant"),
    (["verify", "x*pi", "--wrt", "pi"], "--wrt pi: pi is the constant"),
])
def test_a_constant_is_not_a_variable(args, message, capsys):
    assert main(args) == 1
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1
    assert err.startswith(f"subgraph-ad: error: {message}"), err


# -- every var needs a value; grad ------------------------------------------------------------------
def test_a_var_without_a_value_is_an_error_naming_it(capsys):
    assert main(["diff", "x*y + sin(x)", "--wrt", "x", "--at", "x=0.5"]) == 1
    assert "no value for y: give --at y=..., or --default V" in capsys.readouterr().err
    assert main(["diff", "x*y + sin(x)", "--wrt", "x", "--at", "x=0.5", "--default", "4.2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["point"] == {"x": 0.5, "y": 4.2} and out["derivatives"][1]["value"] == pytest.approx(4.2 + math.cos(0.5))


def test_grad_prints_the_gradient_and_hessian_checked_against_sympy(capsys):
    assert main(["grad", "x*y + sin(x)", "--at", "x=0.5,y=4.2", "--hessian", "--sympy"]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: line.split()[1] for line in out.splitlines() if line.strip().startswith("∂f/∂")}
    assert float(rows["∂f/∂x"]) == pytest.approx(4.2 + math.cos(0.5), rel=1e-14) and float(rows["∂f/∂y"]) == 0.5
    assert "check against SymPy: pass (5 pass, 0 fail, 0 inconclusive partials)" in out
    assert main(["grad", "x^2*y + y^3", "--at", "x=1,y=2", "--hessian", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["gradient"] == [4.0, 13.0] and out["hessian"] == [[4.0, 2.0], [2.0, 12.0]]
    assert main(["grad", "x*y", "--at", "x=1"]) == 1
    assert "no value for y" in capsys.readouterr().err


@pytest.mark.parametrize("name", sorted(n for n in sad.FUNCTIONS))
def test_every_function_works_on_the_command_line(name, capsys):
    fn = sad.FUNCTIONS[name]
    arg = "x + 1.5" if name == "acosh" else "x / 2"  # inside every domain at x = 0.5
    text = f"{name}({arg}, 2)" if fn.arity == 2 else f"{name}({arg})"
    assert main(["diff", text, "--wrt", "x", "--order", "2", "--at", "x=0.5", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    tape = sad.Tape()
    x = tape.var("x", 0.5)
    t = sad.parse(text, tape=tape)
    assert out["derivatives"][2]["value"] == pytest.approx(t.diff(x, 2).eval(), rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("command", ["diff", "verify"])
def test_wrt_naming_a_var_not_in_the_expression_is_an_error(command, capsys):
    """``--wrt X`` for ``x*y`` used to print df/dX = 0 with exit 0 (and verify said pass)."""
    assert main([command, "x*y", "--wrt", "X", "--at", "x=1,y=2"][: 4 if command == "verify" else 6]) == 1
    assert "--wrt X: 'X' is not a variable of the expression (variables: x, y)" in capsys.readouterr().err


# -- expressions: a leading minus, standard input, limits -------------------------------------------
@pytest.mark.parametrize("text, truth", [
    ("-x^2", lambda x: -2 * x),
    ("-sin(x)", lambda x: -math.cos(x)),
    ("-2*x", lambda x: -2.0),
    ("-(x+1)^2", lambda x: -2 * (x + 1)),
    ("-x", lambda x: -1.0),
    ("-e^x", lambda x: -math.exp(x)),
])
def test_an_expression_may_start_with_a_minus(text, truth, capsys):
    """'-x^2' was taken for an option: 'the following arguments are required: EXPR'."""
    assert main(["diff", text, "--wrt", "x", "--at", "x=0.7", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["expression"] == text and out["value"] == pytest.approx(truth(0.7), rel=1e-15)
    assert main(["diff", "--wrt", "x", text, "-q", "--at", "x=0.7", "--json"]) == 0  # anywhere, next to options
    assert json.loads(capsys.readouterr().out)["value"] == pytest.approx(truth(0.7), rel=1e-15)


def test_dash_reads_the_expression_from_standard_input(monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.StringIO("exp(-x^2/2)\n"))
    assert main(["diff", "-", "--wrt", "x:2", "--at", "x=0.3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["expression"] == "exp(-x^2/2)"
    assert out["value"] == pytest.approx((0.09 - 1) * math.exp(-0.045), rel=1e-14)  # (x² - 1) e^(-x²/2)
    monkeypatch.setattr(sys, "stdin", io.StringIO("x" * 5001))  # read no further than the limit
    assert main(["render", "-", "-o", "f.dot"]) == 2
    assert "the expression on standard input is longer than --max-length 5000 characters" in capsys.readouterr().err


def test_wrt_counts_and_lists_mean_the_same_as_repeated_wrt(capsys):
    results = []
    for wrt in (["--wrt", "x:2,y"], ["--wrt", "x", "--wrt", "x", "--wrt", "y"], ["--wrt", "x:2", "--wrt", "y"]):
        assert main(["diff", "x^3*y^2 + sin(x*y)", *wrt, "--at", "x=0.5,y=1.5", "--json"]) == 0
        results.append(json.loads(capsys.readouterr().out))
    assert all(r["wrt"] == ["x", "x", "y"] for r in results)
    assert results[0]["derivatives"] == results[1]["derivatives"] == results[2]["derivatives"]
    x, y = sympy.symbols("x y")
    truth = sympy.diff(x**3 * y**2 + sympy.sin(x * y), x, 2, y).subs({x: 0.5, y: 1.5})
    assert results[0]["value"] == pytest.approx(float(truth), rel=1e-14)


@pytest.mark.parametrize("args, status, flag", [
    (["diff", "x^2", "--wrt", "x", "--order", "201"], 2, "more than --max-order 200; raise it with --max-order N"),
    (["verify", "x^2", "--wrt", "x:3,y", "--max-order", "3"], 2, "4 derivatives asked for, more than --max-order 3"),
    (["diff", "x" + "+x" * 2500, "--wrt", "x"], 2, "longer than --max-length 5000 characters; raise it"),
    (["diff", "exp(-x^2/2)", "--wrt", "x", "--order", "40", "--method", "graph", "--at", "x=1",
      "--max-tape-nodes", "300"], 1, "max_nodes=300 (on the command line: raise --max-tape-nodes, or 0 for no limit)"),
])
def test_limits_name_the_flag_that_raises_them(args, status, flag, capsys):
    assert main(args) == status
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1 and flag in err, err


def test_raised_limits_let_the_work_through(capsys):
    assert main(["diff", "sin(x)", "--wrt", "x", "--order", "201", "--max-order", "0", "--at", "x=1",
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["value"] == pytest.approx(math.cos(1.0), rel=1e-12)  # 201 = 1 mod 4
    assert main(["diff", "x" + "+x" * 2500, "--wrt", "x", "--max-length", "0", "--at", "x=1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["value"] == 2501.0


# -- outputs ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("outputs", [
    ["--svg", "{d}/d4.svg", "--animate", "{d}/d4.svg"],
    ["--svg", "{d}/d4.svg", "--animate", "{d}/sub/../d4.svg"],
    ["--animate", "{d}/a.html", "--animate", "{d}/a.svg", "--animate", "{d}/./a.html"],
    ["--svg", "{d}/link.svg", "--animate", "{d}/target.svg"],
])
def test_two_outputs_to_one_file_are_refused_before_any_work(outputs, tmp_path, capsys):
    """--svg d4.svg --animate d4.svg wrote the static drawing over the animation and said both were written."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "target.svg").write_text("keep")
    (tmp_path / "link.svg").symlink_to(tmp_path / "target.svg")
    args = [o.format(d=tmp_path) for o in outputs]
    assert main(["diff", "exp(-x^2/2)", "--wrt", "x", "--order", "4", "--at", "x=0", *args]) == 2
    out, err = capsys.readouterr()
    flags = [a for a in args if a.startswith("--")]
    assert out == "" and "name the same file" in err and all(flag in err for flag in set(flags)), err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.svg", "sub", "target.svg"]
    assert (tmp_path / "target.svg").read_text() == "keep"


def test_max_frames_limits_a_gif_and_its_message_names_it(tmp_path, capsys):
    gif = tmp_path / "a.gif"
    assert main(["diff", "exp(-x^2/2)", "--wrt", "x", "--order", "3", "--at", "x=0", "--animate", str(gif),
                 "--max-frames", "3"]) == 1
    out, err = capsys.readouterr()
    found = re.fullmatch(r"subgraph-ad: error: the GIF would have (\d+) frames, more than --max-frames 3; raise it "
                         r"\(--max-frames \1, or 0 for no cap\), use --per pass \(one frame per derivative order\), "
                         r"or write \.html or \.svg\n", err)
    assert found and int(found[1]) > 3 and not gif.exists(), err
    assert main(["diff", "exp(-x^2/2)", "--wrt", "x", "--order", "3", "--at", "x=0", "--animate", str(gif),
                 "--per", "pass", "--max-frames", "4"]) == 0  # f and three orders
    assert gif.read_bytes()[:6] in (b"GIF87a", b"GIF89a")


# -- SymPy: a compact form and a time budget -----------------------------------------------------------
def tanh_derivative(n: int, x: float) -> float:
    """d^n/dx^n tanh = P_n(tanh) with P_0 = u, P_(k+1) = (1 - u²) P_k': exact, independent of SymPy's diff."""
    u = sympy.Symbol("u")
    p = sympy.Poly(u, u)
    for _ in range(n):
        p = sympy.Poly(1 - u**2, u) * p.diff(u)
    return float(p.eval(sympy.Float(math.tanh(x), 40)))


def test_sympy_form_is_compact_and_means_the_derivative(capsys):
    """tanh at order 14 printed a 162 KB line; now repeated parts are numbered temporaries."""
    assert main(["diff", "tanh(x)", "--wrt", "x", "--order", "9", "--at", "x=0.3", "--sympy",
                 "--max-sympy-chars", "0", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    *temporaries, result = out["sympy"].splitlines()
    assert temporaries[0] == "t0 = tanh(x)" and len(out["sympy"]) < 1000
    names: dict = {}
    for line in temporaries:
        name, value = line.split(" = ")
        names[name] = sympy.sympify(value, locals=dict(names))
    value = sympy.sympify(result, locals=names).subs(sympy.Symbol("x"), 0.3)
    assert float(value) == pytest.approx(tanh_derivative(9, 0.3), rel=1e-12)
    assert main(["diff", "tanh(x)", "--wrt", "x", "--order", "9", "--at", "x=0.3", "--sympy",
                 "--max-sympy-chars", "200"]) == 0
    text = capsys.readouterr().out
    assert "SymPy form of d⁹f/dx⁹ (repeated parts as numbered temporaries):\n  t0 = tanh(x)" in text
    assert "  (cut to 200 characters; raise --max-sympy-chars to see more)" in text
    assert max(len(line) for line in text.splitlines()) < 200


def test_past_the_sympy_budget_the_check_is_inconclusive_and_mpmath_stands_in(capsys):
    """SymPy needs about 9 s for d¹⁴/dx¹⁴ tanh; with --sympy-timeout 1 the run ends, says why, and
    checks the points against mpmath."""
    assert main(["diff", "tanh(x)", "--wrt", "x", "--order", "14", "--at", "x=0.3", "--sympy",
                 "--sympy-timeout", "1", "--json"]) == 0
    check = json.loads(capsys.readouterr().out)["check"]
    assert check["symbolic"] == "inconclusive (SymPy took > 1 s)" and check["oracle"] == "mpmath"
    assert check["status"] == "pass" and len(check["points"]) == 5
    for p in check["points"]:
        assert p["reference"] == pytest.approx(tanh_derivative(14, p["point"]["x"]), rel=1e-13)


def sleeping(*args):
    time.sleep(60)
    yield


def test_a_sympy_form_past_the_budget_is_not_shown_and_says_why(monkeypatch, capsys):
    from subgraph_ad.interop import sympy_form

    monkeypatch.setattr(sympy_form, "_compact_sympy", sleeping)  # the forked worker inherits it
    assert main(["diff", "sin(x)", "--wrt", "x", "--at", "x=1", "--sympy", "--sympy-timeout", "0.5"]) == 0
    out = capsys.readouterr().out
    assert "SymPy form of df/dx: not shown: SymPy took > 0.5 s (raise --sympy-timeout)\n" in out
    assert "check against SymPy: pass (symbolic equal; points by sympy: 5 pass" in out


def test_verify_rows_stream_and_a_closed_pipe_ends_quietly():
    """Rows arrive while later orders are still being checked; when the reader goes away (| head)
    the command stops quietly with 141 (it printed 'error: [Errno 32] Broken pipe', exit 1)."""
    process = subprocess.Popen([sys.executable, "-m", "subgraph_ad.cli", "verify", "tanh(x)", "--wrt", "x",
                                "--order", "20", "--sympy-timeout", "1"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lines = [process.stdout.readline() for _ in range(4)]  # f = ..., header, rule, order 1
        assert lines[3].split()[:3] == ["1", "df/dx", "pass"], lines
        assert process.poll() is None  # still working on the later orders
        process.stdout.close()
        assert process.wait(timeout=60) == 141
        assert process.stderr.read() == ""
    finally:
        process.kill()
        process.wait()


def test_verify_reports_the_budget_per_order(capsys):
    assert main(["verify", "x^3", "--wrt", "x", "--order", "2", "--sympy-timeout", "7"]) == 0
    out = capsys.readouterr().out
    assert "seed 0, SymPy budget 7 s per order" in out.splitlines()[0]
    assert out.splitlines()[1].split() == ["order", "derivative", "status", "symbolic", "reference", "pass", "fail",
                                           "inconclusive"]


# -- progress --------------------------------------------------------------------------------------
def test_progress_is_drawn_when_enabled_and_not_with_quiet(capsys):
    from subgraph_ad import progress

    before = progress.enable(True)
    try:
        assert main(["verify", "x^3", "--wrt", "x", "--order", "2"]) == 0
        out, err = capsys.readouterr()
        assert "checking against SymPy" in err and "order" in err and "result: 2 pass" in out
        assert "checking against SymPy" not in out
        for quiet in (["--quiet", "verify"], ["verify", "-q"]):
            assert main([*quiet, "x^3", "--wrt", "x", "--order", "2"]) == 0
            assert capsys.readouterr().err == ""
        assert progress.is_enabled()  # --quiet held only while the command ran
    finally:
        progress.enable(before)


def test_progress_on_a_terminal_and_none_when_piped():
    """stderr a real terminal (a pty): the bar is drawn there; stdout, piped, has rows only."""
    import fcntl
    import pty
    import struct
    import termios

    primary, secondary = pty.openpty()
    # a window of 24 x 100 (a new pty has 0 columns, where tqdm draws nothing)
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    try:
        done = subprocess.run([sys.executable, "-m", "subgraph_ad.cli", "verify", "sin(x)^3", "--wrt", "x",
                               "--order", "3"], stdout=subprocess.PIPE, stderr=secondary, text=True, timeout=120)
        os.close(secondary)
        seen = b""
        while True:
            try:
                chunk = os.read(primary, 65536)
            except OSError:  # EIO: the terminal has no writer left
                break
            if not chunk:
                break
            seen += chunk
    finally:
        os.close(primary)
    assert done.returncode == 0 and b"checking against SymPy" in seen
    assert "checking" not in done.stdout and "\r" not in done.stdout and "result: 3 pass" in done.stdout


# -- no silent wrong answers (issue "No silent wrong answers", 8, 10, 11) --------------------------
SHADOW = '''
import pathlib
pathlib.Path({marker!r}).write_text("a graphviz.py in the current directory was run")
raise ImportError("not the real graphviz")
'''


def test_fn_does_not_leave_the_current_directory_on_sys_path(tmp_path):
    """--fn imports the named module from the current directory and nothing else from there: a
    graphviz.py next to it was run when render imported graphviz later. Run as the installed
    `subgraph-ad` script runs (-P: no current directory of its own on sys.path)."""
    marker = tmp_path / "marker.txt"
    (tmp_path / "myfuncs.py").write_text(MODULE)
    (tmp_path / "graphviz.py").write_text(SHADOW.format(marker=str(marker)))
    root = os.path.dirname(os.path.dirname(sad.__file__))
    env = dict(os.environ, PYTHONPATH=root)
    done = subprocess.run([sys.executable, "-P", "-m", "subgraph_ad.cli", "render", "softplus(x)", "--fn",
                           "myfuncs:softplus", "-o", "f.svg"], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert not marker.exists()
    assert ET.parse(tmp_path / "f.svg").getroot().tag.endswith("svg")  # drawn by the real graphviz


def test_fn_restores_sys_path_in_process(user_module, capsys):
    before = list(sys.path)
    assert main(["diff", "softplus(x)", "--fn", f"{user_module}:softplus", "--wrt", "x", "--at", "x=0", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["value"] == 0.5  # softplus'(0) = sigmoid(0)
    assert sys.path == before


@pytest.mark.parametrize("args, message", [
    (["diff", "x^2", "--wrt", "x:99999999999999999999"],
     "99999999999999999999 derivatives asked for, more than --max-order 200"),
    (["diff", "x^2", "--wrt", "x", "--order", "99999999999999999999"],
     "99999999999999999999 derivatives asked for, more than --max-order 200"),
    (["verify", "x*y", "--wrt", "x:3,y:99999999999999999999"],
     "100000000000000000002 derivatives asked for, more than --max-order 200"),
    (["diff", "x^2", "--wrt", "x:99999999999999999999", "--max-order", "0"],
     f"99999999999999999999 derivatives asked for, more than a list can hold ({sys.maxsize})"),
    (["diff", "x*y", "--wrt", "x", "--at", "x=1,y=2,x=3"], "--at names x twice (x=1 and x=3); give each var one value"),
    (["diff", "x*y", "--wrt", "x", "--at", "x=1,y=2", "--at", "x = 1"],
     "--at names x twice (x=1 and x = 1); give each var one value"),
    (["verify", "x^2", "--wrt", "x", "--points", "99999999999999999999"],
     "argument --points: at most 10000 points, got 99999999999999999999"),
    (["diff", "x^2", "--wrt", "x:²"], "--wrt takes VAR, VAR:N or a list like x:2,y"),  # isdigit, not int()
])
def test_huge_counts_and_repeated_values_are_usage_errors(args, message, capsys):
    """A huge count ended as 'unexpected OverflowError' (exit 1) or hung; a repeated --at var
    silently took its last value."""
    assert main(args) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1 and "--help)" in err, err
    assert message in err


@pytest.mark.parametrize("text, value, slope", [
    ("nan", "nan", "nan"), ("inf", "inf", "inf"), ("-inf", "inf", "-inf"), ("+inf", "inf", "inf"), ("NaN", "nan", "nan"),
])
def test_at_takes_ieee_values(text, value, slope, capsys):
    """Values are IEEE: x = nan, inf, -inf are points like any other (x² and 2x there, by IEEE)."""
    assert main(["diff", "x^2", "--wrt", "x", "--at", f"x={text}", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [d["value"] for d in out["derivatives"]] == [value, slope]
    assert out["point"] == {"x": str(float(text))}
    assert main(["grad", "x*y", "--at", f"x={text},y=2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["gradient"] == [2.0, {"nan": "nan", "inf": "inf", "-inf": "-inf"}[
        str(float(text))]]


def test_verify_with_a_function_without_to_sympy_on_a_sum_is_inconclusive(user_module, capsys):
    """It ended as 'unexpected RecursionError' (exit 1): SymPy's evalf of Subs recursed without end."""
    assert main(["verify", "softplus(x + y)", "--fn", f"{user_module}:softplus", "--wrt", "x", "--order", "3",
                 "--points", "2"]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line.strip()[:1].isdigit()]
    assert [r[2] for r in rows] == ["inconclusive"] * 3
    assert "note: SymPy cannot evaluate softplus: no to_sympy" in out and "result: 3 inconclusive" in out


def test_verify_json(capsys):
    """--json: the verdict per order and every point, with the exit status of the table."""
    assert main(["verify", "exp(-x^2/2)", "--wrt", "x", "--order", "2", "--points", "3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["status"] == "pass" and out["result"] == {"pass": 2}
    assert out["f"] == "exp(-x**2/2)" and out["points"] == 3 and out["seed"] == 0 and out["range"] == [0.2, 1.8]
    assert [o["derivative"] for o in out["orders"]] == ["df/dx", "d²f/dx²"]
    for order in out["orders"]:
        assert order["status"] == "pass" and order["symbolic"] == "equal" and order["oracle"] == "sympy"
        assert len(order["points"]) == 3
        for p in order["points"]:
            t = p["point"]["x"]
            truth = -t * math.exp(-t * t / 2) if order["order"] == 1 else (t * t - 1) * math.exp(-t * t / 2)
            assert p["ours"] == pytest.approx(truth, rel=1e-14) and p["status"] == "pass"


def test_verify_json_keeps_the_exit_status_of_a_failure(monkeypatch, capsys):
    import subgraph_ad.cli.commands as cli
    from subgraph_ad.testing import Report

    monkeypatch.setattr(cli, "check_against_sympy", lambda *a, **k: Report("x", ["x"], "fail", "different",
                                                                            note="ours - SymPy's = 1"))
    assert main(["verify", "x^2", "--wrt", "x", "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["status"] == "fail" and out["orders"][0]["note"] == "ours - SymPy's = 1"
