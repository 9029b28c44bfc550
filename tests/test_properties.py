"""Property-based correctness (issue 16, point 8): random expression trees against SymPy.

Hypothesis draws a small expression tree over x, y, z — every arithmetic op, integer, real and
variable powers, unary minus, every built-in function (through ``sad.*`` or, where it exists,
the NumPy ufunc), constants — and a point. The tree is turned into a Term *and*, by this file's
own table (never the library's ``to_sympy``), into a SymPy expression, with each function's
argument guarded into its domain the same way on both sides (``log(1 + u**2)``,
``asin(0.9*tanh(u))``, ...). Then:

- ``eval``, repeated ``gen_graph``, ``diff`` by every method of ``ad.diff.METHODS``,
  ``derivatives`` (every step), ``taylor_graph`` and ``grad_graph``, up to order 4 with mixed
  partials, are compared with ``sympy.diff`` evaluated with ``evalf(30)``: an oracle that shares
  no code with the library;
- ``derive``, ``grad`` and ``lambdify`` (NumPy and Numba backends) are compared with
  ``gen_graph(...).eval()``, as the issue asks (different engines over one graph).

Tolerance. A derivative is a sum of products of float64 values, each correct to a few ulps; the
sum's rounding error is bounded by ~n·eps·Σ|terms|. At order ≤ 4 of trees of ≤ 8 leaves the
number of terms stays in the low hundreds, so against the 30-digit reference we allow a relative
error of 1e-8 of ``max(1, |reference|)`` (absolute 1e-8 near zero, where relative error is
meaningless): about 10^7 ulps of headroom for cancellation, and still tight enough that any
wrong rule (a wrong sign, factor or missing term) is off by O(1). Points where SymPy's value is
not finite or exceeds 1e12 in magnitude — at the point or in any subtree — are skipped with
``assume`` (there the float64 answer is dominated by overflow or a singularity, not by the rule
under test). Points lie on a grid of odd multiples of 1/512 (see ``coordinates``). Where a
derivative's float value misses that tolerance, its graph's exact value (``to_sympy`` at 30
digits) must match the reference to 1e-20 instead (``matches``): float64 cancellation in a
right graph, not a wrong rule.

Counts: 300 + 100 + 80 + 200 + 10 examples in ``make test`` (derandomized, ~25 s on 2 cores);
``make fuzz`` multiplies them (SAD_FUZZ=20 ran 13,800 examples in 5.6 min, all passing).
"""

from __future__ import annotations

import importlib.util
import math
import warnings
from typing import Any, Callable

import numpy as np
import pytest
import sympy
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import subgraph_ad as sad
from conftest import examples
from subgraph_ad.ad.diff import METHODS
from subgraph_ad.compile.lambdify import BackendWarning

RTOL = 1e-8
HUGE = 1e12
NAMES = ("x", "y", "z")
SYMBOLS = {name: sympy.Symbol(name, real=True) for name in NAMES}
Q = sympy.Rational

# -- the function table: the Term form and the SymPy form of each guarded built-in -----------------
# Each entry maps a function's name to (guard on Terms, guard in SymPy): the argument u is first put
# into the function's domain, identically on both sides, and then the function is applied. On the
# Term side the function itself is applied by ``to_term`` below (sad.f or the NumPy ufunc); the
# SymPy side is written out by hand from SymPy's own functions.
Unary = tuple[Callable[[Any], Any], Callable[[Any], Any], Callable[[sympy.Expr], sympy.Expr]]


def _t(u: Any) -> Any:
    return sad.tanh(u)


def truncated(v: sympy.Expr) -> sympy.Expr:
    """Rounding toward zero, from SymPy's floor: sign(v)·floor(|v|)."""
    return sympy.sign(v) * sympy.floor(sympy.Abs(v))


def flat(step: Callable[[sympy.Expr], sympy.Expr]) -> type[sympy.Function]:
    """A step function SymPy can differentiate: its value is ``step``'s, its derivative 0 (true
    off the jumps, where the points lie); SymPy leaves Derivative(floor(u), x) unevaluated."""

    class Flat(sympy.Function):
        @classmethod
        def eval(cls, arg: sympy.Expr) -> sympy.Expr | None:
            return step(arg) if arg.is_Number else None

        def fdiff(self, argindex: int = 1) -> sympy.Expr:
            return sympy.S.Zero

        def _eval_evalf(self, prec: int) -> sympy.Expr:
            return step(self.args[0].evalf(prec))

    return Flat


