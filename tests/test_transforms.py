"""The function transforms as JAX users write them — value_and_grad, has_aux, keyword arguments,
pytrees, the function forms of jvp, vjp and hvp, and vmap — run on JAX's own documentation
examples (NumPy for jax.numpy) and checked against JAX itself (64-bit) to 1e-12."""

from collections import namedtuple
import functools

import numpy as np
import pytest

import subgraph_ad as sad

from conftest import jax_float64, same_tree

jax = pytest.importorskip("jax")
jnp = jax.numpy

pytestmark = pytest.mark.usefixtures("x64")  # float64 in JAX (tests/conftest.py)


# -- the autodiff cookbook's logistic regression -----------------------------------------------------
INPUTS = np.array([[0.52, 1.12, 0.77], [0.88, -1.08, 0.15], [0.52, 0.06, -1.30], [0.74, -2.49, 1.39]])
TARGETS = np.array([True, True, False, True])


def logistic(npx):
    def sigmoid(x):
        return 0.5 * (npx.tanh(x / 2) + 1)

    def predict(W, b, inputs):
        return sigmoid(npx.dot(inputs, W) + b)

    def loss(W, b):
        preds = predict(W, b, INPUTS)
        label_probs = preds * TARGETS + (1 - preds) * (1 - TARGETS)
        return -npx.sum(npx.log(label_probs))

    def loss2(params_dict):
        preds = predict(params_dict["W"], params_dict["b"], INPUTS)
        label_probs = preds * TARGETS + (1 - preds) * (1 - TARGETS)
        return -npx.sum(npx.log(label_probs))

    return loss, loss2


W0, B0 = np.array([0.3, -0.7, 1.1]), -0.2


def test_grad_argnums_and_value_and_grad_of_the_cookbook_example():
    ours, theirs = logistic(np), logistic(jnp)
    same_tree(sad.grad(ours[0])(W0, B0), jax.grad(theirs[0])(W0, B0))
    same_tree(sad.grad(ours[0], argnums=1)(W0, B0), jax.grad(theirs[0], argnums=1)(W0, B0))
    same_tree(sad.grad(ours[0], (0, 1))(W0, B0), jax.grad(theirs[0], (0, 1))(W0, B0))
    same_tree(sad.value_and_grad(ours[0], (0, 1))(W0, B0), jax.value_and_grad(theirs[0], (0, 1))(W0, B0))
    same_tree(sad.grad(ours[1])({"W": W0, "b": B0}), jax.grad(theirs[1])({"W": W0, "b": B0}))


def test_has_aux_on_grad_and_value_and_grad():
    def make(npx):
        def f(x, y):
            z = npx.sin(x) * y
            return npx.sum(z ** 2), {"z": z, "mean": npx.mean(z), "count": 3}
        return f

    x, y = np.array([0.3, 1.2, -0.4]), np.array([2.0, -1.0, 0.5])
    same_tree(sad.grad(make(np), has_aux=True)(x, y), jax.grad(make(jnp), has_aux=True)(x, y))
    same_tree(sad.value_and_grad(make(np), argnums=(0, 1), has_aux=True)(x, y),
              jax.value_and_grad(make(jnp), argnums=(0, 1), has_aux=True)(x, y))
    with pytest.raises(TypeError, match=r"has_aux=True\) needs a function returning a pair \(value, aux\)"):
        sad.grad(lambda v: v * v, has_aux=True)(1.0)


def test_keyword_arguments_are_static_and_part_of_the_cache_key():
    def make(npx):
        def f(x, scale=1.0, power=2):
            return scale * npx.sum(x ** power)
        return f

    g = sad.grad(make(np))
    x = np.array([1.0, -2.0, 0.5])
    for kwargs in ({}, {"scale": 3.0}, {"scale": 3.0, "power": 3}, {"power": 3, "scale": 3.0}):
        same_tree(g(x, **kwargs), jax.grad(functools.partial(make(jnp), **kwargs))(x))
    assert len(g.cache) == 3  # the same keywords in another order are the same signature
    with pytest.raises(TypeError, match="keyword argument 'scale' is static .* must be hashable or an array"):
        g(x, scale=bytearray(b"1"))


