"""Every ```console block in README.md and docs/ runs as written: each ``$ `` line through bash
(in a fresh folder, with this Python's ``subgraph-ad`` first on PATH), its output compared with
the lines under it — word by word, numbers to 1e-9 relative (the last digits of a float may
differ between machines), everything else exactly.

A ```python block that a page introduces with "`NAME.py`:" is written to that file in the
folder first (docs/cli.md's ``myfuncs.py`` for ``--fn``). Not run: the GPU benchmark's lines
(they need an NVIDIA GPU; its ``--dry-run`` is run by tests/compile/test_cuda_backend.py). Run
but not compared: the lines whose verdicts depend on how fast SymPy is under a 1 s budget
(``TIMED``); they must still exit with status 0."""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
NOT_RUN = ("python benchmarks/gpu.py",)
TIMED = ("--sympy-timeout 1",)
FILE = re.compile(r"`([\w.]+\.py)`:\s*$")
NUMBER = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?[,;:)\]}]*$")


def blocks() -> list[tuple[str, int, dict[str, str], list[tuple[str, list[str]]]]]:
    """(page, line, files, [(command, expected output lines)]) for every console block; files:
    the page's ``NAME.py`` blocks above it."""
    found = []
    for page in PAGES:
        lines = page.read_text(encoding="utf-8").splitlines()
        files: dict[str, str] = {}
        i = 0
        while i < len(lines):
            fence = lines[i].strip()
            if fence == "```python":
                before = next((t for t in reversed(lines[:i]) if t.strip()), "")
                start, i = i + 1, i + 1
                while lines[i].strip() != "```":
                    i += 1
                named = FILE.search(before)
                if named:
                    files[named.group(1)] = "\n".join(lines[start:i]) + "\n"
            elif fence == "```console":
                start, i = i + 1, i + 1
                steps: list[tuple[str, list[str]]] = []
                while lines[i].strip() != "```":
                    if lines[i].startswith("$ "):
                        steps.append((lines[i][2:], []))
                    elif steps:
                        steps[-1][1].append(lines[i])
                    i += 1
                runnable = [s for s in steps if not s[0].startswith(NOT_RUN)]
                if runnable:
                    found.append((page.relative_to(ROOT).as_posix(), start, dict(files), runnable))
            i += 1
    return found


def _number(word: str) -> float | None:
    if not NUMBER.match(word):
        return None
    return float(word.rstrip(",;:)]}"))


def same_words(got: str, expected: str) -> bool:
    a, b = got.split(), expected.split()
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        fx, fy = _number(x), _number(y)
        if fx is not None and fy is not None:
            if not math.isclose(fx, fy, rel_tol=1e-9, abs_tol=1e-300):
                return False
        elif x != y:
            return False
    return True


BLOCKS = blocks()


def test_there_are_console_blocks():
    assert len(BLOCKS) >= 20


@pytest.mark.parametrize("page, line, files, steps", BLOCKS, ids=[f"{p}:{n}" for p, n, _, _ in BLOCKS])
def test_console_block_runs_as_written(page, line, files, steps, tmp_path):
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
               COLUMNS="100")
    for command, expected in steps:
        # a function, so that `PATH= subgraph-ad ...` still finds it and runs it with that PATH
        script = f'subgraph-ad() {{ "{Path(sys.executable).parent}/subgraph-ad" "$@"; }}\n{command}'
        done = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=300)
        got = (done.stdout + done.stderr).rstrip("\n")
        want = "\n".join(expected).rstrip("\n")
        if any(flag in command for flag in TIMED):
            assert done.returncode == 0, f"{page}:{line}: $ {command}\n{got}"
            continue
        assert same_words(got, want), f"{page}:{line}: $ {command}\n--- printed ---\n{got}\n--- the page says ---\n{want}"