UNARY: dict[str, Unary] = {
    # name: (argument guard on Terms, argument guard in SymPy, the function in SymPy)
    "exp": (lambda u: u, lambda u: u, sympy.exp),
    "log": (lambda u: 1 + u * u, lambda u: 1 + u**2, sympy.log),
    "sqrt": (lambda u: 0.5 + u * u, lambda u: Q(1, 2) + u**2, sympy.sqrt),
    "sin": (lambda u: u, lambda u: u, sympy.sin),
    "cos": (lambda u: u, lambda u: u, sympy.cos),
    "tan": (lambda u: _t(u), lambda u: sympy.tanh(u), sympy.tan),  # |arg| < 1 < pi/2
    "tanh": (lambda u: u, lambda u: u, sympy.tanh),
    "sigmoid": (lambda u: u, lambda u: u, lambda a: 1 / (1 + sympy.exp(-a))),
    "sech2": (lambda u: u, lambda u: u, lambda a: sympy.sech(a) ** 2),
    "dsigmoid": (lambda u: u, lambda u: u, lambda a: sympy.exp(-a) / (1 + sympy.exp(-a)) ** 2),
    "asin": (lambda u: 0.9 * _t(u), lambda u: Q(9, 10) * sympy.tanh(u), sympy.asin),
    "acos": (lambda u: 0.9 * _t(u), lambda u: Q(9, 10) * sympy.tanh(u), sympy.acos),
    "atan": (lambda u: u, lambda u: u, sympy.atan),
    "sinh": (lambda u: u, lambda u: u, sympy.sinh),
    "cosh": (lambda u: u, lambda u: u, sympy.cosh),
    "asinh": (lambda u: u, lambda u: u, sympy.asinh),
    "acosh": (lambda u: 1.5 + u * u, lambda u: Q(3, 2) + u**2, sympy.acosh),
    "atanh": (lambda u: 0.9 * _t(u), lambda u: Q(9, 10) * sympy.tanh(u), sympy.atanh),
    "erf": (lambda u: u, lambda u: u, sympy.erf),
    "erfc": (lambda u: u, lambda u: u, sympy.erfc),
    "log1p": (lambda u: u * u, lambda u: u**2, lambda a: sympy.log(1 + a)),
    "expm1": (lambda u: u, lambda u: u, lambda a: sympy.exp(a) - 1),
    "log2": (lambda u: 1 + u * u, lambda u: 1 + u**2, lambda a: sympy.log(a) / sympy.log(2)),
    "log10": (lambda u: 1 + u * u, lambda u: 1 + u**2, lambda a: sympy.log(a) / sympy.log(10)),
    # a negative argument on purpose: the real cube root, -(2 - sin u)^(1/3), not SymPy's principal root
    "cbrt": (lambda u: sad.sin(u) - 2, lambda u: sympy.sin(u) - 2, lambda a: -((-a) ** Q(1, 3))),
    "abs": (lambda u: u, lambda u: u, sympy.Abs),
    "sign": (lambda u: u, lambda u: u, sympy.sign),
    "sec": (lambda u: _t(u), lambda u: sympy.tanh(u), sympy.sec),  # |arg| < 1: cos > 0.54
    "csc": (lambda u: 1 + 0.5 * _t(u), lambda u: 1 + sympy.tanh(u) / 2, sympy.csc),  # arg in (0.5, 1.5)
    "cot": (lambda u: 1 + 0.5 * _t(u), lambda u: 1 + sympy.tanh(u) / 2, sympy.cot),
    "gamma": (lambda u: 0.5 + u * u, lambda u: Q(1, 2) + u**2, sympy.gamma),
    "lgamma": (lambda u: 0.5 + u * u, lambda u: Q(1, 2) + u**2, sympy.loggamma),
    "digamma": (lambda u: 0.5 + u * u, lambda u: Q(1, 2) + u**2, lambda a: sympy.polygamma(0, a)),
    "erfinv": (lambda u: 0.9 * _t(u), lambda u: Q(9, 10) * sympy.tanh(u), sympy.erfinv),
    "sinc": (lambda u: u, lambda u: u, lambda a: sympy.sin(sympy.pi * a) / (sympy.pi * a)),
    "softplus": (lambda u: u, lambda u: u, lambda a: sympy.log(1 + sympy.exp(a))),
    # kinked functions: the argument moved by 1/3, so a grid point (a dyadic value) never lands
    # on a jump or a kink, where float64 and 30 digits could round to different sides
    "relu": (lambda u: u + 1 / 3, lambda u: u + Q(1, 3), lambda a: sympy.Piecewise((a, a > 0), (0, True))),
    "floor": (lambda u: u + 1 / 3, lambda u: u + Q(1, 3), lambda a: flat(sympy.floor)(a)),
    "ceil": (lambda u: u + 1 / 3, lambda u: u + Q(1, 3), lambda a: flat(sympy.ceiling)(a)),
    "trunc": (lambda u: u + 1 / 3, lambda u: u + Q(1, 3), lambda a: flat(truncated)(a)),
    "round": (lambda u: u + 1 / 3, lambda u: u + Q(1, 3), lambda a: flat(lambda v: sympy.floor(v + Q(1, 2)))(a)),
}
#: Two-argument built-ins: (Term form of f(a, b) with guards, SymPy form). pow needs a positive base.
BINARY_FN: dict[str, tuple[Callable[[Any, Any], Any], Callable[[Any, Any], Any]]] = {
    "atan2": (lambda a, b: sad.atan2(a, b), lambda a, b: sympy.atan2(a, b)),
    "hypot": (lambda a, b: sad.hypot(a, b), lambda a, b: sympy.sqrt(a**2 + b**2)),
    "pow": (lambda a, b: sad.pow(0.5 + a * a, b), lambda a, b: (Q(1, 2) + a**2) ** b),
    "logaddexp": (lambda a, b: sad.logaddexp(a, b), lambda a, b: sympy.log(sympy.exp(a) + sympy.exp(b))),
    "logaddexp2": (lambda a, b: sad.logaddexp2(a, b), lambda a, b: sympy.log(2**a + 2**b) / sympy.log(2)),
    # kinked and comparison functions: one side moved by 1/3 (see "relu" above), a divisor
    # kept away from 0
    "maximum": (lambda a, b: sad.maximum(a, b + 1 / 3), lambda a, b: sympy.Max(a, b + Q(1, 3))),
    "fmax": (lambda a, b: sad.fmax(a, b + 1 / 3), lambda a, b: sympy.Max(a, b + Q(1, 3))),
    "minimum": (lambda a, b: sad.minimum(a, b + 1 / 3), lambda a, b: sympy.Min(a, b + Q(1, 3))),
    "fmin": (lambda a, b: sad.fmin(a, b + 1 / 3), lambda a, b: sympy.Min(a, b + Q(1, 3))),
    "mod": (lambda a, b: sad.mod(a + 1 / 3, 0.5 + b * b),
            lambda a, b: a + Q(1, 3) - (Q(1, 2) + b**2) * flat(sympy.floor)((a + Q(1, 3)) / (Q(1, 2) + b**2))),
    "fmod": (lambda a, b: sad.fmod(a + 1 / 3, 0.5 + b * b),
             lambda a, b: a + Q(1, 3) - (Q(1, 2) + b**2) * flat(truncated)((a + Q(1, 3)) / (Q(1, 2) + b**2))),
    "heaviside": (lambda a, b: sad.heaviside(a + 1 / 3, b),
                  lambda a, b: sympy.Piecewise((1, a + Q(1, 3) > 0), (b, sympy.Eq(a + Q(1, 3), 0)), (0, True))),
    "select": (lambda a, b: sad.FUNCTIONS["select"](a + 1 / 3, b), lambda a, b: sympy.Piecewise((b, sympy.Ne(a + Q(1, 3), 0)), (0, True))),
    **{name: (lambda a, b, fn=sad.FUNCTIONS[name]: fn(a, b + 1 / 3),
              lambda a, b, rel=rel: sympy.Piecewise((1, rel(a, b + Q(1, 3))), (0, True)))
       for name, rel in [("greater", sympy.Gt), ("greater_equal", sympy.Ge), ("less", sympy.Lt),
                         ("less_equal", sympy.Le), ("equal", sympy.Eq), ("not_equal", sympy.Ne)]},
}
#: The NumPy ufunc spelling of the two-argument functions, chosen at random like the unary ones
#: (None: no ufunc, or one whose argument guard differs).
NUMPY_BINARY = {"atan2": np.arctan2, "hypot": np.hypot, "logaddexp": np.logaddexp, "logaddexp2": np.logaddexp2}
BINOPS = ("add", "sub", "mul", "div", "div_guarded")
CONSTANTS = (-2.5, -1.0, 0.1, 0.5, 1.0, 2.0, 3.0, math.pi)


