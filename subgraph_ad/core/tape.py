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

Interrupts. A scope that fails — a user rule raises, the node budget is met, a
KeyboardInterrupt lands on any line — leaves every table as it was: nodes, orders, the intern
table, vars and values, the memo, the listener and the order tag. So does one builder call
(``var``, ``append``: a fold may append two nodes). Each append enters its node in the tables as
one step, a memo entry is journaled before it exists, and undoing is idempotent, so an undo that
is itself interrupted is finished by a second handler, and a second Ctrl-C waits until the
tape is whole. Python cannot block an interrupt, so a third one landing on the first line of
that second handler is the limit. Only a public call is all or nothing: ``x * 2 + 1`` is two.

Copies. ``copy.copy(tape)``, ``copy.deepcopy(tape)`` and pickling give an independent tape with
the same nodes, vars, values and memo, and no scope open. The function objects in the nodes are
immutable and shared by copies; a pickle carries them by value, so a user function that should
still meet its old nodes in the intern table after unpickling must compare equal to its copy
(a frozen dataclass, as the built-ins are). A Term is ``(tape, index)``: ``copy.copy(term)`` is
a second handle on the same tape; ``copy.deepcopy(term)`` and pickling a term copy its tape, and
terms copied together share one copy.

>>> tape = Tape()
>>> x = tape.var("x", 2.0)
>>> (x * 3).index == (3 * x).index
True
>>> tape
Tape(3 nodes; vars x=2.0; by order 0: 3)
"""

from __future__ import annotations

import copy
from fractions import Fraction
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Callable, Iterator, Union

import numpy as np

from .fold import fold, fold_fn
from .graph import live_since
from .ops import Node, const_node, exact_key, intern_key
from .term import Term

if TYPE_CHECKING:  # pragma: no cover - typing only
    from ..functions.base import Function

Number = Union[int, float]
Callback = Callable[[Term], None]

#: The node budget of ``Tape()``: generous (at roughly 400 bytes a node with its tables, some
#: 4 GB), so that only a runaway build meets it and then fails cleanly instead of taking all
#: memory. ``Tape(max_nodes=None)`` lifts it.
MAX_NODES = 10_000_000

#: What a copy or a pickle leaves out: the state of scopes open on the original.
_SCOPE_STATE = ("_journal", "_listener", "_order")
#: Tables whose items are immutable (nodes, indices, keys): a copy needs new containers only.
_IMMUTABLE_ITEMS = ("nodes", "orders", "_intern", "_vars", "deriv_cache")


class LimitError(RuntimeError):
    """A tape grew past its ``max_nodes``; the operation that did it was rolled back. Raise the
    budget with ``Tape(max_nodes=...)``, or lift it with ``Tape(max_nodes=None)``."""


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

    def __reduce__(self) -> str:
        return "UNFED"  # a pickled placeholder is still unfed: the one instance, found by name


#: The current value of a placeholder that has not been fed.
UNFED = _Placeholder()


class Trial:
    """What a ``Tape.trial`` block appended before it was rolled back."""

    appended: int = 0


def _shown(value: Any) -> str:
    """A var's value in a summary: short, and the same text for the same value."""
    if value is UNFED:
        return "<unfed>"
    array = np.asarray(value, dtype=float)
    if array.ndim:
        return f"<array {array.shape}>"
    text = repr(float(array))
    return text if len(text) <= 10 else format(float(array), ".6g")


