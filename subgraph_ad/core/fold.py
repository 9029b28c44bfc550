"""Folding: the trivial algebra every append goes through before it is interned.

``x*1``, ``x+0``, ``--x``, constants with constants, constant factors gathered in front
(``2*(3*x)`` is ``6*x``) and a sign pulled outward. What is left is put in a canonical operand
order (constants first, then by index, for commutative ops), so equal expressions meet in the
intern table. Works on indices: the Term-free path of every builder.

Constants folded from exact ones stay exact (``exact_op``): ``1/3`` is the Fraction 1/3 and
``log(2)`` the tree ``("fn", log, 2)``, so SymPy gets them back exactly; an operand known only
as a float makes the result a float.

>>> from subgraph_ad import Tape
>>> tape = Tape(); x = tape.var("x")
>>> (x / 3).node.args, tape.nodes[(x / 3).node.args[0]].exact
((2, 0), Fraction(1, 3))
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Optional

import numpy as np

from .ops import MAX_EXACT_BITS, OPS, Node, exact_value, float_form

if TYPE_CHECKING:  # pragma: no cover - typing only
    from ..functions.base import Function
    from .tape import Tape

#: A constant as folding sees it: its float and its exact form (None: known only as a float;
#: ``...``: computed from such a float, see ``exact_op``).
Number = tuple[float, Any]


def fold_value(op: str, values: list[float]) -> float:
    """An op on constants, with NumPy's IEEE semantics (1/0 is inf, never an exception)."""
    with np.errstate(all="ignore"):
        return float(OPS[op].value(*(np.float64(v) for v in values)))


