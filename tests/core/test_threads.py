"""Threads: a tape is built by one thread at a time; reading it, and everything per thread, is free.

Two threads appending to one tape interleave their builds and rollbacks (a transaction undoes the
other thread's nodes, operands end up after the nodes that use them), so building on a tape from
a thread that does not own it raises ``TapeThreadError`` and changes nothing; the owner hands it
over explicitly. Evaluating, compiling and converting finished terms only read nodes that no
build moves, and stay allowed from any thread. The oracle is the closed form
dⁿ/dxⁿ e^{kx}·sin x = (k²+1)^{n/2}·e^{kx}·sin(x + n·atan2(1, k)).
"""

from __future__ import annotations

import contextlib
import copy
import math
import sys
import threading
from typing import Any, Callable, Iterator

import numpy as np
import pytest

import subgraph_ad as sad
from subgraph_ad import Tape, Term
from subgraph_ad.core import TapeThreadError
from conftest import in_forked_child


def closed_form(k: float, n: int, x: Any) -> Any:
    """The n-th derivative of exp(k·x)·sin(x)."""
    return (k * k + 1) ** (n / 2) * np.exp(k * x) * np.sin(x + n * math.atan2(1.0, k))


def setup(k: float = 0.5) -> tuple[Tape, Term, Term]:
    tape = Tape()
    x = tape.var("x", 0.3)
    return tape, x, sad.exp(k * x) * sad.sin(x)


def snapshot(tape: Tape) -> tuple:
    return (list(tape.nodes), list(tape.orders), dict(tape._intern), dict(tape._vars), dict(tape._values),
            dict(tape.deriv_cache))


def in_thread(work: Callable[[], Any], name: str = "worker") -> Any:
    """What ``work()`` returned or raised in a thread of its own, once that thread has ended."""
    out: list[Any] = []

    def run() -> None:
        try:
            out.append(work())
        except BaseException as exc:  # handed back to the test, which asserts on it
            out.append(exc)

    thread = threading.Thread(target=run, name=name)
    thread.start()
    thread.join()
    return out[0]


