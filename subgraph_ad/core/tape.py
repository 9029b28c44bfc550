"""The tape: an append-only list of immutable nodes, with interning, folding and transactions.

Everything else in the package is a function over this list. Appending a node that already
exists returns the existing index (a dict lookup), and trivial algebra folds at append time;
this sharing is what keeps repeated differentiation polynomial instead of exponential.

>>> tape = Tape()
>>> x = tape.var("x", 2.0)
>>> (x * 3).index == (3 * x).index
True
>>> len(tape)
3
"""

from __future__ import annotations

import math
import operator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Callable, Iterator, NamedTuple, Union

import numpy as np

if TYPE_CHECKING:  # pragma: no cover - typing only
    from ..functions.base import UnaryFn

Number = Union[int, float]
Callback = Callable[["Term"], None]

#: Arithmetic operations as values; shared by constant folding and numeric evaluation.
ARITH: dict[str, Callable[..., Any]] = {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "div": operator.truediv,
    "pow": np.power,
    "neg": operator.neg,
}
COMMUTATIVE = frozenset({"add", "mul"})


class LimitError(RuntimeError):
    """A tape grew past its ``max_nodes``; the operation that did it was rolled back."""


class Node(NamedTuple):
    """One immutable record: an operation, operand indices and a payload.

    ``op`` is ``var`` (payload: name), ``const`` (payload: float), ``fn`` (payload: the
    UnaryFn), or one of ``add sub mul div pow neg``.
    """

    op: str
    args: tuple[int, ...] = ()
    payload: Any = None


def _key(node: Node) -> tuple:
    # 0.0 == -0.0 and they hash alike, but must stay distinct constants.
    if node.op == "const":
        return ("const", float(node.payload).hex())
    return node


def check_value(value: Any, what: str) -> Any:
    """A var value must be a real number or an array of them; anything else is refused early."""
    if not isinstance(value, (bool, str, bytes)) and value is not None:
        try:
            np.asarray(value, dtype=float)
            return value
        except (TypeError, ValueError):
            pass
    raise TypeError(f"{what} must be a number or an array of numbers, got {type(value).__name__} {value!r}")


def _fold_value(op: str, values: list[float]) -> float:
    with np.errstate(all="ignore"):
        return float(ARITH[op](*(np.float64(v) for v in values)))


