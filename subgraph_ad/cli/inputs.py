"""What a command reads: its expression (an argument, or standard input within --max-length),
the point (--at), and the vars to differentiate by (--wrt)."""

from __future__ import annotations

import re
import sys
from typing import Iterator, Sequence

import subgraph_ad as sad
from subgraph_ad.core import dependencies
from subgraph_ad.interop.parse import CONSTANTS, free_names

from .limits import CliError, UsageError


def read_expression(text: str, max_length: int | None) -> str:
    """EXPR within --max-length (standard input is read by ``stdin_expression`` or
    ``stdin_lines`` first)."""
    if max_length is not None and len(text) > max_length:
        raise UsageError(f"the expression is longer than --max-length {max_length} characters; "
                         "raise it with --max-length N (0 = no limit)")
    return text


def stdin_expression(max_length: int | None, why: str) -> str:
    """All of standard input (read no further than --max-length) as the one expression of a
    command that makes one thing of it (``why``): a second non-blank line is an error, not a
    second expression (nor a product with the first)."""
    text = sys.stdin.read(-1 if max_length is None else max_length + 1)
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) > 1:
        least = "at least " if max_length is not None and len(text) > max_length else ""
        raise UsageError(f"standard input has {least}{len(lines)} lines; give one expression per call ({why})")
    text = text.strip()
    if max_length is not None and len(text) > max_length:
        raise UsageError(f"the expression on standard input is longer than --max-length {max_length} characters; "
                         "raise it with --max-length N (0 = no limit)")
    return text


def stdin_lines(max_length: int | None) -> Iterator[tuple[int, str]]:
    """The non-blank lines of standard input with their line numbers, one expression each, read
    as they come (a pipe streams) and each no further than --max-length."""
    cap = -1 if max_length is None else max_length + 2  # the line, and \r\n
    number = 0
    while line := sys.stdin.readline(cap):
        number += 1
        text = line.strip()
        if max_length is not None and (len(text) > max_length or (len(line) == cap and not line.endswith("\n"))):
            raise UsageError(f"the expression on standard input line {number} is longer than --max-length "
                             f"{max_length} characters; raise it with --max-length N (0 = no limit)")
        if text:
            yield number, text


def parse_expression(text: str, max_tape_nodes: int | None) -> sad.Term:
    """The expression on a tape of its own, bounded by --max-tape-nodes."""
    try:
        return sad.parse(text, tape=sad.Tape(max_nodes=max_tape_nodes))
    except sad.ParseError as exc:
        hint = " (a function of your own: --fn module:name)" if "a call of" in str(exc) else ""
        raise CliError(f"bad expression: {exc}{hint}") from None


def constants_used(text: str, f: sad.Term) -> dict[str, float]:
    """The constants (``e``, ``pi``, ...) that the parsed expression ``text`` read as constants:
    the names in it that are not called and not vars of its tape."""
    names = set(free_names(text))
    return {name: value for name, value in CONSTANTS.items() if name in names and f.tape.find_var(name) is None}


#: The IEEE values that are not numbers in expressions, as float() spells them.
IEEE_WORDS = re.compile(r"[+-]?(nan|inf|infinity)", re.IGNORECASE)


def parse_point(items: list[str] | None) -> dict[str, float]:
    """``["x=0.5,y=1", "z=pi/4"]`` -> ``{"x": 0.5, "y": 1.0, "z": 0.785...}``; values may be
    constant expressions, or nan, inf and -inf (values are IEEE). A var named twice is an error:
    which value was meant is a guess."""
    point: dict[str, float] = {}
    given: dict[str, str] = {}
    for item in items or []:
        for part in item.split(","):
            part = part.strip()
            if not part:
                continue
            name, eq, text = part.partition("=")
            name = name.strip()
            if not eq or not name.isidentifier() or not text.strip():
                raise UsageError(f"--at takes name=value pairs like x=0.5,y=1; got {part!r}")
            if name in given:
                raise UsageError(f"--at names {name} twice ({given[name]} and {part}); give each var one value")
            given[name] = part
            if IEEE_WORDS.fullmatch(text.strip()):
                point[name] = float(text)
                continue
            try:
                value = sad.parse(text)
            except sad.ParseError as exc:
                raise UsageError(f"--at {name}: cannot read the value {text.strip()!r}: {exc}") from None
            if value.tape.vars:
                raise UsageError(f"--at {name}: the value {text.strip()!r} must be a number, "
                                 f"not use the variable(s) {', '.join(value.tape.vars)}")
            point[name] = float(value.eval())
    return point