@pytest.fixture
def fast_switching() -> Iterator[None]:
    """Switch threads every 10 µs, so that threads interleave inside builds, not only between them."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    yield
    sys.setswitchinterval(before)


BUILDS: dict[str, Callable[[Tape, Term, Term], Any]] = {
    "arithmetic": lambda tape, x, f: f * x + 2.0,
    "a function": lambda tape, x, f: sad.tanh(x),
    "an existing node": lambda tape, x, f: sad.sin(x),  # appends nothing, still refused
    "a constant": lambda tape, x, f: tape.const(7.0),
    "a var": lambda tape, x, f: tape.var("y"),
    "a new value": lambda tape, x, f: x.set(1.0),
    "gen_graph": lambda tape, x, f: f.gen_graph(x),
    "diff (Taylor mode)": lambda tape, x, f: f.diff(x, 9),
    "grad_graph": lambda tape, x, f: f.grad_graph(x),
    "parse": lambda tape, x, f: sad.parse("x^2 + 1", tape=tape),
    "a trial": lambda tape, x, f: tape.trial().__enter__(),
}


@pytest.mark.parametrize("name", BUILDS)
def test_building_from_a_thread_that_does_not_own_the_tape_is_refused_and_changes_nothing(name):
    tape, x, f = setup()
    f.gen_graph(x)  # a memo entry, so that a foreign gen_graph could read it without appending
    before, shown = snapshot(tape), repr(tape)
    error = in_thread(lambda: BUILDS[name](tape, x, f), name="intruder")
    assert isinstance(error, TapeThreadError) and isinstance(error, RuntimeError), error
    message = str(error)
    owner = threading.current_thread().name
    assert f"owned by thread {owner!r}" in message and "'intruder'" in message
    assert message.startswith(f"{shown} is owned")  # the tape, as repr shows it
    assert "one tape per thread" in message and "hand_over" in message
    assert snapshot(tape) == before
    assert f.diff(x, 3).eval() == pytest.approx(closed_form(0.5, 3, 0.3), rel=1e-13)  # the owner goes on


def test_threads_racing_to_build_on_one_tape_are_all_refused_and_the_tape_stays_whole(fast_switching):
    """The failure this replaces: four threads differentiating on one tape gave wrong values and
    tapes whose nodes used operands appended after them."""
    tape, x, f = setup()
    before = snapshot(tape)
    errors: list[BaseException | None] = [None] * 4

    def work(k: int) -> None:
        try:
            (sad.sin(x * (k + 1)) * sad.exp(x / (k + 2))).diff(x, 6)
        except BaseException as exc:
            errors[k] = exc

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(isinstance(e, TapeThreadError) for e in errors), errors
    assert snapshot(tape) == before
    assert all(a < i for i, node in enumerate(tape.nodes) for a in node.args)


@contextlib.contextmanager
def held(work: Callable[[], object], name: str) -> Iterator[threading.Thread]:
    """A thread named ``name`` that runs ``work`` and then stays alive, still owning what it
    built, until the block ends."""
    done, release = threading.Event(), threading.Event()

    def run() -> None:
        try:
            work()
        finally:
            done.set()
            release.wait()

    thread = threading.Thread(target=run, name=name)
    thread.start()
    done.wait()
    try:
        yield thread
    finally:
        release.set()
        thread.join()


def test_a_tape_handed_over_is_built_by_the_thread_that_takes_it_and_returns_when_it_ends():
    tape, x, f = setup()
    tape.hand_over()  # to whichever thread builds next
    result: list[float] = []
    with held(lambda: result.append(f.diff(x, 4).eval()), "taker"):
        with pytest.raises(TapeThreadError, match="owned by thread 'taker'"):
            f.gen_graph(x)  # the taker still runs: the tape is its own
    assert result[0] == pytest.approx(closed_form(0.5, 4, 0.3), rel=1e-13)
    # the taker has ended: its tape is free again, and this thread builds on it
    assert f.diff(x, 5).eval() == pytest.approx(closed_form(0.5, 5, 0.3), rel=1e-13)


def test_a_tape_handed_to_one_thread_is_refused_to_others_and_only_its_owner_hands_it_over():
    tape, x, f = setup()
    with held(lambda: None, "chosen") as taker:
        tape.hand_over(taker)
        error = in_thread(lambda: f.gen_graph(x), name="other")
        assert isinstance(error, TapeThreadError) and "owned by thread 'chosen'" in str(error)
        with pytest.raises(TapeThreadError, match="owned by thread 'chosen'"):
            tape.hand_over()  # no longer this thread's to give
    with pytest.raises(ValueError, match="not started"):
        tape.hand_over(threading.Thread(target=lambda: None))
    with pytest.raises(TypeError, match="threading.Thread or None"):
        tape.hand_over("main")  # type: ignore[arg-type]


def test_reading_a_tape_from_other_threads_while_its_owner_builds_gives_exact_values(fast_switching):
    """eval, derive, grad, lambdify and to_sympy of finished terms from four threads, while the
    owner keeps appending and rolling back (trials, builds that meet the node budget)."""
    tape, x, f = setup()
    d3 = f.diff(x, 3)
    points = np.linspace(-1.0, 1.0, 7)
    failures: list[str] = []

    def read(seed: int) -> None:
        try:
            for p in np.roll(points, seed).tolist() * 6:
                checks = {
                    "eval": (d3.eval({x: p}), closed_form(0.5, 3, p)),
                    "derive": (f.derive(x, {x: p}), closed_form(0.5, 1, p)),
                    "grad": (f.grad({x: p})[x], closed_form(0.5, 1, p)),
                    "lambdify": (sad.lambdify([x], d3)(p), closed_form(0.5, 3, p)),
                }
                for what, (got, want) in checks.items():
                    if not math.isclose(got, want, rel_tol=1e-12, abs_tol=1e-12):
                        failures.append(f"{what} at {p}: {got} != {want}")
            if str(d3.to_sympy()).count("x") < 2:
                failures.append(f"to_sympy gave {d3.to_sympy()}")
        except BaseException as exc:
            failures.append(f"{type(exc).__name__}: {exc}")

    readers = [threading.Thread(target=read, args=(k,)) for k in range(4)]
    for reader in readers:
        reader.start()
    budget, rounds = tape.max_nodes, 0
    while any(reader.is_alive() for reader in readers) or rounds < 3:
        rounds += 1
        with tape.trial():
            sad.taylor_graph(sad.tanh(f) * x, x, 12)
        tape.max_nodes = len(tape) + 20
        with pytest.raises(sad.LimitError):
            sad.taylor_graph(sad.tanh(f) * x, x, 12)
        tape.max_nodes = budget
    for reader in readers:
        reader.join()
    assert not failures, failures[:5]


def test_separate_tapes_compiled_functions_and_traced_transforms_across_threads_are_exact(fast_switching):
    points = np.linspace(-2.0, 2.0, 40_000)  # more than one block: the pool is shared by all callers
    tape, x, f = setup(0.5)
    compiled = sad.lambdify([x], f.diff(x, 4))
    traced = sad.derivative(lambda v: np.exp(0.5 * v) * np.sin(v), 3)
    failures: list[str] = []

    def work(k: int) -> None:
        try:
            own, y, g = setup(1.0 + k)  # a tape per thread
            for n in (2, 5, 9):
                got, want = g.diff(y, n).eval({y: 0.7}), closed_form(1.0 + k, n, 0.7)
                if not math.isclose(got, want, rel_tol=1e-12):
                    failures.append(f"thread {k}: order {n} gave {got}, not {want}")
            if not np.allclose(compiled(points), closed_form(0.5, 4, points), rtol=1e-12, atol=1e-12):
                failures.append(f"thread {k}: the shared compiled function")
            if not np.allclose(traced(points[:: 97 + k]), closed_form(0.5, 3, points[:: 97 + k]), rtol=1e-12, atol=1e-12):
                failures.append(f"thread {k}: the shared traced transform")
        except BaseException as exc:
            failures.append(f"thread {k}: {type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, failures[:5]


def test_a_copy_belongs_to_the_thread_that_made_it_while_that_thread_runs():
    tape, x, f = setup()
    copies: list[Tape] = []

    def work() -> None:
        copies.append(copy.copy(tape))
        copies[0].var("y")  # its own: no error

    with held(work, "copier"):
        with pytest.raises(TapeThreadError, match="owned by thread 'copier'"):
            copies[0].var("z")
        tape.var("z")  # the original is still this thread's
    assert list(copies[0].vars) == ["x", "y"] and list(tape.vars) == ["x", "z"]


# Python 3.12+ warns that forking a process with threads may deadlock; the child here takes no lock.
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_a_forked_child_builds_on_a_tape_whose_owner_thread_it_does_not_have():
    """A child process has only the thread that forked: a tape owned by another thread of the
    parent has no running owner there, so the child may take it."""
    tapes: list[tuple[Tape, Term, Term]] = []
    with held(lambda: tapes.append(setup()), "maker"):
        tape, x, f = tapes[0]
        before = snapshot(tape)
        with pytest.raises(TapeThreadError, match="owned by thread 'maker'"):
            f.diff(x, 6)  # here the maker still runs
        got = in_forked_child(lambda: f.diff(x, 6).eval(), "the forked child did not finish its build")
    assert got == pytest.approx(closed_form(0.5, 6, 0.3), rel=1e-13)
    assert snapshot(tape) == before  # the child's build stayed in the child
