"""Every script in examples/ runs cleanly, so the examples never rot."""

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted(p for p in (Path(__file__).parent.parent / "examples").glob("*.py") if not p.name.startswith("_"))


def test_there_are_examples():
    assert len(EXAMPLES) >= 2


@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: p.name)
def test_example_runs(script, tmp_path):
    result = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip(), "an example should show its result"


def test_gaussian_demo_prints_six_checked_orders(tmp_path):
    script = next(p for p in EXAMPLES if p.name == "gaussian.py")
    out = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True).stdout
    rows = [line.split() for line in out.splitlines() if line.strip()[:1].isdigit()]
    assert [r[0] for r in rows[:6]] == ["1", "2", "3", "4", "5", "6"]
    assert all(r[-1] == "pass" for r in rows[:6])
    # 4th derivative of exp(-x^2/2) is (x^4 - 6x^2 + 3) exp(-x^2/2): at 0.5 that is 1.37890141028843
    assert float(rows[3][1]) == pytest.approx((0.5**4 - 6 * 0.25 + 3) * 2.718281828459045 ** (-0.125), rel=1e-12)
    closed = next(line for line in out.splitlines() if line.startswith("the 6th alone"))
    assert closed.endswith("SymPy check pass") and "(x**2*(x**2*(x**2 - 15) + 45) - 15)*exp(-x**2/2)" in closed
