"""The argument parser: argparse with one-line usage errors that name the nearest option, an
argument like '-x^2' read as an expression, the functions an expression may use listed in
--help, --fn module:name, and the types of the flags' values."""

from __future__ import annotations

import argparse
import difflib
import importlib
import math
import os
import re
import sys
import textwrap
from typing import Any, Container, Iterable, Sequence

import subgraph_ad as sad
from subgraph_ad.functions import FUNCTIONS, BinaryFn, Function
from subgraph_ad.interop.parse import ALIASES, CONSTANTS

from .limits import MAX_POINTS, PROG, CliError


#: characters no option has: an argument with one of them is an expression ("-x^2", "-(x+1)")
_OPERATOR = re.compile(r"[\s^*/+()]")


def looks_like_expression(arg: str, options: Container[str]) -> bool:
    """Whether an argument starting with '-' is an expression rather than an option: '-x^2',
    '-sin(x)', '-2*x', '-x' are expressions; '-q', '-o', '--wrt', '--at=x=1' are options
    (``options``: the option strings of the parser). A lone '-' (standard input) and '--' stay
    what argparse makes of them."""
    if len(arg) < 2 or arg[0] != "-" or arg == "--":
        return False
    if arg.startswith("--"):
        return re.fullmatch(r"--[A-Za-z][\w-]*(=.*)?", arg, re.S) is None
    if _OPERATOR.search(arg) or not arg[1].isalpha():
        return True
    return arg[:2] not in options


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line that points at --help; an argument like '-x^2'
    is an expression, not an unknown option; no abbreviations (``--ord`` is a typo to report,
    not ``--order``: a prefix that works today breaks when a new flag shares it); an unknown
    argument is reported by the (sub)command that met it, with the nearest option; a parser of a
    command that reads an expression (``lists_functions``) ends its help with the functions and
    constants known when the help is shown (the registry, with what --fn added)."""

    lists_functions = False
    _seen: list[str] = []  # the arguments being parsed, for error()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> Any:
        if message.startswith("the following arguments are required"):
            # a typo'd required flag (--out for --output) is the cause: name it, not the symptom
            unknown = [arg for arg in self._seen if arg.startswith("--") and arg != "--"
                       and arg.partition("=")[0] not in self._option_string_actions
                       and not looks_like_expression(arg, self._option_string_actions)]
            if unknown:
                message = unrecognized(unknown, self._option_string_actions, None)
        sys.stderr.write(f"{self.prog}: error: {message} (see {self.prog} --help)\n")
        raise SystemExit(2)

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        # a subcommand's parser is run by parse_known_args too: its leftovers are its own error,
        # not the top-level's "unrecognized arguments" that names no subcommand
        self._seen = list(sys.argv[1:] if args is None else args)
        parsed, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(unrecognized(extras, self._option_string_actions, getattr(parsed, "expr", None)))
        return parsed, extras

    def format_help(self) -> str:
        text = super().format_help()
        return text + "\n" + known_names() + "\n" if self.lists_functions else text

    def _parse_optional(self, arg_string: str) -> Any:
        if looks_like_expression(arg_string, self._option_string_actions):
            return None
        return super()._parse_optional(arg_string)


def unrecognized(extras: Sequence[str], options: Iterable[str], expr: str | None) -> str:
    """The message for arguments no option took: each unknown option with the nearest known one
    (``--oder``: did you mean --order?), else the stray words (a second expression)."""
    flags = [arg.partition("=")[0] for arg in extras if arg.startswith("-") and arg != "-"]
    if not flags:
        words = " ".join(extras)
        plural = "s" if len(extras) > 1 else ""
        already = f"; EXPR is already {expr!r} (one expression per call, quoted if it has spaces)" if expr else ""
        return f"unrecognized argument{plural} {words}{already}"
    known = sorted(option for option in options if option.startswith("--"))
    hints = [difflib.get_close_matches(flag, known, n=1) for flag in flags]
    if len(flags) == 1:
        return f"unrecognized argument {flags[0]}; " + (f"did you mean {hints[0][0]}?" if hints[0]
                                                           else "no option is like it")
    notes = [f"did you mean {near[0]}?" if near else "no option is like it" for near in hints]
    return "unrecognized arguments " + ", ".join(f"{flag} ({note})" for flag, note in zip(flags, notes))


def internal(name: str) -> bool:
    """A built-in function the package uses to build derivatives and conditions (``dsigmoid``,
    ``sech2``, ``select``, ``greater``, ...): registered by subgraph_ad, not in its public API.
    An expression may still use one; ``--help`` leaves them out, ``--all-functions`` lists them."""
    fn = FUNCTIONS[name]
    return type(fn).__module__.startswith("subgraph_ad.") and name not in sad.__all__


def known_names(width: int = 88, all_functions: bool = False) -> str:
    """The functions, other names and constants an expression may use, read from the registry now:
    the user-facing functions (the package's public ones and those --fn added); with
    ``all_functions``, the internal ones too."""
    def block(title: str, words: list[str]) -> str:
        return f"{title}:\n" + textwrap.fill(" ".join(words), width, initial_indent="  ", subsequent_indent="  ",
                                             break_on_hyphens=False) + "\n" if words else ""

    by_value: dict[float, list[str]] = {}
    for name, value in CONSTANTS.items():
        by_value.setdefault(value, []).append(name)
    constants = [f"{names[0]}{' (also ' + ', '.join(names[1:]) + ')' if names[1:] else ''} = {value!r}"
                 for value, names in by_value.items()]
    hidden = sorted(name for name in FUNCTIONS if internal(name))
    shown_names = [name for name in FUNCTIONS if not internal(name)]
    rest = (block("internal functions (what derivatives and conditions are built from; usable too)", hidden)
            if all_functions else f"({len(hidden)} internal functions: --all-functions lists them)\n" if hidden else "")
    return (block("functions of one argument (add your own with --fn module:name)",
                  sorted(name for name in shown_names if FUNCTIONS[name].arity == 1))
            + block("functions of two arguments", sorted(name for name in shown_names if FUNCTIONS[name].arity == 2))
            + block("other names", [f"{alias}={name}" for alias, name in sorted(ALIASES.items()) if name in FUNCTIONS])
            + "constants:\n" + "".join(f"  {c}\n" for c in constants) + rest).rstrip("\n")


class AllFunctions(argparse.Action):
    """``--all-functions``: print every function an expression may use, internal ones included, and exit."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="list every function an expression may use, the internal ones too, and exit")

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, value: Any,
                 option: str | None = None) -> None:
        print(known_names(all_functions=True))
        parser.exit()


