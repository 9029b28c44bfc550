"""The ``subgraph-ad`` command: derivatives, drawings and SymPy checks of a text expression.

It uses only the public API (``parse``, ``gen_graph``, ``render``, ``animate``,
``testing.check_against_sympy``), so everything it does can be done from Python too. Errors
are one line on stderr and a non-zero exit, never a traceback: 1 for a failed run or check,
2 for a bad command line.

>>> main(["diff", "x^3", "--wrt", "x", "--order", "2", "--at", "x=2"])
f = x**3   at x = 2
order  derivative                      value  new nodes
    0  f                                   8          -
    1  df/dx                              12          4
    2  d²f/dx²                            12          3
tape: 3 nodes for f, 10 in all
0
"""

from __future__ import annotations

import argparse
import ast
import importlib
import json
import math
import os
import sys
import textwrap
from pathlib import Path
from typing import Any, Callable, Sequence

import subgraph_ad as sad
from subgraph_ad.viz.record import notation
from subgraph_ad.ad.diff import METHODS
from subgraph_ad.functions import FUNCTIONS, BinaryFn, Function
from subgraph_ad.interop.parse import ALIASES, CONSTANTS
from subgraph_ad.testing import check_against_sympy

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


def bind_point(f: sad.Term, point: dict[str, float], extra: Sequence[str] = ()) -> dict[str, sad.Term]:
    """Set the vars of ``f``'s tape to ``point``; an unknown name in the point is an error."""
    tape = f.tape
    for option, names in (("--wrt", extra), ("--at", point)):
        for name in names:
            if name in CONSTANTS and tape.find_var(name) is None:
                variables = ", ".join(tape.vars) or "none"
                raise CliError(f"{option} {name}: {name} is the constant {CONSTANTS[name]!r} in expressions, "
                               f"not a variable of the expression (variables: {variables})")
    for name in extra:
        if tape.find_var(name) is None:
            tape.var(name, 0.0)  # d/dz of an expression without z is zero, as in SymPy
    known = tape.vars
    for name, value in point.items():
        if name not in known:
            names = ", ".join(known) or "none"
            raise CliError(f"--at names {name!r}, which is not a variable of the expression (variables: {names})")
        known[name].set(value)
    return known


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


