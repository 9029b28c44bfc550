"""The one way a traced function becomes a program: traced on fresh vars (``Traced``), built
into Terms by a transform's ``build``, compiled by ``lambdify`` with its results on the host,
cached per signature, and traced again where what the function read outside its arguments
changed (``captured``). Every traced entry point — the transforms, ``vmap``, the operators of
functions, ``checkpointed_grad`` — compiles here and runs its program through ``call``.

>>> import subgraph_ad as sad
>>> programs = Programs(lambda x: x * x, "square", lambda trace: (trace.flat, trace.out, None))
>>> program, _ = programs.get(((),)) or programs.make(((),), [()])
>>> call(program, [3.0]), len(programs)
(9.0, 1)
"""

from __future__ import annotations

import contextlib
import gc
import threading
from typing import Any, Callable, Generic, Iterable, Iterator, Sequence, TypeVar

from ..compile.devices import on_host
from ..compile.lambdify import lambdify
from ..core import Term
from .captured import Captured
from .nesting import asked_backend
from .tracer import Traced

_pauses = 0  # builds now running with the collector paused, in any thread
_collecting = False  # whether the collector was on when the first of them began
_pausing = threading.Lock()


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while a signature is traced, built and compiled:
    that makes ~10⁶ objects that all stay alive (the tape), and each of the collections their
    allocation triggers walks them all for nothing — 0.2 s of a 961-parameter MLP gradient's
    1 s first call. It is back on (if it was on) when the last build running ends, with every
    object moved to the oldest generation first (``freeze`` then ``unfreeze``: no walk), or
    the first young collection would walk them all once more (50 ms); not where the user has
    frozen objects, which ``unfreeze`` would release."""
    global _pauses, _collecting
    with _pausing:
        if not _pauses:
            _collecting = gc.isenabled()
            gc.disable()
        _pauses += 1
    try:
        yield
    finally:
        with _pausing:
            _pauses -= 1
            if not _pauses and _collecting:
                if not gc.get_freeze_count():
                    gc.freeze()
                    gc.unfreeze()
                gc.enable()


def program(inputs: Sequence[Term], outputs: Term | Sequence[Term], backend: str | None = None) -> Callable[..., Any]:
    """``outputs`` compiled as a function of the vars ``inputs``, returning NumPy whatever the
    backend (None: ``config.default_backend()``)."""
    return on_host(lambdify(inputs, outputs, backend))


def call(compiled: Callable[..., Any], inputs: Iterable[Any]) -> Any:
    """A compiled program of a trace run on its inputs (numbers, or arrays that broadcast to
    the batch): every traced entry point runs its program here."""
    return compiled(*inputs)


T = TypeVar("T")
#: How a program is built on a trace: (its inputs, its outputs — a Term or a list — and what
#: the caller keeps beside the program, e.g. how to assemble its values).
Build = Callable[[Traced], tuple[Sequence[Term], "Term | Sequence[Term]", T]]


def compile_traced(f: Callable[..., Any], signature: Sequence[Any], what: str, build: Build[T],
                   backend: str | None = None, kwargs: dict[str, Any] | None = None,
                   arrays: bool = False) -> tuple[Callable[..., Any], T]:
    """f traced on fresh vars of ``signature`` (a Tree or a shape per argument; with ``arrays``,
    an array argument is one array var), built into Terms by ``build`` and compiled: the one
    path from a Python function to a program."""
    with collector_paused():
        trace = Traced(f, signature, what, kwargs, arrays=arrays)
        inputs, outputs, kept = build(trace)
        return program(inputs, outputs, backend if backend is not None else asked_backend(trace.tape)), kept


class Programs(Generic[T]):
    """The compiled programs of ``f``, one per signature key, each with what ``build`` kept
    beside it and what ``f`` read outside its arguments when it was traced."""

    def __init__(self, f: Callable[..., Any], what: str, build: Build[T], backend: str | None = None,
                 arrays: bool = False) -> None:
        self.f, self.what, self.build, self.backend, self.arrays = f, what, build, backend, arrays
        self.entries: dict[Any, tuple[Callable[..., Any], T]] = {}
        self.captured: dict[Any, Captured] = {}

    def get(self, key: Any) -> tuple[Callable[..., Any], T] | None:
        """The program of ``key``, or None where there is none or what f read has changed since."""
        entry = self.entries.get(key)
        if entry is not None and self.captured[key].changed() is None:
            return entry
        return None

    def make(self, key: Any, signature: Sequence[Any], kwargs: dict[str, Any] | None = None
             ) -> tuple[Callable[..., Any], T]:
        """The program of ``signature`` (``compile_traced``), kept for ``key`` with what f read
        outside its arguments. A caller that wants the program's first call (which may write and
        compile the code) inside the collector's pause too wraps both in ``collector_paused``."""
        with collector_paused():
            entry = compile_traced(self.f, signature, self.what, self.build, self.backend, kwargs, self.arrays)
            self.captured[key], self.entries[key] = Captured(self.f, self.what), entry
        return entry

    def __len__(self) -> int:
        return len(self.entries)


__all__ = ["Build", "Programs", "call", "collector_paused", "compile_traced", "program"]
