"""The benchmark scripts run end to end (quick runs), so `make bench` cannot rot; and every peer is
given the code its own documentation writes (array code for JAX and PyTorch where the function
takes an array), computing what ours computes."""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

import subgraph_ad as sad
from subgraph_ad.benchmark_functions import written_with

ROOT = Path(__file__).resolve().parents[1]
CHECKOUT = {**os.environ, "PYTHONPATH": str(ROOT)}  # the scripts run on this checkout's package


def script(name: str) -> ModuleType:
    """A benchmark script as a module, under its own name: one script imports another by it
    (benchmarks/ is a folder of scripts, kept off sys.path here)."""
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


bench_run = script("run")
many_variables = script("many_variables")


def test_quick_benchmark_writes_results_with_our_sizes(tmp_path):
    run = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--quick", "--functions", "F1",
         "--repeats", "1", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=600, env=CHECKOUT,
    )
    assert run.returncode == 0, run.stderr
    results = json.loads((tmp_path / "bench.json").read_text())
    orders = results["functions"]["F1"]["orders"]
    assert sorted(orders, key=int) == ["1", "5", "10"]
    # Taylor-mode sizes are pinned in test_taylor.py; n = 10 must be the same here
    assert orders["10"]["taylor"]["size"] == 38
    assert orders["10"]["taylor"]["ops"] == 31  # what the 10th derivative evaluates, f's exp included
    assert orders["10"]["diff"]["size"] == 15 and orders["10"]["diff"]["ops"] == 13  # its closed form
    assert orders["10"]["graph"]["size"] == 68
    assert orders["10"]["diff"]["eval_numpy"] > 0 and orders["10"]["graph"]["eval_numpy"] > 0
    sympy_row = orders["10"]["sympy"]
    assert sympy_row["size_cse"] <= sympy_row["size"] and sympy_row["eval"] > 0
    assert orders["10"]["jax_jet"]["size"] > 0 and orders["10"]["jax_jet"]["eval"] > 0  # JAX's Taylor mode at n = 10
    assert "skipped" in orders["10"]["jax"]  # nested grad stops at n = 8
    table = (tmp_path / "table.md").read_text()
    assert table.startswith("### order n = 10") and "| F1 |" in table
    assert "JAX jet (Taylor mode), jit(vmap): eqns / build / compile / eval" in table
    assert "bench.json, table.md" in run.stdout


def test_the_many_variables_benchmark_runs_and_meets_the_node_targets(tmp_path):
    """R10, R100 and S: every program measured (build, compile on both backends, one point and a
    batch); gradient appended ≤ 1.25× f's nodes (CasADi parity), Rosenbrock's Hessian with its
    3N − 2 nonzeros, and the Hessian and HVP graphs no larger than CasADi's where CasADi is
    installed (its own counts, in the same run; tests/ad/test_matrices.py pins them without it)."""
    run = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "many_variables.py"), "--quick", "--out", str(tmp_path)],
                         capture_output=True, text=True, timeout=900, env=CHECKOUT)
    assert run.returncode == 0, run.stderr
    saved = json.loads((tmp_path / "many_variables.json").read_text())
    assert saved["forms"] == many_variables.FORMS and saved["rounds"] == 1
    results = saved["cases"]
    assert sorted(results) == ["R10", "R100", "S"]
    for name, row in results.items():
        ours = row["ours"]
        assert ours["gradient"]["appended"] <= 1.25 * ours["f"], name
        for what in ("gradient", "hessian", "hvp"):
            program = ours[what]
            assert program["eval_1"] > 0 and program["eval_batch"] > 0 and program["compile_numpy"] > 0, (name, what)
            assert program["numba"] in ("", "→NumPy"), (name, what, program["numba"])
        if row["casadi"]:
            assert ours["hessian"]["graph"] <= row["casadi"]["hessian"] and ours["hvp"]["graph"] <= row["casadi"]["hvp"], name
    assert results["R100"]["ours"]["hessian"]["nonzeros"] == 3 * 100 - 2
    table = (tmp_path / "many_variables.md").read_text()
    assert "| R100 | hvp |" in table and "| S | 298 /" in table
    assert "jax — array code (jax.numpy: slicing, sum, matmul)" in table  # the table says what JAX was given
    assert results["R100"]["jax"]["hvp"]["eval_batch"] > 0


