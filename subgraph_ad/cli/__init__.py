"""The ``subgraph-ad`` command: derivatives, drawings and SymPy checks of a text expression.

It uses only the public API (``parse``, ``gen_graph``, ``render``, ``animate``,
``testing.check_against_sympy``), so everything it does can be done from Python too. Errors
are one line on stderr and a non-zero exit, never a traceback. Exit status: 0 done, 1 a failed
check or an error about the expression or a file, 2 a bad command line (before any work),
130 interrupted, 141 standard output closed early (``| head``: quietly, as tools killed by
SIGPIPE end).

>>> main(["diff", "x^3", "--wrt", "x", "--order", "2", "--at", "x=2"])
f = x**3   at x = 2
order  derivative  value  new nodes
-----  ----------  -----  ---------
    0  f             8.0          3
    1  df/dx        12.0          4
    2  d²f/dx²      12.0          3
tape: 3 nodes for f, 10 in all
0
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
from typing import Sequence

import subgraph_ad as sad
from subgraph_ad import progress
from subgraph_ad.ad.diff import METHODS
from subgraph_ad.functions import FUNCTIONS

from .commands import DRAW_FORMATS, cmd_animate, cmd_diff, cmd_grad, cmd_render, cmd_verify, one_expression
from .operators import cmd_laplacian
from .inputs import stdin_expression, stdin_lines
from .limits import (MAX_FRAMES, MAX_LENGTH, MAX_ORDER, MAX_POINTS, MAX_SYMPY_CHARS, MAX_TAPE_NODES, PROG, SYMPY_TIMEOUT,
                     CliError, UsageError, limit_message)
from .parser import AllFunctions, LoadFunction, Parser, count, limit, points, seconds

# -- the parser ------------------------------------------------------------------------------------
DESCRIPTION = """\
Higher-order derivatives as derivative subgraphs: differentiate a text expression, evaluate it,
draw its graph, animate how the graph grows, and check it against SymPy.

Expressions use numbers, variable names, + - * / ^ ** and the known functions (sin, exp, atan2,
...: 'subgraph-ad diff --help' lists them, --all-functions the internal ones too; --fn
module:name adds yours), with the constants e and pi. They are parsed safely."""

EXAMPLES = {
    "main": """\
examples:
  subgraph-ad diff "exp(-x^2/2)" --wrt x --order 4 --at x=0.3
  subgraph-ad diff "x*y + sin(x)" --wrt x,y --at x=0.5,y=4.2 --sympy
  subgraph-ad diff "-x^2*y" --wrt x:2,y --at x=1,y=2
  subgraph-ad diff "exp(-x^2/2)" --wrt x --order 3 --at x=0.5 --svg d3.svg --animate d3.html
  echo "sin(x)^2" | subgraph-ad diff - --wrt x --at x=1
  subgraph-ad animate "exp(-x^2/2)" --wrt x --order 3 -o d3.gif
  subgraph-ad render "exp(-x^2/2) * sin(y)" -o f.svg
  subgraph-ad verify "tanh(x)^2" --wrt x --order 5
  subgraph-ad grad "x*y + sin(x)" --at x=0.5,y=4.2 --hessian
  subgraph-ad laplacian "exp(-x^2-y^2)*sin(x)" --at x=0.5,y=1 --biharmonic --sympy

