"""The tape: an append-only list of immutable nodes, with interning, folding and transactions.

Everything else in the package is a function over this list. Appending a node that already
exists returns the existing index (a dict lookup), and trivial algebra folds at append time
(``fold.py``); this sharing is what keeps repeated differentiation polynomial instead of
exponential.

Builders above the core (gen_graph, Taylor mode, closed forms) touch the tape only through its
public index-level builder — ``append`` (fold, then intern), ``intern`` (a node already in
canonical form), ``constant`` — and three scopes: ``transaction`` (all or nothing, and the
derivative order the new nodes are tagged with, changed inside by ``tag``), ``trial`` (always
rolled back; says how many nodes it appended) and ``pruned`` (keeps only what a build's roots
need).

>>> tape = Tape()
>>> x = tape.var("x", 2.0)
>>> (x * 3).index == (3 * x).index
True
>>> len(tape)
3
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Callable, Iterator, Union

import numpy as np

from .fold import fold
from .graph import live_since
from .ops import Node, intern_key
from .term import Term

if TYPE_CHECKING:  # pragma: no cover - typing only
    from ..functions.base import Function

Number = Union[int, float]
Callback = Callable[[Term], None]


class LimitError(RuntimeError):
    """A tape grew past its ``max_nodes``; the operation that did it was rolled back."""


def check_value(value: Any, what: str) -> Any:
    """A var value must be a real number or an array of them; anything else is refused early."""
    if not isinstance(value, (bool, str, bytes)) and value is not None:
        try:
            np.asarray(value, dtype=float)
            return value
        except (TypeError, ValueError):
            pass
    raise TypeError(f"{what} must be a number or an array of numbers, got {type(value).__name__} {value!r}")


class UnfedPlaceholder(ValueError):
    """A value was asked of a graph that needs a placeholder nobody fed."""


class _Placeholder:
    """The value of a placeholder: none yet."""

    def __repr__(self) -> str:
        return "<unfed>"


#: The current value of a placeholder that has not been fed.
UNFED = _Placeholder()


class Trial:
    """What a ``Tape.trial`` block appended before it was rolled back."""

    appended: int = 0


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

    # -- vars and constants ---------------------------------------------------------------
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

    def placeholder(self, name: str) -> Term:
        """A var with no value, as in a static graph: evaluating anything that needs it raises
        ``UnfedPlaceholder`` naming it until it is fed (``eval({p: 3.0})``, ``p.set(3.0)``, or
        an argument of a compiled function)."""
        term = self.var(name)
        self._values[term.index] = UNFED
        return term

    def const(self, value: Number) -> Term:
        """A constant node; equal constants are one node."""
        if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
            raise TypeError(f"a constant must be a real number, got {type(value).__name__} {value!r}")
        return Term(self, self.constant(float(value)))

    @property
    def zero(self) -> Term:
        """The tape's constant 0: what a structurally zero derivative returns."""
        return Term(self, self.constant(0.0))

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
        value = self._values[self.check_var(var).index]
        if value is UNFED:
            raise UnfedPlaceholder(f"placeholder {var.name!r} has no value yet; feed it, e.g. eval({{{var.name}: 1.0}})")
        return value

    def set_value(self, var: Term, value: Any) -> None:
        """Change a var's current value; later evaluations use it."""
        self.check_var(var, "set() target")
        self._values[var.index] = check_value(value, f"the value of var {var.name!r}")

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

    # -- the builder ------------------------------------------------------------------------
    def apply(self, fn: Function, *args: Term) -> Term:
        """Append ``fn(*args)``; constant arguments fold to a constant."""
        return Term(self, self.append("fn", tuple([a.index for a in args]), fn))

    def op(self, op: str, *args: Term) -> Term:
        """Append an arithmetic node, folding trivial algebra first."""
        return Term(self, fold(self, op, tuple([a.index for a in args])))

    def append(self, op: str, args: tuple[int, ...], payload: Any = None) -> int:
        """The index-level builder: fold, then intern; returns the node's index. ``fn`` nodes
        (payload: the function) of constant operands fold to the constant value."""
        if op == "fn":
            operands = [self.nodes[a] for a in args]
            if all(node.op == "const" for node in operands):
                with np.errstate(all="ignore"):
                    return self.constant(float(payload.f(*(np.float64(node.payload) for node in operands))))
            return self.intern(Node("fn", args, payload))
        return fold(self, op, args)

    def intern(self, node: Node) -> int:
        """The index of ``node``, appended unless an equal node exists. No folding: for a node
        its builder knows to be canonical already (a hot path of Taylor mode)."""
        found = self._intern.get(intern_key(node))
        return found if found is not None else self._push(node, intern_key(node))

    def constant(self, value: float) -> int:
        """The index of the constant ``value``."""
        return self.intern(Node("const", (), float(value)))

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

    # -- scopes -----------------------------------------------------------------------------
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

    def tag(self, order: int) -> None:
        """Tag the nodes appended from now on with this derivative order; the enclosing
        ``transaction`` restores the previous tag when it ends."""
        self._order = order

    @contextmanager
    def trial(self) -> Iterator[Trial]:
        """Build something only to measure it: on leaving the block (however it is left) every
        node it appended is removed again and ``trial.appended`` says how many there were.
        Nobody listening hears of them.

        >>> tape = Tape(); x = tape.var("x")
        >>> with tape.trial() as t:
        ...     _ = x * x + 1
        >>> t.appended, len(tape)
        (3, 1)
        """
        trial = Trial()
        mark, journal_mark = len(self.nodes), len(self._journal)
        saved = self._listener, self._order
        self._listener = None
        try:
            yield trial
        finally:
            trial.appended = len(self.nodes) - mark
            self._rollback(mark, journal_mark)
            self._listener, self._order = saved

    def pruned(self, build: Callable[[], list[int]], needed: Callable[[], bool] | None = None) -> list[int]:
        """Run ``build``, which appends nodes and returns root indices, and keep only the nodes
        it appended that the roots need (and any new var), renumbered in order; returns the
        roots' new indices. The listener hears only the kept nodes; memo entries follow them.
        Taylor mode reads a function's f′ and uses only part of what that built; the chain rule
        through a reciprocal f′ = 1/v leaves the reciprocal unused. ``needed()``, asked after
        the build, may say that nothing can be unused (then the check is skipped)."""
        mark, journal_mark = len(self.nodes), len(self._journal)
        listener, self._listener = self._listener, None
        try:
            roots = build()
            if needed is None or needed():
                live = live_since(self, mark, roots)
                if not all(live):
                    roots = self._keep(mark, journal_mark, live, roots)
        finally:
            self._listener = listener
        if listener is not None:
            for index in range(mark, len(self.nodes)):
                listener(Term(self, index))
        return roots

    def _keep(self, mark: int, journal_mark: int, live: bytearray, roots: list[int]) -> list[int]:
        """Compact the nodes since ``mark`` in place, dropping those not ``live``: nodes before
        the first dropped one stay where they are (and so do their memo entries), later ones
        move down and are re-interned."""
        nodes, orders, intern, cache = self.nodes, self.orders, self._intern, self.deriv_cache
        first = mark + live.index(0)
        journal = self._journal
        stay = [key for key in journal[journal_mark:] if key[0] < first and (cache[key] is None or cache[key] < first)]
        memo = [(key, cache.pop(key)) for key in journal[journal_mark:] if not (key[0] < first and (cache[key] is None or cache[key] < first))]
        del journal[journal_mark:]
        journal += stay
        moved: dict[int, int] = {}
        write = first
        for index in range(first, len(nodes)):
            node = nodes[index]
            # an old key may already name a moved node (its new key): drop it only if it is ours
            if not live[index - mark]:
                if intern.get(intern_key(node)) == index:  # never a var: vars are always live
                    del intern[intern_key(node)]
                continue
            if node.op == "var":
                self._vars[node.payload] = write
                self._values[write] = self._values.pop(index)
            else:
                if intern.get(intern_key(node)) == index:
                    del intern[intern_key(node)]
                node = node._replace(args=tuple([moved.get(a, a) for a in node.args]))
                intern[intern_key(node)] = write
            nodes[write], orders[write] = node, orders[index]
            moved[index] = write
            write += 1
        del nodes[write:], orders[write:]
        for (node_index, wrt), result in memo:
            kept = live[node_index - mark] if node_index >= mark else True
            if result is not None and result >= mark:
                kept = kept and live[result - mark]
            if kept:
                self.remember(moved.get(node_index, node_index), moved.get(wrt, wrt),
                              None if result is None else moved.get(result, result))
        return [moved.get(r, r) for r in roots]

    def _rollback(self, mark: int, journal_mark: int) -> None:
        for index in range(len(self.nodes) - 1, mark - 1, -1):
            node = self.nodes[index]
            if node.op == "var":
                del self._vars[node.payload], self._values[index]
            else:
                self._intern.pop(intern_key(node), None)
        del self.nodes[mark:], self.orders[mark:]
        for key in self._journal[journal_mark:]:
            del self.deriv_cache[key]
        del self._journal[journal_mark:]
