"""Conversion to and from SymPy, both iterative and memoised per node.

SymPy is the independent oracle: every derivative can be converted and compared with
``sympy.diff``. Vars become ``sympy.Symbol(name)``; functions (of one or two arguments) use their
``to_sympy`` hook, or become an undefined ``sympy.Function(name)`` without one. On the way back,
every registered function whose hook is a plain SymPy function (``sympy.atan2(a, b)``) is
recognised by that function's class, and an undefined function by its registered name.

Constants keep their exact form both ways (``core.ops.Exact``): Integers and Rationals become
exact constants, ``pi``, ``E`` and the other named constants stay named, ``log(2)`` and
``sqrt(2)`` stay what they are, and a Float stays a Float (a Python float that is a short binary
fraction, 0.5, is that fraction exactly; any other, 0.1, is a Float).

>>> import sympy
>>> from subgraph_ad import Tape
>>> tape = Tape()
>>> t = tape.from_sympy(sympy.sympify("exp(-x**2/2)"))
>>> t.to_sympy()
exp(-x**2/2)
>>> tape.from_sympy(sympy.sympify("atan2(y, x) + Abs(x)")).to_sympy()
Abs(x) + atan2(y, x)
>>> tape.from_sympy(sympy.Rational(1, 3) * sympy.pi * sympy.log(2) + sympy.Float(0.5)).to_sympy()
0.5 + pi*log(2)/3
"""

from __future__ import annotations

import math
from fractions import Fraction
from collections import Counter
from typing import Any, Mapping

import numpy as np
import sympy

from ..core import OPS, Node, Tape, Term, dependencies
from ..core.arrays import has_arrays
from ..core.fold import fold_fn
from ..core.ops import float_form, plain_fraction, reduce_exact
from ..functions import FUNCTIONS, Function, Polygamma, sinc, sympy_hook
from ..functions import kinks


class SympyConversionError(ValueError):
    """A SymPy construct has no counterpart on the tape."""


#: The named constants that stay named on the tape, by their SymPy name.
NAMED: dict[str, sympy.Expr] = {str(c): c for c in (sympy.pi, sympy.E, sympy.EulerGamma, sympy.Catalan,
                                                    sympy.GoldenRatio, sympy.TribonacciConstant)}


def exact_to_sympy(exact: Any) -> sympy.Expr:
    """The SymPy value of an exact form (a Fraction or an exact tree)."""

    def leaf(item: Any) -> sympy.Expr:
        if isinstance(item, Fraction):
            return sympy.Rational(item.numerator, item.denominator)
        return NAMED[item[1]] if item[0] == "named" else sympy.Float(item[1])

    def apply(item: tuple, args: list[sympy.Expr]) -> sympy.Expr:
        return fn_to_sympy(item[1], *args) if item[0] == "fn" else OPS[item[0]].apply(*args)

    return reduce_exact(exact, leaf, apply)


def const_to_sympy(node: Node) -> sympy.Expr:
    """The SymPy value of a constant: its exact form, else the rational its float plainly is,
    else a Float."""
    value = node.payload
    if node.exact is not None:
        return exact_to_sympy(node.exact)
    if math.isnan(value):
        return sympy.nan
    if math.isinf(value):
        return sympy.oo if value > 0 else -sympy.oo
    plain = plain_fraction(value)
    return sympy.Float(value) if plain is None else sympy.Rational(plain.numerator, plain.denominator)


def fn_to_sympy(fn: Function, *args: sympy.Expr) -> sympy.Expr:
    """SymPy form of ``fn(*args)``: its ``to_sympy`` hook or spelling (``sympy_hook``), else an
    undefined ``Function(name)``."""
    hook = sympy_hook(fn)
    return hook(*args) if hook is not None else sympy.Function(fn.name)(*args)


def to_sympy(term: Term) -> Any:
    """The SymPy expression of ``term``; of a graph with array nodes, that of its scalar
    expansion, and of an array a ``sympy.Matrix`` (a column for 1-D) or an N-dim array."""
    if not has_arrays(term.tape, dependencies(term.tape, [term.index])):
        return convert(term.tape, [term.index])[term.index]
    part = term.expand()
    if not isinstance(part, np.ndarray):
        return convert(term.tape, [part.index])[part.index]
    flat = list(part.ravel())
    found = convert(term.tape, [t.index for t in flat])
    items = [found[t.index] for t in flat]
    if part.ndim <= 2:
        return sympy.Matrix(part.shape[0], part.shape[1] if part.ndim == 2 else 1, items)
    return sympy.ImmutableDenseNDimArray(items, part.shape)


