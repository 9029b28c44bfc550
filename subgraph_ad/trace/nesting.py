"""Transforms inside a trace: where an outer transform's trace is running, a transform does not
compile a program of its own; it appends its derivative subgraph to the outer trace's tape.

``grad(grad(f))(0.3)``: the outer grad traces ``grad(f)`` on a var a0; the inner grad is then
called on a Term (``outer_tape``), so it traces ``f`` on a fresh var of the same tape, builds
∂f/∂fresh with the ordinary Term machinery (``grad_graph``, ``hessian_terms``,
``ad.operators``), and ``substitute`` puts a0 in place of the fresh var. The result is Terms of
the outer tape, which the outer grad differentiates again: every rule builds Terms, so the
nested derivative is a derivative subgraph like any other. The fresh var is what keeps the two
levels apart: the inner derivative holds everything but its own argument fixed (a Term f
closes over from the outer trace included), so ``grad(lambda y: x * y)(x)`` is x, not 2x —
JAX's perturbation confusion cannot happen.

A transform called inside a trace on plain numbers nests too (``running``): f may close over
the outer trace's Terms (a PINN's residual closes over the network's parameters), and numbers
become constants of the outer tape, which is what they are to the outer derivative.

Each tape a trace makes is named by where it came from (``name_tape``, ``origin``), so that a
message about Terms of two tapes says which traces they belong to.

>>> import subgraph_ad as sad
>>> sad.grad(sad.grad(lambda x: x ** 4))(0.5)
3.0
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from typing import Any, Iterable, Iterator

import numpy as np

from ..core import Tape, Term
from ..core.graph import below

_local = threading.local()
_origins: weakref.WeakKeyDictionary[Tape, str] = weakref.WeakKeyDictionary()
_backends: weakref.WeakKeyDictionary[Tape, str] = weakref.WeakKeyDictionary()


def _stack() -> list[Tape]:
    stack: list[Tape] | None = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    return stack


@contextlib.contextmanager
def tracing(tape: Tape) -> Iterator[None]:
    """While f is traced on ``tape``: transforms called inside append to it."""
    stack = _stack()
    stack.append(tape)
    try:
        yield
    finally:
        stack.pop()


def running() -> Tape | None:
    """The tape of the innermost trace running in this thread, or None outside any."""
    stack = _stack()
    return stack[-1] if stack else None


def name_tape(tape: Tape, origin: str) -> None:
    """Record where a tape came from (``the trace of grad of 'f'``)."""
    _origins[tape] = origin


def origin(tape: Tape) -> str:
    return _origins.get(tape, "a tape built by hand")


def ask_backend(tape: Tape, backend: str | None) -> None:
    """Record the backend a transform nested in the trace of ``tape`` was given (the first
    one), for the outer transform that compiles the trace without a backend of its own:
    ``vmap(lambda x: hvp(f, x, v, backend="numba"))`` runs on Numba."""
    if backend is not None:
        _backends.setdefault(tape, backend)


def asked_backend(tape: Tape) -> str | None:
    """The backend a transform nested in the trace of ``tape`` asked for, if any."""
    return _backends.get(tape)


def terms_in(value: Any) -> Iterator[Term]:
    """The Terms of one leaf: a Term, or the Terms of an object array."""
    if isinstance(value, Term):
        yield value
    elif isinstance(value, np.ndarray) and value.dtype == object:
        yield from (v for v in value.ravel() if isinstance(v, Term))


def outer_tape(leaves: Iterable[Any], what: str) -> Tape | None:
    """The tape the Terms among ``leaves`` live on; else the running trace's (None outside any).
    Terms of two tapes are an error that names the traces they came from."""
    found: Tape | None = None
    for leaf in leaves:
        for t in terms_in(leaf):
            if found is None:
                found = t.tape
            elif t.tape is not found:
                raise ValueError(f"{what}: the arguments hold Terms of two different tapes, from {origin(found)} and "
                                 f"from {origin(t.tape)}; a transform nests inside one trace at a time")
    inner = running()
    if found is not None and inner is not None and found is not inner:
        raise ValueError(f"{what}: called inside {origin(inner)} on Terms from {origin(found)}; pass the values of "
                         "the running trace (its arguments, or what it computed from them)")
    return found if found is not None else inner


def fresh_prefix(tape: Tape, what: str) -> str:
    """A prefix for the names of a nested trace's vars that no var of the tape has."""
    count = len(tape.vars)
    while any(n.startswith(f"{what}{count}_") for n in tape.vars):
        count += 1
    return f"{what}{count}_"


def substitute(tape: Tape, terms: list[Term], mapping: dict[int, Term]) -> list[Term]:
    """``terms`` with each var index in ``mapping`` replaced by its Term: one walk in tape order
    that rebuilds only the nodes that depend on a replaced var (appended by the tape's builder,
    so they fold and intern as any other)."""
    if not mapping or not terms:
        return terms
    first = min(mapping)
    built: dict[int, int] = {}
    # searched, not scanned: a template far above the params it reads is called once per point
    for i in below(tape, [t.index for t in terms], stop=lambda i: i < first):
        if i < first:  # older than the replaced vars: cannot depend on them
            continue
        node = tape.nodes[i]
        if i in mapping:
            built[i] = mapping[i].index
        elif any(a in built for a in node.args):
            built[i] = tape.append(node.op, tuple(built.get(a, a) for a in node.args), node.payload)
    return [Term(tape, built.get(t.index, t.index)) for t in terms]


def lifted(tape: Tape, value: Any) -> Term:
    """One element of an argument as a Term of ``tape``: a Term as it is, a number a constant."""
    if isinstance(value, Term):
        return value
    return tape.const(float(value))


__all__ = ["ask_backend", "asked_backend", "fresh_prefix", "lifted", "name_tape", "origin", "outer_tape", "running",
           "substitute", "terms_in", "tracing"]