# -- subcommands -----------------------------------------------------------------------------------
def cmd_diff(args: argparse.Namespace) -> int:
    names = wrt_sequence(args.wrt, args.order)
    point = parse_point(args.at)
    if args.svg:
        check_output(args.svg, (".svg", ".png", ".pdf", ".dot"), "--svg")
    for path in args.animate or []:
        check_output(path, (".html", ".svg", ".gif"), "--animate")
    f = parse_expression(args.expr)
    constants = constants_used(args.expr, f)
    tape = f.tape
    f_nodes = len(tape)
    known = bind_point(f, point, extra=names)
    wrts = [known[n] for n in names]

    derivatives: list[sad.Term] = []
    new_nodes: list[int] = []
    animations: list[sad.Animation] = []
    if args.animate:  # one recording, written in each format asked for
        animations = sad.animate(f, wrts, None, args.animate, per=args.per, rankdir=args.rankdir,
                                 precision=args.precision, title=f"{notation(names)} of {args.expr}",
                                 max_nodes=None if args.max_nodes == 0 else args.max_nodes,
                                 progress=progress_printer(wants_progress(args)), method=args.method)
        derivatives, new_nodes = list(animations[0].derivatives), list(animations[0].added)
    else:
        steps = sad.derivatives(f, *wrts, method=args.method)
        derivatives, new_nodes = [s.term for s in steps], [len(s.appended) for s in steps]
    if args.svg:
        derivatives[-1].render(args.svg, outputs=[f, *derivatives], **draw_options(args))

    check = None
    if args.sympy:
        check = check_against_sympy(f, *wrts, derivative=derivatives[-1])  # as built above
    rows = [("f", [], f.eval(), None)] + [
        (notation(names[:k]), names[:k], d.eval(), new_nodes[k - 1]) for k, d in enumerate(derivatives, 1)
    ]
    at = {name: var.value for name, var in known.items()}
    if args.json:
        out: dict[str, Any] = {
            "expression": args.expr,
            "f": str(f.to_sympy()),
            **({"constants": constants} if constants else {}),
            "point": {k: number(v) for k, v in at.items()},
            "wrt": names,
            "value": number(rows[-1][2]),
            "derivatives": [{"derivative": label, "wrt": wrt, "value": number(value),
                             **({"new_nodes": n} if n is not None else {})}
                            for label, wrt, value, n in rows],
            "nodes": {"f": f_nodes, "tape": len(tape)},
        }
        if args.svg:
            out["svg"] = args.svg
        if animations:
            out["animations"] = [{"path": a.path, "frames": a.frames, "nodes": a.nodes} for a in animations]
        if check is not None:
            out["sympy"] = str(derivatives[-1].to_sympy())
            out["check"] = {"status": check.status, "symbolic": check.symbolic,
                            "points": [{"point": c.point, "ours": number(c.ours), "sympy": number(c.sympy),
                                        "status": c.status} for c in check.points],
                            **({"note": check.note} if check.note else {})}
        print(json.dumps(out, indent=2, ensure_ascii=False))
    else:
        where = ", ".join(f"{k} = {show(v)}" for k, v in at.items())
        print(f"f = {f.to_sympy()}" + (f"   at {where}" if where else ""))
        if constants:
            print(constants_line(constants))
        print(f"{'order':>5}  {'derivative':<14} {'value':>22}  {'new nodes':>9}")
        for k, (label, _, value, n) in enumerate(rows):
            count = "-" if n is None else str(n)
            print(f"{k:>5}  {label:<14} {show(value):>22}  {count:>9}")
        print(f"tape: {f_nodes} nodes for f, {len(tape)} in all")
        if check is not None:
            print(f"SymPy form of {rows[-1][0]}: {derivatives[-1].to_sympy()}")
            counts = check.counts
            print(f"check against SymPy: {check.status} (symbolic {check.symbolic}; points "
                  f"{counts['pass']} pass, {counts['fail']} fail, {counts['inconclusive']} inconclusive"
                  + (f"; {check.note})" if check.note else ")"))
        if args.svg:
            print(f"wrote {args.svg}")
        for a in animations:
            print(f"wrote {a.path} ({a.frames} frames, {a.nodes} nodes)")
    return 1 if check is not None and check.status == "fail" else 0


def cmd_render(args: argparse.Namespace) -> int:
    check_output(args.output, (".svg", ".png", ".pdf", ".dot"), "-o")
    point = parse_point(args.at)
    f = parse_expression(args.expr)
    bind_point(f, point)
    options = draw_options(args)
    if point and options["precision"] is None:
        options["precision"] = 4
    f.render(args.output, **options)
    print(f"wrote {args.output}")
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    names = wrt_sequence(args.wrt, args.order)
    if args.points < 1:
        raise CliError(f"--points must be at least 1, got {args.points}")
    if not args.low < args.high:
        raise CliError(f"--range needs LOW < HIGH, got {args.low} {args.high}")
    f = parse_expression(args.expr)
    constants = constants_used(args.expr, f)
    known = bind_point(f, {}, extra=names)
    wrts = [known[n] for n in names]
    say = progress_printer(wants_progress(args))
    print(f"f = {f.to_sympy()}: {args.points} points in [{args.low:g}, {args.high:g}], seed {args.seed}")
    if constants:
        print(constants_line(constants))
    print(f"{'order':>5}  {'derivative':<14} {'status':<13} {'symbolic':<10} {'pass':>4} {'fail':>4} {'inconcl.':>8}")
    statuses, notes = [], []
    for k in range(1, len(wrts) + 1):
        label = notation(names[:k])
        if say:
            say(f"checking {label} ({k} of {len(wrts)})")
        report = check_against_sympy(f, *wrts[:k], points=args.points, seed=args.seed, low=args.low,
                                     high=args.high, method=args.method)
        counts = report.counts
        statuses.append(report.status)
        if report.note and report.note not in notes:
            notes.append(report.note)
        print(f"{k:>5}  {label:<14} {report.status:<13} {report.symbolic:<10} "
              f"{counts['pass']:>4} {counts['fail']:>4} {counts['inconclusive']:>8}")
    failed = statuses.count("fail")
    summary = {s: statuses.count(s) for s in ("pass", "fail", "inconclusive") if statuses.count(s)}
    for note in notes:
        print(f"note: {note}")
    print("result: " + ", ".join(f"{n} {s}" for s, n in summary.items()))
    return 1 if failed else 0