def builtin_names() -> set[str]:
    """The built-in functions (the user's, registered by other tests or examples, excluded)."""
    return {name for name, fn in sad.FUNCTIONS.items() if type(fn).__module__.startswith("subgraph_ad.functions")}


def test_every_builtin_function_is_generated() -> None:
    """The generator must cover every built-in, so a new function is not silently left out."""
    assert builtin_names() <= set(UNARY) | set(BINARY_FN), builtin_names() - set(UNARY) - set(BINARY_FN)


# -- trees -------------------------------------------------------------------------------------------
leaves = st.one_of(
    st.sampled_from(NAMES).map(lambda n: ("var", n)),
    st.sampled_from(CONSTANTS).map(lambda c: ("const", c)),
)


def _extend(children: st.SearchStrategy) -> st.SearchStrategy:
    return st.one_of(
        st.tuples(st.just("fn"), st.sampled_from(sorted(UNARY)), st.booleans(), children),
        st.tuples(st.just("bin"), st.sampled_from(BINOPS), children, children),
        st.tuples(st.just("fn2"), st.sampled_from(sorted(BINARY_FN)), st.booleans(), children, children),
        st.tuples(st.just("neg"), children),
        st.tuples(st.just("ipow"), children, st.sampled_from([2, 3, 4, -1, -2])),
        st.tuples(st.just("rpow"), children, st.sampled_from([0.5, 1.5, -0.5, 2.5, 1 / 3])),
        st.tuples(st.just("cpow"), st.sampled_from([2.0, 0.5, 3.0]), children),  # c ** u
        st.tuples(st.just("vpow"), children, children),  # (0.5 + a²) ** b: x ** y, positive base
    )