Run 'subgraph-ad COMMAND --help' for each command's options.""",
    "diff": """\
examples:
  subgraph-ad diff "exp(-x^2/2)" --wrt x --order 4 --at x=0.3
  subgraph-ad diff "x*y + sin(x)" --wrt x --wrt y --at x=0.5,y=4.2
  subgraph-ad diff "x^3*y^2" --wrt x:2,y --at x=1,y=2       # d³f/dx²dy
  subgraph-ad diff "-x^2" --wrt x --at x=3                 # a leading minus is the expression's
  subgraph-ad diff "sin(x)/x" --wrt x --order 2 --at x=pi/4 --sympy --json
  subgraph-ad diff "exp(-x^2/2)" --wrt x --order 3 --at x=0.5 --svg d3.svg --animate d3.html
  subgraph-ad diff "softplus(x)" --fn myfuncs:softplus --wrt x --order 2 --at x=1   # softplus from myfuncs.py

EXPR "-" reads standard input: each line is an expression, done in turn (with --svg or --animate,
one line only). Every variable needs a value (--at, or
--default for all that have none). Exit status 1 if --sympy finds a mismatch; each SymPy step
has --sympy-timeout seconds.""",
    "grad": """\
examples:
  subgraph-ad grad "x*y + sin(x)" --at x=0.5,y=4.2
  subgraph-ad grad "x^2*y + y^3" --at x=1,y=2 --hessian --sympy
  subgraph-ad grad "sum_sq(x, y)" --fn myfuncs:sum_sq --at x=1,y=1 --json

Exit status 1 if --sympy finds a mismatch.""",
    "laplacian": """\
examples:
  subgraph-ad laplacian "x^2*y + sin(y)" --at x=0.5,y=1
  subgraph-ad laplacian "exp(-x^2-y^2)*sin(x)" --at x=0.5,y=1 --biharmonic --sympy
  subgraph-ad laplacian "x*y*z" --at x=1,y=2,z=3 --wrt x,y --json

Exit status 1 if --sympy finds a mismatch.""",
    "animate": """\
examples:
  subgraph-ad animate "exp(-x^2/2)" --wrt x --order 3 -o d3.html
  subgraph-ad animate "sin(x)*x" --wrt x --order 2 -o d2.gif --per pass
  subgraph-ad animate "x*y + sin(x)" --wrt x,y -o dxy.svg -o dxy.html

The format comes from the suffix of each -o: .html (a player), .svg (CSS-animated) or .gif.""",
    "render": """\
examples:
  subgraph-ad render "exp(-x^2/2) * sin(y)" -o f.svg
  subgraph-ad render "x*y + sin(x)" -o f.png --at x=0.5,y=4.2 --rankdir LR
  subgraph-ad render "sin(x)^2" -o - --format png > f.png
  subgraph-ad render "sin(x)^2" -o - --format dot | dot -Tpdf -o f.pdf""",
    "verify": """\
examples:
  subgraph-ad verify "exp(-x^2/2)" --wrt x --order 6
  subgraph-ad verify "x^2*y^3" --wrt x,y:2 --points 10
  subgraph-ad verify "tanh(x)" --wrt x --order 30 --sympy-timeout 2

Each row differentiates one more time and is printed as soon as it is known; exit status 1 if
any row fails. An order where SymPy takes longer than --sympy-timeout says so in the symbolic
column and is checked against mpmath.diff at 50 digits instead.""",
}