def _counted(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def _listed(items: list[str], limit: int) -> str:
    """At most ``limit`` items, then how many more."""
    more = len(items) - limit
    return ", ".join(items[:limit] + ([f"… {more} more"] if more > 0 else []))


class Tape:
    """The node list (arena) every Term lives on.

    ``max_nodes`` is the node budget (default ``MAX_NODES``, ten million; None: no budget): an
    operation that would pass it raises LimitError naming the budget and the count, and leaves
    the tape as it was. ``repr(tape)`` is a one-line summary, ``str(tape)`` a longer one.
    """

    def __init__(self, max_nodes: int | None = MAX_NODES) -> None:
        if max_nodes is not None and (isinstance(max_nodes, bool) or not isinstance(max_nodes, (int, np.integer))):
            raise TypeError(f"max_nodes must be an int or None (no budget), got {type(max_nodes).__name__} {max_nodes!r}")
        if max_nodes is not None and max_nodes < 0:
            raise ValueError(f"max_nodes must be >= 0 or None (no budget), got {max_nodes}")
        self.nodes: list[Node] = []
        self.max_nodes = None if max_nodes is None else int(max_nodes)
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
        self._check_new_var(name)
        check_value(value, f"the value of var {name!r}")
        return Term(self, self._push(Node("var", (), name), None, value))

    def placeholder(self, name: str) -> Term:
        """A var with no value, as in a static graph: evaluating anything that needs it raises
        ``UnfedPlaceholder`` naming it until it is fed (``eval({p: 3.0})``, ``p.set(3.0)``, or
        an argument of a compiled function)."""
        self._check_new_var(name)
        return Term(self, self._push(Node("var", (), name), None, UNFED))

    def _check_new_var(self, name: Any) -> None:
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"var name must be an identifier string, got {name!r}")
        if name in self._vars:
            raise ValueError(
                f"var {name!r} already exists on this tape (node {self._vars[name]}); "
                f"use tape.vars[{name!r}] to get it"
            )

    def const(self, value: Number | Fraction) -> Term:
        """A constant node; equal constants are one node. Integers and Fractions are exact
        (``const(Fraction(1, 3))`` is 1/3 to SymPy, not 0.333…)."""

        if isinstance(value, bool) or not isinstance(value, (int, float, Fraction, np.floating, np.integer)):
            raise TypeError(f"a constant must be a real number, got {type(value).__name__} {value!r}")
        exact = Fraction(int(value)) if isinstance(value, (int, np.integer)) else value if isinstance(value, Fraction) else None
        return Term(self, self.constant(float(value), exact))

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

    # -- summaries --------------------------------------------------------------------------
    def _var_texts(self) -> list[str]:
        return [f"{name}={_shown(self._values[i])}" for name, i in self._vars.items()]

    def _order_texts(self) -> list[str]:
        counts: dict[int, int] = {}
        for order in self.orders:
            counts[order] = counts.get(order, 0) + 1
        return [f"{order}: {counts[order]}" for order in sorted(counts)]

    def __repr__(self) -> str:
        """One line: how many nodes, the vars with their values (``<unfed>`` for a placeholder
        nobody fed), and how many nodes each derivative order made.

        >>> tape = Tape(); x = tape.var("x", 0.5); p = tape.placeholder("p")
        >>> _ = (x * p).gen_graph(x)
        >>> tape
        Tape(4 nodes; vars x=0.5, p=<unfed>; by order 0: 3, 1: 1)
        """
        parts = [_counted(len(self), "node")]
        if self._vars:
            parts.append(f"vars {_listed(self._var_texts(), 6)}")
        if self.nodes:
            parts.append(f"by order {_listed(self._order_texts(), 6)}")
        return f"Tape({'; '.join(parts)})"

    def __str__(self) -> str:
        """A few lines: size and budget, every var, nodes by derivative order and by operation
        (functions by name, in the order they first appear).

        >>> import subgraph_ad as sad
        >>> tape = Tape(); x = tape.var("x", 0.5)
        >>> _ = sad.sin(x).gen_graph(x)
        >>> print(tape)
        Tape of 4 nodes (budget 10,000,000)
        vars: x=0.5
        by derivative order: 0: 2, 1: 2
        by op: var 1, sin 1, const 1, cos 1
        """
        budget = "no budget" if self.max_nodes is None else f"budget {self.max_nodes:,}"
        ops: dict[str, int] = {}
        for node in self.nodes:
            what = node.payload.name if node.op == "fn" else node.op
            ops[what] = ops.get(what, 0) + 1
        lines = [f"Tape of {_counted(len(self), 'node')} ({budget})"]
        if self._vars:
            lines.append(f"vars: {_listed(self._var_texts(), 20)}")
        if self.nodes:
            lines.append(f"by derivative order: {_listed(self._order_texts(), 20)}")
            lines.append(f"by op: {_listed([f'{op} {n}' for op, n in ops.items()], 20)}")
        return "\n".join(lines)

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

    # -- copies -------------------------------------------------------------------------------
    def __getstate__(self) -> dict[str, Any]:
        """What a pickle or a copy carries: every table but the state of open scopes."""
        return {name: value for name, value in self.__dict__.items() if name not in _SCOPE_STATE}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._journal, self._listener, self._order = [], None, 0

    def __copy__(self) -> Tape:
        """An independent tape with the same content: new tables, the same (immutable) nodes
        and values."""
        new = type(self).__new__(type(self))
        new.__setstate__({name: copy.copy(value) for name, value in self.__getstate__().items()})
        return new

    def __deepcopy__(self, memo: dict[int, Any]) -> Tape:
        """Like ``copy.copy``, with the values copied too (an array value is not shared); the
        nodes, and the functions in them, are immutable and shared."""
        new = type(self).__new__(type(self))
        memo[id(self)] = new
        new.__setstate__({name: copy.copy(value) if name in _IMMUTABLE_ITEMS else copy.deepcopy(value, memo)
                          for name, value in self.__getstate__().items()})
        return new

    # -- the builder ------------------------------------------------------------------------
    def apply(self, fn: Function, *args: Term) -> Term:
        """Append ``fn(*args)``; constant arguments fold to a constant."""
        return Term(self, self.append("fn", tuple([a.index for a in args]), fn))

    def op(self, op: str, *args: Term) -> Term:
        """Append an arithmetic node, folding trivial algebra first."""
        return Term(self, self.append(op, tuple([a.index for a in args])))

    def append(self, op: str, args: tuple[int, ...], payload: Any = None) -> int:
        """The index-level builder: fold, then intern; returns the node's index. ``fn`` nodes
        (payload: the function) of constant operands fold to the constant value. Folding may
        append a node or two on the way (a constant factor): if the call fails, none stays."""
        mark = len(self.nodes)
        try:
            return fold(self, op, args) if op != "fn" else fold_fn(self, payload, args)
        except BaseException:
            self._rollback(mark, len(self._journal))
            raise

    def intern(self, node: Node) -> int:
        """The index of ``node``, appended unless an equal node exists. No folding: for a node
        its builder knows to be canonical already (a hot path of Taylor mode)."""
        found = self._intern.get(intern_key(node))
        return found if found is not None else self._push(node, intern_key(node))

    def constant(self, value: float, exact: Any = ...) -> int:
        """The index of the constant ``value``; ``exact`` is its exact form (``ops.Exact``), or
        None for a float known only as a float. Omitted, for a float an engine recomputed from
        the tape's constants (a Taylor coefficient): the exact constant of the same bits, if the
        tape has one, so that 1/3 recomputed is the exact 1/3, not a second node."""

        if exact is ...:
            found = self._intern.get(exact_key(value))
            if found is not None:
                return found
            exact = None
        return self.intern(const_node(value, exact))

    def _push(self, node: Node, key: tuple | None, value: Any = None) -> int:
        """Append one node and enter it in the tables — the intern table under ``key``, or for
        a var the var table with its ``value`` — as one step: if that is interrupted, the node
        is removed again. Then the listener hears of it."""
        index = len(self.nodes)
        if self.max_nodes is not None and index >= self.max_nodes:
            raise LimitError(
                f"tape limit reached: appending node {index + 1} ({node.op}, to a tape of {index} nodes) "
                f"would exceed max_nodes={self.max_nodes}"
            )
        try:
            self.nodes.append(node)
            self.orders.append(self._order)
            if key is not None:
                self._intern[key] = index
            elif node.op == "var":
                self._vars[node.payload], self._values[index] = index, value
        except BaseException:
            self._rollback(index, len(self._journal))
            raise
        if self._listener is not None:
            self._listener(Term(self, index))
        return index

    # -- scopes -----------------------------------------------------------------------------
    def remember(self, node: int, wrt: int, result: int | None) -> None:
        """Memoise d(node)/d(wrt); undone with the transaction that made it."""
        key = (node, wrt)
        if key not in self.deriv_cache:
            self._journal.append(key)  # journaled first: no entry ever exists that a rollback misses
            self.deriv_cache[key] = result

    # Each scope below guards its work with two handlers: an interrupt that lands on the first
    # handler's own lines, before its undo has begun, is caught by the second, which undoes
    # again (undoing twice is harmless). ``transaction`` and ``trial`` are generators, so their
    # handlers are already active when the block ends and the generator resumes.
    @contextmanager
    def transaction(self, callback: Callback | None = None, order: int | None = None) -> Iterator[Tape]:
        """Undo every append made inside the block if it raises anything (KeyboardInterrupt too).

        ``callback`` is called with each appended Term; ``order`` tags the appended nodes.
        """
        mark, journal, saved = len(self.nodes), len(self._journal), (self._listener, self._order)
        try:
            try:
                self._listener, self._order = (saved[0] if callback is None else callback,
                                               saved[1] if order is None else order)
                yield self
                self._listener, self._order = saved
            except BaseException:
                self._restore(mark, journal, saved)
                raise
        except BaseException:
            self._restore(mark, journal, saved)
            raise

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
        mark, journal, saved = len(self.nodes), len(self._journal), (self._listener, self._order)
        try:
            try:
                self._listener = None
                yield trial
            finally:
                trial.appended = len(self.nodes) - mark
                self._restore(mark, journal, saved)
        except BaseException:
            self._restore(mark, journal, saved)
            raise

    def pruned(self, build: Callable[[], list[int]], needed: Callable[[], bool] | None = None) -> list[int]:
        """Run ``build``, which appends nodes and returns root indices, and keep only the nodes
        it appended that the roots need (and any new var), renumbered in order; returns the
        roots' new indices. The listener hears only the kept nodes; memo entries follow them.
        Taylor mode reads a function's f′ and uses only part of what that built; the chain rule
        through a reciprocal f′ = 1/v leaves the reciprocal unused. ``needed()``, asked after
        the build, may say that nothing can be unused (then the check is skipped). All or
        nothing: if anything raises, the tape is left as it was."""
        mark, journal, saved = len(self.nodes), len(self._journal), (self._listener, self._order)
        try:
            try:
                self._listener = None
                roots = build()
                if needed is None or needed():
                    live = live_since(self, mark, roots)
                    if not all(live):
                        roots = self._keep(mark, journal, live, roots)
                self._listener = saved[0]
                if saved[0] is not None:
                    for index in range(mark, len(self.nodes)):
                        saved[0](Term(self, index))
                return roots
            except BaseException:
                self._restore(mark, journal, saved)
                raise
        except BaseException:
            self._restore(mark, journal, saved)
            raise

    def _keep(self, mark: int, journal_mark: int, live: bytearray, roots: list[int]) -> list[int]:
        """Compact the nodes since ``mark`` in place, dropping those not ``live``: nodes before
        the first dropped one stay where they are (and so do their memo entries), later ones
        move down and are re-interned. All of it is worked out first and then written in steps
        that ``_rollback`` can undo from any point, should one be interrupted."""
        nodes, intern, cache, journal = self.nodes, self._intern, self.deriv_cache, self._journal
        first = mark + live.index(0)
        moved: dict[int, int] = {}
        tail: list[Node] = []
        tail_orders: list[int] = []
        stale: list[tuple] = []  # intern keys of the nodes from ``first`` on
        fresh: list[tuple[tuple, int]] = []  # the keys of the moved nodes at their new places
        var_moves: list[tuple[str, int, int]] = []
        for index in range(first, len(nodes)):
            node = nodes[index]
            if node.op != "var" and intern.get(intern_key(node)) == index:
                stale.append(intern_key(node))
            if not live[index - mark]:
                continue
            write = first + len(tail)
            if node.op == "var":
                var_moves.append((node.payload, index, write))
            else:
                node = node._replace(args=tuple([moved.get(a, a) for a in node.args]))
                fresh.append((intern_key(node), write))
            moved[index] = write
            tail.append(node)
            tail_orders.append(self.orders[index])
        stay: list[tuple[int, int]] = []
        dropped: list[tuple[int, int]] = []
        renamed: dict[tuple[int, int], int | None] = {}
        for key in journal[journal_mark:]:
            (node_index, wrt), result = key, cache[key]
            if node_index < first and wrt < first and (result is None or result < first):
                stay.append(key)
                continue
            dropped.append(key)
            if (node_index < mark or live[node_index - mark]) and (result is None or result < mark or live[result - mark]):
                renamed[(moved.get(node_index, node_index), moved.get(wrt, wrt))] = None if result is None else moved.get(result, result)
        for key in dropped:
            del cache[key]
        for key in stale:
            del intern[key]
        nodes[first:] = tail
        self.orders[first:] = tail_orders
        for key, write in fresh:
            intern[key] = write
        for name, index, write in var_moves:  # ascending, and write < index: no value is overwritten
            self._values[write] = self._values[index]
            self._vars[name] = write
            del self._values[index]
        journal[journal_mark:] = stay + list(renamed)
        cache.update(renamed)
        return [moved.get(r, r) for r in roots]

    def _restore(self, mark: int, journal: int, saved: tuple[Callback | None, int]) -> None:
        """Roll back to ``mark`` nodes and ``journal`` memo entries and restore the listener and
        tag. A KeyboardInterrupt landing in here (a second Ctrl-C) waits until the tape is whole
        again, then is raised."""
        interrupted: KeyboardInterrupt | None = None
        while True:
            try:
                self._rollback(mark, journal)
                self._listener, self._order = saved
                break
            except KeyboardInterrupt as exc:
                interrupted = exc
        if interrupted is not None:
            raise interrupted

    def _rollback(self, mark: int, journal: int) -> None:
        """Remove every node from ``mark`` on, with its intern entry, var and value, and every
        memo entry journaled from ``journal`` on. Idempotent, and each step leaves the tables
        consistent, so running it again after an interrupt finishes the job."""
        entries, cache = self._journal, self.deriv_cache
        while len(entries) > journal:
            cache.pop(entries[-1], None)
            entries.pop()
        nodes, intern = self.nodes, self._intern
        while len(nodes) > mark:
            node = nodes[-1]
            if node.op != "var" and intern.get(intern_key(node)) == len(nodes) - 1:
                del intern[intern_key(node)]
            nodes.pop()
        del self.orders[mark:]
        names, values = self._vars, self._values
        while names and next(reversed(names.values())) >= mark:  # vars are in tape order
            values.pop(names.popitem()[1], None)
        if len(values) != len(names):  # a var's value caught half-way through a move
            for index in [i for i in values if i >= mark]:
                del values[index]
