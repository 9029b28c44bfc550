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
need), defined with their rollback in ``scopes.py``; a build that keeps large structures of its
own besides nodes (Taylor mode's plan) counts them against the node budget with ``hold``.

Copies. ``copy.copy(tape)``, ``copy.deepcopy(tape)`` and pickling give an independent tape with
the same nodes, vars, values and memo, and no scope open. The function objects in the nodes are
immutable and shared by copies; a pickle carries them by value, so a user function that should
still meet its old nodes in the intern table after unpickling must compare equal to its copy
(a frozen dataclass, as the built-ins are). A Term is ``(tape, index)``: ``copy.copy(term)`` is
a second handle on the same tape; ``copy.deepcopy(term)`` and pickling a term copy its tape, and
terms copied together share one copy.

Threads. A tape is built by one thread at a time: the thread that made it (or copied or
unpickled it), until that thread hands it over (``hand_over``) or ends. Two threads appending to
one tape would interleave their nodes and their rollbacks (one build undoing the other's nodes),
so a builder call from any other thread raises ``TapeThreadError`` and changes nothing; the
check is one comparison of thread ids per call. Reading finished terms — ``eval``, ``derive``,
``grad``, ``lambdify``, ``to_sympy``, ``to_dot`` — is allowed from any thread, also while the
owner builds: no build moves or removes a node that existed before it began (``ownership.py``).

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
from typing import TYPE_CHECKING, Any, NoReturn, Union

import numpy as np

from .array_build import elementwise
from .arrays import shape_of
from .fold import fold, fold_fn
from .ops import Node, const_node, exact_key, intern_key
from .ownership import Ownership, thread_id, this_thread
from .scopes import Callback, Scopes
from .summaries import Summaries, counted
from .term import Term
from .values import UNFED, UnfedPlaceholder, check_value

if TYPE_CHECKING:  # pragma: no cover - typing only
    from ..functions.base import Function

Number = Union[int, float]

#: The node budget of ``Tape()``: generous (at ``NODE_BYTES`` a node, some 4 GB), so that only a
#: runaway build meets it and then fails cleanly instead of taking all memory.
#: ``Tape(max_nodes=None)`` lifts it.
MAX_NODES = 10_000_000
#: The memory one node of the budget stands for. A node with its table entries takes about 240
#: bytes; what a tape holds besides its nodes counts in the same units: derivative memo entries
#: beyond one per node, and a running build's working memory beyond ``FREE_BYTES`` (``hold``).
NODE_BYTES = 400
#: The working memory a running build may hold without counting (4 MB), so that a small build on
#: a small budget stops where its nodes do.
FREE_BYTES = 4_000_000

#: What a copy or a pickle leaves out: the state of scopes open on the original, and its owner.
_SCOPE_STATE = ("_journal", "_listener", "_order", "_held", "_over", "_owner")
#: Tables whose items are immutable (nodes, indices, keys): a copy needs new containers only.
_IMMUTABLE_ITEMS = ("nodes", "orders", "_intern", "_vars", "deriv_cache", "var_shapes", "elements")


class LimitError(RuntimeError):
    """A tape grew past its ``max_nodes`` (its nodes, with what else it holds counted as nodes:
    see ``NODE_BYTES``); the operation that did it was rolled back. Raise the budget with
    ``Tape(max_nodes=...)``, or lift it with ``Tape(max_nodes=None)``."""


class Tape(Scopes, Ownership, Summaries):
    """The node list (arena) every Term lives on.

    ``max_nodes`` is the node budget (default ``MAX_NODES``, ten million; None: no budget): an
    operation that would pass it raises LimitError naming the budget and the count, and leaves
    the tape as it was. It bounds memory, not only nodes: derivative memo entries beyond one per
    node, and the working memory of a running build (``hold``), count as nodes of ``NODE_BYTES``.
    ``repr(tape)`` is a one-line summary, ``str(tape)`` a longer one (``summaries.py``).
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
        #: a running build's working memory in bytes (``hold``), and what of it counts, in nodes
        self._held, self._over = 0, 0.0
        self._owner: int | None = this_thread()
        #: the shape of each array var, by name (``array``); its scalar element vars, once made
        #: (``expand``), by name too: names survive the compaction that moves nodes
        self.var_shapes: dict[str, tuple[int, ...]] = {}
        self.elements: dict[str, list[str]] = {}
        #: whether an array op was ever appended: scalar code never pays for the array checks
        self.array_nodes = False

    # -- vars and constants ---------------------------------------------------------------
    def var(self, name: str, value: Any = 0.0) -> Term:
        """A named input. Names are unique per tape; vars are never merged."""
        self._check_new_var(name)
        check_value(value, f"the value of var {name!r}")
        return Term(self, self._push(Node("var", (), name), None, value))

    def array(self, name: str, value: Any) -> Term:
        """A named input array: ONE node, whatever its size, differentiated as a whole
        (``grad_graph`` gives its gradient as an array node). Its value may carry batch axes in
        front of its shape, as a scalar var's value is a batch of points."""
        self._check_new_var(name)
        try:
            array = np.array(value, dtype=float)
        except (TypeError, ValueError) as error:
            raise TypeError(f"the value of array {name!r} must be a rectangular array of real numbers, got "
                            f"{type(value).__name__} {value!r:.80} ({error})") from None
        if not array.ndim:
            raise ValueError(f"array {name!r} needs at least one axis, got the number {value!r}; use tape.var for a number")
        index = self._push(Node("var", (), name), None, array)
        self.var_shapes[name] = array.shape
        return Term(self, index)

    def placeholder(self, name: str) -> Term:
        """A var with no value, as in a static graph: evaluating anything that needs it raises
        ``UnfedPlaceholder`` naming it until it is fed (``eval({p: 3.0})``, ``p.set(3.0)``, or
        an argument of a compiled function)."""
        self._check_new_var(name)
        return Term(self, self._push(Node("var", (), name), None, UNFED))

    def _check_new_var(self, name: Any) -> None:
        self._own()
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"var name must be an identifier string, got {name!r}")
        if name in self._vars:
            raise ValueError(
                f"var {name!r} already exists on this tape (node {self._vars[name]}); "
                f"use tape.vars[{name!r}] to get it"
            )

    def const(self, value: Number | Fraction | np.integer | np.floating) -> Term:
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
        self._own()
        self.check_var(var, "set() target")
        value = check_value(value, f"the value of var {var.name!r}")
        shape = self.var_shapes.get(var.name or "", ())
        if shape and np.shape(value)[np.ndim(value) - len(shape):] != shape:
            raise ValueError(f"array {var.name!r} has shape {shape}; a value must end in that shape (batch axes "
                             f"in front), got shape {np.shape(value)}")
        self._values[var.index] = value

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
        self._journal, self._listener, self._order, self._owner = [], None, 0, this_thread()
        self._held, self._over = 0, 0.0

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

    # -- memory -----------------------------------------------------------------------------
    def hold(self, nbytes: int, what: str) -> None:
        """Count ``nbytes`` of a running build's working memory (``what``: Taylor mode's plan,
        its exact scalars) against the budget until the scope that holds it — the innermost
        open transaction, trial or pruned build — ends. Beyond ``FREE_BYTES`` it counts as
        nodes of ``NODE_BYTES``: LimitError if the tape and it together pass ``max_nodes``, and
        that scope rolls back."""
        self._held += nbytes
        if self._held > FREE_BYTES:
            self._over = (self._held - FREE_BYTES) / NODE_BYTES
            if self.max_nodes is not None and len(self.nodes) + self._over > self.max_nodes:
                self._limit(f"{what} brings the running build's working memory to {self._held:,} bytes, "
                            f"worth {self._over:,.0f} nodes beyond the first {FREE_BYTES:,} bytes; "
                            f"with the tape's {counted(len(self.nodes), 'node')} that")

    def _memo_full(self) -> NoReturn:
        """LimitError for one memo entry too many: beyond one per node, each counts as a node."""
        self._limit(f"memoising derivative {len(self.deriv_cache) + 1} (memo entries beyond one per node count "
                    f"as nodes) on a tape of {counted(len(self.nodes), 'node')}{self._besides()}")

    def _besides(self) -> str:
        """What a running build holds besides the nodes, in a LimitError's message."""
        return f", with {self._over:,.0f} more held by the running build," if self._over else ""

    def _limit(self, what: str) -> NoReturn:
        raise LimitError(f"tape limit reached: {what} would exceed max_nodes={self.max_nodes}")

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
        append a node or two on the way (a constant factor): if the call fails, none stays.
        Folding reaches the tables only through ``intern`` and ``constant``, which check the
        thread; a fold to an operand (``x * 1``) reads nothing else."""
        mark = len(self.nodes)
        try:
            if (self.array_nodes or self.var_shapes) and any(shape_of(self, a) for a in args):
                return elementwise(self, payload if op == "fn" else op, args)
            return fold(self, op, args) if op != "fn" else fold_fn(self, payload, args)
        except BaseException:
            if thread_id() == self._owner:  # a refused thread appended nothing, and the owner's nodes are not its to undo
                self._rollback(mark, len(self._journal))
            raise

    def intern(self, node: Node) -> int:
        """The index of ``node``, appended unless an equal node exists. No folding: for a node
        its builder knows to be canonical already (a hot path of Taylor mode)."""
        if thread_id() != self._owner:
            self._claim()
        key = intern_key(node)
        found = self._intern.get(key)
        return found if found is not None else self._push(node, key)

    def find(self, op: str, args: tuple[int, ...], payload: Any = None) -> int | None:
        """The index of the node (op, args, payload) if the tape has it, else None; appends
        nothing (an engine that may route through a node only where it exists already)."""
        return self._intern.get(intern_key(Node(op, args, payload)))

    def constant(self, value: float, exact: Any = ...) -> int:
        """The index of the constant ``value``; ``exact`` is its exact form (``ops.Exact``), or
        None for a float known only as a float. Omitted, for a float an engine recomputed from
        the tape's constants (a Taylor coefficient): the exact constant of the same bits, if the
        tape has one, so that 1/3 recomputed is the exact 1/3, not a second node."""
        if thread_id() != self._owner:
            self._claim()
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
        if self.max_nodes is not None and index + self._over >= self.max_nodes:
            self._limit(f"appending node {index + 1} ({node.op}, to a tape of {index} nodes){self._besides()}")
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
