"""The primitives, each declared once: the node record and the arithmetic operations.

A node is ``(op, args, payload, exact)``. The leaves are ``var`` (payload: its name) and
``const`` (payload: a float; ``exact``: its exact value when the float alone does not say it,
see ``exact_field``); ``fn`` applies the function in its payload (a ``UnaryFn``) to its operand;
the arithmetic operations are the ``Op`` records of ``OPS``. Every transformation (forward
derivatives, Taylor coefficients, numeric partials, closed forms) and every backend (NumPy,
Numba, SymPy, Graphviz) keeps one table keyed by these names, and a test checks that each table
has a row for each op: adding an op is one record here and one row per table.

>>> OPS["sub"].commutative, OPS["sub"].symbol, OPS["sub"].value(5.0, 3.0)
(False, '-', 2.0)
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable, NamedTuple, TypeVar, Union

import numpy as np


#: The exact value of a constant, kept without SymPy: a ``Fraction``, or a small tuple tree whose
#: first item names what it is: an op of ``OPS`` over exact operands (``("pow", 2, 1/2)`` is
#: √2), ``("fn", function, *operands)`` (log(2)), ``("named", "pi")`` (pi, E, …), or
#: ``("float", value)``: a SymPy Float, which stays a Float (0.5, not 1/2) and makes what is
#: folded from it numbers a Float too, as in SymPy (``Float(0.5) * 2`` is ``Float(1.0)``,
#: ``Float(0.5) + pi`` stays that sum).
Exact = Union[Fraction, tuple]
T = TypeVar("T")


def float_form(value: float) -> tuple:
    """The exact form of a SymPy Float of this value."""
    return ("float", value)


#: An exact form past these sizes is dropped (the float stays): it would make interning slow
#: and the printed constant unreadable.
MAX_EXACT_BITS = 256
MAX_EXACT_SIZE = 32


class NamedConstant(float):
    """A float that is also an exact named constant (``sad.pi``, ``sad.e``): arithmetic on numbers
    sees the float, and on a Term it becomes the exact constant, so ``(sad.pi * x).to_sympy()``
    is ``pi*x``, not ``3.14159…*x``.

    >>> pi = NamedConstant(math.pi, "pi")
    >>> float(pi) == math.pi, pi.name, pi * 2 == 2 * math.pi
    (True, 'pi', True)
    """

    name: str

    def __new__(cls, value: float, name: str) -> NamedConstant:
        self = super().__new__(cls, value)
        self.name = name
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (NamedConstant, (float(self), self.name))


#: The exact constants π and e (``sad.pi``, ``sad.e``): floats that become exact on a tape.
PI = NamedConstant(math.pi, "pi")
E = NamedConstant(math.e, "E")


class Node(NamedTuple):
    """One immutable record: an operation, operand indices, a payload and, for a constant, its
    exact form.

    ``op`` is ``var`` (payload: name), ``const`` (payload: float), ``fn`` (payload: the
    UnaryFn), or one of the arithmetic ops in ``OPS``. ``exact`` is None except on a constant
    whose float does not say its exact value (see ``exact_field``).
    """

    op: str
    args: tuple[int, ...] = ()
    payload: Any = None
    exact: Any = None


def plain_fraction(value: float) -> Fraction | None:
    """The rational a float stands for by itself: an integer below 2**53, or a short binary
    fraction (0.5, 0.75, 2.125); None for any other float (0.1, 1/3 rounded, 1e300, nan).
    Constants with a plain value need no recorded exact form, so ``2``, ``2.0`` and ``1/2``
    from SymPy are each one node, as before exact forms existed.

    >>> plain_fraction(0.5), plain_fraction(3.0), plain_fraction(0.1)
    (Fraction(1, 2), Fraction(3, 1), None)
    """
    if not math.isfinite(value):
        return None
    numerator, denominator = value.as_integer_ratio()
    if denominator == 1:
        return Fraction(numerator) if abs(numerator) < 1 << 53 else None
    return Fraction(numerator, denominator) if denominator <= 1 << 20 and abs(numerator) <= 1 << 32 else None


def exact_size(exact: Any) -> int:
    """Items in an exact tree, counting shared subtrees each time (what hashing it costs);
    stops counting past ``MAX_EXACT_SIZE``."""
    size, stack = 0, [exact]
    while stack and size <= MAX_EXACT_SIZE:
        item = stack.pop()
        size += 1
        if isinstance(item, tuple):
            stack.extend(a for a in item[1:] if isinstance(a, (tuple, Fraction)))
    return size


def reduce_exact(exact: Any, leaf: Callable[[Any], T], apply: Callable[[tuple, list[T]], T]) -> T:
    """Fold an exact form bottom-up without recursion: ``leaf(item)`` for a Fraction, a
    ``("named", …)`` or a ``("float", …)`` item, ``apply(item, operand_results)`` for an op or a
    ``("fn", function, …)`` item. What SymPy and the printer each make of exact constants."""
    out: dict[int, T] = {}
    stack: list[tuple[Any, bool]] = [(exact, False)]
    while stack:
        item, expanded = stack.pop()
        if id(item) in out:
            continue
        if isinstance(item, Fraction) or item[0] in ("named", "float"):
            out[id(item)] = leaf(item)
            continue
        operands = item[2:] if item[0] == "fn" else item[1:]
        if not expanded:
            stack.append((item, True))
            stack.extend((a, False) for a in operands)
            continue
        out[id(item)] = apply(item, [out[id(a)] for a in operands])
    return out[id(exact)]


def exact_field(value: float, exact: Any) -> Any:
    """What a constant of ``value`` records as its ``exact``: None when the float says it all
    (a plain fraction, a non-finite value, or nothing exact known), else the exact form, if it
    is small enough to keep.

    >>> exact_field(0.5, Fraction(1, 2)), exact_field(1 / 3, Fraction(1, 3))
    (None, Fraction(1, 3))
    """
    if exact is None or not math.isfinite(value):
        return None
    plain = plain_fraction(value)
    if isinstance(exact, Fraction):
        if exact == plain or max(exact.numerator.bit_length(), exact.denominator.bit_length()) > MAX_EXACT_BITS:
            return None
        return exact
    if exact[0] == "float":
        return float_form(value)
    # a tree whose float is a plain fraction is taken to be that fraction (exp(0), log(2) - log(2))
    return None if plain is not None or exact_size(exact) > MAX_EXACT_SIZE else exact


def exact_value(node: Node) -> Any:
    """The exact value of a constant node: its recorded form, else its plain fraction, else
    None (a float, known only to rounding)."""
    return node.exact if node.exact is not None else plain_fraction(node.payload)


def const_node(value: float, exact: Any) -> Node:
    """The node of a constant: its float, and its exact form where the float does not say it."""
    value = float(value)
    return Node("const", (), value, exact_field(value, exact))


def exact_key(value: float) -> tuple:
    """The intern key of the exact (or plain) constant of this float's bits, if there is one."""
    return ("const", float(value).hex())


