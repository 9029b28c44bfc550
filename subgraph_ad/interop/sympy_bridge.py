"""Conversion to and from SymPy, both iterative and memoised per node.

SymPy is the independent oracle: every derivative can be converted and compared with
``sympy.diff``. Vars become ``sympy.Symbol(name)``; functions (of one or two arguments) use their
``to_sympy`` hook, or become an undefined ``sympy.Function(name)`` without one. On the way back,
every registered function whose hook is a plain SymPy function (``sympy.atan2(a, b)``) is
recognised by that function's class, and an undefined function by its registered name;
``sympy.E`` and ``sympy.pi`` become float constants.

>>> import sympy
>>> from subgraph_ad import Tape
>>> tape = Tape()
>>> t = tape.from_sympy(sympy.sympify("exp(-x**2/2)"))
>>> t.to_sympy()
exp(-x**2/2)
>>> tape.from_sympy(sympy.sympify("atan2(y, x) + Abs(x)")).to_sympy()
Abs(x) + atan2(y, x)
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import sympy

from ..functions import FUNCTIONS, Function
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


def fn_to_sympy(fn: Function, *args: sympy.Expr) -> sympy.Expr:
    """SymPy form of ``fn(*args)``: its ``to_sympy`` hook, else an undefined ``Function(name)``."""
    hook = getattr(fn, "to_sympy", None)
    return hook(*args) if hook is not None else sympy.Function(fn.name)(*args)


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
            out[i] = fn_to_sympy(node.payload, *(out[a] for a in node.args))
        else:  # SymPy implements the Python operators of the op registry
            out[i] = OPS[node.op].apply(*(out[a] for a in node.args))
    return out[term.index]


#: The reverse map and the registry it was read from: (snapshot of FUNCTIONS.items(), map). The
#: snapshot holds the functions themselves, so a replaced function is always noticed.
_reverse: tuple[tuple[tuple[str, Function], ...], dict[Any, Function]] = ((), {})


def sympy_classes() -> dict[Any, Function]:
    """SymPy function class -> registered function, read from each function's own ``to_sympy``
    applied to fresh ``Dummy`` symbols: a plain application F(d₁, …, dₙ) of exactly those symbols
    maps F back to the function (sympy.atan -> atan, sympy.Abs -> abs), so a registered user
    function round-trips like a built-in. Hooks that build a compound (sigmoid, log2) are not
    reversible by class; their SymPy form comes back as the compound. Recomputed when the
    registry changed since the last call.

    >>> import sympy
    >>> sympy_classes()[sympy.atan2].name
    'atan2'
    """
    global _reverse
    key = tuple(FUNCTIONS.items())
    if _reverse[0] != key:
        found: dict[Any, Function] = {}
        for fn in FUNCTIONS.values():
            hook = getattr(fn, "to_sympy", None)
            if hook is None:
                continue
            dummies = tuple(sympy.Dummy(f"d{k}") for k in range(fn.arity))
            try:
                image = hook(*dummies)
            except Exception:  # a hook that cannot take symbols is simply not reversible
                continue
            if isinstance(image, sympy.Function) and image.args == dummies:
                found.setdefault(image.func, fn)
        _reverse = (key, found)
    return _reverse[1]


def _leaf(expr: sympy.Basic, tape: Tape) -> Term:
    if isinstance(expr, sympy.Symbol):
        existing = tape.find_var(expr.name)
        return existing if existing is not None else tape.var(expr.name)
    if isinstance(expr, (sympy.Number, sympy.NumberSymbol)) and expr.is_real:
        return tape.const(float(expr))
    raise SympyConversionError(f"cannot convert {expr!r} ({type(expr).__name__}): only real numbers and symbols are supported as leaves")


def _combine(expr: sympy.Basic, args: list[Term], classes: dict[Any, Function]) -> Term:
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
    fn = classes.get(expr.func)
    if fn is None and isinstance(expr, sympy.core.function.AppliedUndef):  # registered without a hook
        fn = FUNCTIONS.get(str(expr.func))
    if fn is None or len(args) != fn.arity:
        supported = "+ - * / **, numbers, symbols, " + ", ".join(sorted(FUNCTIONS))
        raise SympyConversionError(
            f"cannot convert {type(expr).__name__} in {expr}: not supported (supported: {supported})"
        )
    return fn(*args)


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
    classes = sympy_classes()
    with tape.transaction():
        stack: list[tuple[sympy.Basic, bool]] = [(expr, False)]
        while stack:
            node, expanded = stack.pop()
            if node in built:
                continue
            if not node.args:
                built[node] = _leaf(node, tape)
            elif expanded:
                built[node] = _combine(node, [built[a] for a in node.args], classes)
            else:
                stack.append((node, True))
                stack.extend((a, False) for a in reversed(node.args) if a not in built)
        return built[expr]