class Tape:
    """The node list (arena) every Term lives on.

    ``max_nodes`` bounds the tape: an operation that would pass it raises LimitError and
    leaves the tape as it was.
    """

    def __init__(self, max_nodes: int | None = None) -> None:
        self.nodes: list[Node] = []
        self.max_nodes = max_nodes
        self._intern: dict[tuple, int] = {}
        self._values: dict[int, Any] = {}
        self._vars: dict[str, int] = {}
        #: derivative order that created each node (0 = built by the user)
        self.orders: list[int] = []
        #: memo of d(node)/d(var): (node, var) -> index or None; journaled for rollback
        self.deriv_cache: dict[tuple[int, int], int | None] = {}
        self._journal: list[tuple[int, int]] = []
        self._listener: Callback | None = None
        self._order = 0

    # -- building -------------------------------------------------------------------------
    def var(self, name: str, value: Any = 0.0) -> Term:
        """A named input. Names are unique per tape; vars are never merged."""
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"var name must be an identifier string, got {name!r}")
        if name in self._vars:
            raise ValueError(
                f"var {name!r} already exists on this tape (node {self._vars[name]}); "
                f"use tape.vars[{name!r}] to get it"
            )
        check_value(value, f"the value of var {name!r}")
        index = self._push(Node("var", (), name), key=None)
        self._vars[name] = index
        self._values[index] = value
        return Term(self, index)

    def const(self, value: Number) -> Term:
        """A constant node; equal constants are one node."""
        if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
            raise TypeError(f"a constant must be a real number, got {type(value).__name__} {value!r}")
        return Term(self, self._intern_node(Node("const", (), float(value))))

    @property
    def zero(self) -> Term:
        """The tape's constant 0: what a structurally zero derivative returns."""
        return self.const(0.0)

    @property
    def vars(self) -> dict[str, Term]:
        """The vars of this tape by name, in creation order."""
        return {name: Term(self, i) for name, i in self._vars.items()}

    def __len__(self) -> int:
        return len(self.nodes)

    def __getitem__(self, index: int) -> Term:
        if not -len(self.nodes) <= index < len(self.nodes):
            raise IndexError(f"node index {index} out of range for a tape of {len(self)} nodes")
        return Term(self, index % len(self.nodes))

    def __repr__(self) -> str:
        return f"Tape({len(self)} nodes, vars={list(self._vars)})"

    def find_var(self, name: str) -> Term | None:
        """The var called ``name``, or None."""
        index = self._vars.get(name)
        return None if index is None else Term(self, index)

    def current_values(self) -> dict[int, Any]:
        """Var index -> current value, a copy."""
        return dict(self._values)

    def value_of(self, var: Term) -> Any:
        """Current value of a var."""
        return self._values[self.check_var(var).index]

    def check_var(self, var: Any, what: str = "var") -> Term:
        """Return ``var`` if it is a var of this tape, else raise a clear error."""
        if not isinstance(var, Term):
            raise TypeError(f"{what} must be a var Term of this tape, got {type(var).__name__} {var!r}")
        if var.tape is not self:
            raise ValueError(f"{what} {var!r} belongs to another tape ({var.tape!r}), not {self!r}")
        if self.nodes[var.index].op != "var":
            raise ValueError(
                f"{what} must be a var, got node {var.index} ({self.nodes[var.index].op}); "
                "derivatives are taken with respect to vars made by tape.var()"
            )
        return var

    def apply(self, fn: UnaryFn, arg: Term) -> Term:
        """Append ``fn(arg)``; a constant argument folds to a constant."""
        node = self.nodes[arg.index]
        if node.op == "const":
            with np.errstate(all="ignore"):
                return self.const(float(fn.f(np.float64(node.payload))))
        return Term(self, self._intern_node(Node("fn", (arg.index,), fn)))

    def op(self, op: str, *args: Term) -> Term:
        """Append an arithmetic node, folding trivial algebra first."""
        return Term(self, self._fold(op, tuple([a.index for a in args])))

    # -- interning and folding ------------------------------------------------------------
    def _push(self, node: Node, key: tuple | None) -> int:
        if self.max_nodes is not None and len(self.nodes) >= self.max_nodes:
            raise LimitError(
                f"tape limit reached: appending node {len(self.nodes) + 1} ({node.op}) "
                f"would exceed max_nodes={self.max_nodes}"
            )
        index = len(self.nodes)
        self.nodes.append(node)
        self.orders.append(self._order)
        if key is not None:
            self._intern[key] = index
        if self._listener is not None:
            self._listener(Term(self, index))
        return index

    def _intern_node(self, node: Node) -> int:
        key = _key(node)
        found = self._intern.get(key)
        return found if found is not None else self._push(node, key)

    def _const_value(self, index: int) -> float | None:
        node = self.nodes[index]
        return node.payload if node.op == "const" else None

    def _scale(self, c: float, b: int) -> int:
        """``c * b`` for a constant c, without appending the constant when c is 0, 1 or -1."""
        if c == 0.0:
            return self.zero.index
        if c == 1.0:
            return b
        if c == -1.0:
            return self._fold("neg", (b,))
        return self._intern_node(Node("mul", (self.const(c).index, b)))

    def _fold(self, op: str, args: tuple[int, ...]) -> int:
        """Fold trivial algebra, then intern. Returns the index of the resulting node.
        Package-internal, also the Term-free path of Taylor mode: operands are trusted indices."""
        nodes = self.nodes
        consts = [n.payload if n.op == "const" else None for n in [nodes[a] for a in args]]
        if None not in consts:
            return self.const(_fold_value(op, consts)).index
        if op == "neg":
            (a,) = args
            inner = nodes[a]
            if inner.op == "neg":
                return inner.args[0]
            if inner.op == "sub":
                return self._fold("sub", (inner.args[1], inner.args[0]))
            if inner.op == "mul" and self._const_value(inner.args[0]) is not None:
                return self._scale(-self._const_value(inner.args[0]), inner.args[1])
            return self._intern_node(Node("neg", args))
        a, b = args
        ca, cb = consts
        if op in COMMUTATIVE and cb is not None:  # constants first: c*x, c+x
            a, b, ca, cb = b, a, cb, ca
        if op == "add":
            if ca == 0.0:
                return b
            if a == b:
                return self._scale(2.0, a)
            if self.nodes[b].op == "neg":
                return self._fold("sub", (a, self.nodes[b].args[0]))
            if self.nodes[a].op == "neg":
                return self._fold("sub", (b, self.nodes[a].args[0]))
        elif op == "sub":
            if cb == 0.0:
                return a
            if ca == 0.0:
                return self._fold("neg", (b,))
            if self.nodes[b].op == "neg":
                return self._fold("add", (a, self.nodes[b].args[0]))
        elif op == "mul":
            if ca is not None:
                inner = self.nodes[b]
                if inner.op == "mul" and self._const_value(inner.args[0]) is not None:
                    return self._scale(ca * self._const_value(inner.args[0]), inner.args[1])
                if inner.op == "neg":
                    return self._scale(-ca, inner.args[0])
                return self._scale(ca, b)
            elif self.nodes[a].op == "neg":
                return self._fold("neg", (self._fold("mul", (self.nodes[a].args[0], b)),))
            elif self.nodes[b].op == "neg":
                return self._fold("neg", (self._fold("mul", (a, self.nodes[b].args[0])),))
        elif op == "div":
            if cb == 1.0:
                return a
            if ca == 0.0:
                return self.zero.index
            if cb is not None and cb != 0.0 and math.isfinite(cb):
                return self._fold("mul", (self.const(1.0 / cb).index, a)) if abs(cb) != 1.0 else self._scale(cb, a)
        elif op == "pow":
            if cb == 1.0:
                return a
            if cb == 0.0:
                return self.const(1.0).index
        if op in COMMUTATIVE and a > b and ca is None:
            a, b = b, a
        return self._intern_node(Node(op, (a, b)))

    # -- transactions ---------------------------------------------------------------------
    def remember(self, node: int, wrt: int, result: int | None) -> None:
        """Memoise d(node)/d(wrt); undone with the transaction that made it."""
        key = (node, wrt)
        if key not in self.deriv_cache:
            self.deriv_cache[key] = result
            self._journal.append(key)

    @contextmanager
    def transaction(self, callback: Callback | None = None, order: int | None = None) -> Iterator[Tape]:
        """Undo every append made inside the block if it raises anything (KeyboardInterrupt too).

        ``callback`` is called with each appended Term; ``order`` tags the appended nodes.
        """
        mark, journal_mark = len(self.nodes), len(self._journal)
        saved = self._listener, self._order
        if callback is not None:
            self._listener = callback
        if order is not None:
            self._order = order
        try:
            yield self
        except BaseException:
            self._rollback(mark, journal_mark)
            raise
        finally:
            self._listener, self._order = saved

    def _tag(self, order: int) -> None:
        """Package-internal: tag the nodes appended from now on with this derivative order; the
        enclosing ``transaction`` restores the previous tag (cheaper than a transaction per step)."""
        self._order = order

    def _quietly(self, build: Callable[[], tuple[list[int], bool]]) -> list[int]:
        """Package-internal: run ``build``, which returns root indices and whether it may have left
        nodes they do not need; keep only the nodes it appended that the roots need, renumbered
        in order, and return the roots' new indices. The listener hears only the kept nodes.
        Taylor mode builds g = f′(u) with a function's own rule and keeps just g's canonical part:
        not the −sin(u) it reads as sin(u), nor the constant 1 handed in as ``derived``, which
        would stay on the tape unused."""
        mark, journal_mark = len(self.nodes), len(self._journal)
        listener, self._listener = self._listener, None
        try:
            roots, leftovers = build()
            if leftovers and len(self._journal) == journal_mark:  # a memo entry would name a moved node
                roots = self._trim(mark, roots)
        finally:
            self._listener = listener
        if listener is not None:
            for index in range(mark, len(self.nodes)):
                listener(Term(self, index))
        return roots

    def _trim(self, mark: int, roots: list[int]) -> list[int]:
        """Drop the nodes appended since ``mark`` that no root needs (a new var is always needed)."""
        nodes = self.nodes
        live = bytearray(len(nodes) - mark)
        for r in roots:
            if r >= mark:
                live[r - mark] = 1
        for index in range(len(nodes) - 1, mark - 1, -1):
            node = nodes[index]
            if node.op == "var":
                return roots
            if live[index - mark]:
                for a in node.args:
                    if a >= mark:
                        live[a - mark] = 1
        if all(live):
            return roots
        tail, orders = nodes[mark:], self.orders[mark:]
        self._rollback(mark, len(self._journal))
        moved: dict[int, int] = {}
        for k, node in enumerate(tail):
            if live[k]:  # the renumbering keeps order, so operands stay in _fold's order
                node = node._replace(args=tuple([moved.get(a, a) for a in node.args]))
                moved[mark + k] = len(nodes)
                self._intern[_key(node)] = len(nodes)
                nodes.append(node)
                self.orders.append(orders[k])
        return [moved.get(r, r) for r in roots]

    def _rollback(self, mark: int, journal_mark: int) -> None:
        for index in range(len(self.nodes) - 1, mark - 1, -1):
            node = self.nodes[index]
            if node.op == "var":
                del self._vars[node.payload], self._values[index]
            else:
                self._intern.pop(_key(node), None)
        del self.nodes[mark:], self.orders[mark:]
        for key in self._journal[journal_mark:]:
            del self.deriv_cache[key]
        del self._journal[journal_mark:]

    # -- bridges (implemented in the layers above) -----------------------------------------
    def to_dot(self, **options: Any) -> str:
        """DOT source of every node on the tape."""
        from ..viz.render import to_dot

        return to_dot(self, **options)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        """Jupyter shows a tape as the SVG of all its nodes."""
        from ..viz.render import repr_mimebundle

        return repr_mimebundle(self)

    def from_sympy(self, expr: Any) -> Term:
        """Build a SymPy expression on this tape; vars are reused or created by name."""
        from ..interop.sympy_bridge import from_sympy

        return from_sympy(expr, self)