def test_the_cluster_benchmark_runs_quick_with_no_compiles_and_a_small_graph():
    """``cluster.py --quick``: both programs on a LocalCluster of two workers, nothing compiled
    during the run after warm-up, each task graph under 1 MB (the full size is `make bench`'s)."""
    run = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "cluster.py"), "--quick"],
                         capture_output=True, text=True, timeout=600, env=CHECKOUT)
    assert run.returncode == 0, run.stderr
    f4, laplacian = rows = [line.split() for line in run.stdout.splitlines() if line.startswith(("F4", "Laplacian"))]
    for row in rows:  # ... steps, points, 3 times, 2 ratios, compiles, graph KB
        points, compiles, graph_kb = float(row[-8]), int(row[-2]), float(row[-1])
        assert points == 2e5 and compiles == 0 and graph_kb < 1024, row
    assert f4[:2] == ["F4,", "10th"] and 900 <= int(laplacian[-9]) <= 1100  # --quick: ~1e3 steps (full: ~1e4)


def test_the_transforms_benchmark_checks_the_second_derivative_and_times_each_way(tmp_path):
    """``transforms.py --quick``: grad∘grad, ``derivative(f, 2)`` and JAX each checked against
    f″'s closed form inside the script (a wrong value fails it), and every time recorded."""
    run = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "transforms.py"), "--quick", "--out", str(tmp_path)],
                         capture_output=True, text=True, timeout=600, env=CHECKOUT)
    assert run.returncode == 0, run.stderr
    row = json.loads((tmp_path / "transforms.json").read_text())
    assert row["points"] == 1_000
    for key in ("one", "batch"):
        assert sorted(row[key]) == ["derivative", "jax", "nested"] and min(row[key].values()) > 0
    assert "| one point |" in run.stdout


@pytest.mark.slow
def test_the_networks_benchmark_agrees_with_jax_and_folx_and_times_each(tmp_path):
    """``networks.py --quick`` (10³ points, no 768-wide network): the script asserts that ours
    agrees with JAX and folx to 1e-10 before timing; every row is timed."""
    run = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "networks.py"), "--quick", "--out", str(tmp_path)],
                         capture_output=True, text=True, timeout=900, env=CHECKOUT)
    assert run.returncode == 0, run.stderr
    rows = json.loads((tmp_path / "networks.json").read_text())
    assert [row["d"] for row in rows["laplacian"]] == [4, 16] and rows["wide"] is None
    for row in rows["laplacian"]:  # folx is in the bench extra, not in dev: timed where installed
        assert row["agree"] is True and row["eval"] > 0 and row["jax"] > 0 and row.get("folx", 1.0) > 0
    assert rows["biharmonic"]["eval"] > 0 and rows["biharmonic"]["jax"] > 0  # its agreement: asserted in the script
    assert "Δ²u" in run.stdout


def test_the_arrays_benchmark_times_ours_and_jax_in_turns_and_agrees_with_jax():
    """``arrays.py --rounds 2``: each side set up in its own process (``paired``) and timed in
    turns; the gradient's and the HVP's norms printed beside JAX's agree to 1e-10, the d = 300
    Hessian with JAX's to 1e-12 of its largest entry."""
    run = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "arrays.py"), "--rounds", "2"],
                         capture_output=True, text=True, timeout=900, env=CHECKOUT)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    ratios = [line for line in lines if "ratio" in line and "rounds" in line]
    assert len(ratios) == 3  # the MLP's gradient, the deep network's gradient and HVP
    checks = [line.split() for line in lines if "|" in line and "ours" in line and "jax" in line]
    assert len(checks) == 2  # |g| of the MLP, |Hv| of the deep network
    for words in checks:
        ours, jax = float(words[words.index("ours") + 1]), float(words[words.index("jax") + 1])
        assert abs(ours - jax) <= 1e-10 * abs(jax)
    nodes = next(line for line in lines if "nodes on the tape" in line)
    assert int(nodes.split("nodes on the tape")[1].split()[0]) <= 200
    hessian = next(line for line in lines if "max error against jax.hessian" in line).split()
    error, scale = float(hessian[hessian.index("jax.hessian") + 1]), float(hessian[-1].rstrip(")"))
    assert error <= 1e-12 * scale  # the d = 300 Hessian, 90,000 entries, against JAX's


# -- the peers are given the code their own documentation writes (no timings here) ---------------
def _jax():
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    return jax, jnp


