"""`make demo` in a fresh clone: its own virtualenv with the package and its runtime dependencies
only (well under 300 MB, no test kit), and the demo's six derivatives, right and checked.

This is the one test that installs from the package index; it takes a minute or two."""

import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

from numpy.polynomial import hermite_e

ROOT = Path(__file__).resolve().parent.parent
LIMIT = 300 * 2**20


def _size(folder: Path) -> int:
    """Bytes of the files under ``folder``, links not followed (a venv links its interpreter)."""
    total = 0
    for base, _, files in os.walk(folder):
        total += sum(os.lstat(os.path.join(base, name)).st_size for name in files)
    return total


def test_make_demo_in_a_fresh_clone(tmp_path):
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True)
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "--quiet", "--no-checkout", str(ROOT), str(clone)], check=True)
    subprocess.run(["git", "checkout", "--quiet", head.stdout.strip()], cwd=clone, check=True)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "MAKEFLAGS")}
    run = subprocess.run(["make", "demo", f"PYTHON={sys.executable}"], cwd=clone, env=env,
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr

    venv = clone / ".venv"
    python = venv / "bin" / "python"
    # its own virtualenv: the package comes from the clone, and nothing of the test kit is there
    where = subprocess.run([str(python), "-c", "import subgraph_ad; print(subgraph_ad.__file__)"], cwd=tmp_path,
                           capture_output=True, text=True, check=True).stdout.strip()
    assert Path(where).resolve().is_relative_to(clone.resolve())
    listed = subprocess.run([str(python), "-m", "pip", "list", "--format=freeze"], capture_output=True,
                            text=True, check=True).stdout.lower()
    names = {line.split("==")[0].replace("_", "-") for line in listed.splitlines()}
    assert {"numpy", "sympy", "graphviz", "tqdm"} <= names
    assert not names & {"pytest", "jupyterlab", "mkdocs", "jax", "numba", "dask", "hypothesis"}, names
    assert _size(venv) < LIMIT, f".venv is {_size(venv) / 2**20:.0f} MB"

    # the demo's table: d^n/dx^n exp(-x^2/2) = (-1)^n He_n(x) exp(-x^2/2), the probabilists' Hermite
    # polynomials (NumPy's hermite_e), at x = 0.5, each checked against SymPy
    rows = [line.split() for line in run.stdout.splitlines() if line.strip()[:1].isdigit()][:6]
    assert [r[0] for r in rows] == ["1", "2", "3", "4", "5", "6"], run.stdout
    for n, row in enumerate(rows, start=1):
        expected = (-1) ** n * hermite_e.hermeval(0.5, [0] * n + [1]) * math.exp(-0.125)
        assert math.isclose(float(row[1]), expected, rel_tol=1e-12), (n, row)
        assert row[-1] == "pass"
    if shutil.which("dot"):
        assert (clone / "out" / "gaussian.svg").read_text().lstrip().startswith("<?xml")
        assert "animation, " in run.stdout and (clone / "out" / "gaussian.html").exists()
