"""The documentation site (mkdocs.yml, `make docs`) builds with warnings as errors — broken links
and anchors, pages left out of the navigation, docstrings it cannot render — and its API
reference has an entry for every name in ``subgraph_ad.__all__`` showing that name's docstring,
as Python's ``inspect.getdoc`` gives it, with the docstring's doctests as code, not quotes."""

from __future__ import annotations

import inspect
import pydoc
import re
import subprocess
import sys
from html import unescape
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

import subgraph_ad

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted(p.name for p in (ROOT / "docs").glob("*.md"))


class Ids(HTMLParser):
    """Every ``id`` in a page."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.ids.update(value for key, value in attrs if key == "id" and value)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built once as `make docs` builds it."""
    out = tmp_path_factory.mktemp("site")
    run = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
                          str(ROOT / "mkdocs.yml"), "--site-dir", str(out)],
                         cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, f"mkdocs build --strict failed:\n{run.stdout}\n{run.stderr}"
    return out


@pytest.fixture(scope="module")
def reference(site: Path) -> str:
    return (site / "reference" / "index.html").read_text(encoding="utf-8")


def text(html: str) -> str:
    """The words of some HTML, without its markup."""
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def test_every_public_name_has_an_entry(reference: str) -> None:
    parser = Ids()
    parser.feed(reference)
    missing = [name for name in subgraph_ad.__all__ if f"subgraph_ad.{name}" not in parser.ids]
    assert not missing, f"no entry in the API reference for {missing}"


def documented(obj: Any) -> str | None:
    """What ``help`` shows first for ``obj`` when the package wrote it (not, say, dict's)."""
    if not (inspect.isclass(obj) or inspect.isroutine(obj) or inspect.ismodule(obj)):
        obj = type(obj)
    origin = obj.__name__ if inspect.ismodule(obj) else getattr(obj, "__module__", None) or ""
    if not origin.startswith("subgraph_ad"):
        return None
    doc = inspect.getdoc(obj)
    return " ".join(doc.splitlines()[0].replace("`", " ").split()) if doc else None


def test_each_entry_shows_the_docstring_of_its_name(reference: str) -> None:
    # an entry runs from its heading (h3; members are h4) to the next h2 or h3
    entries = re.split(r"(?=<h[23][ >])", reference)
    checked, wrong = 0, []
    for entry in entries:
        found = re.match(r'<h3 id="(subgraph_ad[\w.]*)"', entry)
        if not found:
            continue
        first_line = documented(pydoc.locate(found.group(1)))
        if first_line is None:
            continue
        checked += 1
        if first_line not in text(entry):
            wrong.append((found.group(1), first_line))
    assert not wrong, f"entries that do not show their docstring: {wrong}"
    assert checked >= len(subgraph_ad.__all__) - 1  # all but FUNCTIONS, a dict


def test_doctests_render_as_code(reference: str) -> None:
    quoted = re.findall(r"<blockquote>\s*<blockquote>", reference)
    assert not quoted, "doctest lines rendered as nested block quotes"
    assert reference.count('class="language-pycon') >= 10


def test_every_page_is_in_the_navigation(site: Path) -> None:
    from mkdocs.config import load_config

    def pages(nav: Any) -> list[str]:
        found, todo = [], [nav]
        while todo:
            item = todo.pop()
            if isinstance(item, str):
                found.append(item)
            elif isinstance(item, dict):
                todo.extend(item.values())
            else:
                todo.extend(item)
        return found

    nav = pages(load_config(str(ROOT / "mkdocs.yml")).nav)
    assert sorted(nav) == PAGES
    for page in PAGES:
        built = site / ("index.html" if page == "index.md" else f"{page[:-3]}/index.html")
        assert built.is_file(), f"{page} was not built"