def convert(tape: Tape, roots: list[int], names: Mapping[int, sympy.Expr] | None = None) -> dict[int, sympy.Expr]:
    """The SymPy expressions of the roots (and of what they depend on), in one walk; an operand
    in ``names`` is written as its name there (a temporary; as a root it is expanded)."""
    names = names or {}
    wanted = set(roots)
    order = dependencies(tape, roots, (lambda i: i in names and i not in wanted) if names else None)
    uses = Counter(a for i in order if i not in names or i in wanted for a in tape.nodes[i].args)
    out: dict[int, sympy.Expr] = {}
    # A chain of sums (or of products) is collected into one operand list and handed to SymPy
    # once: Add(Add(a, b), c), … re-flattens the growing sum at every step, quadratic in its length.
    chains: dict[int, list[sympy.Expr]] = {}

    def close(a: int) -> None:
        if a in chains:
            out[a] = (sympy.Add if FAMILY[tape.nodes[a].op] == "add" else sympy.Mul)(*chains.pop(a))

    def value(a: int) -> sympy.Expr:
        if a in names:
            return names[a]
        close(a)
        return out[a]

    for i in order:
        if i in names and i not in wanted:
            continue
        node = tape.nodes[i]
        if node.op in CHAINS:
            parts = []
            for a, sign in zip(node.args, CHAINS[node.op]):
                if sign and a in chains and uses[a] == 1 and a not in wanted and FAMILY[tape.nodes[a].op] == FAMILY[node.op]:
                    parts.append(chains.pop(a))
                else:
                    v = value(a)
                    parts.append([v if sign else (-v if node.op == "sub" else 1 / v)])
            parts.sort(key=len, reverse=True)  # extend the longest: linear however the chain leans
            for part in parts[1:]:
                parts[0].extend(part)
            chains[i] = parts[0]
            continue
        args = [value(a) for a in node.args]
        if node.op == "var":
            out[i] = sympy.Symbol(node.payload)
        elif node.op == "const":
            out[i] = const_to_sympy(node)
        elif node.op == "fn":
            out[i] = fn_to_sympy(node.payload, *args)
        else:  # SymPy implements the Python operators of the op registry
            out[i] = OPS[node.op].apply(*args)
    for r in roots:
        close(r)
    return out


#: The ops whose operand lists SymPy flattens: for each operand, whether it enters as it is
#: (True) or negated / inverted (False). Subtraction and division join their chains' lists too.
CHAINS = {"add": (True, True), "sub": (True, False), "mul": (True, True), "div": (True, False)}
FAMILY = {"add": "add", "sub": "add", "mul": "mul", "div": "mul"}


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
            hook = sympy_hook(fn)
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
    if isinstance(expr, sympy.Rational):
        return tape.const(Fraction(int(expr.p), int(expr.q)))
    if isinstance(expr, sympy.Float):
        return Term(tape, tape.constant(float(expr), float_form(float(expr))))
    if isinstance(expr, sympy.NumberSymbol) and str(expr) in NAMED:
        return Term(tape, tape.constant(float(expr), ("named", str(expr))))
    if isinstance(expr, (sympy.Number, sympy.NumberSymbol)) and expr.is_real:
        return tape.const(float(expr))
    if expr in (sympy.true, sympy.false):  # a condition of a Piecewise: 1 or 0
        return tape.const(1.0 if expr == sympy.true else 0.0)
    raise SympyConversionError(f"cannot convert {expr!r} ({type(expr).__name__}): only real numbers and symbols are supported as leaves")


#: SymPy's classes for the kinks and selections, built by ``_kink`` rather than by one function each.
_KINKS = (sympy.Piecewise, sympy.functions.elementary.piecewise.ExprCondPair, sympy.core.relational.Relational,
          sympy.And, sympy.Or, sympy.Not, sympy.Max, sympy.Min, sympy.sinc, sympy.polygamma, sympy.floor, sympy.ceiling,
          sympy.Mod)


