"""Check derivatives against SymPy: symbolically when that is quick, numerically at seeded points.

The outcome is ``pass``, ``fail`` or ``inconclusive`` and is never a false pass: a single point
where the two sides disagree is a fail, and so is a difference ``ours - SymPy's`` that simplifies
to a nonzero number. Values are compared relatively (``rtol``), whatever their size: twice a
derivative of 1e-20 is a fail. Where SymPy's form is a sum of terms far larger than its value,
float64 cannot do better than its rounding: a point that misses ``rtol`` still passes when it is
within the first-order rounding-error bound of evaluating that form in float64 (``rounding_bound``;
our graph's own form where the reference is 0 there), and the note says how many did. A point is
inconclusive when both sides are nan there, or when the reference cannot be evaluated because a
function has no ``to_sympy`` (it is then an undefined SymPy function); the note says which.

SymPy can take minutes on a high-order derivative (``tanh`` at order 19: more than two
minutes in ``sympy.diff`` alone). ``timeout=S`` gives the SymPy step a budget of S seconds in a
worker process that is killed when it runs over; the reference values then come from
``mpmath.diff`` of the same expression at 50 digits, independent of both SymPy's symbolic
derivative and ours, and the report says so. Without ``timeout`` (the default) SymPy runs in
this process as long as it needs: a library caller asked for SymPy's answer, and a check that
silently changed its oracle with the machine's speed would be a poor default for a test suite.

>>> from subgraph_ad import Tape, exp
>>> tape = Tape(); x = tape.var("x", 0.5)
>>> check_against_sympy(exp(-x**2 / 2), x, 3).status
'pass'
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import sympy
from sympy.core.function import AppliedUndef

from .budget import START_METHOD, budgeted
from .core import Term, dependencies
from .core.checks import diff_spec
from .functions import sympy_hook
from .interop.sympy_form import compact_sympy, sympy_form
from .tables import html_table, text_table
from .viz.record import notation

__all__ = ["EPS", "MPMATH_DIGITS", "RTOL", "START_METHOD", "SYMBOLIC_MAX_NODES", "UNDERFLOW", "DerivativeMismatch",
           "PointCheck", "Report", "assert_matches_sympy", "budgeted", "check_against_sympy", "compact_sympy",
           "rounding_bound", "sympy_form"]

#: Relative tolerance: high-order derivatives lose a few digits to rounding, never 7 (where they
#: do, cancellation, ``rounding_bound`` decides).
RTOL = 1e-7
#: float64's rounding: one operation is off by at most EPS times its result, plus UNDERFLOW
#: (half the smallest subnormal) where the result is subnormal.
EPS = float(np.finfo(np.float64).eps)
UNDERFLOW = 2.0**-1075
#: Symbolic simplification is tried only on graphs up to this many nodes (it can take minutes).
SYMBOLIC_MAX_NODES = 60
#: Working precision (decimal digits) of the mpmath reference that stands in when SymPy is too slow.
MPMATH_DIGITS = 50


@dataclass
class PointCheck:
    point: dict[str, float]
    ours: float
    reference: float
    status: str  # pass / fail / inconclusive


@dataclass
class Report:
    """What ``check_against_sympy`` found; prints as a table (text, or HTML in Jupyter)."""

    expression: str
    wrt: list[str]
    status: str
    symbolic: str  # "equal", "unknown", "not tried" or "inconclusive (SymPy took > N s)"
    points: list[PointCheck] = field(default_factory=list)
    reference: Any = None  # SymPy's derivative, when SymPy finished it in time
    note: str = ""  # why a check could not be decided, or which oracle stood in
    oracle: str = "sympy"  # what computed the reference values: "sympy" or "mpmath"

    @property
    def counts(self) -> dict[str, int]:
        """How many points passed, failed and were inconclusive."""
        return {s: sum(p.status == s for p in self.points) for s in ("pass", "fail", "inconclusive")}

    @property
    def summary(self) -> str:
        """One line: the verdict, which derivative, and how it was reached."""
        counts = self.counts
        return (f"{self.status}: {notation(self.wrt)} of {self.expression} (symbolic {self.symbolic}; points by {self.oracle}: "
                f"{counts['pass']} pass, {counts['fail']} fail, {counts['inconclusive']} inconclusive)"
                + (f"; {self.note}" if self.note else ""))

    def _table(self) -> tuple[list[str], list[list[object]]]:
        names = list(self.points[0].point) if self.points else []
        headers = [*names, "ours", self.oracle, "status"]
        return headers, [[*p.point.values(), p.ours, p.reference, p.status] for p in self.points]

    def __str__(self) -> str:
        return self.summary + ("\n" + text_table(*self._table()) if self.points else "")

    def _repr_html_(self) -> str:
        return html_table(*self._table(), caption=self.summary)


def _compare(ours: float, ref: float, rtol: float) -> str:
    """Relative, at every size: an absolute floor would pass any wrong derivative below it."""
    if math.isnan(ours) and math.isnan(ref):
        return "inconclusive"
    if math.isnan(ours) or math.isnan(ref):
        return "fail"
    if math.isinf(ours) or math.isinf(ref):
        return "pass" if ours == ref else "fail"
    return "pass" if abs(ours - ref) <= rtol * abs(ref) else "fail"


def _real(value: Any) -> float:
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
    return ", ".join(f"{name}: no to_sympy" if name in on_tape and sympy_hook(on_tape[name]) is None
                     else f"{name}: an undefined SymPy function" for name in names)


def rounding_bound(expr: sympy.Expr, point: dict[str, float]) -> float:
    """How far float64 can be from the exact value of ``expr`` at ``point`` when it evaluates
    ``expr``'s own form, to first order: each operation rounds its result by EPS of its size (a
    sum of n terms n - 1 times, each by EPS of the sum of their sizes), and the errors of its
    operands carry through with its partial derivatives. For a sum of terms far larger than its
    value (cancellation) the bound is far larger than EPS times the value; a value alone cannot
    be trusted below it. nan where a part has no value (an undefined function, a Derivative).

    >>> x = sympy.Symbol("x")
    >>> rounding_bound(x - 1, {"x": 1.0}) / EPS  # one subtraction of two terms of size 1
    2.0
    """
    values: dict[sympy.Basic, sympy.Expr] = {}
    errors: dict[sympy.Basic, sympy.Expr] = {}
    stack = [expr]
    while stack:
        node = stack[-1]
        if node in values:
            stack.pop()
            continue
        if not all(isinstance(a, sympy.Expr) for a in node.args):  # Subs, Piecewise: no float64 form
            return math.nan
        pending = [a for a in node.args if a not in values]
        if pending:
            stack.extend(pending)
            continue
        stack.pop()
        args = node.args
        vals = [values[a] for a in args]
        if node.is_Symbol:
            if node.name not in point:
                return math.nan
            value, error = sympy.Float(point[node.name], 30), sympy.S.Zero
        elif node.is_Integer and abs(node) <= 2**53:  # exact in float64
            value, error = node, sympy.S.Zero
        elif not args:  # 1/3, 0.1, pi: rounded once
            value = node.evalf(30)
            error = EPS * abs(value) + UNDERFLOW
        elif node.is_Add:
            value = sympy.Add(*vals)
            error = sum(errors[a] for a in args) + (len(args) - 1) * (EPS * sum(abs(v) for v in vals) + UNDERFLOW)
        elif node.is_Mul:
            value = sympy.Mul(*vals)
            error = sum(errors[a] * abs(sympy.Mul(*vals[:i], *vals[i + 1:])) for i, a in enumerate(args))
            exact = sum(a in (sympy.S.One, sympy.S.NegativeOne) for a in args)  # -x is exact
            error += max(len(args) - exact - 1, 0) * (EPS * abs(value) + UNDERFLOW)
        else:  # a power or a function: the chain rule, numerically
            value = node.func(*vals).evalf(30)
            error = EPS * abs(value) + UNDERFLOW
            for i, a in enumerate(args):
                if errors[a] != 0:
                    at = sympy.Dummy(real=True)
                    partial = node.func(*vals[:i], at, *vals[i + 1:]).diff(at).xreplace({at: vals[i]}).evalf(30)
                    error += abs(partial) * errors[a]
        try:
            finite = all(map(math.isfinite, (abs(complex(value)), float(error))))
        except TypeError:  # no number: an undefined function, an unevaluated derivative
            return math.nan
        if not finite:
            return math.nan
        values[node], errors[node] = value, error
    return float(errors[expr])


# -- the two oracles ---------------------------------------------------------------------------------
def _sympy_side(term: Term, ours: Term, names: list[str], points: list[dict[str, float]]) -> Iterator[Any]:
    """SymPy's derivative, then its value at each point, then the symbolic verdict (slowest last,
    so a budget that runs out during simplification keeps the values)."""
    # real symbols: the points are real, and |u|, sign(u) then differentiate to sign(u), 0
    real = {sympy.Symbol(n): sympy.Symbol(n, real=True) for n in {*names, *(points[0] if points else {})}}
    plain = term.to_sympy()
    expr = plain.xreplace(real)
    reference = sympy.diff(expr, *[real[sympy.Symbol(n)] for n in names])
    yield str(plain), reference, _undefined_functions(term, expr)
    # a function SymPy knows only by name has no value; and evalf of what sympy.diff makes of it
    # on a sum, Subs(Derivative(f(ξ), ξ), ξ, x + y), recurses without end
    evaluable = not reference.atoms(AppliedUndef)
    for point in points:
        subs = {real[sympy.Symbol(n)]: sympy.Float(v, 30) for n, v in point.items()}
        try:
            yield _real(reference.evalf(30, subs=subs)) if evaluable else math.nan
        except ValueError:  # mpmath refuses a point outside the domain (erfinv of 1.5): no reference
            yield math.nan
    tape = term.tape
    if len(dependencies(tape, [ours.index])) > SYMBOLIC_MAX_NODES:
        yield "not tried", ""
        return
    difference = sympy.simplify(ours.to_sympy().xreplace(real) - reference)
    if difference == 0:
        yield "equal", ""
    elif difference.is_number and not difference.has(sympy.Float) and difference.is_zero is False:
        yield "different", f"ours - SymPy's = {difference}"  # exact: wrong at every point, however small
    else:
        yield "unknown", ""


def _rounding_side(reference: sympy.Expr | None, ours: Term, points: list[dict[str, float]],
                   refs: list[float]) -> Iterator[float]:
    """``rounding_bound`` at each point, of SymPy's form of the derivative; of our graph's own form
    (as built, not simplified) where there is no SymPy form or it is 0 at the point."""
    own = None
    for point, ref in zip(points, refs):
        if reference is None or ref == 0:
            if own is None:
                with sympy.evaluate(False):
                    own = ours.to_sympy()
            yield rounding_bound(own, point)
        else:
            yield rounding_bound(reference, point)


def _mpmath_side(term: Term, names: list[str], points: list[dict[str, float]]) -> Iterator[Any]:
    """The derivative at each point by ``mpmath.diff`` (finite differences at raised precision)
    of ``term``'s own SymPy form: no symbolic differentiation at all."""
    import mpmath

    expr = term.to_sympy()
    yield str(expr), _undefined_functions(term, expr)
    order = sorted(points[0]) if points else []
    counts = Counter(names)
    if set(counts) - set(order):  # by a var the term does not depend on: identically zero
        yield from (0.0 for _ in points)
        return
    f = sympy.lambdify([sympy.Symbol(n) for n in order], expr, modules="mpmath")
    with mpmath.workdps(MPMATH_DIGITS):
        for point in points:
            try:
                value = mpmath.diff(f, [mpmath.mpf(point[n]) for n in order], [counts[n] for n in order])
            except (NameError, TypeError):  # a function SymPy knows only by name has no mpmath counterpart
                value = mpmath.nan
            except (ValueError, ZeroDivisionError, OverflowError):  # outside the domain
                value = mpmath.nan
            yield _real(value)