def test_pytrees_of_an_mlp_in_jax_order():
    """JAX's pytree tutorial: params as a list of dicts, relu MLP, mean squared error."""
    rng = np.random.default_rng(0)
    params = [dict(weights=rng.normal(size=(n_in, n_out)) * np.sqrt(2 / n_in), biases=np.ones(n_out))
              for n_in, n_out in zip([1, 6, 6], [6, 6, 1])]

    def make(npx, relu):
        def forward(params, x):
            *hidden, last = params
            for layer in hidden:
                x = relu(x @ layer["weights"] + layer["biases"])
            return x @ last["weights"] + last["biases"]

        def loss_fn(params, x, y):
            return npx.mean((forward(params, x) - y) ** 2)

        return loss_fn

    xs = rng.normal(size=(12, 1))
    ys = xs ** 2
    same_tree(sad.grad(make(np, sad.relu))(params, xs, ys), jax.grad(make(jnp, jax.nn.relu))(params, xs, ys))
    same_tree(sad.grad(make(np, lambda v: np.maximum(v, 0)))(params, xs, ys),
              jax.grad(make(jnp, lambda v: jnp.maximum(v, 0)))(params, xs, ys))


def test_relu_networks_follow_the_convention_at_ties():
    """Pre-activations exactly 0: relu′(0) = 0 and maximum(v, 0)′ = ½, as JAX's jax.nn.relu and
    jnp.maximum; moving the ties away changes nothing else."""
    W1 = np.array([[1.0, -1.0, 2.0]])
    b1 = np.array([-1.0, 1.0, 0.5])  # at x = 1 the first two units sit exactly at 0

    def make(relu, npx):
        return lambda p, x: npx.sum(relu(x @ p["W1"] + p["b1"]) * np.array([1.0, 2.0, 3.0]))

    p, x = {"W1": W1, "b1": b1}, np.array([1.0])
    for ours, theirs in ((sad.relu, jax.nn.relu), (lambda v: np.maximum(v, 0.0), lambda v: jnp.maximum(v, 0.0))):
        got = sad.grad(make(ours, np))(p, x)
        same_tree(got, jax.grad(make(theirs, jnp))(p, x))
    g = sad.grad(make(sad.relu, np))(p, x)
    np.testing.assert_array_equal(g["b1"], [0.0, 0.0, 3.0])  # relu′(0) = 0 at both ties
    g = sad.grad(make(lambda v: np.maximum(v, 0.0), np))(p, x)
    np.testing.assert_array_equal(g["b1"], [0.5, 1.0, 3.0])  # ½ each


def test_containers_of_every_kind_flatten_in_jax_order():
    Point = namedtuple("Point", ["x", "y"])
    tree = {"b": [np.array([1.0, 2.0]), (3.0, None)], "a": Point(4.0, np.array([[5.0], [6.0]])), "c": ()}

    def make(npx):
        def f(t):
            (v, (s, _)), p = t["b"], t["a"]
            return npx.sum(v ** 2) * s + p.x * npx.sum(p.y ** 3)
        return f

    same_tree(sad.grad(make(np))(tree), jax.grad(make(jnp))(tree))
    from subgraph_ad.pytrees import flatten
    leaves, _ = flatten(tree)
    assert [np.asarray(v).tolist() for v in leaves] == [np.asarray(v).tolist() for v in jax.tree_util.tree_leaves(tree)]


def test_arguments_that_are_not_numbers_arrays_or_containers_are_refused_up_front():
    g = sad.grad(lambda x: x * x)
    for bad, shown in ((object(), "object"), ({"a": "text"}, "str 'text'"), ({1.0, 2.0}, "set")):
        with pytest.raises(TypeError, match=f"grad: argument 0.* must be a real number or an array of real numbers, "
                                            f"got {shown}"):
            g(bad)
    assert not g.cache


