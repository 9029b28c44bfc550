"""Which thread may build on a tape: the one that made it (or copied or unpickled it), until it
hands the tape over (``hand_over``) or ends. A mixin of ``Tape``; every builder call asks
``_own`` first, one comparison of thread ids."""

from __future__ import annotations

import threading

from .ops import Node
from .summaries import counted


#: The id of the running thread: the owner check on every builder call compares it.
thread_id = threading.get_ident
#: Taken while a thread claims a tape that nobody owns, so that two cannot both win it.
_CLAIM = threading.Lock()


def this_thread() -> int:
    """The id of the running thread, for a tape it makes; a thread that Python did not start is
    registered on the way (``current_thread``), so that ``_claim`` sees it running."""
    return threading.current_thread().ident or thread_id()


class TapeThreadError(RuntimeError):
    """A thread built on a tape that another, running thread owns; nothing was changed. Use one
    tape per thread, or hand the tape over explicitly with ``Tape.hand_over``."""


class Ownership:
    """The owner check of ``Tape`` (what it reads declared here for the type checker)."""

    nodes: list[Node]
    _owner: int | None

    def hand_over(self, thread: threading.Thread | None = None) -> None:
        """Give this tape to ``thread`` (a started ``threading.Thread``), or with None to
        whichever thread builds on it next; from then on this thread may only read it. Only
        the owner may hand it over, between builds. A tape whose owner has ended is free
        without it.

        >>> import threading
        >>> from subgraph_ad import Tape
        >>> tape = Tape(); x = tape.var("x", 2.0)
        >>> tape.hand_over()
        >>> built = []
        >>> worker = threading.Thread(target=lambda: built.append((x * x).gen_graph(x)))
        >>> worker.start(); worker.join()
        >>> built[0].eval()  # built by the worker, read here
        4.0
        >>> (x * 3).eval()  # the worker has ended: its tape is free, and this thread takes it back
        6.0
        """
        if thread is not None and not isinstance(thread, threading.Thread):
            raise TypeError(f"hand_over takes a threading.Thread or None (the next thread to build), "
                            f"got {type(thread).__name__} {thread!r}")
        if thread is not None and thread.ident is None:
            raise ValueError(f"hand_over: thread {thread.name!r} is not started; start it first, or pass None")
        self._own()
        self._owner = None if thread is None else thread.ident

    def _own(self) -> None:
        """Refuse a thread that does not own this tape (``TapeThreadError``), taking the tape
        for it when nobody owns it."""
        if thread_id() != self._owner:
            self._claim()

    def _claim(self) -> None:
        """The owner check's slow path: a tape handed over to nobody in particular, or whose
        owner has ended, becomes this thread's; else TapeThreadError."""
        with _CLAIM:
            me = thread_id()
            owner = None if self._owner in (None, me) else next((t for t in threading.enumerate() if t.ident == self._owner), None)
            if owner is None:  # handed over to nobody in particular (or to this thread), or its owner has ended
                self._owner = me
                return
        try:
            name = repr(self)
        except (RuntimeError, KeyError):  # the owner changed the vars while they were listed
            name = f"Tape({counted(len(self.nodes), 'node')})"
        raise TapeThreadError(
            f"{name} is owned by thread {owner.name!r}, so thread {threading.current_thread().name!r} may not "
            "build on it: two threads building on one tape interleave their nodes and rollbacks. Use one tape "
            "per thread (copy.copy(tape) makes an independent one), or hand the tape over explicitly: "
            f"tape.hand_over() in {owner.name!r}, then build here. Reading finished terms (eval, grad, "
            "lambdify) is allowed from any thread."
        )
