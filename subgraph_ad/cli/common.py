"""What the subcommands share: errors, the argument parser class, reading expressions, points,
--wrt and --fn, output paths, limits, tables printed row by row and progress messages."""

from __future__ import annotations

import argparse
import difflib
import importlib
import json
import math
import os
import re
import sys
import textwrap
from pathlib import Path
from typing import Any, Container, Iterable, Iterator, Sequence

import subgraph_ad as sad
from subgraph_ad import progress
from subgraph_ad.core import dependencies
from subgraph_ad.functions import FUNCTIONS, BinaryFn, Function
from subgraph_ad.interop.parse import ALIASES, CONSTANTS, free_names

PROG = "subgraph-ad"

#: The command line's own limits (each flag raises its limit; 0 lifts it). Tighter than the
#: library's: a typo such as --order 10000 or a runaway mixed derivative should stop with a
#: message naming the flag, not fill the memory.
MAX_ORDER = 200
MAX_LENGTH = 5_000
MAX_TAPE_NODES = 1_000_000
MAX_FRAMES = 200
MAX_SYMPY_CHARS = 2_000
SYMPY_TIMEOUT = 5.0
MAX_POINTS = 10_000


class CliError(Exception):
    """A problem with what the user asked for: reported as one line, exit status 1."""

    status = 1


class UsageError(CliError):
    """A command line that cannot be right whatever the expression (a bad flag value, two flags
    that contradict each other): one line and exit status 2, like argparse's own errors."""

    status = 2


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


class _Parser(argparse.ArgumentParser):
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


class _AllFunctions(argparse.Action):
    """``--all-functions``: print every function an expression may use, internal ones included, and exit."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="list every function an expression may use, the internal ones too, and exit")

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, value: Any,
                 option: str | None = None) -> None:
        print(known_names(all_functions=True))
        parser.exit()


# -- flag values -----------------------------------------------------------------------------------
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


# -- small helpers ---------------------------------------------------------------------------------
def number(value: Any) -> Any:
    """A value for JSON: a float, or the strings "nan", "inf", "-inf" that JSON has no numbers for."""
    value = float(value)
    if math.isfinite(value):
        return value
    return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")


def show(value: Any) -> str:
    return f"{float(value):.15g}"


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


def dump_json(out: dict[str, Any], args: argparse.Namespace) -> str:
    """A command's JSON: indented, or on one line for each of several expressions (JSON Lines)."""
    return json.dumps(out, indent=None if args.several else 2, ensure_ascii=False)


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


def limit_message(exc: Exception) -> str:
    """An error about a limit, worded with the flag that raises it: the library's messages name
    its keyword arguments (max_frames=, max_nodes=), which mean nothing on the command line."""
    if isinstance(exc, sad.GraphTooLarge) and exc.option == "max_frames":
        return (f"the GIF would have {exc.size} frames, more than --max-frames {exc.limit}; raise it "
                f"(--max-frames {exc.size}, or 0 for no cap), use --per pass (one frame per derivative "
                "order), or write .html or .svg")
    if isinstance(exc, sad.GraphTooLarge):
        return (f"the drawing would have {exc.size} nodes, more than --max-nodes {exc.limit}; Graphviz layout "
                f"time grows steeply with size: raise it (--max-nodes {exc.size}, or 0 for no cap)")
    return f"{exc} (on the command line: raise --max-tape-nodes, or 0 for no limit)"


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