#: At least one operation at the top (a bare leaf tests nothing), at most 8 leaves in all.
trees = _extend(st.recursive(leaves, _extend, max_leaves=4))
#: Points on a grid of odd multiples of 1/512 in (-2, 2): exact in binary, never 0 or -0.0 (where
#: atan2's cut makes IEEE's -pi and SymPy's pi differ) and never tiny (where x*x underflows to 0
#: and float64, not the rule under test, breaks down).
coordinates = st.integers(-512, 511).map(lambda k: (k + 0.5) / 256)
points = st.fixed_dictionaries({name: coordinates for name in NAMES})


def to_term(tree: tuple, v: dict[str, sad.Term]) -> sad.Term:
    """The tree as a Term on the vars' tape (a constant tree gives a constant Term)."""
    tape = next(iter(v.values())).tape
    kind = tree[0]
    if kind == "var":
        return v[tree[1]]
    if kind == "const":
        return tape.const(tree[1])
    if kind == "fn":
        _, name, use_numpy, child = tree
        fn = sad.FUNCTIONS[name]
        arg = to_term(child, v)
        guarded = UNARY[name][0](arg)
        if not isinstance(guarded, sad.Term):
            guarded = tape.const(guarded)
        return fn.numpy(guarded) if use_numpy and fn.numpy is not None else fn(guarded)
    if kind == "fn2":
        _, name, use_numpy, left, right = tree
        a, b = to_term(left, v), to_term(right, v)
        ufunc = NUMPY_BINARY.get(name)
        return ufunc(a, b) if use_numpy and ufunc is not None else BINARY_FN[name][0](a, b)
    if kind == "bin":
        _, op, left, right = tree
        a, b = to_term(left, v), to_term(right, v)
        return {"add": lambda: a + b, "sub": lambda: a - b, "mul": lambda: a * b, "div": lambda: a / b,
                "div_guarded": lambda: a / (0.5 + b * b)}[op]()
    if kind == "neg":
        return -to_term(tree[1], v)
    if kind == "ipow":
        return to_term(tree[1], v) ** tree[2]
    if kind == "rpow":
        return (0.5 + to_term(tree[1], v) * to_term(tree[1], v)) ** tree[2]
    if kind == "cpow":
        return tree[1] ** to_term(tree[2], v)
    if kind == "vpow":
        a = to_term(tree[1], v)
        return (0.5 + a * a) ** to_term(tree[2], v)
    raise AssertionError(kind)


