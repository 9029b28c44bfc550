"""The API reference leads with what users call, grouped as the guides are, and keeps a tape's
machinery (its node list, memo, scopes, low-level appends) on the internals page."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GROUPS = ["Build", "Differentiate", "Many variables", "Operators", "Compile", "Traced functions", "SymPy",
          "Pictures", "Testing"]
INTERNAL = ["nodes", "deriv_cache", "hold", "intern", "append", "orders", "check_var", "hand_over", "transaction"]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    run = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
                          str(ROOT / "mkdocs.yml"), "--site-dir", str(out)], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    return out


def headings(page: Path, level: str) -> list[str]:
    return re.findall(rf'<h{level} id="([^"]+)"', page.read_text(encoding="utf-8"))


def test_the_reference_is_grouped_as_the_guides_are(site):
    sections = [re.sub(r"<[^>]+>|¶", "", h).strip() for h in
                re.findall(r"<h2[^>]*>(.*?)</h2>", (site / "reference" / "index.html").read_text(encoding="utf-8"))]
    found = [next(k for k, s in enumerate(sections) if s.startswith(group)) for group in GROUPS]
    assert found == sorted(found), sections
    entries = headings(site / "reference" / "index.html", "3")
    assert entries[:2] == ["subgraph_ad.Tape", "subgraph_ad.Term"]
    assert entries.index("subgraph_ad.from_sympy") < entries.index("subgraph_ad.animate") < entries.index(
        "subgraph_ad.testing")


def test_a_tapes_machinery_is_on_the_internals_page_only(site):
    reference = headings(site / "reference" / "index.html", "4")
    internals = headings(site / "internals" / "index.html", "3")
    assert "subgraph_ad.Tape.var" in reference and "subgraph_ad.Tape.vars" in reference
    for name in INTERNAL:
        assert f"subgraph_ad.Tape.{name}" not in reference, name
        assert f"subgraph_ad.Tape.{name}" in internals, name