# -- jvp, vjp, hvp -------------------------------------------------------------------------------
def test_function_forms_of_jvp_vjp_and_hvp():
    def make(npx):
        def f(W, x):
            return {"y": npx.tanh(W @ x), "n": npx.sum(x ** 2)}
        return f

    rng = np.random.default_rng(1)
    W, x = rng.normal(size=(3, 2)), rng.normal(size=2)
    vW, vx = rng.normal(size=(3, 2)), rng.normal(size=2)
    same_tree(sad.jvp(make(np), (W, x), (vW, vx)), jax.jvp(make(jnp), (W, x), (vW, vx)))
    out, back = sad.vjp(make(np), W, x)
    out_j, back_j = jax.vjp(make(jnp), W, x)
    same_tree(out, out_j)
    cot = {"y": rng.normal(size=3), "n": 0.7}
    same_tree(back(cot), back_j(cot))

    def g(npx):
        return lambda v: npx.sum(npx.sin(v) * v ** 3) + npx.prod(v)

    def jax_hvp(f, x, v):  # the cookbook's forward-over-reverse
        return jax.jvp(jax.grad(f), (x,), (v,))[1]

    v0, t0 = np.array([0.3, -1.2, 0.8]), np.array([1.0, 0.5, -2.0])
    same_tree(sad.hvp(g(np), v0, t0), jax_hvp(g(jnp), v0, t0))
    with pytest.raises(ValueError, match="tangent 0 has the structure"):
        sad.jvp(make(np), (W, x), (vx, vx))


def test_the_term_forms_of_jvp_vjp_and_hvp_keep_working():
    tape = sad.Tape()
    x, y = tape.var("x", 0.5), tape.var("y", 2.0)
    z, w = x * y, sad.sin(x)
    assert sad.jvp([z, w], {x: 1.0, y: 0.0}) == [2.0, np.cos(0.5)]
    assert sad.vjp([z, w], [1.0, 2.0])[x] == 2.0 + 2 * np.cos(0.5)
    assert [t.eval() for t in sad.hvp(z * z, [x, y], [1.0, 0.0])] == [2 * 2.0 ** 2, 4 * 0.5 * 2.0]


# -- vmap ----------------------------------------------------------------------------------------
def convolve(npx):
    def f(x, w):
        output = []
        for i in range(1, len(x) - 1):
            output.append(npx.dot(x[i - 1:i + 2], w))
        return npx.array(output)
    return f


def test_vmap_of_the_convolution_example():
    x, w = np.arange(5.0), np.array([2.0, 3.0, 4.0])
    xs, ws = np.stack([x, x + 1.0]), np.stack([w, 2 * w])
    same_tree(sad.vmap(convolve(np))(xs, ws), jax.vmap(convolve(jnp))(xs, ws))
    same_tree(sad.vmap(convolve(np), in_axes=[0, None])(xs, w), jax.vmap(convolve(jnp), in_axes=[0, None])(xs, w))
    same_tree(sad.vmap(convolve(np), in_axes=(1, None))(xs.T, w), jax.vmap(convolve(jnp), in_axes=(1, None))(xs.T, w))


def test_per_example_gradients_and_batched_hessians():
    def make(npx):
        def loss(params, x, y):
            pred = npx.tanh(x @ params["W"] + params["b"])
            return npx.sum((pred - y) ** 2)
        return loss

    rng = np.random.default_rng(2)
    params = {"W": rng.normal(size=(3, 2)), "b": rng.normal(size=2)}
    xs, ys = rng.normal(size=(7, 3)), rng.normal(size=(7, 2))
    same_tree(sad.vmap(sad.grad(make(np)), in_axes=(None, 0, 0))(params, xs, ys),
              jax.vmap(jax.grad(make(jnp)), in_axes=(None, 0, 0))(params, xs, ys))
    same_tree(sad.vmap(sad.value_and_grad(make(np), argnums=1), in_axes=(None, 0, 0))(params, xs, ys),
              jax.vmap(jax.value_and_grad(make(jnp), argnums=1), in_axes=(None, 0, 0))(params, xs, ys))

    def h(npx):
        return lambda v: npx.sum(npx.sin(v) * v[::-1]) * v[0]

    pts = rng.normal(size=(5, 4))
    same_tree(sad.vmap(sad.hessian(h(np)))(pts), jax.vmap(jax.hessian(h(jnp)))(pts))
    same_tree(sad.vmap(sad.jacobian(lambda v: np.sin(v) * v[0]))(pts),
              jax.vmap(jax.jacobian(lambda v: jnp.sin(v) * v[0]))(pts))
    grid = rng.normal(size=(2, 3, 4))
    same_tree(sad.vmap(sad.vmap(sad.grad(h(np))))(grid), jax.vmap(jax.vmap(jax.grad(h(jnp))))(grid))
    same_tree(sad.vmap(h(np))(pts), jax.vmap(h(jnp))(pts))


