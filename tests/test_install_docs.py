"""The install lines of the README and the docs work from a clone: the package is not on the
package index, so no line may ask pip for it by name, and every extra they name exists."""

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINES = [(page.name, line) for page in PAGES for line in page.read_text().splitlines() if "pip install" in line]


def test_no_install_line_asks_the_index_for_the_package():
    wrong = [(name, line) for name, line in LINES if re.search(r"pip install[^`]*subgraph[_-]ad", line)]
    assert LINES and not wrong, wrong


def test_every_extra_named_in_an_install_line_exists():
    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    named = {extra.strip() for _, line in LINES for group in re.findall(r"pip install (?:-e )?'\.\[([^\]]+)\]'", line)
             for extra in group.split(",")}
    assert {"numba", "jax", "cuda", "gif", "dev"} <= named and named <= extras, named - extras


def test_the_readme_says_what_each_extra_brings():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    readme = (ROOT / "README.md").read_text()
    for extra in extras:
        assert f"| `pip install '.[{extra}]'` |" in readme, extra


def test_no_public_address_is_claimed():
    assert "urls" not in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
