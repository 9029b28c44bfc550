"""The primitives, each declared once: the node record and the arithmetic operations.

A node is ``(op, args, payload)``. The leaves are ``var`` (payload: its name) and ``const``
(payload: a float); ``fn`` applies the function in its payload (a ``UnaryFn``) to its operand;
the arithmetic operations are the ``Op`` records of ``OPS``. Every transformation (forward
derivatives, Taylor coefficients, numeric partials, closed forms) and every backend (NumPy,
Numba, SymPy, Graphviz) keeps one table keyed by these names, and a test checks that each table
has a row for each op: adding an op is one record here and one row per table.

>>> OPS["sub"].commutative, OPS["sub"].symbol, OPS["sub"].value(5.0, 3.0)
(False, '-', 2.0)
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

import numpy as np


class Node(NamedTuple):
    """One immutable record: an operation, operand indices and a payload.

    ``op`` is ``var`` (payload: name), ``const`` (payload: float), ``fn`` (payload: the
    UnaryFn), or one of the arithmetic ops in ``OPS``.
    """

    op: str
    args: tuple[int, ...] = ()
    payload: Any = None


def intern_key(node: Node) -> tuple:
    """The key under which equal nodes are one node. 0.0 == -0.0 and they hash alike, but they
    must stay distinct constants, so a constant is keyed by its exact bits."""
    if node.op == "const":
        return ("const", float(node.payload).hex())
    return node


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