def number(c: float) -> sympy.Expr:
    """A float constant in SymPy: exact when it is a multiple of 1/2; otherwise the float's own
    binary value to 30 digits (a Float, not its exact Rational: SymPy would try to simplify powers
    of rationals with 2^54 denominators and hang)."""
    return Q(c) if (2 * c).is_integer() else sympy.Float(c, 30)


def to_sympy(tree: tuple) -> sympy.Expr:
    """The same tree in SymPy, written independently of the library's bridge."""
    kind = tree[0]
    if kind == "var":
        return SYMBOLS[tree[1]]
    if kind == "const":
        # a Float even for whole numbers: exact integer leaves would let SymPy compute powers of
        # powers of them exactly ((27**2 + 1/2)**(3**18) never finishes); the float is exact anyway
        return sympy.Float(tree[1], 30)
    if kind == "fn":
        _, name, _, child = tree
        _, guard, fn = UNARY[name]
        return fn(guard(to_sympy(child)))
    if kind == "fn2":
        _, name, _, left, right = tree
        return BINARY_FN[name][1](to_sympy(left), to_sympy(right))
    if kind == "bin":
        _, op, left, right = tree
        a, b = to_sympy(left), to_sympy(right)
        return {"add": a + b, "sub": a - b, "mul": a * b, "div": a / b, "div_guarded": a / (Q(1, 2) + b**2)}[op]
    if kind == "neg":
        return -to_sympy(tree[1])
    if kind == "ipow":
        return to_sympy(tree[1]) ** tree[2]
    if kind == "rpow":
        return (Q(1, 2) + to_sympy(tree[1]) ** 2) ** number(tree[2])
    if kind == "cpow":
        return number(tree[1]) ** to_sympy(tree[2])
    if kind == "vpow":
        return (Q(1, 2) + to_sympy(tree[1]) ** 2) ** to_sympy(tree[2])
    raise AssertionError(kind)


# -- the oracle ------------------------------------------------------------------------------------
def reference(expr: sympy.Expr, point: dict[str, float]) -> float:
    """SymPy's value at the point with 30 digits; nan where it is not a real number (a pole,
    DiracDelta at 0, a complex value)."""
    subs = {SYMBOLS[n]: sympy.Float(point[n], 30) for n in NAMES}
    try:
        value = complex(expr.evalf(30, subs=subs))
    except (TypeError, ValueError, ZeroDivisionError, OverflowError):
        return math.nan
    if value.imag != 0 and abs(value.imag) > 1e-25 * max(1.0, abs(value.real)):
        return math.nan
    return value.real


def usable(value: float) -> bool:
    return math.isfinite(value) and abs(value) <= HUGE


def agree(ours: float, ref: float, rtol: float = RTOL) -> bool:
    """See the module docstring for why this tolerance."""
    return math.isfinite(ours) and abs(ours - ref) <= rtol * max(1.0, abs(ref))


def matches(term: sad.Term, ref: float, point: dict[str, float]) -> bool:
    """``agree`` on the graph's float value; where that fails, its exact value decides: the graph
    as SymPy (``to_sympy``) at 30 digits must equal the reference to 1e-20. A right graph can
    still lose digits in float64 where its terms are far larger than their sum (the 4th
    derivative of atan2(x, x²) at x = 1/512, -0.0468741, comes out -0.0468737 by Taylor mode
    and -0.0468743 by gen_graph); a wrong rule is off by O(1) at 30 digits as well."""
    if agree(term.eval(), ref):
        return True
    expr = term.to_sympy()
    exact = complex(expr.evalf(30, subs={s: sympy.Float(point[s.name], 30) for s in expr.free_symbols}))
    return exact.imag == 0 and abs(exact.real - ref) <= 1e-20 * max(1.0, abs(ref))


def fresh(point: dict[str, float]) -> tuple[sad.Tape, dict[str, sad.Term]]:
    tape = sad.Tape()
    return tape, {name: tape.var(name, point[name]) for name in NAMES}


def sympy_style(wrts: list[str]) -> list[Any]:
    """``[x, x, y]`` -> the diff args ``(x, 2, y)`` by name, so the counts are exercised too."""
    out: list[Any] = []
    for name in wrts:
        if out and (out[-1] == name or (isinstance(out[-1], int) and out[-2] == name)):
            if isinstance(out[-1], int):
                out[-1] += 1
            else:
                out.append(2)
        else:
            out.append(name)
    return out