def load_function(spec: str) -> Function:
    """``module:name`` -> the UnaryFn or BinaryFn instance ``name`` of ``module``, registered so the
    parser (and from_sympy) know it. Raises CliError saying what was given and what was expected."""
    module_name, colon, attribute = spec.partition(":")
    module_name, attribute = module_name.strip(), attribute.strip()
    if not colon or not module_name or not attribute:
        raise CliError(f"--fn {spec}: expected module:name, e.g. --fn myfuncs:softplus "
                       "(a UnaryFn or BinaryFn instance named softplus in myfuncs.py)")
    # the current directory is importable while this one module is imported, as with python -m,
    # and no longer: left first on sys.path, a graphviz.py there would be run by a later import
    here = os.getcwd()
    added = here not in sys.path
    if added:
        sys.path.insert(0, here)
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
    finally:
        if added and here in sys.path:
            sys.path.remove(here)
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


class LoadFunction(argparse.Action):
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


def _whole(text: str, least: int, expected: str) -> int:
    """``text`` as a whole number of at least ``least``, else the argparse error saying so."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number{expected}, got {text!r}") from None
    if value < least:
        raise argparse.ArgumentTypeError(f"must be {'at least 1' if least else '0 (no cap) or more'}, got {value}")
    return value


def count(text: str) -> int:
    """An argparse type: a whole number >= 1."""
    return _whole(text, 1, "")


def points(text: str) -> int:
    """An argparse type: a number of points, 1 to MAX_POINTS (each is a SymPy evaluation)."""
    value = _whole(text, 1, "")
    if value > MAX_POINTS:
        raise argparse.ArgumentTypeError(f"at most {MAX_POINTS} points, got {value}")
    return value


def limit(text: str) -> int | None:
    """An argparse type: a cap, a whole number >= 1, or 0 for none (None)."""
    return _whole(text, 0, " (0 = no cap)") or None


def seconds(text: str) -> float | None:
    """An argparse type: a time budget in seconds > 0, or 0 for none (None)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds (0 = no budget), got {text!r}") from None
    if not value >= 0 or math.isinf(value):
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds, 0 (no budget) or more, got {text!r}")
    return value or None


__all__ = ["AllFunctions", "LoadFunction", "Parser", "count", "internal", "known_names", "limit", "load_function", "looks_like_expression", "points", "seconds", "unrecognized"]
