"""The tape's scopes: ``transaction`` (all or nothing), ``tag``, ``trial`` (always rolled back)
and ``pruned`` (keeps only what a build's roots need), with the memo journal and the rollback
they share. A mixin of ``Tape``, which owns the tables these work on.

Interrupts. A scope that fails — a user rule raises, the node budget is met, a
KeyboardInterrupt lands on any line — leaves every table as it was: nodes, orders, the intern
table, vars and values, the memo, the listener and the order tag. So does one builder call
(``var``, ``append``: a fold may append two nodes). Each append enters its node in the tables as
one step, a memo entry is journaled before it exists, and undoing is idempotent, so an undo that
is itself interrupted is finished by a second handler, and a second Ctrl-C waits until the
tape is whole. Python cannot block an interrupt, so a third one landing on the first line of
that second handler is the limit. Only a public call is all or nothing: ``x * 2 + 1`` is two.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Callable, Iterator, NoReturn, cast

from .graph import live_since
from .ops import Node, intern_key
from .term import Term

if TYPE_CHECKING:  # pragma: no cover - typing only
    from .tape import Tape

Callback = Callable[[Term], None]


class Trial:
    """What a ``Tape.trial`` block appended before it was rolled back."""

    appended: int = 0


class Scopes:
    """The scopes of ``Tape`` over its tables (declared here for the type checker)."""

    nodes: list[Node]
    orders: list[int]
    deriv_cache: dict[tuple[int, int], int | None]
    _intern: dict[tuple, int]
    _values: dict[int, Any]
    _vars: dict[str, int]
    var_shapes: dict[str, tuple[int, ...]]
    elements: dict[str, list[str]]
    _journal: list[tuple[int, int]]
    _listener: Callback | None
    _order: int
    _held: int
    _over: float
    max_nodes: int | None
    _own: Callable[[], None]  # TapeThreadError unless this thread owns the tape
    _memo_full: Callable[[], NoReturn]  # LimitError: one memo entry too many

    def remember(self, node: int, wrt: int, result: int | None) -> None:
        """Memoise d(node)/d(wrt); undone with the transaction that made it. Entries beyond one
        per node count against the budget as nodes (a memo can outgrow the tape: gen_graph by
        many vars records every node it visits, also where nothing is appended)."""
        key = (node, wrt)
        cache = self.deriv_cache
        if key not in cache:
            if self.max_nodes is not None and len(cache) >= len(self.nodes) and len(cache) + self._over >= self.max_nodes:
                self._memo_full()
            self._journal.append(key)  # journaled first: no entry ever exists that a rollback misses
            cache[key] = result

    # Each scope below guards its work with two handlers: an interrupt that lands on the first
    # handler's own lines, before its undo has begun, is caught by the second, which undoes
    # again (undoing twice is harmless). ``transaction`` and ``trial`` are generators, so their
    # handlers are already active when the block ends and the generator resumes.
    @contextmanager
    def transaction(self, callback: Callback | None = None, order: int | None = None) -> Iterator[Tape]:
        """Undo every append made inside the block if it raises anything (KeyboardInterrupt too).

        ``callback`` is called with each appended Term; ``order`` tags the appended nodes.
        """
        self._own()
        mark, journal, saved = len(self.nodes), len(self._journal), (self._listener, self._order, self._held, self._over)
        try:
            try:
                self._listener, self._order = (saved[0] if callback is None else callback,
                                               saved[1] if order is None else order)
                yield cast("Tape", self)  # Scopes is a mixin of Tape only
                self._listener, self._order, self._held, self._over = saved
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

        >>> from subgraph_ad import Tape
        >>> tape = Tape(); x = tape.var("x")
        >>> with tape.trial() as t:
        ...     _ = x * x + 1
        >>> t.appended, len(tape)
        (3, 1)
        """
        self._own()
        trial = Trial()
        mark, journal, saved = len(self.nodes), len(self._journal), (self._listener, self._order, self._held, self._over)
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
        self._own()
        tape = cast("Tape", self)  # Scopes is a mixin of Tape only
        mark, journal, saved = len(self.nodes), len(self._journal), (self._listener, self._order, self._held, self._over)
        try:
            try:
                self._listener = None
                roots = build()
                if needed is None or needed():
                    live = live_since(tape, mark, roots)
                    if not all(live):
                        roots = self._keep(mark, journal, live, roots)
                self._listener, self._held, self._over = saved[0], saved[2], saved[3]
                if saved[0] is not None:
                    for index in range(mark, len(self.nodes)):
                        saved[0](Term(tape, index))
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

    def _restore(self, mark: int, journal: int, saved: tuple[Callback | None, int, int, float]) -> None:
        """Roll back to ``mark`` nodes and ``journal`` memo entries and restore the listener, the
        tag and the working memory held. A KeyboardInterrupt landing in here (a second Ctrl-C)
        waits until the tape is whole again, then is raised."""
        interrupted: KeyboardInterrupt | None = None
        while True:
            try:
                self._rollback(mark, journal)
                self._listener, self._order, self._held, self._over = saved
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
            name, index = names.popitem()
            values.pop(index, None)
            self.var_shapes.pop(name, None)
            self.elements.pop(name, None)
        if len(values) != len(names):  # a var's value caught half-way through a move
            for index in [i for i in values if i >= mark]:
                del values[index]