def resolve(args: list[Any], v: dict[str, sad.Term]) -> list[Any]:
    return [v[a] if isinstance(a, str) else a for a in args]


def subtrees(tree: tuple) -> list[tuple]:
    """Every proper subtree that is itself an expression (not a name, number or flag)."""
    found, stack = [], [tree]
    while stack:
        node = stack.pop()
        children = [c for c in node[1:] if isinstance(c, tuple)]
        found += children
        stack += children
    return found


def references(tree: tuple, wrts: list[str], point: dict[str, float]) -> tuple[float, list[float]]:
    """The value and the derivatives along ``wrts`` (each prefix), all usable, or the example is
    skipped — as it is when any subtree's value is out of range: float64 then overflows on the
    way (2**(9.5**3) squared is inf, its acosh too, where the true value is 1189), which is IEEE
    behaviour and not the rule under test."""
    for sub in subtrees(tree):
        assume(usable(reference(to_sympy(sub), point)))
    expr = to_sympy(tree)
    value = reference(expr, point)
    assume(usable(value))
    refs = []
    for name in wrts:
        expr = sympy.diff(expr, SYMBOLS[name])
        refs.append(reference(expr, point))
        assume(usable(refs[-1]))
    return value, refs


orders = st.lists(st.sampled_from(NAMES), min_size=1, max_size=4)


# -- against SymPy -----------------------------------------------------------------------------------
@pytest.mark.slow
@settings(max_examples=examples(300))
@given(tree=trees, wrts=orders, point=points)
def test_derivatives_match_sympy(tree: tuple, wrts: list[str], point: dict[str, float]) -> None:
    """eval, repeated gen_graph, diff by every method and derivatives (every step) agree with
    sympy.diff at 30 digits, up to order 4 with mixed partials."""
    value, refs = references(tree, wrts, point)

    tape, v = fresh(point)
    f = to_term(tree, v)
    assert agree(f.eval(), value), (f.eval(), value)
    d = f
    for k, name in enumerate(wrts):
        d = d.gen_graph(v[name])
        assert matches(d, refs[k], point), ("gen_graph", wrts[: k + 1], d.eval(), refs[k])

    args = sympy_style(wrts)
    for method in METHODS:  # each method on its own tape: no memo shared with another method
        tape, v = fresh(point)
        f = to_term(tree, v)
        got = f.diff(*resolve(args, v), method=method)
        assert matches(got, refs[-1], point), (method, args, got.eval(), refs[-1])

        tape, v = fresh(point)
        f = to_term(tree, v)
        steps = sad.derivatives(f, *resolve(args, v), method=method)
        assert len(steps) == len(wrts)
        for k, step in enumerate(steps):
            assert matches(step.term, refs[k], point), (method, "derivatives", k, step.term.eval(), refs[k])


@settings(max_examples=examples(100))
@given(tree=trees, wrt=st.sampled_from(NAMES), n=st.integers(1, 4), point=points)
def test_taylor_graph_matches_sympy(tree: tuple, wrt: str, n: int, point: dict[str, float]) -> None:
    """Every order of one Taylor-mode run agrees with sympy.diff."""
    _, refs = references(tree, [wrt] * n, point)
    tape, v = fresh(point)
    built = sad.taylor_graph(to_term(tree, v), v[wrt], n)
    assert len(built) == n
    for k, term in enumerate(built):
        assert matches(term, refs[k], point), (k + 1, term.eval(), refs[k])


@settings(max_examples=examples(80))
@given(tree=trees, point=points)
def test_grad_graph_and_hessian_match_sympy(tree: tuple, point: dict[str, float]) -> None:
    """One reverse sweep (grad_graph) gives every first partial; the Hessian (forward over
    reverse) every second one — both against sympy.diff."""
    for sub in subtrees(tree):
        assume(usable(reference(to_sympy(sub), point)))
    expr = to_sympy(tree)
    assume(usable(reference(expr, point)))
    firsts = [sympy.diff(expr, SYMBOLS[n]) for n in NAMES]
    first_refs = [reference(e, point) for e in firsts]
    second_refs = [[reference(sympy.diff(e, SYMBOLS[m]), point) for m in NAMES] for e in firsts]
    assume(all(usable(r) for r in first_refs + [r for row in second_refs for r in row]))

    tape, v = fresh(point)
    f = to_term(tree, v)
    for term, ref in zip(f.grad_graph([v[n] for n in NAMES]), first_refs):
        assert matches(term, ref, point), (term.eval(), ref)
    H = sad.hessian(f, [v[n] for n in NAMES])
    for i in range(3):
        for j in range(3):
            assert matches(H[i][j], second_refs[i][j], point), (i, j, H[i][j].eval(), second_refs[i][j])