def build_parser() -> argparse.ArgumentParser:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = Parser(prog=PROG, description=DESCRIPTION, epilog=EXAMPLES["main"], formatter_class=formatter)
    parser.add_argument("--version", action="version", version=f"%(prog)s {sad.__version__}")
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="no progress on stderr (there is none anyway when stderr is not a terminal)")
    parser.add_argument("--all-functions", action=AllFunctions)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)

    def common(p: argparse.ArgumentParser, help: str) -> None:
        p.lists_functions = True  # type: ignore[attr-defined]
        p.add_argument("expr", metavar="EXPR", help=help + '; "-" reads standard input, one expression a line')
        # SUPPRESS: absent here, the top-level --quiet (or its default) stands
        p.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS, help="no progress on stderr")
        p.add_argument("--max-length", type=limit, default=MAX_LENGTH, metavar="N",
                       help=f"refuse an expression longer than N characters (default {MAX_LENGTH}; 0 = no limit)")
        p.add_argument("--max-tape-nodes", type=limit, default=MAX_TAPE_NODES, metavar="N",
                       help=f"stop when the tape would pass N nodes (default {MAX_TAPE_NODES:,}; 0 = no limit)")
        p.add_argument("--fn", action=LoadFunction, metavar="MODULE:NAME",
                       help="register the UnaryFn/BinaryFn instance NAME of MODULE (a .py file in the current "
                            "directory, or any importable module) so EXPR can use it; repeatable")
        p.add_argument("--all-functions", action=AllFunctions)

    def method(p: argparse.ArgumentParser) -> None:
        p.add_argument("--method", choices=METHODS, default="auto",
                       help="how: repeated gen_graph passes (graph), Taylor mode (taylor) or, as "
                            "diff() does, whichever appends fewer nodes (auto, default)")

    def orders(p: argparse.ArgumentParser, what: str) -> None:
        p.add_argument("--wrt", action="append", required=True, metavar="VAR",
                       help=f"{what} by VAR; VAR:N for N times, a list for mixed derivatives: --wrt x:2,y is "
                            "d³/dx²dy, like --wrt x --wrt x --wrt y")
        p.add_argument("--order", type=count, metavar="N", help="differentiate N times by the one --wrt var")
        p.add_argument("--max-order", type=limit, default=MAX_ORDER, metavar="N",
                       help=f"refuse more than N derivatives in all (default {MAX_ORDER}; 0 = no limit)")

    def sympy_budget(p: argparse.ArgumentParser) -> None:
        p.add_argument("--sympy-timeout", type=seconds, default=SYMPY_TIMEOUT, metavar="S",
                       help=f"seconds each SymPy step may take (default {SYMPY_TIMEOUT:g}; 0 = no limit); past "
                            "it the check says so and mpmath.diff at 50 digits gives the reference values")

    def sympy_form(p: argparse.ArgumentParser) -> None:
        p.add_argument("--max-sympy-chars", type=limit, default=MAX_SYMPY_CHARS, metavar="N",
                       help=f"cut a printed SymPy form at about N characters (default {MAX_SYMPY_CHARS}; 0 = no limit)")

    def point(p: argparse.ArgumentParser) -> None:
        p.add_argument("--at", action="append", metavar="x=0.5,y=1", help="the point (values may be like pi/4)")

    def checked(p: argparse.ArgumentParser, sympy_help: str) -> None:
        """--sympy with its budget and form length, and --json: what every command that prints
        results at a point takes."""
        p.add_argument("--sympy", action="store_true", help=sympy_help)
        sympy_budget(p)
        sympy_form(p)
        p.add_argument("--json", action="store_true", help="print the results as JSON")

    def defaults(p: argparse.ArgumentParser) -> None:
        p.add_argument("--default", type=float, metavar="V",
                       help="the value of every var --at does not name (without it, such a var is an error)")

    def drawing(p: argparse.ArgumentParser) -> None:
        p.add_argument("--precision", type=int, metavar="N", help="show node values with N significant digits")
        p.add_argument("--rankdir", choices=["TB", "LR", "BT", "RL"], default="TB",
                       help="graph direction: top-down (TB, default) or left-right (LR), ...")
        p.add_argument("--max-nodes", type=limit, default=500, metavar="N",
                       help="refuse to lay out more than N nodes (default 500; 0 = no cap)")

    d = sub.add_parser("diff", help="differentiate, evaluate, draw, animate, check", description=(
        "Differentiate EXPR (by each --wrt in turn, or --order times by one var), print the "
        "value of every order at the point, the node counts and optionally the SymPy form and check."),
        epilog=EXAMPLES["diff"], formatter_class=formatter)
    common(d, 'the expression, e.g. "exp(-x^2/2)"')
    orders(d, "differentiate")
    point(d)
    defaults(d)
    d.add_argument("--svg", metavar="FILE", help="draw f and its derivatives (.svg, .png, .pdf or .dot)")
    d.add_argument("--animate", metavar="FILE", action="append",
                   help="animate the graph growing (.html, .svg or .gif); repeat for several formats")
    method(d)
    d.add_argument("--per", choices=["node", "pass"], default="node",
                   help="one animation frame per new node (default) or per derivative order")
    d.add_argument("--max-frames", type=limit, default=MAX_FRAMES, metavar="N",
                   help=f"refuse an animation of more than N frames where frames are limited (GIF; default "
                        f"{MAX_FRAMES}; 0 = no cap)")
    checked(d, "print the SymPy form (repeated parts as temporaries) and check against sympy.diff")
    drawing(d)
    d.set_defaults(run=cmd_diff)

    a = sub.add_parser("animate", help="animate the graph growing, into .html, .svg or .gif", description=(
        "Differentiate EXPR (by each --wrt in turn, or --order times by one var) and write an animation "
        "of the derivative graph being built to each -o file, in the format of its suffix."),
        epilog=EXAMPLES["animate"], formatter_class=formatter)
    common(a, 'the expression, e.g. "exp(-x^2/2)"')
    orders(a, "differentiate")
    a.add_argument("-o", "--output", action="append", required=True, metavar="FILE",
                   help="the animation (.html, .svg or .gif); repeat for several formats of one recording")
    point(a)
    a.add_argument("--default", type=float, metavar="V", help="the value of every var --at does not name")
    method(a)
    a.add_argument("--per", choices=["node", "pass"], default="node",
                   help="one frame per new node (default) or per derivative order")
    a.add_argument("--max-frames", type=limit, default=MAX_FRAMES, metavar="N",
                   help=f"refuse a GIF of more than N frames (default {MAX_FRAMES}; 0 = no cap)")
    drawing(a)
    a.set_defaults(run=cmd_animate)

    r = sub.add_parser("render", help="draw the graph of an expression", description=(
        "Draw the graph of EXPR; the file type comes from the suffix of -o (svg, png, pdf, dot), "
        "or from --format when -o - writes to standard output."),
        epilog=EXAMPLES["render"], formatter_class=formatter)
    common(r, "the expression")
    r.add_argument("-o", "--output", required=True, metavar="FILE",
                   help='output file (.svg, .png, .pdf, .dot), or "-" for standard output')
    r.add_argument("--format", choices=DRAW_FORMATS,
                   help="the format written to -o - (default svg); with a file, it must match the suffix")
    r.add_argument("--at", action="append", metavar="x=0.5,y=1", help="var values (shown with 4 digits)")
    drawing(r)
    r.set_defaults(run=cmd_render)

    v = sub.add_parser("verify", help="check derivatives against SymPy", description=(
        "Check d/dVAR, d2/dVAR2, ... of EXPR against sympy.diff at seeded random points: a table of "
        "pass / fail / inconclusive per order."), epilog=EXAMPLES["verify"], formatter_class=formatter)
    common(v, "the expression")
    orders(v, "check derivatives")
    method(v)
    v.add_argument("--points", type=points, default=5, metavar="K",
                   help=f"random points per order (default 5, at most {MAX_POINTS})")
    v.add_argument("--seed", type=int, default=0, help="seed of the random points (default 0)")
    v.add_argument("--range", nargs=2, type=float, default=[0.2, 1.8], metavar=("LOW", "HIGH"), dest="range",
                   help="interval the points are drawn from (default 0.2 1.8)")
    sympy_budget(v)
    v.add_argument("--json", action="store_true", help="print the results as JSON (every order and point)")
    v.set_defaults(run=cmd_verify)

    g = sub.add_parser("grad", help="the gradient (and Hessian) at a point", description=(
        "The gradient of EXPR at the point — every partial from one reverse sweep (grad_graph) — "
        "and with --hessian its Hessian (forward over reverse); --sympy checks each against "
        "sympy.diff."), epilog=EXAMPLES["grad"], formatter_class=formatter)
    common(g, "the expression")
    point(g)
    g.add_argument("--wrt", action="append", metavar="VAR",
                   help="the vars to differentiate by, in this order, e.g. --wrt y,x (default: every var of EXPR)")
    g.add_argument("--hessian", action="store_true", help="print the Hessian too")
    checked(g, "print the SymPy forms and check against sympy.diff")
    defaults(g)
    g.set_defaults(run=cmd_grad)

    lp = sub.add_parser("laplacian", help="the Laplacian (and biharmonic) at a point", description=(
        "The Laplacian of EXPR at the point, by one forward pass; --biharmonic adds Δ²f; --sympy checks "
        "each against SymPy's sum of second derivatives."), epilog=EXAMPLES["laplacian"], formatter_class=formatter)
    common(lp, "the expression")
    point(lp)
    lp.add_argument("--wrt", action="append", metavar="VAR", help="the vars of the operator (default: every var of EXPR)")
    lp.add_argument("--biharmonic", action="store_true", help="print the biharmonic Δ²f too")
    checked(lp, "print the SymPy forms and check against SymPy")
    defaults(lp)
    lp.set_defaults(run=cmd_laplacian)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (a usage error or --help too: it never
    raises SystemExit). Functions registered by --fn are known only while it runs, and --quiet
    holds only while it runs (both are restored afterwards, for callers in the same process)."""
    saved = dict(FUNCTIONS)
    try:
        return _main(argv)
    except BrokenPipeError:
        # the reader went away (| head): say nothing, and keep the interpreter's final flush of
        # stdout from failing again (the recipe of the Python docs, "Note on SIGPIPE")
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):  # not a real file (captured in a test): nothing to flush
            pass
        return 141  # 128 + SIGPIPE: what a shell reports for cat, grep, git ... in the same place
    finally:
        FUNCTIONS.clear()
        FUNCTIONS.update(saved)


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a usage error argparse already printed
        sys.stdout.flush()
        return int(exc.code or 0)
    if args.command is None:
        sys.stderr.write(f"{PROG}: error: a command is required: diff, render, verify, grad or laplacian (see {PROG} --help)\n")
        return 2
    if args.command == "verify":
        args.low, args.high = args.range
    args.several = False  # several expressions, from the lines of standard input
    before = progress.enable(False) if args.quiet else None
    try:
        return _run(args)
    finally:
        if args.quiet:
            progress.enable(before)


def _run(args: argparse.Namespace) -> int:
    try:
        status: int = args.run(args) if getattr(args, "expr", None) != "-" else _from_stdin(args)
        sys.stdout.flush()  # a closed pipe is noticed here, not at exit
        return status
    except UsageError as exc:
        sys.stderr.write(f"{PROG} {args.command}: error: {exc} (see {PROG} {args.command} --help)\n")
        return exc.status
    except CliError as exc:
        message = str(exc)
    except (sad.GraphTooLarge, sad.LimitError) as exc:
        message = limit_message(exc)
    except (sad.GraphvizNotFound, sad.GraphvizError) as exc:
        message = str(exc)
    except BrokenPipeError:
        raise
    except OSError as exc:
        message = f"cannot write {exc.filename}: {exc.strerror}" if exc.filename else str(exc)
    except KeyboardInterrupt:
        sys.stderr.write(f"{PROG}: interrupted\n")
        return 130
    except Exception as exc:  # a bug, but the user still gets one line, not a traceback
        message = f"unexpected {type(exc).__name__}: {exc}"
    sys.stderr.write(f"{PROG}: error: {message}\n")
    return 1


def _from_stdin(args: argparse.Namespace) -> int:
    """EXPR "-": the one expression of standard input for a command that writes one file, else
    each non-blank line in turn, their outputs one after another (text blocks apart by a blank
    line; JSON one document a line). An error about one line's expression is reported with its
    line number and the next line goes on; a usage error stops. The exit status is the worst."""
    why = one_expression(args)
    if why is not None:
        args.expr = stdin_expression(args.max_length, why)
        return int(args.run(args))
    lines = stdin_lines(args.max_length)
    ahead = list(itertools.islice(lines, 2))  # two read ahead: is there more than one?
    if len(ahead) < 2:
        args.expr = ahead[0][1] if ahead else ""  # none: the parser says what an empty expression is
        return int(args.run(args))
    args.several = True
    status = 0
    shown = False  # a block on stdout, to keep apart from the next
    for number, text in itertools.chain(ahead, lines):
        if shown and not args.json:
            progress.write("")
        args.expr = text
        try:
            status = max(status, args.run(args))
            shown = True
        except UsageError:
            raise
        except (CliError, sad.GraphTooLarge, sad.LimitError) as exc:
            sys.stdout.flush()
            message = str(exc) if isinstance(exc, CliError) else limit_message(exc)
            sys.stderr.write(f"{PROG}: error: standard input line {number}: {message}\n")
            status = max(status, 1)
    return status
