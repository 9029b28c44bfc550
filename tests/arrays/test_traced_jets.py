"""``sad.taylor_graph(fn, k)(x, v)``: directional Taylor jets of a traced function, on points and
directions (one or batches), against JAX's Taylor mode ``jax.experimental.jet`` in float64."""

from __future__ import annotations

import numpy as np
import pytest

import subgraph_ad as sad

jax = pytest.importorskip("jax")
jnp = jax.numpy
jet = pytest.importorskip("jax.experimental.jet")

CASES = {
    "network": (lambda x: np.sum(np.tanh(np.array([[0.5, -1.0, 0.3], [1.2, 0.4, -0.7]]) @ x) ** 2),
                lambda x: jnp.sum(jnp.tanh(jnp.array([[0.5, -1.0, 0.3], [1.2, 0.4, -0.7]]) @ x) ** 2)),
    "product": (lambda x: np.tanh(x[0] * x[1]) * np.exp(x[2]), lambda x: jnp.tanh(x[0] * x[1]) * jnp.exp(x[2])),
    "where": (lambda x: sad.where(x[0] > 0, sad.log(1 + x[0] ** 2), sad.sin(x[1])) * x[2],
              lambda x: jnp.where(x[0] > 0, jnp.log(1 + x[0] ** 2), jnp.sin(x[1])) * x[2]),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("k", [1, 3, 6])
def test_traced_jets_match_jax_jet(name, k):
    jax.config.update("jax_enable_x64", True)
    ours_fn, theirs = CASES[name]
    rng = np.random.default_rng(k)
    points, directions = rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
    ours = sad.taylor_graph(ours_fn, k)(points, directions)
    assert ours.shape == (4, k)
    for p in range(4):
        _, series = jet.jet(theirs, (points[p],), ((directions[p],) + (np.zeros(3),) * (k - 1),))
        np.testing.assert_allclose(ours[p], np.array(series), rtol=1e-11, atol=1e-11)
    one = sad.taylor_graph(ours_fn, k)(points[0], directions[0])
    np.testing.assert_allclose(one, ours[0], rtol=1e-14, atol=1e-14)


def test_bad_jet_calls_are_refused_by_name():
    with pytest.raises(ValueError, match="order k"):
        sad.taylor_graph(lambda x: x[0], 0)
    jets = sad.taylor_graph(lambda x: x[0] * x[1], 2)
    with pytest.raises(ValueError, match=r"\(3,\) and \(2,\)"):
        jets(np.ones(3), np.ones(2))
