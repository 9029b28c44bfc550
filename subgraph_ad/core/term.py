"""Term: a handle ``(tape, index)`` on one node. Arithmetic on Terms appends nodes.

The core knows only arithmetic and structure. The convenience methods of the layers above
(``eval``, ``gen_graph``, ``diff``, ``grad``, ``to_sympy``, ``render``, ``str`` as a formula, …)
are attached by ``subgraph_ad.methods`` when the package is imported, so this module imports
nothing above it. ``repr`` stays the short, unambiguous ``Term(index: op)``.
"""

from __future__ import annotations

from fractions import Fraction
import math
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Sequence, Union, cast, overload

import numpy as np

from . import array_build
from .arrays import axes_of, shape_of
from .ops import NamedConstant, Node

if TYPE_CHECKING:  # pragma: no cover - typing only
    import os

    from ..numeric.modes import Grad
    from .tape import Tape

Operand = Union["Term", int, float, Fraction]

_NOT_A_NUMBER = (
    "a Term is a node of a graph, not a number: {self!r} has no value until it is evaluated; use "
    "sad.sin(x) or np.sin(x) instead of math functions, and term.eval() for its value; to store Terms in "
    "an array, use an object array or `sad.stack` (a NumPy array of floats holds numbers only)"
)


class Term:
    """A handle on one node of a tape: ``(tape, index)``. Arithmetic appends nodes."""

    __slots__ = ("tape", "index")
    __array_ufunc__ = None  # until methods.py attaches NumPy dispatch: scalars defer to our operators

    def __init__(self, tape: Tape, index: int) -> None:
        self.tape = tape
        self.index = index

    @property
    def node(self) -> Node:
        return self.tape.nodes[self.index]

    @property
    def op(self) -> str:
        return self.node.op

    @property
    def name(self) -> str | None:
        """The name of a var, else None."""
        node = self.node
        return node.payload if node.op == "var" else None

    def __repr__(self) -> str:
        node = self.node
        what = f"{node.op} {node.payload!r}" if node.op in ("var", "const") else node.op
        if node.op == "fn":
            what = f"fn {node.payload.name}"
        return f"Term({self.index}: {what})"

    def __hash__(self) -> int:
        return hash((id(self.tape), self.index))

    def __eq__(self, other: object) -> bool:
        """Two Terms are equal when they are the same node (interning makes equal expressions
        one node); comparing a Term with a number is refused like ``<``, since its value is not
        known until it is evaluated (``x == 1.0`` would be False for every x, silently)."""
        if isinstance(other, Term):
            return other.tape is self.tape and other.index == self.index
        if isinstance(other, (int, float, complex, Fraction, np.number)):
            return self._compare(other, "==")
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        if isinstance(other, Term):
            return not (other.tape is self.tape and other.index == self.index)
        if isinstance(other, (int, float, complex, Fraction, np.number)):
            return self._compare(other, "!=")
        return NotImplemented

    # -- arithmetic ---------------------------------------------------------------------------
    def _lift(self, other: object) -> Term:
        """``other`` as a Term of this tape: a number becomes a constant; anything else that is
        not a Term of this tape raises, naming it (callers pass whatever the user gave)."""
        if isinstance(other, Term):
            if other.tape is not self.tape:
                raise ValueError(
                    f"cannot combine terms of two different tapes: {self!r} on {self.tape!r} "
                    f"and {other!r} on {other.tape!r}"
                )
            return other
        if isinstance(other, NamedConstant):  # sad.pi, sad.e: the exact constant
            return Term(self.tape, self.tape.constant(float(other), ("named", other.name)))
        if isinstance(other, (int, float, Fraction, np.integer, np.floating)) and not isinstance(other, bool):
            return self.tape.const(other)  # ints and Fractions are exact constants
        if isinstance(other, np.ndarray) and other.ndim == 0 and other.dtype.kind in "iuf":
            return self._lift(other[()])  # a 0-d array is its number
        # An array beside an array node joins it as one node (a table, a stack); beside a scalar
        # Term it stays NumPy's to broadcast elementwise, so scalar code keeps its scalar graph.
        if isinstance(other, np.ndarray) and other.dtype.kind in "biuf" and self.shape:  # NumPy reads True as 1
            return Term(self.tape, array_build.table(self.tape, other))  # a constant array: one node
        if isinstance(other, np.ndarray) and other.dtype == object and other.ndim and other.size and self.shape:
            flat = array_build.stack(self.tape, [self._lift(item).index for item in other.ravel()])
            return Term(self.tape, array_build.reshape(self.tape, flat, other.shape + self.tape.nodes[flat].payload[0][1:]))
        if type(other).__module__.startswith("sympy"):  # SymPy is loaded, since one of its objects is here
            import sympy

            from .ops import float_form

            if isinstance(other, sympy.Rational):  # Integer too: an exact constant
                return self.tape.const(Fraction(int(other.p), int(other.q)))
            if isinstance(other, sympy.Float):  # stays a Float, as from_sympy keeps it
                return Term(self.tape, self.tape.constant(float(other), float_form(float(other))))
            named = ("pi", "E", "EulerGamma", "Catalan", "GoldenRatio", "TribonacciConstant")  # stay named
            if isinstance(other, sympy.NumberSymbol) and str(other) in named:
                return Term(self.tape, self.tape.constant(float(other), ("named", str(other))))
            if isinstance(other, sympy.Expr) and other.is_number and other.is_extended_real:  # sqrt(2), oo: its float
                return self.tape.const(float(other))
        raise TypeError(
            f"cannot combine a Term with {type(other).__name__} {other!r}; expected a Term, int, float or Fraction"
        )

    def _binary(self, op: str, other: Operand, reflected: bool = False) -> Term:
        try:
            rhs = self._lift(other)
        except TypeError:
            return cast(Term, NotImplemented)  # Python then tries the other operand's method
        return self.tape.op(op, rhs, self) if reflected else self.tape.op(op, self, rhs)

    def __add__(self, o: Operand) -> Term:
        return self._binary("add", o)

    def __radd__(self, o: Operand) -> Term:
        return self._binary("add", o, True)

    def __sub__(self, o: Operand) -> Term:
        return self._binary("sub", o)

    def __rsub__(self, o: Operand) -> Term:
        return self._binary("sub", o, True)

    def __mul__(self, o: Operand) -> Term:
        return self._binary("mul", o)

    def __rmul__(self, o: Operand) -> Term:
        return self._binary("mul", o, True)

    def __truediv__(self, o: Operand) -> Term:
        return self._binary("div", o)

    def __rtruediv__(self, o: Operand) -> Term:
        return self._binary("div", o, True)

    def __pow__(self, o: Operand) -> Term:
        return self._binary("pow", o)

    def __rpow__(self, o: Operand) -> Term:
        return self._binary("pow", o, True)

    def __neg__(self) -> Term:
        return self.tape.op("neg", self)

    def __pos__(self) -> Term:
        return self

    # -- not a number ---------------------------------------------------------------------------
    # A Term stands for a value computed later, so Python never gets to treat it as one: math
    # functions and int/float conversions would otherwise fail with "must be real number, not
    # Term", and an ``if`` on a Term would pick one branch once, at build time.
    def __float__(self) -> float:
        raise TypeError(_NOT_A_NUMBER.format(self=self))

    def __int__(self) -> int:
        raise TypeError(_NOT_A_NUMBER.format(self=self))

    def __index__(self) -> int:
        raise TypeError(_NOT_A_NUMBER.format(self=self))

    def __complex__(self) -> complex:
        raise TypeError(_NOT_A_NUMBER.format(self=self))

    def __bool__(self) -> bool:
        raise TypeError(
            f"a Term has no truth value: {self!r} is a node of a graph, not a number, so `if`, "
            "`and`, `or` and `not` on it would decide the branch once, when the graph is built, not "
            "for each value; compare values with term.eval(), or test `term is None` for a missing "
            "term"
        )

    def _compare(self, other: object, symbol: str) -> bool:
        raise TypeError(
            f"cannot compare a Term ({self!r} {symbol} {other!r}): a Term is a node of a graph, not a "
            "number, and a graph is traced once, so a branch on a value would be decided for every "
            "later value at once; compare values with term.eval(), or write the branch-free form"
        )

    def __lt__(self, other: object) -> bool:
        return self._compare(other, "<")

    def __le__(self, other: object) -> bool:
        return self._compare(other, "<=")

    def __gt__(self, other: object) -> bool:
        return self._compare(other, ">")

    def __ge__(self, other: object) -> bool:
        return self._compare(other, ">=")

    if TYPE_CHECKING:  # pragma: no cover - attached by subgraph_ad.methods; declared for type checkers
        def eval(self, values: Mapping[Any, Any] | None = None, *, warn: bool = False) -> Any:
            """The value: a float, or an ndarray when a value is an array."""

        def derive(self, wrt: Term | Mapping[Term, Any], values: Mapping[Any, Any] | None = None, *,
                   warn: bool = False) -> Any:
            """Forward mode: d(self)/d(wrt) as a value."""

        def grad(self, values: Mapping[Any, Any] | None = None, *, warn: bool = False) -> Grad:
            """Reverse mode: every partial as a value, in one sweep."""

        def gen_graph(self, wrt: Term | Mapping[Term, Any], callback: Callable[[Term], None] | None = None) -> Term:
            """The nodes of d(self)/d(wrt), appended to the tape."""

        def diff(self, *args: Term | int, method: str = "auto", closed_form: bool = True,
                 callback: Callable[[Term], None] | None = None) -> Term:
            """Repeated differentiation, SymPy-style."""

        @overload
        def grad_graph(self, wrt: Term, callback: Callable[[Term], None] | None = None) -> Term: ...

        @overload
        def grad_graph(self, wrt: Sequence[Term], callback: Callable[[Term], None] | None = None) -> list[Term]: ...

        def grad_graph(self, wrt: Term | Sequence[Term],
                       callback: Callable[[Term], None] | None = None) -> Term | list[Term]:
            """Symbolic reverse mode: every partial as Terms, in one backward sweep."""

        def to_sympy(self) -> Any:
            """The SymPy expression."""

        def subs(self, mapping: Mapping[Any, Any]) -> Any:
            """Vars replaced: a value for numbers for every var, else a new Term."""

        def evalf(self, n: int = 15, subs: Mapping[Any, Any] | None = None) -> Any:
            """The value to n digits, as SymPy's evalf."""

        def to_dot(self, **options: Any) -> str:
            """DOT source of the nodes this term depends on."""

        def render(self, path: str | os.PathLike[str], *, max_nodes: int | None = ..., **options: Any) -> str:
            """Draw with Graphviz; the format from the suffix."""

        def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]: ...

        def _repr_latex_(self) -> str: ...

        def _sympy_(self) -> Any: ...

        def __getattr__(self, name: str) -> Callable[..., Term]: ...

        def __abs__(self) -> Term: ...

    # -- arrays (see arrays.py) ---------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        """The shape of the value: () for a scalar node."""
        return shape_of(self.tape, self.index)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def _array(self, what: str) -> tuple[int, ...]:
        shape = self.shape
        if not shape:
            raise TypeError(f"{what} needs an array Term, and {self!r} is a scalar")
        return shape

    def __len__(self) -> int:
        return self._array("len()")[0]

    def __getitem__(self, key: Any) -> Term:
        """Basic NumPy indexing (ints, slices, None, ...): an array node, or a scalar Term for one
        element."""
        self._array("indexing")
        return Term(self.tape, array_build.index(self.tape, self.index, key))

    def __iter__(self) -> Iterator[Term]:
        return (self[k] for k in range(len(self)))

    def __matmul__(self, other: Any) -> Term:
        return Term(self.tape, array_build.matmul(self.tape, self.index, self._lift(other).index))

    def __rmatmul__(self, other: Any) -> Term:
        return Term(self.tape, array_build.matmul(self.tape, self._lift(other).index, self.index))

    def sum(self, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False) -> Term:
        """The sum over ``axis`` (None: all): a scalar Term when every axis is summed. ``dtype``,
        ``out`` and ``keepdims`` are NumPy's (``np.sum(h)`` calls this), out must be None."""
        if not self.shape and axis is None and out is None:
            return self  # NumPy's sum of a number is that number (np.sum(x) of a scalar Term)
        shape = self._array("sum()")
        if out is not None:
            raise TypeError("sum(out=...): an array node is not a buffer; use the returned Term")
        total = Term(self.tape, array_build.reduce_sum(self.tape, self.index, axis))
        if keepdims:
            axes = axes_of(axis, len(shape), "sum")
            total = total.reshape(tuple(1 if k in axes else n for k, n in enumerate(shape)))
        return total

    def mean(self, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False) -> Term:
        if not self.shape and axis is None and out is None:
            return self
        shape = self._array("mean()")
        count = math.prod(shape[k] for k in axes_of(axis, len(shape), "mean"))
        return self.sum(axis, dtype, out, keepdims) * Fraction(1, count)

    def reshape(self, *shape: Any) -> Term:
        self._array("reshape()")
        wanted = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        return Term(self.tape, array_build.reshape(self.tape, self.index, wanted))

    def transpose(self, *axes: Any) -> Term:
        self._array("transpose()")
        perm = axes[0] if len(axes) == 1 and isinstance(axes[0], (tuple, list, type(None))) else (axes or None)
        return Term(self.tape, array_build.transpose(self.tape, self.index, perm))

    @property
    def T(self) -> Term:
        return self.transpose()

    def expand(self) -> Any:
        """The same values as scalar nodes: an object array of scalar Terms (a Term for a
        scalar), for what knows only scalars and to check an array result by its scalar twin."""
        from .expand import expand

        return expand(self)

    # -- values -----------------------------------------------------------------------------
    def set(self, value: Any) -> None:
        """Change a var's current value; later evaluations use it."""
        self.tape.set_value(self, value)

    @property
    def value(self) -> Any:
        """A var's current value."""
        return self.tape.value_of(self)