def intern_key(node: Node) -> tuple:
    """The key under which equal nodes are one node. 0.0 == -0.0 and they hash alike, but they
    must stay distinct constants, so a constant is keyed by its exact bits (``exact_key``).
    A float known only as a float (0.1, 1/3 rounded) and a SymPy Float are keyed apart from the
    exact constant of the same bits: each prints as what it is. An engine that recomputes a
    constant in floats looks up the exact one first (``Tape.constant`` without ``exact``). Two
    exact forms of the same bits (log(6) and log(2) + log(3)) are one node, the first made."""
    if node.op != "const":
        return node
    key = exact_key(node.payload)
    exact = node.exact
    if exact is None:
        return key if plain_fraction(node.payload) is not None else (*key, None)
    return (*key, exact) if isinstance(exact, tuple) and exact[0] == "float" else key


@dataclass(frozen=True)
class Op:
    """An arithmetic operation: how it is written, and its value.

    ``value`` has NumPy semantics on NumPy operands (arrays broadcast; IEEE results under
    ``np.errstate``, never an exception for a value); ``apply`` is the Python operator, which Terms and SymPy expressions both implement.
    ``precedence`` orders infix printing (higher binds tighter).
    """

    name: str
    arity: int
    commutative: bool
    symbol: str
    label: str
    precedence: int
    value: Callable[..., Any]
    apply: Callable[..., Any]

    @property
    def ordered(self) -> bool:
        """Whether the operand order matters (a - b, a / b, a ** b)."""
        return self.arity == 2 and not self.commutative


OPS: dict[str, Op] = {op.name: op for op in (
    Op("add", 2, True, "+", "+", 1, operator.add, operator.add),
    Op("sub", 2, False, "-", "a − b", 1, operator.sub, operator.sub),
    Op("mul", 2, True, "*", "×", 2, operator.mul, operator.mul),
    Op("div", 2, False, "/", "a / b", 2, operator.truediv, operator.truediv),
    Op("pow", 2, False, "**", "a ^ b", 4, np.power, operator.pow),  # real powers: nan, not complex
    Op("neg", 1, False, "-", "−", 3, operator.neg, operator.neg),
)}

#: The node kinds that are not arithmetic: leaves, and a function applied to its operand.
LEAVES = ("var", "const")
FUNCTION = "fn"
