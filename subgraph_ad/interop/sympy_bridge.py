"""Conversion to and from SymPy, both iterative and memoised per node.

SymPy is the independent oracle: every derivative can be converted and compared with
``sympy.diff``. Vars become ``sympy.Symbol(name)``; functions use their ``to_sympy`` hook.

>>> import sympy
>>> from subgraph_ad import Tape
>>> tape = Tape()
>>> t = tape.from_sympy(sympy.sympify("exp(-x**2/2)"))
>>> t.to_sympy()
exp(-x**2/2)
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import sympy

from ..functions import FUNCTIONS, UnaryFn
from ..core import OPS, Tape, Term, dependencies


class SympyConversionError(ValueError):
    """A SymPy construct has no counterpart on the tape."""


def _const_to_sympy(value: float) -> sympy.Expr:
    if math.isnan(value):
        return sympy.nan
    if math.isinf(value):
        return sympy.oo if value > 0 else -sympy.oo
    fraction = Fraction(value)
    if fraction.denominator <= 1 << 20:  # exact binary fractions such as 0.5 stay exact
        return sympy.Rational(fraction.numerator, fraction.denominator)
    return sympy.Float(value)


def fn_to_sympy(fn: UnaryFn, arg: sympy.Expr) -> sympy.Expr:
    """SymPy form of ``fn(arg)``: its ``to_sympy`` hook, else an undefined ``Function(name)``."""
    hook = getattr(fn, "to_sympy", None)
    return hook(arg) if hook is not None else sympy.Function(fn.name)(arg)


def to_sympy(term: Term) -> sympy.Expr:
    """The SymPy expression of ``term``."""
    tape = term.tape
    out: dict[int, sympy.Expr] = {}
    for i in dependencies(tape, [term.index]):
        node = tape.nodes[i]
        if node.op == "var":
            out[i] = sympy.Symbol(node.payload)
        elif node.op == "const":
            out[i] = _const_to_sympy(node.payload)
        elif node.op == "fn":
            out[i] = fn_to_sympy(node.payload, out[node.args[0]])
        else:  # SymPy implements the Python operators of the op registry
            out[i] = OPS[node.op].apply(*(out[a] for a in node.args))
    return out[term.index]


#: SymPy function classes with a built-in counterpart (sqrt arrives as Pow(x, 1/2)).
_SYMPY_FUNCTIONS = {sympy.exp: "exp", sympy.log: "log", sympy.sin: "sin", sympy.cos: "cos",
                    sympy.tan: "tan", sympy.tanh: "tanh"}


def _leaf(expr: sympy.Basic, tape: Tape) -> Term:
    if isinstance(expr, sympy.Symbol):
        existing = tape.find_var(expr.name)
        return existing if existing is not None else tape.var(expr.name)
    if isinstance(expr, (sympy.Number, sympy.NumberSymbol)) and expr.is_real:
        return tape.const(float(expr))
    raise SympyConversionError(f"cannot convert {expr!r} ({type(expr).__name__}): only real numbers and symbols are supported as leaves")


def _combine(expr: sympy.Basic, args: list[Term], tape: Tape) -> Term:
    if isinstance(expr, sympy.Add):
        result = args[0]
        for a in args[1:]:
            result = result + a
        return result
    if isinstance(expr, sympy.Mul):
        result = args[0]
        for a in args[1:]:
            result = result * a
        return result
    if isinstance(expr, sympy.Pow):
        base, exponent = args
        if expr.exp == sympy.Rational(1, 2):
            return FUNCTIONS["sqrt"](base)
        if expr.exp == -1:
            return 1 / base
        return base**exponent
    name = _SYMPY_FUNCTIONS.get(expr.func)
    if name is None and isinstance(expr, sympy.core.function.AppliedUndef):
        name = str(expr.func)
    fn = FUNCTIONS.get(name) if name is not None else None
    if fn is None or len(args) != 1:
        supported = "+ - * / **, numbers, symbols, " + ", ".join(sorted(FUNCTIONS))
        raise SympyConversionError(
            f"cannot convert {type(expr).__name__} in {expr}: not supported (supported: {supported})"
        )
    return fn(args[0])


def from_sympy(expr: Any, tape: Tape) -> Term:
    """Build ``expr`` on ``tape`` and return its Term; vars are created or reused by name.

    Transactional: an unsupported construct raises SympyConversionError and appends nothing.
    """
    if not isinstance(expr, sympy.Basic):
        try:
            expr = sympy.sympify(expr, strict=True)
        except (sympy.SympifyError, TypeError) as exc:
            raise SympyConversionError(f"from_sympy() takes a SymPy expression, got {type(expr).__name__} {expr!r}") from exc
    built: dict[sympy.Basic, Term] = {}
    with tape.transaction():
        stack: list[tuple[sympy.Basic, bool]] = [(expr, False)]
        while stack:
            node, expanded = stack.pop()
            if node in built:
                continue
            if not node.args:
                built[node] = _leaf(node, tape)
            elif expanded:
                built[node] = _combine(node, [built[a] for a in node.args], tape)
            else:
                stack.append((node, True))
                stack.extend((a, False) for a in reversed(node.args) if a not in built)
        return built[expr]