def _root(n: int, k: int) -> int | None:
    """The integer k-th root of n >= 0, if n is a perfect k-th power (Newton's method on
    integers, from above)."""
    if n < 2:
        return n
    if k > n.bit_length():  # 1 < root < 2
        return None
    x = 1 << -(-n.bit_length() // k)
    while True:
        y = ((k - 1) * x + n // x ** (k - 1)) // k
        if y >= x:
            return x if x**k == n else None
        x = y


def _rational_pow(a: Fraction, b: Fraction) -> Any:
    """a ** b for rationals: a Fraction when it is one, ``("pow", a, b)`` when it is a real
    irrational, None when it is not real or too large to keep."""
    if b.denominator != 1:
        if a < 0:
            return None
        roots = (_root(a.numerator, b.denominator), _root(a.denominator, b.denominator))
        if None in roots:
            return ("pow", a, b)
        a, b = Fraction(roots[0], roots[1]), Fraction(b.numerator)  # type: ignore[arg-type]
    if a == 0 and b < 0:
        return None
    bits = max(a.numerator.bit_length(), a.denominator.bit_length())
    # computed exactly a while past what is kept, for a correctly rounded float
    return a ** int(b) if abs(b) * bits <= 64 * MAX_EXACT_BITS else None


def _is_number(form: Any) -> bool:
    return isinstance(form, Fraction) or form[0] == "float"


def _exact_tree(op: str, forms: list[Any]) -> Any:
    """The exact tree of an op on exact operands, without the identities (x*1, x+0, x**1)."""
    if op == "neg" and isinstance(forms[0], tuple) and forms[0][0] == "neg":
        return forms[0][1]
    if len(forms) == 2:
        a, b = forms
        if (op in ("mul", "div", "pow") and b == 1) or (op in ("add", "sub") and b == 0):
            return a
        if op in ("mul", "add") and a == (1 if op == "mul" else 0):
            return b
        if op in ("mul", "add") and _is_number(b) and not _is_number(a):  # numbers first: 2*pi
            return (op, b, a)
    return (op, *forms)


def _numeric(forms: list[Any]) -> bool:
    """Whether these operands are numbers (Fractions and Floats) with a Float among them: SymPy
    evaluates such an op to a Float."""
    return all(_is_number(f) for f in forms) and not all(isinstance(f, Fraction) for f in forms)


def exact_op(op: str, forms: list[Any], value: float) -> Any:
    """The exact form of an op on constants of these exact forms, whose float is ``value``: a
    Fraction, a tree, a Float, None for a result that is not a finite real, or ``...`` when an
    operand is known only as a float: then the result is a float computed from the tape's
    constants, which ``Tape.constant`` takes to be the exact constant of its bits if there is one
    (so an engine's float arithmetic on 1/3 meets the exact 1/3)."""
    if any(f is None for f in forms):
        return ...
    if _numeric(forms):
        return float_form(value)
    if all(isinstance(f, Fraction) for f in forms):
        if op == "neg":
            return -forms[0]
        a, b = forms
        if op == "div":
            return None if b == 0 else a / b
        if op == "pow":
            return _rational_pow(a, b)
        return OPS[op].value(a, b)
    return _exact_tree(op, forms)


def exact_fn(fn: Function, forms: list[Any], value: float) -> Any:
    """The exact form of a function applied to constants: ``("fn", fn, *operands)``, a Float
    when an operand is a Float, ``...`` when one is known only as a float (as in ``exact_op``)."""
    if any(f is None for f in forms):
        return ...
    return float_form(value) if _numeric(forms) else ("fn", fn, *forms)


def number(tape: Tape, index: int) -> Number:
    """The constant at ``index`` as folding sees it."""
    node = tape.nodes[index]
    return node.payload, exact_value(node)


def combine(op: str, numbers: list[Number]) -> Number:
    """An op on constants: the float (correctly rounded when the result is a Fraction) and
    the exact form."""
    value = fold_value(op, [v for v, _ in numbers])
    form = exact_op(op, [f for _, f in numbers], value)
    if isinstance(form, Fraction):
        try:
            value = float(form)
        except OverflowError:  # past the floats: inf, as the float op says
            form = None
    return value, form


def fold_fn(tape: Tape, fn: Function, args: tuple[int, ...]) -> int:
    """Append ``fn(*args)``: constant operands fold to the constant of its value, exact when
    the operands are (log(2) stays log(2))."""
    operands = [tape.nodes[a] for a in args]
    if all(node.op == "const" for node in operands):
        with np.errstate(all="ignore"):
            value = float(fn.f(*(np.float64(node.payload) for node in operands)))
        return tape.constant(value, exact_fn(fn, [exact_value(node) for node in operands], value))
    return tape.intern(Node("fn", args, fn))


def _const(tape: Tape, index: int) -> Optional[float]:
    node = tape.nodes[index]
    return node.payload if node.op == "const" else None


def scale(tape: Tape, c: Number, b: int) -> int:
    """``c * b`` for a constant c, without appending the constant when c is 0, 1 or -1."""
    if c[0] == 0.0:
        return tape.constant(0.0)
    if c[0] == 1.0:
        return b
    if c[0] == -1.0:
        return fold(tape, "neg", (b,))
    return tape.intern(Node("mul", (tape.constant(*c), b)))


def fold(tape: Tape, op: str, args: tuple[int, ...]) -> int:
    """Fold trivial algebra, then intern. Returns the index of the resulting node."""
    nodes = tape.nodes
    consts = [_const(tape, a) for a in args]
    if None not in consts:
        return tape.constant(*combine(op, [number(tape, a) for a in args]))
    if op == "neg":
        (a,) = args
        inner = nodes[a]
        if inner.op == "neg":
            return inner.args[0]
        if inner.op == "sub":
            return fold(tape, "sub", (inner.args[1], inner.args[0]))
        if inner.op == "mul" and _const(tape, inner.args[0]) is not None:
            return scale(tape, combine("neg", [number(tape, inner.args[0])]), inner.args[1])
        return tape.intern(Node("neg", args))
    a, b = args
    ca, cb = consts
    commutative = OPS[op].commutative
    if commutative and cb is not None:  # constants first: c*x, c+x
        a, b, ca, cb = b, a, cb, ca
    if op == "add":
        if ca == 0.0:
            return b
        if a == b:
            return scale(tape, (2.0, None), a)
        if nodes[b].op == "neg":
            return fold(tape, "sub", (a, nodes[b].args[0]))
        if nodes[a].op == "neg":
            return fold(tape, "sub", (b, nodes[a].args[0]))
    elif op == "sub":
        if cb == 0.0:
            return a
        if ca == 0.0:
            return fold(tape, "neg", (b,))
        if nodes[b].op == "neg":
            return fold(tape, "add", (a, nodes[b].args[0]))
    elif op == "mul":
        if ca is not None:
            inner = nodes[b]
            inner_c = _const(tape, inner.args[0]) if inner.op == "mul" else None
            if inner_c is not None:
                return scale(tape, combine("mul", [number(tape, a), number(tape, inner.args[0])]), inner.args[1])
            if inner.op == "neg":
                return scale(tape, combine("neg", [number(tape, a)]), inner.args[0])
            return scale(tape, number(tape, a), b)
        if nodes[a].op == "neg":
            return fold(tape, "neg", (fold(tape, "mul", (nodes[a].args[0], b)),))
        if nodes[b].op == "neg":
            return fold(tape, "neg", (fold(tape, "mul", (a, nodes[b].args[0])),))
    elif op == "div":
        if cb == 1.0:
            return a
        if ca == 0.0:
            return tape.constant(0.0)
        if cb is not None and cb != 0.0 and math.isfinite(cb):
            if abs(cb) == 1.0:
                return scale(tape, number(tape, b), a)
            return fold(tape, "mul", (tape.constant(*combine("div", [(1.0, Fraction(1)), number(tape, b)])), a))
    elif op == "pow":
        if cb == 1.0:
            return a
        if cb == 0.0:
            return tape.constant(1.0)
    if commutative and a > b and ca is None:
        a, b = b, a
    return tape.intern(Node(op, (a, b)))
