"""A Griffe extension for the documentation site (mkdocs.yml), so that the API reference shows
each name's docstring as Python's ``help`` does and its examples as code:

- A docstring's doctest lines (``>>>`` and the output under them) would read as nested block
  quotes in Markdown: each run of them is fenced as a ``pycon`` code block.
- A module attribute has no docstring of its own to Griffe, which reads source, not objects:
  an instance (``sin = register(SinFn(0))``, ``E = NamedConstant(...)``) gets its class's
  docstring, which is what ``help(sad.sin)`` shows; any other (``FUNCTIONS``) the ``#:``
  comment above it, as Sphinx reads one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from griffe import Alias, Attribute, Class, Docstring, Expr, ExprCall, Extension, Module, Object

PROMPT = ">>>"
FENCE = "```"
COMMENT = "#:"
#: Functions that return their (first) argument: an instance passed through one is still documented.
RETURN_ARGUMENT = {"subgraph_ad.functions.base.register"}


def fence_doctests(text: str) -> str:
    """``text`` with every run of doctest lines (a ``>>>`` line up to the next blank line) inside
    a ``pycon`` fence; lines already inside a fence are left as they are."""
    out: list[str] = []
    fenced = in_example = False
    indent = ""
    for line in text.splitlines():
        stripped = line.strip()
        if in_example and not stripped:
            out.append(indent + FENCE)
            in_example = False
        if stripped.startswith(FENCE) and not in_example:
            fenced = not fenced
        elif not fenced and not in_example and stripped.startswith(PROMPT):
            indent = line[: len(line) - len(line.lstrip())]
            out.append(indent + FENCE + "pycon")
            in_example = True
        out.append(line)
    if in_example:
        out.append(indent + FENCE)
    return "\n".join(out)


def comment_above(lines: list[str], lineno: int) -> str | None:
    """The ``#:`` comment lines right above line ``lineno`` (1-based) of ``lines``, as text."""
    found: list[str] = []
    i = lineno - 2
    while i >= 0 and lines[i].lstrip().startswith(COMMENT):
        found.append(lines[i].lstrip()[len(COMMENT):].strip())
        i -= 1
    return " ".join(reversed(found)) or None


def instance_class(value: str | Expr | None, module: Module) -> Class | None:
    """The class that ``value`` instantiates: ``Cls(...)``, or ``register(Cls(...))``
    (``register`` returns its argument)."""
    while isinstance(value, ExprCall):
        try:
            target = module.modules_collection.get_member(value.canonical_path)
        except (KeyError, ValueError):
            return None
        if isinstance(target, Alias):
            target = target.final_target
        if isinstance(target, Class):
            return target
        if target.path not in RETURN_ARGUMENT or not value.arguments:
            return None
        value = value.arguments[0]
    return None


def attribute_docstring(attr: Attribute) -> str | None:
    """The docstring of the class ``attr`` is an instance of (what ``help`` shows), else the
    ``#:`` comment above it."""
    cls = instance_class(attr.value, attr.module)
    if cls is not None and cls.docstring is not None:
        return cls.docstring.value
    path = attr.filepath
    if attr.lineno is None or not isinstance(path, Path):  # a list: a namespace package's folders
        return None
    return comment_above(attr.lines_collection[path], attr.lineno)


def modules(pkg: Module) -> list[Module]:
    """``pkg`` and every module under it."""
    found, todo = [], [pkg]
    while todo:
        module = todo.pop()
        found.append(module)
        todo.extend(m for m in module.members.values() if not m.is_alias and isinstance(m, Module))
    return found


class SiteDocstrings(Extension):
    """Fence doctests as docstrings are read; document module attributes once all is loaded."""

    def on_instance(self, *, obj: Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = fence_doctests(obj.docstring.value)

    def on_package(self, *, pkg: Module, **kwargs: Any) -> None:
        for module in modules(pkg):
            for member in list(module.members.values()):
                if member.is_alias or not isinstance(member, Attribute) or member.docstring is not None:
                    continue
                text = attribute_docstring(member)
                if text is not None:
                    member.docstring = Docstring(text, parent=member)
