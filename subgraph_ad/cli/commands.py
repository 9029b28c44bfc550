"""The subcommands: diff, render, verify and grad. Each takes the parsed arguments and returns
the exit status; problems are CliErrors, reported by ``main``."""

from __future__ import annotations

import argparse
import json
from typing import Any

import subgraph_ad as sad
from subgraph_ad.testing import check_against_sympy
from subgraph_ad.viz.record import notation

from .common import (CliError, bind_point, check_output, constants_line, constants_used, draw_options, number,
                     parse_expression, parse_point, progress_printer, show, vars_of, wants_progress, wrt_sequence)


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
    known = bind_point(f, point, extra=names, default=args.default, complete=True)
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


def cmd_grad(args: argparse.Namespace) -> int:
    point = parse_point(args.at)
    f = parse_expression(args.expr)
    constants = constants_used(args.expr, f)
    tape = f.tape
    names = wrt_sequence(args.wrt, None) if args.wrt else list(tape.vars)
    if len(set(names)) != len(names):
        raise CliError(f"--wrt names a var twice: {', '.join(names)}")
    known = bind_point(f, point, extra=names, default=args.default, complete=True)
    wrts = [known[n] for n in names]
    f_nodes = len(tape)
    gradient = list(f.grad_graph(wrts)) if wrts else []
    hessian = sad.hessian(f, wrts) if args.hessian and wrts else []
    checks: list[Any] = []
    if args.sympy:
        checks = [check_against_sympy(f, w, derivative=g) for w, g in zip(wrts, gradient)]
        checks += [check_against_sympy(f, wrts[i], wrts[j], derivative=hessian[i][j])
                   for i in range(len(hessian)) for j in range(i, len(hessian))]
    values = [g.eval() for g in gradient]
    matrix = [[h.eval() for h in row] for row in hessian]
    if args.json:
        out: dict[str, Any] = {
            "expression": args.expr, "f": str(f.to_sympy()),
            **({"constants": constants} if constants else {}),
            "point": {n: number(v.value) for n, v in known.items() if n in point or args.default is not None},
            "value": number(f.eval()), "wrt": names,
            "gradient": [number(v) for v in values],
            **({"hessian": [[number(v) for v in row] for row in matrix]} if args.hessian else {}),
            "nodes": {"f": f_nodes, "tape": len(tape)},
        }
        if args.sympy:
            out["sympy"] = {"gradient": [str(g.to_sympy()) for g in gradient],
                            **({"hessian": [[str(h.to_sympy()) for h in row] for row in hessian]} if args.hessian else {})}
            out["check"] = [{"derivative": " ".join(c.wrt), "status": c.status} for c in checks]
        print(json.dumps(out, indent=2, ensure_ascii=False))
    else:
        shown = vars_of(f) | set(names)
        where = ", ".join(f"{n} = {show(known[n].value)}" for n in known if n in shown)
        print(f"f = {f.to_sympy()}" + (f"   at {where}" if where else ""))
        if constants:
            print(constants_line(constants))
        print(f"f = {show(f.eval())}")
        width = max([len(n) for n in names] + [1])
        print("gradient (one reverse sweep):")
        for n, g, v in zip(names, gradient, values):
            print(f"  ∂f/∂{n:<{width}}  {show(v):>22}" + (f"   = {g.to_sympy()}" if args.sympy else ""))
        if args.hessian:
            print("Hessian:")
            print("  " + " " * (width + 1) + "".join(f"{n:>23}" for n in names))
            for n, row in zip(names, matrix):
                print(f"  {n:<{width}} " + "".join(f"{show(v):>23}" for v in row))
        print(f"tape: {f_nodes} nodes for f, {len(tape)} in all")
        if checks:
            failed = [c for c in checks if c.status == "fail"]
            counts = {s: sum(c.status == s for c in checks) for s in ("pass", "fail", "inconclusive")}
            print(f"check against SymPy: {'fail' if failed else 'pass' if counts['pass'] else 'inconclusive'} "
                  f"({counts['pass']} pass, {counts['fail']} fail, {counts['inconclusive']} inconclusive partials)")
    return 1 if any(c.status == "fail" for c in checks) else 0
