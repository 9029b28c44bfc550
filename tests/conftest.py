"""Shared fixtures: a fresh tape with the seeds' vars, and a SymPy reference evaluator."""

import contextlib
import math
import multiprocessing
import os
import queue
import shutil
import tempfile
from typing import Iterator

import numpy as np

import pytest
import sympy
from hypothesis import HealthCheck, settings

import subgraph_ad as sad


def pytest_configure(config: pytest.Config) -> None:
    """Compiled code goes to a folder of this run, not the user's cache (tests of the cache set
    their own): the suite leaves nothing behind, and never reads code an earlier run left."""
    config.sad_cache = tempfile.mkdtemp(prefix="subgraph_ad_test_cache_")
    os.environ["SUBGRAPH_AD_CACHE"] = config.sad_cache


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(getattr(config, "sad_cache", ""), ignore_errors=True)


@pytest.fixture
def tape() -> sad.Tape:
    return sad.Tape()


@contextlib.contextmanager
def jax_float64(enabled: bool = True) -> Iterator[None]:
    """float64 in JAX inside the block (its default is 32; the flag is global, so it is
    restored); nothing when not ``enabled`` (a backend other than JAX)."""
    if not enabled:
        yield
        return
    jax = pytest.importorskip("jax")
    previous = jax.config.read("jax_enable_x64")
    jax.config.update("jax_enable_x64", True)
    try:
        yield
    finally:
        jax.config.update("jax_enable_x64", previous)


@pytest.fixture
def x64():
    """float64 in JAX for one test."""
    with jax_float64():
        yield


def same_tree(ours, theirs, rtol=1e-12, atol=1e-12):
    """Equal pytrees: the same structure (as JAX flattens it) and leaves within the tolerances."""
    import jax

    leaves, tree = jax.tree_util.tree_flatten(ours)
    want, want_tree = jax.tree_util.tree_flatten(theirs)
    assert tree == want_tree, (tree, want_tree)
    for a, b in zip(leaves, want):
        np.testing.assert_allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float), rtol=rtol, atol=atol)


def sympy_value(expr: sympy.Expr, **point: float) -> float:
    """Evaluate a SymPy expression at a point with 30 digits: the independent reference."""
    value = expr.evalf(30, subs={sympy.Symbol(k): sympy.Float(v, 30) for k, v in point.items()})
    return float(value)


def close(ours: float, ref: float, rtol: float = 1e-9) -> bool:
    """Relative agreement, absolute near zero; high orders lose a few digits, never nine."""
    if math.isnan(ref):
        return math.isnan(ours)
    return abs(ours - ref) <= rtol * max(1.0, abs(ref))


def in_forked_child(work, hang: str):
    """``work()`` run in a forked child, its result sent back; ``hang`` is the failure message if
    the child never answers. The bound (120 s on a call of milliseconds) is only ever reached by
    a hang; the child is killed if it is still alive, and must have exited cleanly."""
    context = multiprocessing.get_context("fork")
    results = context.Queue()
    child = context.Process(target=lambda: results.put(work()), daemon=True)
    child.start()
    try:
        got = results.get(timeout=120)
        child.join(timeout=120)
    except queue.Empty:
        pytest.fail(hang)
    finally:
        if child.is_alive():
            child.kill()
            child.join()
    assert child.exitcode == 0
    return got


class Softplus(sad.UnaryFn):
    """The user function from the API contract, shared by the tests of every layer."""

    name = "softplus"

    def f(self, v):
        return np.logaddexp(0.0, v)

    def grad(self, v):
        return 1.0 / (1.0 + np.exp(-v))

    def gen_graph(self, input, output, derived):
        return sad.sigmoid(input) * derived

    def to_sympy(self, arg):
        return sympy.log(1 + sympy.exp(arg))


class Cube(sad.UnaryFn):
    """A minimal user function (value, numeric and symbolic derivative) for parser and bridge tests."""

    def __init__(self, name: str = "cube") -> None:
        self.name = name

    def f(self, v):
        return v**3

    def grad(self, v):
        return 3 * v**2

    def gen_graph(self, input, output, derived):
        return 3 * input * input * derived


class OutputTanh(sad.UnaryFn):
    """tanh with its derivative stated through its output, 1 − out², as JAX, PyTorch and rustograd
    write it (the built-in's sech² keeps the tails): every derivative is a polynomial in the one
    node tanh(x), whose flat SymPy form repeats shared parts and whose terms cancel."""

    name = "otanh"
    spelling = ("tanh",)

    def fdiff(self, input, output):
        return 1 - output * output


class PlainAtan2(sad.BinaryFn):
    """atan2 with the textbook partials x/(x² + y²), −y/(x² + y²), as JAX writes them (the
    built-in's are scaled to survive extreme points): their high orders cancel near 0."""

    name = "patan2"
    spelling = ("atan2",)

    def fdiff(self, lhs, rhs, output):
        r2 = lhs * lhs + rhs * rhs
        return rhs / r2, -lhs / r2


# Hypothesis: derandomized and bounded in `make test`; `make fuzz` sets SAD_FUZZ to a factor
# that multiplies every test's example count and lifts the derandomization.
FUZZ = int(os.environ.get("SAD_FUZZ", "0"))
settings.register_profile("test", derandomize=True, deadline=None, database=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("fuzz", deadline=None, print_blob=True, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("fuzz" if FUZZ else "test")


def examples(n: int) -> int:
    """A test's Hypothesis example count: ``n`` in ``make test``, ``n * SAD_FUZZ`` in ``make fuzz``."""
    return n * max(FUZZ, 1)
