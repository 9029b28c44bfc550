"""The subcommands: diff, animate, render, verify and grad. Each takes the parsed arguments and returns
the exit status; problems are CliErrors, reported by ``main``. Rows go to standard output as
soon as they are known; progress goes to standard error, on a terminal only."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

import subgraph_ad as sad
from subgraph_ad import Term, progress
from subgraph_ad.tables import text_table
from subgraph_ad.interop.sympy_form import sympy_form
from subgraph_ad.testing import Report, check_against_sympy
from subgraph_ad.viz.record import notation

from .inputs import bind_point, constants_used, parse_expression, parse_point, read_expression, vars_of, wrt_sequence
from .limits import CliError, UsageError
from .output import (RowPrinter, check_output, constants_line, distinct_outputs, draw_options, dump_json, number, say,
                     show)


def _expression(args: argparse.Namespace) -> tuple[str, sad.Term, dict[str, float]]:
    """EXPR (or standard input) within the limits: its text, its Term and the constants it used."""
    text = read_expression(args.expr, args.max_length)
    f = parse_expression(text, args.max_tape_nodes)
    return text, f, constants_used(text, f)


def _form(term: sad.Term, args: argparse.Namespace) -> tuple[str | None, str]:
    """The compact SymPy form of ``term`` within the budget, and a note (cut, or out of time)."""
    found = sympy_form(term, args.max_sympy_chars, timeout=args.sympy_timeout)
    if found is None:
        return None, f"not shown: SymPy took > {args.sympy_timeout:g} s (raise --sympy-timeout)"
    text, cut = found
    return text, (f"cut to {args.max_sympy_chars} characters; raise --max-sympy-chars to see more" if cut else "")


def _print_form(label: str, text: str | None, note: str) -> None:
    if text is None:
        progress.write(f"SymPy form of {label}: {note}")
    elif "\n" in text or note:
        progress.write(f"SymPy form of {label} (repeated parts as numbered temporaries):" if "\n" in text
                       else f"SymPy form of {label}:")
        progress.write("\n".join("  " + line for line in text.splitlines()) + (f"\n  ({note})" if note else ""))
    else:
        progress.write(f"SymPy form of {label}: {text}")


def _counts(report: Report) -> str:
    counts = report.counts
    return (f"symbolic {report.symbolic}; points by {report.oracle}: {counts['pass']} pass, {counts['fail']} fail, "
            f"{counts['inconclusive']} inconclusive" + (f"; {report.note}" if report.note else ""))


def _check_json(report: Report) -> dict[str, Any]:
    return {"status": report.status, "symbolic": report.symbolic, "oracle": report.oracle,
            "points": [{"point": c.point, "ours": number(c.ours), "reference": number(c.reference),
                        "status": c.status} for c in report.points],
            **({"note": report.note} if report.note else {})}


def one_expression(args: argparse.Namespace) -> str | None:
    """Why the command takes just one expression from standard input (it writes one file or
    drawing), or None when it does each line in turn (it prints its results)."""
    if args.command == "render":
        return f"render draws one graph, to {'standard output' if args.output == '-' else args.output}"
    if args.command == "diff" and (args.svg or args.animate):
        return "--svg and --animate write one file each"
    if args.command == "animate":
        return "animate writes one animation"
    return None


# -- subcommands -----------------------------------------------------------------------------------
def cmd_diff(args: argparse.Namespace) -> int:
    names = wrt_sequence(args.wrt, args.order, args.max_order)
    point = parse_point(args.at)
    distinct_outputs(([("--svg", args.svg)] if args.svg else []) + [("--animate", p) for p in args.animate or []])
    if args.svg:
        check_output(args.svg, (".svg", ".png", ".pdf", ".dot"), "--svg")
    for path in args.animate or []:
        check_output(path, (".html", ".svg", ".gif"), "--animate")
    text, f, constants = _expression(args)
    tape = f.tape
    f_nodes = len(tape)
    known = bind_point(f, point, extra=names, default=args.default, complete=True)
    wrts = [known[n] for n in names]

    animations: list[sad.Animation] = []
    if args.animate:  # one recording, written in each format asked for (a list of paths: a list)
        made = sad.animate(f, *wrts, path=args.animate, per=args.per, rankdir=args.rankdir,
                                 precision=args.precision, title=f"{notation(names)} of {text}",
                                 max_nodes=args.max_nodes, max_frames=args.max_frames, progress=say,
                                 method=args.method)
        animations = made if isinstance(made, list) else [made]
        f, wrts = animations[0].term, list(animations[0].wrts)  # the animation's own copy of the tape
        tape = f.tape
        derivatives, new_nodes = list(animations[0].derivatives), list(animations[0].added)
    else:
        with progress.bar(f"building {notation(names)}", unit="node") as advance:
            steps = sad.derivatives(f, *wrts, method=args.method, callback=lambda term: advance())
        derivatives, new_nodes = [s.term for s in steps], [len(s.appended) for s in steps]
    values = [float(f.eval())] + [float(d.eval()) for d in progress.track(
        derivatives, "evaluating", total=len(derivatives), unit="order")]
    labels = [notation(names[:k]) for k in range(len(names) + 1)]
    at = {name: var.value for name, var in known.items()}
    if not args.json:
        where = ", ".join(f"{k} = {show(v)}" for k, v in at.items())
        progress.write(f"f = {f.to_sympy()}" + (f"   at {where}" if where else ""))
        if constants:
            progress.write(constants_line(constants))
        progress.write(text_table(["order", "derivative", "value", "new nodes"],
                                  [[k, label, value, n] for k, (label, value, n)
                                   in enumerate(zip(labels, values, [f_nodes, *new_nodes]))]))
        progress.write(f"tape: {f_nodes} nodes for f, {len(tape)} in all")
    if args.svg:
        say(f"drawing {args.svg}")
        derivatives[-1].render(args.svg, outputs=[f, *derivatives], labels=labels, **draw_options(args))

    check, form, form_note = None, None, ""
    if args.sympy:
        say(f"SymPy form of {labels[-1]}")
        form, form_note = _form(derivatives[-1], args)
        if not args.json:
            _print_form(labels[-1], form, form_note)
        say(f"checking {labels[-1]} against SymPy")
        check = check_against_sympy(f, *wrts, derivative=derivatives[-1], timeout=args.sympy_timeout)
    if args.json:
        out: dict[str, Any] = {
            "expression": text,
            "f": str(f.to_sympy()),
            **({"constants": constants} if constants else {}),
            "point": {k: number(v) for k, v in at.items()},
            "wrt": names,
            "value": number(values[-1]),
            "derivatives": [{"derivative": label, "wrt": names[:k], "value": number(value),
                             **({"new_nodes": new_nodes[k - 1]} if k else {})}
                            for k, (label, value) in enumerate(zip(labels, values))],
            "nodes": {"f": f_nodes, "tape": len(tape)},
        }
        if args.svg:
            out["svg"] = args.svg
        if animations:
            out["animations"] = [{"path": a.path, "frames": a.frames, "nodes": a.nodes} for a in animations]
        if check is not None:
            out["sympy"] = form
            if form_note:
                out["sympy_note"] = form_note
            out["check"] = _check_json(check)
        progress.write(dump_json(out, args))
    else:
        if check is not None:
            progress.write(f"check against SymPy: {check.status} ({_counts(check)})")
        if args.svg:
            progress.write(f"wrote {args.svg}")
        for a in animations:
            progress.write(f"wrote {a.path} ({a.frames} frames, {a.nodes} nodes)")
    return 1 if check is not None and check.status == "fail" else 0


def cmd_animate(args: argparse.Namespace) -> int:
    """The graph of EXPR growing as it is differentiated, written to each -o file in the format
    of its suffix (.html, .svg, .gif): ``diff --animate`` without the table of values."""
    names = wrt_sequence(args.wrt, args.order, args.max_order)
    point = parse_point(args.at)
    distinct_outputs([("-o", p) for p in args.output])
    for path in args.output:
        check_output(path, (".html", ".svg", ".gif"), "-o")
    text, f, _ = _expression(args)
    known = bind_point(f, point, extra=names, default=args.default)
    made = sad.animate(f, *[known[n] for n in names], path=args.output, per=args.per, rankdir=args.rankdir,
                       precision=args.precision, title=f"{notation(names)} of {text}", max_nodes=args.max_nodes,
                       max_frames=args.max_frames, progress=say, method=args.method)
    for a in made if isinstance(made, list) else [made]:
        progress.write(f"wrote {a.path} ({a.frames} frames, {a.nodes} nodes)")
    return 0


#: What ``render --format`` takes; the binary ones are bytes that a terminal would show as noise.
DRAW_FORMATS = ("svg", "dot", "png", "pdf")
BINARY_FORMATS = ("png", "pdf")


def _render_format(args: argparse.Namespace) -> str:
    """The format of ``render``'s drawing: --format (svg by default) for ``-o -``, else the
    suffix of -o, which --format, when given, must agree with."""
    if args.output == "-":
        fmt: str = args.format or "svg"
        if fmt in BINARY_FORMATS and sys.stdout.isatty():
            raise UsageError(f"-o - --format {fmt}: standard output is a terminal, not a place for a binary "
                             f"{fmt.upper()}; redirect it (> f.{fmt}), pipe it, or give -o f.{fmt}")
        return fmt
    check_output(args.output, tuple(f".{fmt}" for fmt in DRAW_FORMATS), "-o")
    suffix = Path(args.output).suffix.lower().lstrip(".")
    if args.format is not None and args.format != suffix:
        raise UsageError(f"-o {args.output} is a .{suffix} file but --format is {args.format}; give -o a "
                         f".{args.format} name, or leave --format out (the suffix names the format)")
    return suffix


def cmd_render(args: argparse.Namespace) -> int:
    fmt = _render_format(args)
    point = parse_point(args.at)
    _, f, _ = _expression(args)
    bind_point(f, point)
    options = draw_options(args)
    if point and options["precision"] is None:
        options["precision"] = 4
    if args.output != "-":
        say(f"drawing {args.output}")
        f.render(args.output, **options)
        progress.write(f"wrote {args.output}")
        return 0
    say(f"drawing {fmt} to standard output")
    with tempfile.TemporaryDirectory() as folder:  # render() writes files: draw into one, then copy it
        data = Path(f.render(Path(folder) / f"graph.{fmt}", **options)).read_bytes()
    sys.stdout.flush()  # anything written as text goes first
    # bytes as Graphviz wrote them, also for SVG and DOT: they say they are UTF-8, whatever the
    # terminal's encoding; a text-only stream (a caller's StringIO) takes the text formats as text
    if hasattr(sys.stdout, "buffer"):
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    elif fmt in BINARY_FORMATS:
        raise CliError(f"-o - --format {fmt}: standard output takes only text here; give -o f.{fmt}")
    else:
        sys.stdout.write(data.decode("utf-8"))
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    names = wrt_sequence(args.wrt, args.order, args.max_order)
    if not args.low < args.high:
        raise UsageError(f"--range needs LOW < HIGH, got {args.low:g} {args.high:g}")
    text, f, constants = _expression(args)
    known = bind_point(f, {}, extra=names)
    wrts = [known[n] for n in names]
    budget = f"SymPy budget {args.sympy_timeout:g} s per order" if args.sympy_timeout else "no SymPy budget"
    labels = [notation(names[:k]) for k in range(1, len(names) + 1)]
    slow = f"inconclusive (SymPy took > {args.sympy_timeout:g} s)" if args.sympy_timeout else ""
    rows = RowPrinter(["order", "derivative", "status", "symbolic", "reference", "pass", "fail", "inconclusive"],
                      [len(str(len(names))), max(map(len, labels)), len("inconclusive"),
                       max(len("not tried"), len(slow)), len("mpmath"), *[len(str(args.points))] * 3],
                      [True, False, False, False, False, True, True, True])
    if not args.json:  # the table streams: each row as soon as it is known
        progress.write(f"f = {f.to_sympy()}: {args.points} points in [{args.low:g}, {args.high:g}], "
                       f"seed {args.seed}, {budget}")
        if constants:
            progress.write(constants_line(constants))
        progress.write(rows.header())
    reports: list[Report] = []
    notes: list[str] = []
    for k in progress.track(range(1, len(wrts) + 1), "checking against SymPy", total=len(wrts), unit="order"):
        report = check_against_sympy(f, *wrts[:k], points=args.points, seed=args.seed, low=args.low,
                                     high=args.high, method=args.method, timeout=args.sympy_timeout)
        reports.append(report)
        counts = report.counts
        if report.note and report.note not in notes:
            notes.append(report.note)
        if not args.json:
            progress.write(rows.line([k, labels[k - 1], report.status, report.symbolic, report.oracle,
                                      counts["pass"], counts["fail"], counts["inconclusive"]]))
    statuses = [r.status for r in reports]
    summary = {s: statuses.count(s) for s in ("pass", "fail", "inconclusive") if statuses.count(s)}
    if args.json:
        progress.write(dump_json({
            "expression": text, "f": str(f.to_sympy()), **({"constants": constants} if constants else {}),
            "wrt": names, "points": args.points, "seed": args.seed, "range": [args.low, args.high],
            "sympy_timeout": args.sympy_timeout,
            "status": "fail" if "fail" in summary else "pass" if summary == {"pass": len(reports)} else "inconclusive",
            "result": summary,
            "orders": [{"order": k, "derivative": label, "wrt": names[:k], **_check_json(report)}
                       for k, (label, report) in enumerate(zip(labels, reports), start=1)],
        }, args))
    else:
        for note in notes:
            progress.write(f"note: {note}")
        progress.write("result: " + ", ".join(f"{n} {s}" for s, n in summary.items()))
    return 1 if "fail" in statuses else 0


def cmd_grad(args: argparse.Namespace) -> int:
    point = parse_point(args.at)
    requested = wrt_sequence(args.wrt, None) if args.wrt else None
    if requested is not None and len(set(requested)) != len(requested):
        raise UsageError(f"--wrt names a var twice: {', '.join(requested)} (grad gives first derivatives; "
                         "for higher ones use --hessian or diff)")
    text, f, constants = _expression(args)
    tape = f.tape
    names = requested if requested is not None else list(tape.vars)
    known = bind_point(f, point, extra=names, default=args.default, complete=True)
    wrts = [known[n] for n in names]
    f_nodes = len(tape)
    gradient = list(f.grad_graph(wrts)) if wrts else []
    hessian = sad.hessian(f, wrts) if args.hessian and wrts else []
    labels = [f"∂f/∂{n}" for n in names]
    values = [g.eval() for g in gradient]
    matrix = [[h.eval() for h in row] for row in hessian]
    forms: list[tuple[str, str | None, str]] = []  # label, SymPy form, note
    checks: list[Report] = []
    if args.sympy:
        pairs: list[tuple[str, tuple[Term, ...], Term]] = [(labels[i], (wrts[i],), gradient[i])
                                                           for i in range(len(gradient))]
        pairs += [(f"∂²f/∂{names[i]}²" if i == j else f"∂²f/∂{names[i]}∂{names[j]}", (wrts[i], wrts[j]), hessian[i][j])
                  for i in range(len(hessian)) for j in range(i, len(hessian))]
        for label, by, term in progress.track(pairs, "checking against SymPy", total=len(pairs), unit="partial"):
            forms.append((label, *_form(term, args)))
            checks.append(check_against_sympy(f, *by, derivative=term, timeout=args.sympy_timeout))
    if args.json:
        out: dict[str, Any] = {
            "expression": text, "f": str(f.to_sympy()),
            **({"constants": constants} if constants else {}),
            "point": {n: number(v.value) for n, v in known.items() if n in point or args.default is not None},
            "value": number(f.eval()), "wrt": names,
            "gradient": [number(v) for v in values],
            **({"hessian": [[number(v) for v in row] for row in matrix]} if args.hessian else {}),
            "nodes": {"f": f_nodes, "tape": len(tape)},
        }
        if args.sympy:
            out["sympy"] = {"gradient": [form for _, form, _ in forms[:len(gradient)]],
                            **({"hessian": [form for _, form, _ in forms[len(gradient):]]} if args.hessian else {})}
            out["check"] = [{"derivative": " ".join(c.wrt), **_check_json(c)} for c in checks]
        progress.write(dump_json(out, args))
    else:
        shown = vars_of(f) | set(names)
        where = ", ".join(f"{n} = {show(known[n].value)}" for n in known if n in shown)
        progress.write(f"f = {f.to_sympy()}" + (f"   at {where}" if where else ""))
        if constants:
            progress.write(constants_line(constants))
        progress.write(f"f = {show(f.eval())}")
        progress.write("gradient (one reverse sweep):")
        progress.write(text_table(["partial", "value"], [[label, float(v)] for label, v in zip(labels, values)]))
        if args.hessian:
            progress.write("Hessian:")
            progress.write(text_table(["", *names], [[n, *map(float, row)] for n, row in zip(names, matrix)]))
        progress.write(f"tape: {f_nodes} nodes for f, {len(tape)} in all")
        if checks:
            for label, form, note in forms:
                _print_form(label, form, note)
            failed = [c for c in checks if c.status == "fail"]
            counts = {s: sum(c.status == s for c in checks) for s in ("pass", "fail", "inconclusive")}
            progress.write(f"check against SymPy: {'fail' if failed else 'pass' if counts['pass'] else 'inconclusive'} "
                           f"({counts['pass']} pass, {counts['fail']} fail, {counts['inconclusive']} inconclusive "
                           "partials)")
    return 1 if any(c.status == "fail" for c in checks) else 0
