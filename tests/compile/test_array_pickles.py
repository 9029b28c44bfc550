"""A compiled array program pickles, as ``lambdify`` promises of every compiled function (Dask's
workers run what they unpickle): on the NumPy and JAX backends (array code) and on Numba (the
scalar expansion), rebuilt from its graph in this process and in a fresh one, its values those
of NumPy running the same function, at one point and on a batch."""

import pickle
import subprocess
import sys

import numpy as np
import pytest

import subgraph_ad as sad
from subgraph_ad.compile.devices import on_host

BACKENDS = ["numpy", "jax", "numba"]


def layer(x, w, b, s):
    """A product, a bias row, tanh, a reduction and a scalar input."""
    h = np.tanh(x @ w + b)
    return h * s - 0.5 * h * h, np.sum(h, axis=0)


def _program(backend):
    rng = np.random.default_rng(3)
    x, w, b = rng.normal(size=(8, 3)), rng.normal(size=(3, 5)), rng.normal(size=5)
    t = sad.Tape()
    X, W, B, S = t.array("x", x), t.array("w", w), t.array("b", b), t.var("s", 0.7)
    return sad.lambdify([X, W, B, S], list(layer(X, W, B, S)), backend), (x, w, b)


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_array_program_pickles_and_computes_numpys_values(backend):
    f, (x, w, b) = _program(backend)
    for made in (f, on_host(f)):
        again = pickle.loads(pickle.dumps(made))
        assert type(again) is type(made) and repr(again) == repr(made)
        for s in (0.7, -1.5):
            found = [np.asarray(v) for v in again(x, w, b, s)]
            for got, want in zip(found, layer(x, w, b, s)):
                np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)
    xs = np.random.default_rng(4).normal(size=(6, 8, 3))  # a batch of six points
    again = on_host(pickle.loads(pickle.dumps(f)))
    first, second = again(xs, w, b, 0.7)
    for k in range(6):
        want = layer(xs[k], w, b, 0.7)
        np.testing.assert_allclose(first[k], want[0], rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(second[k], want[1], rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("backend", ["numpy", "jax"])
def test_a_fresh_process_runs_the_unpickled_program(backend):
    f, (x, w, b) = _program(backend)
    code = ("import pickle, sys, numpy as np; f, args = pickle.loads(sys.stdin.buffer.read()); "
            "sys.stdout.buffer.write(pickle.dumps([np.asarray(v) for v in f(*args)]))")
    done = subprocess.run([sys.executable, "-c", code], input=pickle.dumps((f, (x, w, b, 0.7))),
                          capture_output=True, check=True)
    found = pickle.loads(done.stdout)
    for got, want in zip(found, layer(x, w, b, 0.7)):
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)
