"""Check derivatives against SymPy: symbolically when that is quick, numerically at seeded points.

The outcome is ``pass``, ``fail`` or ``inconclusive`` and is never a false pass: a single point
where the two sides disagree is a fail. A point is inconclusive when both sides are nan there, or
when SymPy cannot evaluate the reference because a function has no ``to_sympy`` (it is then an
undefined SymPy function); the report's note says which.

>>> from subgraph_ad import Tape, exp
>>> tape = Tape(); x = tape.var("x", 0.5)
>>> check_against_sympy(exp(-x**2 / 2), x, 3).status
'pass'
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import sympy

from .ad.diff import parse_diff_args
from .core import Term, dependencies

#: Relative tolerance: high-order derivatives lose a few digits to rounding, never 7.
RTOL = 1e-7
#: Symbolic simplification is tried only on graphs up to this many nodes (it can take minutes).
SYMBOLIC_MAX_NODES = 60


@dataclass
class PointCheck:
    point: dict[str, float]
    ours: float
    sympy: float
    status: str  # pass / fail / inconclusive


@dataclass
class Report:
    """What ``check_against_sympy`` found."""

    expression: str
    wrt: list[str]
    status: str
    symbolic: str  # "equal", "not tried" or "unknown"
    points: list[PointCheck] = field(default_factory=list)
    reference: Any = None
    note: str = ""  # why a check could not be decided, when it could not

    @property
    def counts(self) -> dict[str, int]:
        """How many points passed, failed and were inconclusive."""
        return {s: sum(p.status == s for p in self.points) for s in ("pass", "fail", "inconclusive")}

    def __str__(self) -> str:
        order = "".join(f"d{w}" for w in self.wrt)
        counts = self.counts
        return (f"{self.status:12s} d/{order} of {self.expression}: symbolic {self.symbolic}, "
                f"points {counts['pass']} pass / {counts['fail']} fail / {counts['inconclusive']} inconclusive"
                + (f" ({self.note})" if self.note else ""))


def _compare(ours: float, ref: float, rtol: float) -> str:
    if math.isnan(ours) and math.isnan(ref):
        return "inconclusive"
    if math.isnan(ours) or math.isnan(ref):
        return "fail"
    if math.isinf(ours) or math.isinf(ref):
        return "pass" if ours == ref else "fail"
    return "pass" if abs(ours - ref) <= rtol * max(1.0, abs(ref)) else "fail"


def _reference(expr: sympy.Expr, subs: dict[sympy.Symbol, float]) -> float:
    value = expr.evalf(30, subs={s: sympy.Float(v, 30) for s, v in subs.items()})
    try:
        return float(value)
    except TypeError:  # complex (e.g. log of a negative) or unevaluated: no real reference
        return math.nan


def _undefined_functions(term: Term, expr: sympy.Expr) -> str:
    """The functions of ``expr`` SymPy knows only by name (``softplus: no to_sympy``), or ""."""
    tape = term.tape
    on_tape = {tape.nodes[i].payload.name: tape.nodes[i].payload for i in dependencies(tape, [term.index])
               if tape.nodes[i].op == "fn"}
    names = sorted({str(f.func) for f in expr.atoms(sympy.core.function.AppliedUndef)})
    return ", ".join(f"{name}: no to_sympy" if name in on_tape and getattr(on_tape[name], "to_sympy", None) is None
                     else f"{name}: an undefined SymPy function" for name in names)


def check_against_sympy(term: Term, *wrt_args: Any, points: int = 5, seed: int = 0,
                        low: float = 0.2, high: float = 1.8, rtol: float = RTOL,
                        method: str = "auto", derivative: Term | None = None) -> Report:
    """Differentiate ``term`` with ``term.diff(*wrt_args, method=method)`` and compare it with ``sympy.diff``.

    ``derivative``: the derivative already built (checked as it is, nothing is appended).
    Points are drawn from [low, high] per var with a seeded generator, so a report is reproducible.
    """
    wrts = parse_diff_args(wrt_args)
    ours = term.diff(*wrt_args, method=method) if derivative is None else derivative
    tape = term.tape
    var_names = sorted({tape.nodes[i].payload for i in dependencies(tape, [term.index])
                        if tape.nodes[i].op == "var"})
    # real symbols: the points are real, and |u|, sign(u) then differentiate to sign(u), 0
    real = {sympy.Symbol(n): sympy.Symbol(n, real=True) for n in set(var_names) | {w.name for w in wrts}}
    expr = term.to_sympy().xreplace(real)
    reference = sympy.diff(expr, *[real[sympy.Symbol(w.name)] for w in wrts])
    unknown = _undefined_functions(term, expr)
    symbolic = "not tried"
    if len(dependencies(tape, [ours.index])) <= SYMBOLIC_MAX_NODES:
        symbolic = "equal" if sympy.simplify(ours.to_sympy().xreplace(real) - reference) == 0 else "unknown"
    rng = np.random.default_rng(seed)
    checks = []
    for _ in range(points):
        point = {name: float(rng.uniform(low, high)) for name in var_names}
        ours_value = float(ours.eval(point))
        ref_value = _reference(reference, {real[sympy.Symbol(n)]: v for n, v in point.items()})
        status = "inconclusive" if unknown and math.isnan(ref_value) else _compare(ours_value, ref_value, rtol)
        checks.append(PointCheck(point, ours_value, ref_value, status))
    # why points could not be compared, when SymPy could not evaluate a function there
    note = f"SymPy cannot evaluate {unknown}" if unknown and any(
        c.status == "inconclusive" and math.isnan(c.sympy) for c in checks) else ""
    statuses = {c.status for c in checks}
    if "fail" in statuses:
        status = "fail"
    elif "pass" in statuses or symbolic == "equal":
        status = "pass"
    else:
        status = "inconclusive"
    return Report(str(term.to_sympy()), [w.name for w in wrts], status, symbolic, checks, reference, note)


class DerivativeMismatch(AssertionError):
    """Raised by ``assert_matches_sympy`` with the report that failed."""


def assert_matches_sympy(term: Term, *wrt_args: Any, **options: Any) -> Report:
    """Assert that ``term.diff(*wrt_args)`` agrees with SymPy; inconclusive is not a pass."""
    report = check_against_sympy(term, *wrt_args, **options)
    if report.status != "pass":
        detail = "; ".join(f"at {c.point}: ours {c.ours!r}, sympy {c.sympy!r} ({c.status})" for c in report.points)
        raise DerivativeMismatch(f"{report}\n{detail}")
    return report
