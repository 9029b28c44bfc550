"""What the subcommands share: errors, the argument parser class, reading expressions, points,
--wrt and --fn, output paths and progress lines."""

from __future__ import annotations

import argparse
import ast
import importlib
import math
import os
import sys
import textwrap
from pathlib import Path
from typing import Any, Callable, Sequence

import subgraph_ad as sad
from subgraph_ad.core import dependencies
from subgraph_ad.functions import FUNCTIONS, BinaryFn, Function
from subgraph_ad.interop.parse import ALIASES, CONSTANTS

PROG = "subgraph-ad"


class CliError(Exception):
    """A problem with what the user asked for: reported as one line, exit status 1."""


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line that points at --help; a parser of a command that
    reads an expression (``lists_functions``) ends its help with the functions and constants
    known when the help is shown (the registry, with what --fn added)."""

    lists_functions = False

    def error(self, message: str) -> Any:  # type: ignore[override]
        sys.stderr.write(f"{self.prog}: error: {message} (see {self.prog} --help)\n")
        raise SystemExit(2)

    def format_help(self) -> str:
        text = super().format_help()
        return text + "\n" + known_names() + "\n" if self.lists_functions else text


def known_names(width: int = 88) -> str:
    """The functions, other names and constants an expression may use, read from the registry now."""
    def block(title: str, words: list[str]) -> str:
        return f"{title}:\n" + textwrap.fill(" ".join(words), width, initial_indent="  ", subsequent_indent="  ",
                                             break_on_hyphens=False) + "\n" if words else ""

    by_value: dict[float, list[str]] = {}
    for name, value in CONSTANTS.items():
        by_value.setdefault(value, []).append(name)
    constants = [f"{names[0]}{' (also ' + ', '.join(names[1:]) + ')' if names[1:] else ''} = {value!r}"
                 for value, names in by_value.items()]
    return (block("functions of one argument (add your own with --fn module:name)",
                  sorted(name for name, fn in FUNCTIONS.items() if fn.arity == 1))
            + block("functions of two arguments", sorted(name for name, fn in FUNCTIONS.items() if fn.arity == 2))
            + block("other names", [f"{alias}={name}" for alias, name in sorted(ALIASES.items()) if name in FUNCTIONS])
            + "constants:\n" + "".join(f"  {c}\n" for c in constants)).rstrip("\n")


# -- small helpers ---------------------------------------------------------------------------------
def number(value: Any) -> Any:
    """A value for JSON: a float, or the strings "nan", "inf", "-inf" that JSON has no numbers for."""
    value = float(value)
    if math.isfinite(value):
        return value
    return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")


def show(value: Any) -> str:
    return f"{float(value):.15g}"


def parse_expression(text: str) -> sad.Term:
    try:
        return sad.parse(text)
    except sad.ParseError as exc:
        hint = "; add your own with --fn module:name" if "a call of" in str(exc) else ""
        raise CliError(f"bad expression: {exc}{hint}") from None


def constants_used(text: str, f: sad.Term) -> dict[str, float]:
    """The constants (``e``, ``pi``, ...) that the parsed expression ``text`` read as constants."""
    tree = ast.parse(text.replace("^", "**").strip(), mode="eval")  # parsed before: valid
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and id(n) not in called}
    return {name: value for name, value in CONSTANTS.items() if name in names and f.tape.find_var(name) is None}


def load_function(spec: str) -> Function:
    """``module:name`` -> the UnaryFn or BinaryFn instance ``name`` of ``module``, registered so the
    parser (and from_sympy) know it. Raises CliError saying what was given and what was expected."""
    module_name, colon, attribute = spec.partition(":")
    module_name, attribute = module_name.strip(), attribute.strip()
    if not colon or not module_name or not attribute:
        raise CliError(f"--fn {spec}: expected module:name, e.g. --fn myfuncs:softplus "
                       "(a UnaryFn or BinaryFn instance named softplus in myfuncs.py)")
    if os.getcwd() not in sys.path:  # the current directory is importable, as with python -m
        sys.path.insert(0, os.getcwd())
    importlib.invalidate_caches()
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (module_name == exc.name or module_name.startswith(exc.name + ".")):
            raise CliError(f"--fn {spec}: no module named {module_name!r} (looked in the current "
                           f"directory {os.getcwd()} and on sys.path; expected e.g. {module_name.replace('.', '/')}.py)"
                           ) from None
        raise CliError(f"--fn {spec}: importing {module_name} failed: {type(exc).__name__}: {exc}") from None
    except Exception as exc:  # the user's module raised while importing
        raise CliError(f"--fn {spec}: importing {module_name} failed: {type(exc).__name__}: {exc}") from None
    obj: Any = module
    for part in attribute.split("."):
        if not hasattr(obj, part):
            offered = sorted(k for k, v in vars(module).items() if isinstance(v, (sad.UnaryFn, BinaryFn)))
            raise CliError(f"--fn {spec}: module {module_name} has no attribute {attribute!r} "
                           f"(its UnaryFn/BinaryFn instances: {', '.join(offered) or 'none'})")
        obj = getattr(obj, part)
    if not isinstance(obj, (sad.UnaryFn, BinaryFn)):
        if isinstance(obj, type) and issubclass(obj, (sad.UnaryFn, BinaryFn)):
            what = (f"the class {obj.__name__}; expected an instance of it "
                    f"(e.g. {obj.__name__.lower()} = {obj.__name__}() in {module_name})")
        else:
            what = f"{type(obj).__name__} {obj!r:.60}; expected a UnaryFn or BinaryFn instance"
        raise CliError(f"--fn {spec}: {module_name}.{attribute} is {what}")
    try:
        return sad.register(obj)
    except (TypeError, ValueError) as exc:
        raise CliError(f"--fn {spec}: {exc}") from None


class _LoadFunction(argparse.Action):
    """--fn module:name, loaded as soon as it is read (so a later --help lists it); a bad spec is
    one line and exit status 2, like any other usage error."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, value: Any,
                 option_string: str | None = None) -> None:
        try:
            fn = load_function(value)
        except CliError as exc:
            sys.stderr.write(f"{PROG}: error: {exc}\n")
            raise SystemExit(2) from None
        namespace.fn = [*(namespace.fn or []), fn]