# -- the parser ------------------------------------------------------------------------------------
DESCRIPTION = """\
Higher-order derivatives as derivative subgraphs: differentiate a text expression, evaluate it,
draw its graph, animate how the graph grows, and check it against SymPy.

Expressions use numbers, variable names, + - * / ^ ** and the known functions (sin, exp, atan2,
...: 'subgraph-ad diff --help' lists them all; --fn module:name adds yours), with the constants
e and pi. They are parsed safely."""

EXAMPLES = {
    "main": """\
examples:
  subgraph-ad diff "exp(-x^2/2)" --wrt x --order 4 --at x=0.3
  subgraph-ad diff "x*y + sin(x)" --wrt x --wrt y --at x=0.5,y=4.2 --sympy
  subgraph-ad diff "exp(-x^2/2)" --wrt x --order 3 --svg d3.svg --animate d3.html
  subgraph-ad render "exp(-x^2/2) * sin(y)" -o f.svg
  subgraph-ad verify "tanh(x)^2" --wrt x --order 5

Run 'subgraph-ad COMMAND --help' for each command's options.""",
    "diff": """\
examples:
  subgraph-ad diff "exp(-x^2/2)" --wrt x --order 4 --at x=0.3
  subgraph-ad diff "x*y + sin(x)" --wrt x --wrt y --at x=0.5,y=4.2
  subgraph-ad diff "sin(x)/x" --wrt x --order 2 --at x=pi/4 --sympy --json
  subgraph-ad diff "exp(-x^2/2)" --wrt x --order 3 --svg d3.svg --animate d3.html
  subgraph-ad diff "softplus(x)" --fn myfuncs:softplus --wrt x --order 2   # softplus from myfuncs.py

Variables not given with --at are 0. Exit status 1 if --sympy finds a mismatch.""",
    "render": """\
examples:
  subgraph-ad render "exp(-x^2/2) * sin(y)" -o f.svg
  subgraph-ad render "x*y + sin(x)" -o f.png --at x=0.5,y=4.2 --rankdir LR""",
    "verify": """\
examples:
  subgraph-ad verify "exp(-x^2/2)" --wrt x --order 6
  subgraph-ad verify "x^2*y^3" --wrt x --wrt y --wrt y --points 10

Each row differentiates one more time; exit status 1 if any row fails.""",
}