# -- numeric modes and compiled code against gen_graph(...).eval() -----------------------------------
def same(a: float, b: float, rtol: float = 1e-9) -> bool:
    """Two float64 evaluations of one derivative by different engines: they differ only by the
    order of roundings (relative 1e-9 of the scale, absolute near zero); nan must match nan."""
    if math.isnan(b):
        return math.isnan(a)
    if math.isinf(b):
        return a == b
    return abs(a - b) <= rtol * max(1.0, abs(b))


@settings(max_examples=examples(200))
@given(tree=trees, point=points)
def test_derive_grad_lambdify_match_gen_graph(tree: tuple, point: dict[str, float]) -> None:
    """Forward mode (derive), reverse mode (grad) and compiled code (lambdify, NumPy backend, one
    point and an array of points) agree with the derivative subgraphs' values."""
    tape, v = fresh(point)
    f = to_term(tree, v)
    xs = [v[n] for n in NAMES]
    firsts = [f.gen_graph(w) for w in xs]
    reference_values = [d.eval() for d in firsts]
    assume(all(math.isfinite(r) for r in reference_values + [f.eval()]))
    g = f.grad()
    for w, ref in zip(xs, reference_values):
        assert same(f.derive(w), ref), ("derive", w.name, f.derive(w), ref)
        assert same(g[w], ref), ("grad", w.name, g[w], ref)
        assert same(g[w.name], ref)
    direction = {xs[0]: 1.0, xs[1]: -2.0, xs[2]: 0.5}
    combined = reference_values[0] - 2.0 * reference_values[1] + 0.5 * reference_values[2]
    assert same(f.derive(direction), combined, 1e-8)

    second = firsts[0].gen_graph(xs[1])
    outputs = [f, *firsts, second]
    compiled = sad.lambdify(xs, outputs)
    at = [point[n] for n in NAMES]
    for got, term in zip(compiled(*at), outputs):
        assert same(got, term.eval()), (got, term.eval())
    grid = {n: np.array([point[n], 0.25 * point[n] - 0.3, 0.7]) for n in NAMES}
    with np.errstate(all="ignore"):
        arrays = compiled(*grid.values())
    for got, term in zip(arrays, outputs):
        want = np.atleast_1d(term.eval({v[n]: grid[n] for n in NAMES}))
        want = np.broadcast_to(want, got.shape)
        assert all(same(a, b) for a, b in zip(got, want)), (got, want)


@settings(max_examples=examples(10))
@given(tree=trees, point=points)
def test_lambdify_numba_matches_gen_graph(tree: tuple, point: dict[str, float]) -> None:
    """The Numba backend computes the same values as the graph (its kernel runs on arrays, so the
    points are arrays), and compiles every built-in function itself (no BackendWarning fallback)."""
    pytest.importorskip("numba")
    tape, v = fresh(point)
    f = to_term(tree, v)
    xs = [v[n] for n in NAMES]
    outputs = [f, f.gen_graph(xs[0]), f.diff(xs[0], xs[2])]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BackendWarning)
        compiled = sad.lambdify(xs, outputs, backend="numba", parallel=False)
    if importlib.util.find_spec("numba") is not None:
        assert compiled.backend == "numba"  # every built-in lowers to Numba: no fallback for them
    # 9 points (the last block ends inside a vector, where the kernel copies rather than reads
    # in place), and the first var as one number (read from a row written once a call)
    grid: dict[str, Any] = {n: np.array([point[n], 0.25 * point[n] - 0.3, 0.7, -1.1, 0.3, -0.6, 1.4, 0.05, -1.9])
                            for n in NAMES}
    for fed in (grid, {**grid, NAMES[0]: point[NAMES[0]]}):
        with np.errstate(all="ignore"):
            arrays = compiled(*fed.values())
        for got, term in zip(arrays, outputs):
            want = np.broadcast_to(np.atleast_1d(term.eval({v[n]: fed[n] for n in NAMES})), got.shape)
            assert all(same(a, b) for a, b in zip(got, want)), (compiled.backend, got, want)