def test_vmap_runs_the_compiled_program_once_on_columns():
    """No Python loop over points: the trace is made once and the compiled program is called
    once for the whole batch (its call count is the oracle)."""
    calls = []
    h = sad.hessian(lambda v: np.sum(v ** 3))
    batched = sad.vmap(h)
    pts = np.random.default_rng(3).normal(size=(1000, 3))
    batched(pts)
    (compiled, assemble), = h.cache.entries.values()
    h.cache.entries[next(iter(h.cache.entries))] = (lambda *a: calls.append(np.shape(a[0])) or compiled(*a), assemble)
    H = batched(pts)
    assert calls == [(1000,)] and H.shape == (1000, 3, 3)
    np.testing.assert_allclose(H[:, 1, 1], 6 * pts[:, 1], rtol=1e-15)


def test_vmap_refusals():
    with pytest.raises(ValueError, match="different batch sizes"):
        sad.vmap(lambda a, b: a * b)(np.ones(3), np.ones(4))
    with pytest.raises(ValueError, match="in_axes must be an int, None, or a tuple"):
        sad.vmap(lambda a, b: a * b, in_axes=(0,))(np.ones(3), np.ones(3))
    with pytest.raises(TypeError, match="sparse=True.* is one point's"):
        sad.vmap(sad.hessian(lambda v: np.sum(v ** 3), sparse=True))(np.ones((2, 3)))


def test_an_array_argument_the_function_does_not_read_has_a_zero_gradient_of_its_shape():
    # a structural zero in an array var is zeros of its shape, as JAX gives (it raised instead)
    p, r = np.array([0.3, -0.7, 1.1]), np.ones((2, 2))
    value, (gp, gr) = sad.value_and_grad(lambda q, s: q[0] * 2.0 + np.sum(np.sin(np.arange(3.0))), argnums=(0, 1))(p, r)
    assert value == 0.6 + np.sum(np.sin(np.arange(3.0)))
    assert np.array_equal(gp, [2.0, 0.0, 0.0]) and np.array_equal(gr, np.zeros((2, 2)))


def test_python_numbers_take_the_one_point_path_with_the_general_paths_results():
    """Python numbers skip the pytree walk after the first call; the results are the closed
    forms whichever number type comes, a closure read at every call stays live, and inside a
    trace the call still appends to it (a number there is a constant of that trace)."""
    scale = np.array([3.0])

    def f(x, y):
        return scale[0] * x * x * y + np.sin(y)

    g = sad.grad(f, argnums=(0, 1))
    for x, y in ((2, 0.5), (2.0, 0.5), (np.float64(2.0), np.float32(0.5)), (2.0, 1), (-1.5, 0.25)):
        dx, dy = g(x, y)
        x, y = float(x), float(y)  # (float32 0.5 is exact)
        assert (dx, dy) == pytest.approx((2 * 3.0 * x * y, 3.0 * x * x + np.cos(y)), rel=1e-15)
    scale[0] = -1.0
    assert g(2.0, 0.5) == pytest.approx((2 * -2.0 * 0.5, -4.0 + np.cos(0.5)), rel=1e-15)
    assert g(True, 0.5) == pytest.approx((2 * -1.0 * 0.5, -1.0 + np.cos(0.5)), rel=1e-15)  # a bool is 1.0
    h = sad.grad(lambda t: np.exp(-t * t / 2) * np.sin(3 * t))
    outer = sad.grad(lambda a: h(0.3) * a * a)  # h at a number, inside the trace of a: a constant
    assert outer(2.0) == pytest.approx(4.0 * np.exp(-0.045) * (3 * np.cos(0.9) - 0.3 * np.sin(0.9)), rel=1e-14)


def test_batched_results_are_arrays_of_their_own():
    """A batch's scalar results are handed over without a copy: each still an array of its own,
    never an argument nor another result."""
    x = np.linspace(-1.0, 1.0, 7)
    g = sad.vmap(sad.grad(lambda t: t * t / 2))(x)  # the gradient is the argument itself
    np.testing.assert_array_equal(g, x)
    g[:] = 5.0
    assert x[0] == -1.0
    value, slope = sad.vmap(sad.value_and_grad(np.exp))(x)  # two outputs of one node
    np.testing.assert_allclose(value, np.exp(x), rtol=1e-15)
    np.testing.assert_allclose(slope, np.exp(x), rtol=1e-15)
    assert not np.shares_memory(value, slope)