def build_parser() -> argparse.ArgumentParser:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = _Parser(prog=PROG, description=DESCRIPTION, epilog=EXAMPLES["main"], formatter_class=formatter)
    parser.add_argument("--version", action="version", version=f"%(prog)s {sad.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    def method(p: argparse.ArgumentParser) -> None:
        p.add_argument("--method", choices=METHODS, default="auto",
                       help="how: repeated gen_graph passes (graph), Taylor mode (taylor) or, as "
                            "diff() does, whichever appends fewer nodes (auto, default)")

    def expression(p: argparse.ArgumentParser, help: str) -> None:
        p.lists_functions = True  # type: ignore[attr-defined]
        p.add_argument("expr", metavar="EXPR", help=help)

    def functions(p: argparse.ArgumentParser) -> None:
        p.add_argument("--fn", action=_LoadFunction, metavar="MODULE:NAME",
                       help="register the UnaryFn/BinaryFn instance NAME of MODULE (a .py file in the current "
                            "directory, or any importable module) so EXPR can use it; repeatable")

    def drawing(p: argparse.ArgumentParser) -> None:
        p.add_argument("--precision", type=int, metavar="N", help="show node values with N significant digits")
        p.add_argument("--rankdir", choices=["TB", "LR", "BT", "RL"], default="TB",
                       help="graph direction: top-down (TB, default) or left-right (LR), ...")
        p.add_argument("--max-nodes", type=int, default=500, metavar="N",
                       help="refuse to lay out more than N nodes (default 500; 0 = no cap)")

    d = sub.add_parser("diff", help="differentiate, evaluate, draw, animate, check", description=(
        "Differentiate EXPR (by each --wrt in turn, or --order times by one var), print the "
        "value of every order at the point, the node counts and optionally the SymPy form and check."),
        epilog=EXAMPLES["diff"], formatter_class=formatter)
    expression(d, 'the expression, e.g. "exp(-x^2/2)"')
    d.add_argument("--wrt", action="append", required=True, metavar="VAR",
                   help="differentiate by VAR; repeat for mixed derivatives (--wrt x --wrt y)")
    d.add_argument("--order", type=int, metavar="N", help="differentiate N times by the one --wrt var")
    d.add_argument("--at", action="append", metavar="x=0.5,y=1", help="the point (values may be like pi/4)")
    d.add_argument("--svg", metavar="FILE", help="draw f and its derivatives (.svg, .png, .pdf or .dot)")
    d.add_argument("--animate", metavar="FILE", action="append",
                   help="animate the graph growing (.html, .svg or .gif); repeat for several formats")
    method(d)
    d.add_argument("--per", choices=["node", "pass"], default="node",
                   help="one animation frame per new node (default) or per derivative order")
    d.add_argument("--sympy", action="store_true", help="print the SymPy form and check against sympy.diff")
    d.add_argument("--json", action="store_true", help="print the results as JSON")
    d.add_argument("-q", "--quiet", action="store_true", help="no progress messages")
    drawing(d)
    functions(d)
    d.set_defaults(run=cmd_diff)

    r = sub.add_parser("render", help="draw the graph of an expression", description=(
        "Draw the graph of EXPR; the file type comes from the suffix of -o (svg, png, pdf, dot)."),
        epilog=EXAMPLES["render"], formatter_class=formatter)
    expression(r, "the expression")
    r.add_argument("-o", "--output", required=True, metavar="FILE", help="output file (.svg, .png, .pdf, .dot)")
    r.add_argument("--at", action="append", metavar="x=0.5,y=1", help="var values (shown with 4 digits)")
    drawing(r)
    functions(r)
    r.set_defaults(run=cmd_render)

    v = sub.add_parser("verify", help="check derivatives against SymPy", description=(
        "Check d/dVAR, d2/dVAR2, ... of EXPR against sympy.diff at seeded random points: a table of "
        "pass / fail / inconclusive per order."), epilog=EXAMPLES["verify"], formatter_class=formatter)
    expression(v, "the expression")
    v.add_argument("--wrt", action="append", required=True, metavar="VAR", help="differentiate by VAR (repeatable)")
    v.add_argument("--order", type=int, metavar="N", help="check orders 1..N by the one --wrt var")
    method(v)
    v.add_argument("--points", type=int, default=5, metavar="K", help="random points per order (default 5)")
    v.add_argument("--seed", type=int, default=0, help="seed of the random points (default 0)")
    v.add_argument("--range", nargs=2, type=float, default=[0.2, 1.8], metavar=("LOW", "HIGH"), dest="range",
                   help="interval the points are drawn from (default 0.2 1.8)")
    v.add_argument("-q", "--quiet", action="store_true", help="no progress messages")
    functions(v)
    v.set_defaults(run=cmd_verify)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status. Functions registered by --fn are known only
    while it runs (the registry is restored afterwards, for callers in the same process)."""
    saved = dict(FUNCTIONS)
    try:
        return _main(argv)
    finally:
        FUNCTIONS.clear()
        FUNCTIONS.update(saved)


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.error("a command is required: diff, render or verify")
    if args.command == "verify":
        args.low, args.high = args.range
    try:
        return args.run(args)
    except CliError as exc:
        message = str(exc)
    except (sad.GraphvizNotFound, sad.GraphvizError, sad.GraphTooLarge, sad.LimitError) as exc:
        message = str(exc)
        if isinstance(exc, sad.GraphTooLarge):
            message += " (on the command line: --max-nodes 0)"
    except OSError as exc:
        message = f"cannot write {exc.filename}: {exc.strerror}" if exc.filename else str(exc)
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug, but the user still gets one line, not a traceback
        message = f"unexpected {type(exc).__name__}: {exc}"
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    raise SystemExit(main())
