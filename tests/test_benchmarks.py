"""The benchmark script runs end to end (a quick run on F1), so `make bench` cannot rot."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_quick_benchmark_writes_results_with_our_sizes(tmp_path):
    run = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--quick", "--functions", "F1",
         "--repeats", "1", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=600,
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
    table = (tmp_path / "table.md").read_text()
    assert table.startswith("### order n = 10") and "| F1 |" in table
    assert "bench.json, table.md" in run.stdout


def test_the_many_variables_benchmark_runs_and_meets_the_node_targets(tmp_path):
    """R10, R100 and S: every program measured (build, compile on both backends, one point and a
    batch); gradient appended ≤ 1.25× f's nodes (CasADi parity), Rosenbrock's Hessian with its
    3N − 2 nonzeros, and the Hessian and HVP graphs no larger than CasADi's where CasADi is
    installed (its own counts, in the same run; tests/ad/test_matrices.py pins them without it)."""
    run = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "many_variables.py"), "--quick", "--out", str(tmp_path)],
                         capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr
    results = json.loads((tmp_path / "many_variables.json").read_text())
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