def parse_point(items: list[str] | None) -> dict[str, float]:
    """``["x=0.5,y=1", "z=pi/4"]`` -> ``{"x": 0.5, "y": 1.0, "z": 0.785...}``; values may be constant expressions."""
    point: dict[str, float] = {}
    for item in items or []:
        for part in item.split(","):
            part = part.strip()
            if not part:
                continue
            name, eq, text = part.partition("=")
            name = name.strip()
            if not eq or not name.isidentifier() or not text.strip():
                raise CliError(f"--at takes name=value pairs like x=0.5,y=1; got {part!r}")
            try:
                value = sad.parse(text)
            except sad.ParseError as exc:
                raise CliError(f"--at {name}: cannot read the value {text.strip()!r}: {exc}") from None
            if value.tape.vars:
                raise CliError(f"--at {name}: the value {text.strip()!r} must be a number, "
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


def wrt_sequence(wrt: list[str], order: int | None) -> list[str]:
    for name in wrt:
        if not name.isidentifier():
            raise CliError(f"--wrt takes a variable name, got {name!r}")
    if order is not None:
        if order < 1:
            raise CliError(f"--order must be at least 1, got {order}")
        if len(wrt) > 1:
            raise CliError("use --order with a single --wrt; for mixed derivatives repeat --wrt "
                           "(e.g. --wrt x --wrt x --wrt y)")
        return wrt * order
    return list(wrt)


def check_output(path: str, suffixes: tuple[str, ...], option: str) -> str:
    """Fail early (before long work) on an output path that cannot be written."""
    suffix = Path(path).suffix.lower()
    if suffix not in suffixes:
        raise CliError(f"{option} {path}: unsupported file type {suffix or '(none)'!r}; use {', '.join(suffixes)}")
    target = Path(path)
    parent = target.resolve().parent
    if target.is_dir():
        raise CliError(f"cannot write {path}: it is a directory")
    if not parent.is_dir():
        raise CliError(f"cannot write {path}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK) or (target.exists() and not os.access(target, os.W_OK)):
        raise CliError(f"cannot write {path}: permission denied")
    return path


def progress_printer(enabled: bool) -> Callable[[str], None] | None:
    """Progress lines on stderr, only for a person watching a terminal."""
    if not enabled:
        return None
    return lambda message: print(f"{PROG}: {message}...", file=sys.stderr, flush=True)


def wants_progress(args: argparse.Namespace) -> bool:
    return not getattr(args, "quiet", False) and sys.stderr.isatty()


def constants_line(constants: dict[str, float]) -> str:
    return "constants: " + ", ".join(f"{name} = {value!r}" for name, value in constants.items())


def draw_options(args: argparse.Namespace) -> dict[str, Any]:
    return {"precision": args.precision, "rankdir": args.rankdir,
            "max_nodes": None if args.max_nodes == 0 else args.max_nodes}
