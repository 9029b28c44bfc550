"""What a command writes: numbers for JSON and text, output paths checked before long work,
progress messages, and tables printed a row at a time."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path
from typing import Any, Sequence

from subgraph_ad import progress

from .limits import PROG, CliError, UsageError


def number(value: Any) -> Any:
    """A value for JSON: a float, or the strings "nan", "inf", "-inf" that JSON has no numbers for."""
    value = float(value)
    if math.isfinite(value):
        return value
    return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")


def show(value: Any) -> str:
    return f"{float(value):.15g}"


def dump_json(out: dict[str, Any], args: argparse.Namespace) -> str:
    """A command's JSON: indented, or on one line for each of several expressions (JSON Lines)."""
    return json.dumps(out, indent=None if args.several else 2, ensure_ascii=False)


def check_output(path: str, suffixes: tuple[str, ...], option: str) -> str:
    """Fail early (before long work) on an output path that cannot be written."""
    suffix = Path(path).suffix.lower()
    if suffix not in suffixes:
        raise UsageError(f"{option} {path}: unsupported file type {suffix or '(none)'!r}; use {', '.join(suffixes)}")
    target = Path(path)
    parent = target.resolve().parent
    if target.is_dir():
        raise CliError(f"cannot write {path}: it is a directory")
    if not parent.is_dir():
        raise CliError(f"cannot write {path}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK) or (target.exists() and not os.access(target, os.W_OK)):
        raise CliError(f"cannot write {path}: permission denied")
    return path


def distinct_outputs(outputs: Sequence[tuple[str, str]]) -> None:
    """Refuse two outputs (flag, path) that name one file: the second would silently replace the
    first. Compared as resolved paths (``./a.svg``, ``a.svg`` and a symlink to it are one)."""
    seen: dict[Path, tuple[str, str]] = {}
    for flag, path in outputs:
        key = Path(path).resolve()
        for other, (other_flag, other_path) in seen.items():
            if other == key or (key.exists() and other.exists() and os.path.samefile(key, other)):
                raise UsageError(f"{other_flag} {other_path} and {flag} {path} name the same file; "
                                 "give each output its own path")
        seen[key] = (flag, path)


def say(message: str) -> None:
    """A progress message on stderr, only while progress is shown (a terminal, no --quiet)."""
    if progress.is_enabled():
        progress.write(f"{PROG}: {message}...", file=sys.stderr)


def constants_line(constants: dict[str, float]) -> str:
    return "constants: " + ", ".join(f"{name} = {value!r}" for name, value in constants.items())


def draw_options(args: argparse.Namespace) -> dict[str, Any]:
    return {"precision": args.precision, "rankdir": args.rankdir, "max_nodes": args.max_nodes}


class RowPrinter:
    """A plain-text table printed one row at a time, as soon as each row is known, laid out like
    ``tables.text_table`` (two spaces between columns, a rule under the header, numbers
    right-aligned); the widths are fixed up front from the widest value each column can take."""

    def __init__(self, headers: Sequence[str], widths: Sequence[int], numeric: Sequence[bool]) -> None:
        self.widths = [max(w, len(h)) for h, w in zip(headers, widths)]
        self.numeric = list(numeric)
        self.headers = list(headers)

    def line(self, cells: Sequence[object]) -> str:
        return "  ".join(str(c).rjust(w) if num else str(c).ljust(w)
                         for c, w, num in zip(cells, self.widths, self.numeric)).rstrip()

    def header(self) -> str:
        return self.line(self.headers) + "\n" + "  ".join("-" * w for w in self.widths)


__all__ = ["RowPrinter", "check_output", "constants_line", "distinct_outputs", "draw_options", "dump_json", "number", "say", "show"]
