"""A KeyboardInterrupt anywhere inside a build leaves the tape exactly as it was.

Interrupts are injected deterministically, not by timing signals: at the k-th append point
(just before a node is pushed, or just after, before its builder has recorded it anywhere) and
at the k-th line the tape and its scopes execute (between any two statements of a scope, a memo
update or a rollback). After each one the tape must equal its snapshot in every table, and the same call
must then give exactly what it gives on a tape that was never interrupted: the independent oracle
is a fresh tape built the same way.
"""

from __future__ import annotations

import functools
import sys
from contextlib import contextmanager
from typing import Any, Callable, Iterator

import pytest

import subgraph_ad as sad
from subgraph_ad import Tape, Term
from subgraph_ad.core import ownership, scopes, values
from subgraph_ad.core import tape as tape_module

#: The modules of the tape and its scopes, after whose every line an interrupt may land.
TRACED = {module.__file__ for module in (tape_module, scopes, ownership, values)}

Context = tuple[Tape, Term, Term, Term]


class Broken(sad.UnaryFn):
    """A user function whose derivative rule builds a little, then fails."""

    name = "broken"

    def f(self, v: Any) -> Any:
        return v

    def grad(self, v: Any) -> Any:
        return 1.0

    def gen_graph(self, input: Term, output: Term, derived: Term) -> Term:
        input * 7.0 + output * derived  # nodes the rollback must remove
        raise ValueError("broken rule")


broken = Broken()


def setup() -> Context:
    """Two vars, an expression, and a memo already holding its first derivative in x."""
    tape = Tape()
    x, y = tape.var("x", 0.7), tape.var("y", 1.3)
    f = sad.exp(sad.sin(x) * y) / (1 + x * x)
    f.gen_graph(x)
    return tape, x, y, f


def build_pruned(tape: Tape, x: Term, y: Term) -> list[int]:
    """A pruned scope outside any transaction: nodes to drop, nodes to keep, memo entries of both."""

    def build() -> list[int]:
        junk = sad.cos(x * y)
        kept = sad.tanh(x) * y + 2.0
        tape.remember(junk.index, x.index, junk.index)
        tape.remember(kept.index, y.index, kept.index)
        return [kept.index]

    return tape.pruned(build)


def trial_then_build(tape: Tape, x: Term, y: Term, f: Term) -> Term:
    with tape.trial():
        f.diff(y, 2)
    return f.gen_graph(y)


OPERATIONS: dict[str, Callable[[Tape, Term, Term, Term], Any]] = {
    "diff auto": lambda tape, x, y, f: f.diff(x, 5),
    "diff taylor": lambda tape, x, y, f: f.diff(x, 5, method="taylor"),
    "diff graph": lambda tape, x, y, f: f.diff(x, 5, method="graph"),
    "diff mixed": lambda tape, x, y, f: f.diff(x, 2, y),
    "derivatives": lambda tape, x, y, f: sad.derivatives(f, x, 3, y),
    "taylor_graph": lambda tape, x, y, f: sad.taylor_graph(f, y, 4),
    "gen_graph": lambda tape, x, y, f: f.gen_graph(y),
    "directional": lambda tape, x, y, f: f.gen_graph({x: 1.0, y: 2.0}),
    "grad_graph": lambda tape, x, y, f: f.grad_graph([x, y]),
    "hessian": lambda tape, x, y, f: sad.hessian(f, [x, y]),
    "hvp": lambda tape, x, y, f: sad.hvp(f, [x, y], [1.0, y]),
    "pruned": lambda tape, x, y, f: build_pruned(tape, x, y),
    "trial": trial_then_build,
    "parse": lambda tape, x, y, f: sad.parse("sin(x)*y + 3*x^2 + z", tape=tape),
}


def snapshot(tape: Tape) -> tuple:
    """Every table a tape keeps: nodes, orders, interning, vars and values, the memo and its
    journal, the listening callback, the order tag and the working memory held."""
    return (list(tape.nodes), list(tape.orders), dict(tape._intern), dict(tape._vars), dict(tape._values),
            dict(tape.deriv_cache), list(tape._journal), tape._listener, tape._order, tape._held, tape._over)


def indices(result: Any) -> Any:
    """A result as plain indices, whatever its shape (Term, Step, list, index)."""
    if isinstance(result, Term):
        return result.index
    if isinstance(result, sad.Step):
        return (result.term.index, result.appended, result.method)
    if isinstance(result, (list, tuple)):
        return [indices(r) for r in result]
    return result


def outcome(tape: Tape, result: Any) -> tuple:
    return indices(result), list(tape.nodes), list(tape.orders), dict(tape.deriv_cache)


@contextmanager
def at_append(k: int) -> Iterator[list[int]]:
    """Raise KeyboardInterrupt at append point k (two per push: before it and after it); the
    yielded list holds the number of points passed."""
    real = Tape._push
    count = [0]

    def push(self: Tape, *args: Any) -> int:
        count[0] += 1
        if count[0] == k:
            raise KeyboardInterrupt(f"append point {k}")
        index = real(self, *args)
        count[0] += 1
        if count[0] == k:
            raise KeyboardInterrupt(f"append point {k}")
        return index

    Tape._push = push  # type: ignore[method-assign]
    try:
        yield count
    finally:
        Tape._push = real  # type: ignore[method-assign]