Operand = Union["Term", int, float]


class Term:
    """A handle on one node of a tape: ``(tape, index)``. Arithmetic appends nodes."""

    __slots__ = ("tape", "index")
    __array_ufunc__ = None  # let NumPy scalars defer to our reflected operators

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
        return isinstance(other, Term) and other.tape is self.tape and other.index == self.index

    # -- arithmetic ---------------------------------------------------------------------------
    def _lift(self, other: Operand) -> Term:
        if isinstance(other, Term):
            if other.tape is not self.tape:
                raise ValueError(
                    f"cannot combine terms of two different tapes: {self!r} on {self.tape!r} "
                    f"and {other!r} on {other.tape!r}"
                )
            return other
        if isinstance(other, (int, float, np.integer, np.floating)) and not isinstance(other, bool):
            return self.tape.const(other)
        raise TypeError(
            f"cannot combine a Term with {type(other).__name__} {other!r}; expected a Term, int or float"
        )

    def _binary(self, op: str, other: Operand, reflected: bool = False) -> Term:
        try:
            rhs = self._lift(other)
        except TypeError:
            return NotImplemented  # type: ignore[return-value]
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

    # -- values ---------------------------------------------------------------------------------
    def set(self, value: Any) -> None:
        """Change a var's current value; later evaluations use it."""
        self.tape.check_var(self, "set() target")
        self.tape._values[self.index] = check_value(value, f"the value of var {self.name!r}")

    @property
    def value(self) -> Any:
        """A var's current value."""
        return self.tape.value_of(self)

    def eval(self, values: dict | None = None) -> Any:
        """Value at the current var values, or at temporary ``values`` ({var: value})."""
        from ..numeric.modes import evaluate

        return evaluate(self, values)

    def derive(self, wrt: Term, values: dict | None = None) -> Any:
        """Forward mode: the numeric dz/d(wrt) in one tangent sweep."""
        from ..numeric.modes import derive

        return derive(self, wrt, values)

    def grad(self, values: dict | None = None) -> Any:
        """Reverse mode: every partial derivative in one backward sweep, as a Grad."""
        from ..numeric.modes import grad

        return grad(self, values)

    # -- derivative subgraphs ---------------------------------------------------------------------
    def gen_graph(self, wrt: Term, callback: Callback | None = None) -> Term:
        """Append the nodes of d(self)/d(wrt) to the tape and return that Term."""
        from ..ad.forward import gen_graph

        return gen_graph(self, wrt, callback)

    def diff(self, *args: Any, method: str = "auto", callback: Callback | None = None) -> Term:
        """SymPy-style repeated differentiation: ``z.diff(x, 3)``, ``z.diff(x, 2, y)``."""
        from ..ad.diff import diff

        return diff(self, *args, method=method, callback=callback)

    # -- bridges ------------------------------------------------------------------------------------
    def to_sympy(self) -> Any:
        """The SymPy expression of this term; vars become ``sympy.Symbol(name)``."""
        from ..interop.sympy_bridge import to_sympy

        return to_sympy(self)

    def to_dot(self, **options: Any) -> str:
        """DOT source of the nodes this term depends on."""
        from ..viz.render import to_dot

        return to_dot(self, **options)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        """Jupyter shows a term as the SVG of the nodes it depends on."""
        from ..viz.render import repr_mimebundle

        return repr_mimebundle(self)

    def render(self, path: str, **options: Any) -> str:
        """Write the graph to ``path``; the format comes from the suffix (svg, png, pdf, dot)."""
        from ..viz.render import render

        return render(self, path, **options)


def dependencies(tape: Tape, roots: list[int], stop: Callable[[int], bool] | None = None) -> list[int]:
    """Indices of every node the roots depend on (roots included), in ascending (topological) order.

    Iterative: operands always precede their node, so one downward scan marks everything.
    ``stop(i)`` true means node i is needed but its operands are not.
    """
    if not roots:
        return []
    top = max(roots)
    needed = bytearray(top + 1)
    for r in roots:
        needed[r] = 1
    nodes = tape.nodes
    out = []
    for i in range(top, -1, -1):
        if needed[i]:
            out.append(i)
            if stop is None or not stop(i):
                for a in nodes[i].args:
                    needed[a] = 1
    out.reverse()
    return out
