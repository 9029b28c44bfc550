"""``subgraph-ad laplacian``: the Laplacian (and with --biharmonic the biharmonic) of a text
expression at a point, built by the library's operator passes, optionally checked against
SymPy's Σ ∂²f/∂xᵢ² (symbolically, and at the point to 30 digits)."""

from __future__ import annotations

import argparse
from typing import Any, Iterator

import sympy

import subgraph_ad as sad
from subgraph_ad import progress
from subgraph_ad.core import dependencies
from subgraph_ad.tables import text_table
from subgraph_ad.budget import budgeted
from subgraph_ad.testing import RTOL, SYMBOLIC_MAX_NODES

from .commands import _form, _print_form
from .inputs import bind_point, constants_used, parse_expression, parse_point, read_expression, vars_of, wrt_sequence
from .limits import CliError, UsageError
from .output import constants_line, dump_json, number, say, show


def _reference(f: sad.Term, ours: list[sad.Term], names: list[str], point: dict[str, float]) -> Iterator[Any]:
    """SymPy's side, one operator at a time: its value at the point (30 digits), then whether
    ours minus it simplifies to 0 (slowest last, so a budget that runs out keeps the values)."""
    symbols = {n: sympy.Symbol(n, real=True) for n in {*names, *point}}
    expr = f.to_sympy().xreplace({sympy.Symbol(n): s for n, s in symbols.items()})
    references = []
    current = expr
    for _ in ours:
        current = sum((sympy.diff(current, symbols[n], 2) for n in names), sympy.Integer(0))
        references.append(current)
        subs = {symbols[n]: sympy.Float(v, 30) for n, v in point.items()}
        value = complex(current.evalf(30, subs=subs))
        yield value.real if value.imag == 0 else float("nan")
    for term, reference in zip(ours, references):
        if len(dependencies(term.tape, [term.index])) > SYMBOLIC_MAX_NODES:
            yield "not tried"
            continue
        mine = term.to_sympy().xreplace({sympy.Symbol(n): s for n, s in symbols.items()})
        difference = sympy.simplify(mine - reference)
        yield "equal" if difference == 0 else "different" if difference.is_number and difference != 0 else "unknown"


def _status(ours: float, reference: float, symbolic: str) -> str:
    if symbolic == "different":
        return "fail"
    if reference != reference:  # nan: SymPy has no value there
        return "pass" if ours != ours or symbolic == "equal" else "inconclusive"
    if abs(ours - reference) <= RTOL * max(1.0, abs(reference)):
        return "pass"
    return "fail"


def cmd_laplacian(args: argparse.Namespace) -> int:
    point = parse_point(args.at)
    requested = wrt_sequence(args.wrt, None) if args.wrt else None
    if requested is not None and len(set(requested)) != len(requested):
        raise UsageError(f"--wrt names a var twice: {', '.join(requested)}")
    text = read_expression(args.expr, args.max_length)
    f = parse_expression(text, args.max_tape_nodes)
    constants = constants_used(text, f)
    tape = f.tape
    names = requested if requested is not None else [n for n in tape.vars if n in vars_of(f)]
    known = bind_point(f, point, extra=names, default=args.default, complete=True)
    if not names:
        raise CliError(f"{text!r} has no variables: its Laplacian is 0 (give --wrt to name the variables)")
    xs = [known[n] for n in names]
    f_nodes = len(tape)
    rows: list[tuple[str, sad.Term, int]] = []
    say("building the Laplacian")
    lap = sad.laplacian(f, xs)
    rows.append(("Δf", lap, len(tape) - f_nodes))
    if args.biharmonic:
        say("building the biharmonic")
        mark = len(tape)
        rows.append(("Δ²f", sad.biharmonic(f, xs), len(tape) - mark))
    values = [float(t.eval()) for _, t, _ in rows]
    at = {n: known[n].value for n in known if n in vars_of(f) or n in names}
    checks: list[tuple[str, float, str]] = []  # (status, reference, symbolic)
    forms: list[tuple[str | None, str]] = []  # (SymPy form, note)
    if args.sympy:
        forms = [_form(t, args) for _, t, _ in rows]
        say("checking against SymPy")
        got, finished = budgeted(_reference, (f, [t for _, t, _ in rows], names, at), args.sympy_timeout)
        refs = got[:len(rows)]
        symbolic = got[len(rows):] if finished else []
        if len(refs) < len(rows):
            raise CliError(f"SymPy took more than {args.sympy_timeout:g} s for the reference (raise --sympy-timeout)")
        for k, value in enumerate(values):
            verdict = symbolic[k] if k < len(symbolic) else f"inconclusive (SymPy took > {args.sympy_timeout:g} s)"
            checks.append((_status(value, refs[k], verdict), refs[k], verdict))
    if args.json:
        out: dict[str, Any] = {
            "expression": text, "f": str(f.to_sympy()), **({"constants": constants} if constants else {}),
            "point": {n: number(v) for n, v in at.items()}, "wrt": names, "value": number(f.eval()),
            "operators": [{"operator": label, "value": number(v), "new_nodes": n}
                          | ({"sympy": forms[k][0], "check": {"status": checks[k][0], "reference": number(checks[k][1]),
                                                             "symbolic": checks[k][2]}} if checks else {})
                          for k, ((label, _, n), v) in enumerate(zip(rows, values))],
            "nodes": {"f": f_nodes, "tape": len(tape)},
        }
        progress.write(dump_json(out, args))
    else:
        where = ", ".join(f"{n} = {show(v)}" for n, v in at.items())
        progress.write(f"f = {f.to_sympy()}" + (f"   at {where}" if where else ""))
        if constants:
            progress.write(constants_line(constants))
        progress.write(f"operators over {', '.join(names)} (one forward pass each):")
        progress.write(text_table(["operator", "value", "new nodes"],
                                  [[label, value, n] for (label, _, n), value in zip(rows, values)]))
        progress.write(f"tape: {f_nodes} nodes for f, {len(tape)} in all")
        for (label, _, _), check, (form, note) in zip(rows, checks, forms):
            _print_form(label, form, note)
            progress.write(f"check of {label} against SymPy: {check[0]} (symbolic {check[2]}; SymPy's value "
                           f"{check[1]!r})")
    return 1 if any(c[0] == "fail" for c in checks) else 0