def _kink(expr: sympy.Basic, args: list[Any]) -> Any:
    """A Piecewise (nested ``where``s, the first condition that holds wins, nan where none does),
    one of its (value, condition) pairs, a relation (a condition Term), And/Or/Not of conditions,
    Max/Min of any number of arguments, floor, ceiling and Mod, SymPy's unnormalized sinc(u)
    (NumPy's sinc(u/π)) and polygamma(n, x) for a whole n."""
    if isinstance(expr, sympy.Piecewise):
        tape = next(t for pair in args for t in pair if isinstance(t, Term)).tape
        result = tape.const(math.nan)
        for (value, condition), (_, cond) in zip(reversed(args), reversed(expr.args)):
            result = value if cond == sympy.true else kinks.where(condition, value, result)
        return result
    if isinstance(expr, sympy.functions.elementary.piecewise.ExprCondPair):
        return tuple(args)
    if isinstance(expr, sympy.core.relational.Relational):
        return kinks.COMPARISONS[expr.rel_op](*args)
    if isinstance(expr, (sympy.And, sympy.Or, sympy.Max, sympy.Min)):
        combine: Any = {sympy.And: kinks.logical_and, sympy.Or: kinks.logical_or, sympy.Max: kinks.maximum,
                   sympy.Min: kinks.minimum}[expr.func]
        result = args[0]
        for a in args[1:]:
            result = combine(result, a)
        return result
    if isinstance(expr, sympy.Not):
        return kinks.logical_not(args[0])
    if isinstance(expr, (sympy.floor, sympy.ceiling, sympy.Mod)):  # SymPy's own and ours with derivatives
        fn = kinks.floor if isinstance(expr, sympy.floor) else kinks.ceil if isinstance(expr, sympy.ceiling) else kinks.mod
        return fn(*args)
    if isinstance(expr, sympy.sinc):
        return sinc(args[0] / Term(args[0].tape, args[0].tape.constant(math.pi, ("named", "pi"))))
    order = expr.args[0]
    if not (order.is_Integer and order >= 0):
        raise SympyConversionError(f"cannot convert {expr}: polygamma needs a whole order n >= 0, got {order}")
    return Polygamma(int(order))(args[1])


#: The parts of a Piecewise: conditions and (value, condition) pairs, which are no number alone.
_CONDITIONS = (sympy.functions.elementary.piecewise.ExprCondPair, sympy.core.relational.Relational, sympy.And,
               sympy.Or, sympy.Not)


def _convertible(node: sympy.Basic, classes: dict[Any, Function], root: sympy.Basic) -> bool:
    """Whether ``node`` has a counterpart on the tape: arithmetic, a registered function, a kink
    or selection, or a condition inside a Piecewise (at the root a condition is no number)."""
    if isinstance(node, (sympy.Add, sympy.Mul, sympy.Pow)) or _function(node, classes) is not None:
        return True
    if isinstance(node, _CONDITIONS):
        return node is not root
    return isinstance(node, _KINKS)


def _combine(expr: sympy.Basic, args: list[Any], classes: dict[Any, Function]) -> Any:
    if isinstance(expr, _KINKS):
        return _kink(expr, args)
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
        if expr.exp == -1:
            return 1 / base
        if expr.exp != sympy.Rational(1, 2):
            return base**exponent
        fn: Function | None = FUNCTIONS["sqrt"]
        args = [base]
    else:
        fn = _function(expr, classes)
    if fn is None or len(args) != fn.arity:
        raise _unsupported(expr)
    return Term(args[0].tape, fold_fn(args[0].tape, fn, tuple([a.index for a in args])))


def _function(expr: sympy.Basic, classes: dict[Any, Function]) -> Function | None:
    """The registered function ``expr`` applies, if any (one registered without a hook is an
    undefined SymPy function of its name)."""
    fn = classes.get(expr.func)
    if fn is None and isinstance(expr, sympy.core.function.AppliedUndef):
        fn = FUNCTIONS.get(str(expr.func))
    return fn


def _unsupported(expr: sympy.Basic) -> SympyConversionError:
    supported = "+ - * / **, numbers, symbols, " + ", ".join(sorted(FUNCTIONS))
    return SympyConversionError(f"cannot convert {type(expr).__name__} in {expr}: not supported (supported: {supported})")


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
            else:  # refuse the outermost unsupported construct (Integral, not its Tuple)
                if not _convertible(node, classes, expr):
                    raise _unsupported(node)
                stack.append((node, True))
                stack.extend((a, False) for a in reversed(node.args) if a not in built)
        return built[expr]
