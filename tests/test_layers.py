"""Layers import downward only (core <- functions <- ad, numeric, compile <- interop, viz <-
methods <- testing, cli), checked on the source with ``ast``; and ``import subgraph_ad`` does
not load SymPy until a SymPy feature is used."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "subgraph_ad"
RANK = {"core": 0, "tables": 0, "progress": 0, "budget": 0, "functions": 1, "ad": 2, "numeric": 2, "compile": 2, "interop": 3, "viz": 3, "pytrees": 3, "trace": 3, "checkpoint": 3,
        "methods": 4, "estimate": 4, "operators": 4, "ode": 4, "testing": 5, "benchmark_functions": 5, "cli": 5, "__init__": 5, "__main__": 5}


def _layer(parts: tuple[str, ...]) -> str:
    return parts[0].removesuffix(".py")


def _imports(path: Path) -> list[tuple[str, ...]]:
    """The package modules a file imports, as paths below subgraph_ad (in functions too; not
    the typing-only imports under ``if TYPE_CHECKING:``)."""
    own = path.relative_to(PACKAGE).with_suffix("").parts
    found = []
    tree = ast.parse(path.read_text())
    typing_only = [n for n in ast.walk(tree) if isinstance(n, ast.If) and getattr(n.test, "id", "") == "TYPE_CHECKING"]
    skipped = {id(sub) for block in typing_only for sub in ast.walk(block)}
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.ImportFrom) and node.level:
            base = own[: len(own) - node.level] if path.name != "__init__.py" else own[: len(own) - node.level + 1]
            target = base + tuple((node.module or "").split(".")) if node.module else base
            found.append(target if target else ("__init__",))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            found += [tuple(n.split(".")[1:]) or ("__init__",) for n in names if n.split(".")[0] == "subgraph_ad"]
    return found


SOURCES = sorted(p for p in PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_modules_import_only_their_own_layer_or_lower(path):
    own = _layer(path.relative_to(PACKAGE).parts)
    for target in _imports(path):
        assert RANK[_layer(target)] <= RANK[own], f"{own} imports {'.'.join(target)}"


def test_importing_the_package_does_not_load_sympy():
    code = "import sys, subgraph_ad; print('sympy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_sympy_features_load_it_on_first_use():
    code = ("import sys, subgraph_ad as sad; t = sad.Tape(); x = t.var('x'); "
            "print(sad.exp(x).to_sympy(), sad.SympyConversionError.__name__, 'sympy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["exp(x)", "SympyConversionError", "True"]