def test_jax_and_torch_are_given_array_code_whose_program_does_not_grow_with_n():
    """JAX's and PyTorch's function (one array function, read with jax.numpy or torch) traces
    to the same few equations for R10, R100 and R1000, and to at most 20 for S and M; the loop
    over x[i] that the scalar tools get traces to more equations than variables (R100, S)."""
    jax, jnp = _jax()
    eqns = {}
    for name, (loop, n) in many_variables.CASES.items():
        point = np.linspace(-0.5, 0.5, n)
        eqns[name] = len(jax.make_jaxpr(many_variables.peer_function(name, jnp))(point).eqns)
        if name in ("R100", "S"):
            assert len(jax.make_jaxpr(lambda x: loop([x[i] for i in range(n)], jnp))(point).eqns) > n, name
    assert eqns["R10"] == eqns["R100"] == eqns["R1000"] and max(eqns.values()) <= 20, eqns
    assert set(many_variables.ARRAY_CODE) == set(many_variables.CASES)
    assert "array code" in many_variables.FORMS["jax"] and "array code" in many_variables.FORMS["torch"]


@pytest.mark.parametrize("name", list(many_variables.CASES))
def test_the_array_code_has_our_gradient_and_hvp(name):
    """At a random point, JAX's gradient and Hessian-vector product of the array code equal ours
    (built on the tape from the loop over x[i], compiled) to 1e-12 of their largest entry; and
    the array code read with NumPy, the module PyTorch's reading mirrors, equals the loop's value."""
    jax, jnp = _jax()
    loop, n = many_variables.CASES[name]
    rng = np.random.default_rng(7)
    point, v = rng.uniform(-0.5, 0.5, n), rng.standard_normal(n)
    fun = many_variables.peer_function(name, jnp)
    theirs_gradient = np.asarray(jax.grad(fun)(point))
    theirs_hvp = np.asarray(jax.jvp(jax.grad(fun), (point,), (v,))[1])
    tape = sad.Tape()
    xs = [tape.var(f"x{i}") for i in range(n)]
    vs = [tape.var(f"v{i}") for i in range(n)]
    z = loop(xs, many_variables.SAD)
    ours_gradient = np.array(sad.lambdify(xs, z.grad_graph(xs))(*point))
    ours_hvp = np.array(sad.lambdify(xs + vs, sad.hvp(z, xs, vs))(*point, *v))
    for ours, theirs in ((ours_gradient, theirs_gradient), (ours_hvp, theirs_hvp)):
        assert np.max(np.abs(ours - theirs)) <= 1e-12 * np.max(np.abs(theirs)), name
    assert many_variables.ARRAY_CODE[name](point, np) == pytest.approx(loop(list(point), np), rel=1e-13)


@pytest.mark.parametrize("name,n", [(f"F{i}", 10) for i in range(1, 6)] + [("F4", 20)])
def test_jax_jet_gives_the_nth_derivative(name, n):
    """The jet the benchmark times (jit(vmap)ed, on two points) is f⁽ⁿ⁾ — mpmath's numerical n-th
    derivative at 40 digits — to 1e-12 relative, at n = 10 and at n = 20 where nested grad is
    not run."""
    import mpmath

    jax, jnp = _jax()
    at = [1.7, 2.3] if name == "F5" else [0.5, -1.3]
    theirs = jax.jit(jax.vmap(bench_run.jet_derivative(written_with(jnp, name), n)))(jnp.asarray(at))
    with mpmath.workdps(40):
        expected = [float(mpmath.diff(written_with(mpmath, name), mpmath.mpf(a), n)) for a in at]
    np.testing.assert_allclose(np.asarray(theirs), expected, rtol=1e-12)
    assert "jax_jet" in bench_run.PEERS and "jax_jet" in bench_run.EVERY_ORDER and "jax_jet" not in bench_run.MAX_ORDER


def test_rounds_are_merged_field_by_field_into_medians():
    """--rounds: a time that varies becomes its median, a size or note the same in every round
    stays as it is, and a field only a later round has (a cap reached once) is left out."""
    rounds = [{"F1": {"size": 38, "build": 3.0, "note": "numba"}},
              {"F1": {"size": 38, "build": 1.0, "note": "numba", "skipped": "cap"}},
              {"F1": {"size": 38, "build": 2.5, "note": "numba"}}]
    assert bench_run.median_of(rounds) == {"F1": {"size": 38, "build": 2.5, "note": "numba"}}
    assert many_variables.median_of is bench_run.median_of