@contextmanager
def at_line(k: int, seen: list[tuple[str, int]] | None = None) -> Iterator[None]:
    """Raise KeyboardInterrupt at the k-th line executed in the tape and its scopes (a trace function
    that raises is removed by Python, so one interrupt per run); ``seen`` collects the
    (function, line) of every line event."""
    count = 0

    def local(frame: Any, event: str, arg: Any) -> Any:
        nonlocal count
        if event == "line":
            count += 1
            if seen is not None:
                seen.append((frame.f_code.co_name, frame.f_lineno))
            if count == k:
                raise KeyboardInterrupt(f"line event {k}")
        return local

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        return local if frame.f_code.co_filename in TRACED else None

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        yield
    finally:
        sys.settrace(previous)


def line_points(seen: list[tuple[str, int]], spread: int = 40) -> list[int]:
    """Which line events to interrupt at: the first and the last time each line is reached, and
    ``spread`` more evenly spaced over the run (bounded, yet every line is hit)."""
    first: dict[tuple[str, int], int] = {}
    last: dict[tuple[str, int], int] = {}
    for k, where in enumerate(seen, start=1):
        first.setdefault(where, k)
        last[where] = k
    step = max(1, len(seen) // spread)
    return sorted(set(first.values()) | set(last.values()) | set(range(1, len(seen) + 1, step)))


@functools.cache
def reference(name: str) -> tuple:
    """What operation ``name`` gives on a tape nobody interrupted."""
    context = setup()
    return outcome(context[0], OPERATIONS[name](*context))


def check_point(name: str, inject: Callable[[], Any]) -> str | None:
    """Interrupt one run of operation ``name``; None if the tape came back exactly and the next
    call gave the untouched tape's outcome, else what went wrong."""
    operation = OPERATIONS[name]
    context = setup()
    before = snapshot(context[0])
    try:
        with inject():
            operation(*context)
    except KeyboardInterrupt:
        pass
    except BaseException as exc:  # any other exception is a finding, reported with the point
        return f"raised {type(exc).__name__}: {exc}"
    else:
        return "ran to the end: the point was never reached"
    if snapshot(context[0]) != before:
        return "tape changed"
    try:
        again = outcome(context[0], operation(*context))
    except Exception as exc:  # the next call must work
        return f"next call raised {type(exc).__name__}: {exc}"
    if again != reference(name):
        return "next call differs from an untouched tape's"
    return None


def append_points(name: str) -> int:
    """How many append points operation ``name`` passes on an untouched tape, once what the
    process keeps between tapes is warm (``reference``: the first ``diff`` of a process appends
    16 more, run alone)."""
    reference(name)
    context = setup()
    with at_append(0) as count:
        OPERATIONS[name](*context)
    return count[0]


def seen_lines(name: str) -> list[tuple[str, int]]:
    """The (function, line) of every line of the tape and its scopes operation ``name`` executes."""
    seen: list[tuple[str, int]] = []
    context = setup()
    with at_line(0, seen):
        OPERATIONS[name](*context)
    return seen


@pytest.mark.slow
@pytest.mark.parametrize("name", OPERATIONS)
def test_an_interrupt_at_every_append_leaves_the_tape_as_it_was(name):
    total = append_points(name)
    assert total > 0
    failures = {k: why for k in range(1, total + 1) if (why := check_point(name, lambda k=k: at_append(k)))}
    assert not failures, f"{len(failures)} of {total} append points failed: {dict(list(failures.items())[:5])}"


@pytest.mark.slow
@pytest.mark.parametrize("name", OPERATIONS)
def test_an_interrupt_at_any_line_of_the_tape_module_leaves_the_tape_as_it_was(name):
    points = line_points(seen_lines(name))
    failures = {k: why for k in points if (why := check_point(name, lambda k=k: at_line(k)))}
    assert not failures, f"{len(failures)} of {len(points)} line points failed: {dict(list(failures.items())[:5])}"


def test_an_interrupt_inside_the_rollback_of_a_failed_build_still_restores_the_tape():
    """A user rule fails, and while the tape undoes that build a KeyboardInterrupt lands: on
    every line reached, the build and its rollback included, the tape must come back whole."""

    def failing_setup() -> tuple[Context, Term]:
        context = setup()
        _, x, y, f = context
        return context, broken(f * y) + x

    def fail(g: Term, x: Term) -> None:
        g.gen_graph(x)

    seen: list[tuple[str, int]] = []
    (tape, x, y, f), g = failing_setup()
    with pytest.raises(ValueError, match="broken rule"), at_line(0, seen):
        fail(g, x)
    rollback = [k for k, (function, _) in enumerate(seen, start=1) if function in ("_restore", "_rollback")]
    assert rollback, "the failed build never reached the tape's rollback"
    points = sorted(set(line_points(seen)) | set(rollback))
    untouched, _ = failing_setup()
    expected = outcome(untouched[0], OPERATIONS["diff mixed"](*untouched))
    failures = {}
    for k in points:
        context, g = failing_setup()
        before = snapshot(context[0])
        with pytest.raises((KeyboardInterrupt, ValueError)) as raised:
            with at_line(k):
                fail(g, context[1])
        if k in rollback and raised.type is not KeyboardInterrupt:
            failures[k] = (seen[k - 1], f"the interrupt was lost: {raised.type.__name__} came out")
        elif snapshot(context[0]) != before:
            failures[k] = (seen[k - 1], "tape changed")
        elif outcome(context[0], OPERATIONS["diff mixed"](*context)) != expected:
            failures[k] = (seen[k - 1], "next call differs from an untouched tape's")
    assert not failures, f"{len(failures)} of {len(points)} points failed: {list(failures.items())[:5]}"