def check_against_sympy(term: Term, *wrt_args: Any, points: int = 5, seed: int = 0,
                        low: float = 0.2, high: float = 1.8, rtol: float = RTOL,
                        method: str = "auto", derivative: Term | None = None,
                        timeout: float | None = None) -> Report:
    """Differentiate ``term`` with ``term.diff(*wrt_args, method=method)`` and compare it with ``sympy.diff``.

    ``derivative``: the derivative already built (checked as it is, nothing is appended).
    Points are drawn from [low, high] per var with a seeded generator, so a report is reproducible.
    ``timeout``: seconds SymPy may take (None: no limit); past it the symbolic verdict is
    "inconclusive (SymPy took > S s)" and mpmath at 50 digits gives the reference values (with
    the same budget again).
    """
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0):
        raise ValueError(f"timeout must be a positive number of seconds or None, got {timeout!r}")
    wrts = diff_spec(wrt_args, "check_against_sympy", term.tape if isinstance(term, Term) else None)
    ours = term.diff(*wrt_args, method=method) if derivative is None else derivative
    tape = term.tape
    var_names = sorted({tape.nodes[i].payload for i in dependencies(tape, [term.index])
                        if tape.nodes[i].op == "var"})
    names = [w.name or "?" for w in wrts]
    rng = np.random.default_rng(seed)
    where = [{name: float(rng.uniform(low, high)) for name in var_names} for _ in range(points)]
    ours_values = [float(ours.eval(p)) for p in where]

    got, finished = budgeted(_sympy_side, (term, ours, names, where), timeout)
    expression, reference, unknown = got[0] if got else (None, None, "")
    refs = got[1:1 + points]
    symbolic, note = got[-1] if finished else (f"inconclusive (SymPy took > {timeout:g} s)", "")
    oracle = "sympy"
    if len(refs) < points:  # SymPy ran out of time before every reference value was known
        oracle = "mpmath"
        got, _ = budgeted(_mpmath_side, (term, names, where), timeout)
        expression, unknown = got[0] if got else (expression, unknown)
        refs = got[1:]
        note = f"reference values by mpmath.diff at {MPMATH_DIGITS} digits"
        if len(refs) < points:
            note += f" (mpmath took > {timeout:g} s too)"
    checks = []
    for k, (point, value) in enumerate(zip(where, ours_values)):
        if k >= len(refs):
            checks.append(PointCheck(point, value, math.nan, "inconclusive"))
            continue
        status = "inconclusive" if unknown and math.isnan(refs[k]) else _compare(value, refs[k], rtol)
        checks.append(PointCheck(point, value, refs[k], status))
    note = "; ".join(filter(None, [note, _cancellation(checks, reference, ours, timeout)]))
    if unknown and any(c.status == "inconclusive" and math.isnan(c.reference) for c in checks):
        # why points could not be compared: SymPy could not evaluate a function there
        note = "; ".join(filter(None, [note, f"SymPy cannot evaluate {unknown}"]))
    statuses = {c.status for c in checks}
    if "fail" in statuses or symbolic == "different":
        status = "fail"
    elif "pass" in statuses or symbolic == "equal":
        status = "pass"
    else:
        status = "inconclusive"
    return Report(expression or repr(term), names, status, symbolic, checks, reference, note, oracle)


