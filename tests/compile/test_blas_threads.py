"""BLAS's thread count around array programs (``compile/blas.py``): code at one point whose
matrix products are all under OpenBLAS's own bounds for sharing work out (GEMM_MULTITHREAD_THRESHOLD
4: 4 × 65,536 multiply-adds for a matrix product, 4 × 2,304 for a matrix-vector one) leaves the
setting alone — nothing to set, on every call — and a program with a larger product runs on one
thread, the setting restored after. The thread count is spied on, the values checked against
NumPy."""

import numpy as np
import pytest

import subgraph_ad as sad
from subgraph_ad.compile import blas


@pytest.fixture
def settings(monkeypatch):
    """The thread counts set, through a stand-in for OpenBLAS's set and get."""
    done: list[int] = []
    monkeypatch.setattr(blas, "_controls", lambda: (done.append, lambda: 2))
    return done


def test_openblas_bounds():
    """The bounds as OpenBLAS's interface/gemm.c and gemv.c state them, at the default 4."""
    assert not blas.threaded(64, 64, 64) and blas.threaded(64, 64, 65)  # 262,144 = 4 × 65,536
    assert not blas.threaded(1, 95, 96) and blas.threaded(96, 96, 1)  # 9,216 = 4 × 2,304
    assert not blas.threaded(1, 9_215, 1) and blas.threaded(1, 9_216, 1)  # a dot, bounded as a matrix-vector product


def test_small_products_at_one_point_leave_the_thread_count_alone(settings):
    """A 10 → 80 → 1 network's gradient over a batch of 32 (products of 32 × 10 × 80 and less)."""

    def loss(w, x):
        return np.sum(np.tanh(x @ w) ** 2)

    rng = np.random.default_rng(0)
    w, x = rng.normal(size=(10, 80)), rng.normal(size=(32, 10))
    g = sad.grad(loss)
    for _ in range(3):
        found = g(w, x)
    t = np.tanh(x @ w)
    np.testing.assert_allclose(found, x.T @ (2 * t * (1 - t * t)), rtol=1e-12, atol=1e-13)
    assert settings == []


def test_a_product_past_the_bounds_runs_on_one_thread(settings):
    """A 200 × 200 matrix-vector product (40,000 multiply-adds): one thread, then 2 again."""
    rng = np.random.default_rng(1)
    W, x = rng.normal(size=(200, 200)) / 20, rng.normal(size=200)
    g = sad.grad(lambda x, W: np.sum(np.sin(W @ x)))
    found = g(x, W)
    np.testing.assert_allclose(found, W.T @ np.cos(W @ x), rtol=1e-12, atol=1e-13)
    assert settings and settings[:2] == [1, 2] and len(settings) % 2 == 0
