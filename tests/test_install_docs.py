"""The install lines of the README and the docs work from a clone: the package is not on the
package index, so no line may ask pip for it by name, and every extra they name exists."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PYPROJECT = (ROOT / "pyproject.toml").read_text()
# the extras' names: the keys of [project.optional-dependencies] (tomllib is Python 3.11+)
EXTRAS = re.findall(r"^([\w-]+) = \[", PYPROJECT.split("[project.optional-dependencies]")[1].split("\n[")[0], re.M)
LINES = [(page.name, line) for page in PAGES for line in page.read_text().splitlines() if "pip install" in line]


def test_no_install_line_asks_the_index_for_the_package():
    wrong = [(name, line) for name, line in LINES if re.search(r"pip install[^`]*subgraph[_-]ad", line)]
    assert LINES and not wrong, wrong


def test_every_extra_named_in_an_install_line_exists():
    extras = set(EXTRAS)
    named = {extra.strip() for _, line in LINES for group in re.findall(r"pip install (?:-e )?'\.\[([^\]]+)\]'", line)
             for extra in group.split(",")}
    assert {"numba", "jax", "cuda", "gif", "dev"} <= named and named <= extras, named - extras


def test_the_readme_says_what_each_extra_brings():
    readme = (ROOT / "README.md").read_text()
    assert len(EXTRAS) >= 8, EXTRAS
    for extra in EXTRAS:
        assert f"| `pip install '.[{extra}]'` |" in readme, extra


def test_no_public_address_is_claimed():
    assert "[project.urls]" not in PYPROJECT and "urls =" not in PYPROJECT