def test_float64_batches_take_the_shortcut_and_still_see_what_changed():
    """A second call with float64 arrays of the same shapes skips the pytree walk; it still
    reads a closed-over array that changed in between, and float32 keeps its own path."""
    data = np.array([1.0, 2.0, 3.0])
    g = sad.vmap(sad.grad(lambda w: np.sum((w * data) ** 2)))
    w = np.ones((4, 3))
    np.testing.assert_allclose(g(w), np.tile(2 * data**2, (4, 1)), rtol=1e-15)
    data[:] = 10.0
    np.testing.assert_allclose(g(w), np.full((4, 3), 200.0), rtol=1e-15)
    found = g(w.astype(np.float32))
    assert found.dtype == np.float32 and np.allclose(found, 200.0)
    h = sad.grad(lambda a, b: np.sum(a * b))
    a, b = np.arange(3.0), np.arange(3.0, 6.0)
    np.testing.assert_array_equal(h(a, b), b)
    np.testing.assert_array_equal(h(a, b + 1), b + 1)


def test_parameter_pytrees_take_the_shortcut_with_the_general_paths_results():
    """Dicts, tuples and lists of float64 arrays (a network's parameters) skip the pytree walk
    after the first call: the same structure back, the same values as JAX's gradient and HVP,
    and a changed key set or shape takes the general path (a new program)."""
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    rng = np.random.default_rng(4)
    params = {"w": rng.normal(size=(3, 2)), "b": rng.normal(size=2)}
    x = rng.normal(size=(5, 3))

    def loss(p, xp=np):
        return xp.sum(xp.tanh(x @ p["w"] + p["b"]) ** 2)

    grad, hvp_v = sad.grad(loss), {"w": np.ones((3, 2)), "b": np.ones(2)}
    with jax_float64():
        want = jax.grad(lambda p: loss(p, jnp))(params)
        want_hvp = jax.jvp(jax.grad(lambda p: loss(p, jnp)), (params,), (hvp_v,))[1]
    for _ in range(3):
        found = grad(params)
        assert sorted(found) == ["b", "w"] and found["w"].shape == (3, 2)
        for k in params:
            np.testing.assert_allclose(found[k], want[k], rtol=1e-12)
        found_hvp = sad.hvp(loss, params, hvp_v)
        for k in params:
            np.testing.assert_allclose(found_hvp[k], want_hvp[k], rtol=1e-12)
    as_tuple = sad.grad(lambda p: np.sum(p[0] * p[1] ** 2))
    for container in (tuple, list):
        a, b = container((np.arange(3.0), np.arange(1.0, 4.0))), container((np.arange(3.0), np.arange(1.0, 4.0)))
        for args in (a, b):
            found = as_tuple(args)
            assert type(found) is container
            np.testing.assert_array_equal(found[0], np.arange(1.0, 4.0) ** 2)
            np.testing.assert_array_equal(found[1], 2 * np.arange(3.0) * np.arange(1.0, 4.0))
    g = sad.grad(lambda p: p["s"] ** 3 + np.sum(p["v"] ** 2) + np.sum(p.get("e", 0.0)))
    for odd in ({"s": np.array(2.0), "e": np.zeros((0, 3)), "v": np.arange(3.0)},  # a 0-d and an empty leaf
                {"s": np.array(2.0), "v": np.arange(3.0)}):
        for _ in range(3):  # the first call, then the shortcut: each leaf as the general path feeds it
            found = g(odd)
            assert type(found["s"]) is float and found["s"] == 12.0 and found.get("e", np.zeros((0, 3))).shape == (0, 3)
            np.testing.assert_array_equal(found["v"], 2 * np.arange(3.0))
    wider = {"w": rng.normal(size=(3, 2)), "b": rng.normal(size=2), "c": np.zeros(1)}
    assert sorted(sad.grad(lambda p: np.sum(p["w"]) + np.sum(p["c"]))(wider)) == ["b", "c", "w"]