def bind_point(f: sad.Term, point: dict[str, float], extra: Sequence[str] = (),
               default: float | None = None, complete: bool = False) -> dict[str, sad.Term]:
    """Set the vars of ``f``'s tape to ``point``; an unknown name in the point is an error. With
    ``complete``, every var of ``f`` needs a value: from the point, or ``default``; one without is
    an error naming it (it would silently be 0)."""
    tape = f.tape
    for option, names in (("--wrt", extra), ("--at", point)):
        for name in names:
            if name in CONSTANTS and tape.find_var(name) is None:
                variables = ", ".join(tape.vars) or "none"
                raise CliError(f"{option} {name}: {name} is the constant {CONSTANTS[name]!r} in expressions, "
                               f"not a variable of the expression (variables: {variables})")
    for name in extra:  # the library returns d/dz = 0 for a z not in f; typed here, it is a typo
        if tape.find_var(name) is None:
            variables = ", ".join(tape.vars) or "none"
            raise CliError(f"--wrt {name}: {name!r} is not a variable of the expression (variables: {variables})")
    known = tape.vars
    for name, value in point.items():
        if name not in known:
            names = ", ".join(known) or "none"
            raise CliError(f"--at names {name!r}, which is not a variable of the expression (variables: {names})")
        known[name].set(value)
    if complete:
        needed = vars_of(f)
        missing = [name for name in known if name in needed and name not in point]
        if missing and default is None:
            raise CliError(f"no value for {', '.join(missing)}: give --at "
                           f"{','.join(n + '=...' for n in missing)}, or --default V for every var without one")
        for name in missing:
            known[name].set(default)
    return known


def vars_of(f: sad.Term) -> set[str]:
    """The names of the vars ``f`` depends on."""
    tape = f.tape
    return {tape.nodes[i].payload for i in dependencies(tape, [f.index]) if tape.nodes[i].op == "var"}


def wrt_sequence(items: list[str], order: int | None, max_order: int | None = None) -> list[str]:
    """The vars to differentiate by, in turn: ``--wrt x:2,y`` (or ``--wrt x --wrt x --wrt y``) is
    ``["x", "x", "y"]``; ``--order N`` repeats a single plain ``--wrt``. More than
    ``max_order`` derivatives is a usage error naming --max-order."""
    counts: list[tuple[str, int]] = []  # counted before any list is made: x:99999999999999999999
    for item in items:
        for part in item.split(","):
            name, colon, times = (s.strip() for s in part.partition(":"))
            if not name.isidentifier() or (colon and not (times.isascii() and times.isdigit())):
                raise UsageError(f"--wrt takes VAR, VAR:N or a list like x:2,y (d³/dx²dy); got {item!r}")
            if colon and int(times) < 1:
                raise UsageError(f"--wrt {item}: a count must be at least 1, got {part.strip()!r}")
            counts.append((name, int(times) if colon else 1))
    if order is not None:
        if len(counts) != 1 or counts[0][1] != 1:
            raise UsageError(f"--order {order} goes with a single --wrt VAR, got --wrt {' --wrt '.join(items)}; "
                             "for mixed derivatives give the counts instead (e.g. --wrt x:2,y)")
        counts = [(counts[0][0], order)]
    total = sum(n for _, n in counts)
    if max_order is not None and total > max_order:
        raise UsageError(f"{total} derivatives asked for, more than --max-order {max_order}; "
                         "raise it with --max-order N (0 = no limit)")
    if total > sys.maxsize:
        raise UsageError(f"{total} derivatives asked for, more than a list can hold ({sys.maxsize})")
    return [name for name, n in counts for _ in range(n)]


__all__ = ["IEEE_WORDS", "bind_point", "constants_used", "parse_expression", "parse_point", "read_expression", "stdin_expression", "stdin_lines", "vars_of", "wrt_sequence"]
