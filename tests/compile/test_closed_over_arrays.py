"""The random array programs of ``test_array_reuse.py`` with only their first argument traced and
the others closed over as NumPy arrays — what a loss over fixed data is: NumPy arrays meet traced
ones in every built-in, arithmetic kind and ``np.where``. Values against NumPy running f, the
gradient against central differences, the HVP against second differences of f itself. (This
corpus found ``np.where`` going per element beside NumPy arrays, and ``hvp`` raising where a
block of H·v is zero.)"""

import numpy as np
import pytest

import subgraph_ad as sad
from test_array_reuse import SEEDS, inputs, random_function


def _scaled(found, want, tolerance):
    scale = max(1.0, float(np.max(np.abs(want))))
    np.testing.assert_allclose(found, want, rtol=0, atol=tolerance * scale)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_traced_argument_beside_closed_over_arrays(seed):
    rng = np.random.default_rng(300 + seed)
    A, B, c = inputs(rng)
    V = rng.uniform(-1, 1, A.shape)
    f = random_function(seed)

    def loss(A):
        return f(A, B, c)[0]

    for got, want in zip(sad.jit(lambda A: f(A, B, c))(A), f(A, B, c)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    unit = np.eye(A.size).reshape((A.size,) + A.shape)
    h = 1e-6  # central differences: truncation ~h², rounding ~1e-16/h
    central = np.array([(loss(A + h * e) - loss(A - h * e)) / (2 * h) for e in unit]).reshape(A.shape)
    _scaled(sad.grad(loss)(A), central, 1e-6)
    k = 1e-4  # second differences along e_i and V: truncation ~k², rounding ~1e-16/k²
    second = np.array([(loss(A + k * e + k * V) - loss(A + k * e - k * V) - loss(A - k * e + k * V)
                        + loss(A - k * e - k * V)) / (4 * k * k) for e in unit]).reshape(A.shape)
    _scaled(sad.hvp(loss, A, V), second, 1e-5)