def _cancellation(checks: list[PointCheck], reference: sympy.Expr | None, ours: Term, timeout: float | None) -> str:
    """Pass the finite points that missed the relative tolerance by no more than float64's
    rounding bound there (``rounding_bound``); what the note says about them."""
    misses = [c for c in checks if c.status == "fail" and math.isfinite(c.ours) and math.isfinite(c.reference)]
    if not misses:
        return ""
    bounds, _ = budgeted(_rounding_side, (reference, ours, [c.point for c in misses], [c.reference for c in misses]),
                         timeout)
    excused = 0
    for check, bound in zip(misses, bounds):
        if abs(check.ours - check.reference) <= bound:
            check.status = "pass"
            excused += 1
    late = len(misses) - len(bounds)
    notes = [f"{excused} point{'s' * (excused != 1)} within float64's rounding bound of the terms (cancellation)"
             if excused else "",
             f"{late} point{'s' * (late != 1)} missed rtol with no rounding bound worked out (> {timeout:g} s)"
             if late else ""]
    return "; ".join(filter(None, notes))


class DerivativeMismatch(AssertionError):
    """Raised by ``assert_matches_sympy`` with the report that failed."""


def assert_matches_sympy(term: Term, *wrt_args: Any, **options: Any) -> Report:
    """Assert that ``term.diff(*wrt_args)`` agrees with SymPy; inconclusive is not a pass."""
    report = check_against_sympy(term, *wrt_args, **options)
    if report.status != "pass":
        raise DerivativeMismatch(str(report))
    return report


