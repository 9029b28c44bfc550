"""The package and user code type-check: mypy (configured in pyproject.toml: no untyped defs,
no Any returned where a type is declared) finds no error in ``subgraph_ad`` nor in typed user
code whose ``assert_type`` lines pin what the public API returns (a Term stays a Term)."""

from pathlib import Path

import pytest
from mypy import api

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_mypy_finds_no_error_in_the_package_and_in_typed_user_code(tmp_path):
    out, err, status = api.run(["--config-file", str(ROOT / "pyproject.toml"), "--cache-dir", str(tmp_path / "cache"),
                                str(ROOT / "subgraph_ad"), str(ROOT / "tests" / "typing" / "user_code.py")])
    assert status == 0, out + err
