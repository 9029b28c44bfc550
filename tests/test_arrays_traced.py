"""Traced NumPy code keeps its arrays: an array argument is one array var, and ``@``, ufuncs,
reductions, slices, ``np.dot``/``np.einsum``/``np.concatenate``/``np.stack`` make array nodes.
Oracles: the same function written with Python loops over scalars (traced on scalar vars), and
JAX in float64. ``lambdify`` of array graphs on each backend against ``Term.eval``."""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import subgraph_ad as sad
from subgraph_ad.compile.arrays import ArrayCompiled, JaxArrayCompiled
from subgraph_ad.compile.expanded import Expanded
from subgraph_ad.core.arrays import ARRAY_OPS

jax.config.update("jax_enable_x64", True)
TOL = {"rtol": 1e-12, "atol": 1e-12}


def mlp(npx, x, W, v):
    return npx.sum(npx.tanh(W @ x) * v) + npx.mean(x[1:] * x[:-1])


def mlp_loops(x, W, v):
    n, m = len(W), len(x)
    total = 0.0
    for i in range(n):
        total = total + np.tanh(sum(W[i][j] * x[j] for j in range(m))) * v[i]
    return total + sum(x[k + 1] * x[k] for k in range(m - 1)) / (m - 1)


def einsum_net(npx, x, W, v):
    h = npx.einsum("ij,j->i", W, npx.sin(x))
    g = npx.dot(h, v) + npx.einsum("i,i->", x, x)
    both = npx.concatenate([x, npx.stack([g, h[0]])])
    return npx.sum(both ** 2) + npx.reshape(W, (-1,))[2] * W.T[0, 1]


def einsum_loops(x, W, v):
    n, m = len(W), len(x)
    h = [sum(W[i][j] * np.sin(x[j]) for j in range(m)) for i in range(n)]
    g = sum(h[i] * v[i] for i in range(n)) + sum(x[j] * x[j] for j in range(m))
    both = [x[j] for j in range(m)] + [g, h[0]]
    return sum(b ** 2 for b in both) + W[0][2] * W[1][0]


CASES = [(mlp, mlp_loops), (einsum_net, einsum_loops)]


def corpus(seed: int, count: int = 3):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        n, m = int(rng.integers(2, 5)), int(rng.integers(3, 6))
        yield rng.normal(size=m), rng.normal(size=(n, m)), rng.normal(size=n)


def scalar_twin(loops):
    """The loop-written function, made to trace on scalar vars (it writes nothing, so only its
    indexing differs): called on nested lists of its arguments' elements."""
    return lambda x, W, v: loops(list(x), [list(row) for row in W], list(v))


@pytest.mark.slow
@pytest.mark.parametrize("array_f, loops", CASES)
def test_array_code_equals_its_loop_twin_and_jax(array_f, loops):
    f = lambda x, W, v: array_f(np, x, W, v)  # noqa: E731
    twin = lambda x, W, v: loops(x, W, v)  # noqa: E731  (x[i] of an array var: index nodes)
    jf = lambda x, W, v: array_f(jnp, x, W, v)  # noqa: E731
    for x, W, v in corpus(0):
        value, grads = sad.value_and_grad(f, argnums=(0, 1, 2))(x, W, v)
        value_t, grads_t = sad.value_and_grad(twin, argnums=(0, 1, 2))(x, W, v)
        jvalue, jgrads = jax.value_and_grad(jf, argnums=(0, 1, 2))(x, W, v)
        np.testing.assert_allclose(value, value_t, **TOL)
        np.testing.assert_allclose(value, float(jvalue), **TOL)
        for g, gt, jg in zip(grads, grads_t, jgrads):
            np.testing.assert_allclose(g, gt, **TOL)
            np.testing.assert_allclose(g, np.asarray(jg), **TOL)
        H = sad.hessian(f)(x, W, v)
        np.testing.assert_allclose(H, sad.hessian(twin)(x, W, v), **TOL)
        np.testing.assert_allclose(H, np.asarray(jax.hessian(jf)(x, W, v)), **TOL)
        g = lambda x: f(x, W, v)  # noqa: E731
        d = np.cos(np.arange(len(x)))
        Hv = sad.hvp(g, x, d)
        np.testing.assert_allclose(Hv, sad.hvp(lambda x: twin(x, W, v), x, d), **TOL)
        np.testing.assert_allclose(Hv, np.asarray(jax.jvp(jax.grad(lambda x: jf(x, W, v)), (x,), (d,))[1]), **TOL)


def test_a_traced_array_argument_is_one_array_node():
    """The gradient of the MLP's loss is built from a few array nodes, not width x fan-in."""
    from subgraph_ad.ad.reverse import grad_graph
    from subgraph_ad.trace.tracer import Traced

    trace = Traced(lambda x, W, v: mlp(np, x, W, v), [(30,), (40, 30), (40,)], "grad", arrays=True)
    z = trace.scalar_output("grad")
    grad_graph(z, [v for k in range(3) for v in trace.vars_of(k)])
    assert len(trace.vars_of(1)) == 1 and trace.vars_of(1)[0].shape == (40, 30)
    assert len(trace.tape.nodes) < 60


def test_code_that_writes_into_its_argument_still_traces_on_scalars():
    def swapped(x):
        x = x.copy()
        x[0], x[1] = x[1], x[0]
        return np.sum(x * np.arange(1.0, 4.0))

    np.testing.assert_allclose(sad.grad(swapped)(np.ones(3)), [2.0, 1.0, 3.0], **TOL)


def test_vmap_of_an_array_gradient_matches_jax():
    rng = np.random.default_rng(5)
    W, v = rng.normal(size=(3, 4)), rng.normal(size=3)
    xs = rng.normal(size=(6, 4))
    ours = sad.vmap(sad.grad(lambda x: mlp(np, x, W, v)))(xs)
    theirs = jax.vmap(jax.grad(lambda x: mlp(jnp, x, W, v)))(xs)
    np.testing.assert_allclose(ours, np.asarray(theirs), **TOL)


@pytest.mark.parametrize("backend", ["numpy", "numba", "jax"])
def test_lambdify_of_array_graphs_equals_eval(backend):
    rng = np.random.default_rng(7)
    tape = sad.Tape()
    W = tape.array("W", rng.normal(size=(4, 3)))
    x = tape.array("x", rng.normal(size=3))
    s = tape.var("s", 0.7)
    loss = (sad.tanh(W @ x) * s).sum() + x[1] * s
    outs = [loss, loss.grad_graph(W), sad.exp(W.T @ sad.sin(W @ x))]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f = sad.lambdify([W, x, s], outs, backend=backend)
    assert isinstance(f, {"numpy": ArrayCompiled, "jax": JaxArrayCompiled}.get(backend, Expanded))
    Wb, xb, sb = rng.normal(size=(5, 4, 3)), rng.normal(size=(5, 3)), rng.normal(size=5)
    for args in ((W.value, x.value, 0.7), (Wb, x.value, 0.7), (Wb, xb, sb)):
        found = f(*args)
        for value, t in zip(found, outs):
            np.testing.assert_allclose(np.asarray(value), t.eval({W: args[0], x: args[1], s: args[2]}), **TOL)


def every_op_graph(rng):
    """A graph with every array op (slices and their gradient's places, concat, stack, reshape,
    transpose, broadcast, sums over an axis, products of every rank) and scalar nodes."""
    tape = sad.Tape()
    W = tape.array("W", rng.normal(size=(4, 3)))
    x = tape.array("x", rng.normal(size=3))
    s = tape.var("s", 0.7)
    h = sad.tanh(W @ x + s)
    both = np.concatenate([h[1:], x * s, sad.stack([h[0], s, h[1] * s])])
    M = np.reshape(both, (3, 3)).T
    loss = (M @ x).sum() + (x @ M @ x) * (W.sum(axis=0) ** 2).sum() + sad.exp(W[:, 1]).sum()
    outs = [loss, loss.grad_graph(W), loss.grad_graph(x), M, sad.sigmoid(W.T) @ W]
    return (W, x, s), outs


def test_jax_array_programs_equal_eval_at_a_point_and_on_batches():
    """backend="jax" compiles the array graph itself (jnp ops under jax.jit), not its scalar
    expansion; every output equals Term.eval to 1e-12, with and without batch axes."""
    rng = np.random.default_rng(11)
    (W, x, s), outs = every_op_graph(rng)
    assert {node.op for node in W.tape.nodes} >= set(ARRAY_OPS) - {"broadcast"}
    f = sad.lambdify([W, x, s], outs, backend="jax")
    assert isinstance(f, JaxArrayCompiled)
    Wb, xb, sb = rng.normal(size=(5, 4, 3)), rng.normal(size=(5, 3)), rng.normal(size=5)
    for args in ((W.value, x.value, 0.7), (Wb, x.value, 0.7), (W.value, xb, sb), (Wb, xb, sb)):
        found = f(*args)
        assert all(type(v).__module__.startswith("jax") for v in found)  # composes with JAX
        batch = np.broadcast_shapes(np.shape(args[0])[:-2], np.shape(args[1])[:-1], np.shape(args[2]))
        for value, t in zip(found, outs):  # every output broadcast to the call's batch
            expected = np.broadcast_to(t.eval({W: args[0], x: args[1], s: args[2]}), batch + t.shape)
            np.testing.assert_allclose(np.asarray(value), expected, **TOL)


@pytest.mark.parametrize("native", [False, True])
def test_an_expanded_program_at_one_point_equals_eval(native, monkeypatch):
    """An array graph on a backend that expands it (Numba) takes one point as one vector of
    every input's numbers and gives each output as a view of one vector back — on the kernel
    (``native``: forced for this small graph) or the Python code; calls that are not one point
    of float64 arrays and numbers take the general path, with its checks."""
    from subgraph_ad.compile import lambdify as lambdify_module

    monkeypatch.setattr(lambdify_module, "NATIVE_POINT", 0 if native else 10**9)
    rng = np.random.default_rng(12)
    (W, x, s), outs = every_op_graph(rng)
    f = sad.lambdify([W, x, s], outs, backend="numba")
    assert isinstance(f, Expanded)
    for args in ((W.value, x.value, 0.7), (W.value, x.value, np.float64(-0.3)), (W.value.astype(np.float32), x.value, 2),
                 (np.asfortranarray(W.value), x.value[::-1].copy(), 0.1)):
        found = f(*args)
        for value, t in zip(found, outs):
            want = t.eval({W: np.asarray(args[0], dtype=float), x: args[1], s: float(args[2])})
            assert np.shape(value) == t.shape
            np.testing.assert_allclose(np.asarray(value), want, **TOL)
    assert f.inner.built == (("numba (point)",) if native else ("point",))
    with pytest.raises(ValueError, match=r"argument x is an array of shape \(3,\)"):
        f(W.value, np.ones(4), 0.7)


def test_an_expanded_program_on_a_batch_in_jax_layout_equals_eval():
    """A batch whose arrays have its axes in front (as ``vmap`` hands them over) runs on the
    Numba kernel reading each element's column where it lies and writing every output as
    columns of one array (``Expanded.columns``), unbatched arrays and numbers beside it; batches
    that do not share one shape take the general path. Every output equals Term.eval."""
    rng = np.random.default_rng(13)
    (W, x, s), outs = every_op_graph(rng)
    f = sad.lambdify([W, x, s], outs, backend="numba")
    Wb, xb, sb = rng.normal(size=(5, 4, 3)), rng.normal(size=(5, 3)), rng.normal(size=5)
    Wc, xc = rng.normal(size=(2, 3, 4, 3)), rng.normal(size=(2, 3, 3))
    calls = [((Wb, xb, sb), True), ((W.value, xb, 0.7), True), ((Wb, x.value, np.float64(0.2)), True),
             ((Wc, xc, rng.normal(size=(2, 3))), True), ((Wc[:, :, ::-1], xc, 0.3), True),
             ((Wb, xb[None], sb), False), ((Wb.astype(np.float32), xb, sb), False)]
    for args, columns in calls:
        assert (f.columns(*args) is not None) == columns
        found = f(*args)
        batch = np.broadcast_shapes(np.shape(args[0])[:-2], np.shape(args[1])[:-1], np.shape(args[2]))
        for value, t in zip(found, outs):
            expected = np.broadcast_to(t.eval({W: np.asarray(args[0], dtype=float), x: args[1], s: args[2]}),
                                       batch + t.shape)
            assert np.shape(value) == batch + t.shape
            np.testing.assert_allclose(value, expected, **TOL)


@pytest.mark.parametrize("array_f", [mlp, einsum_net])
def test_traced_transforms_under_vmap_on_the_numba_backend_match_jax(array_f, monkeypatch):
    """vmap of grad and of hvp on Numba (the batch read and the results written as columns of
    its arrays) against jax.vmap; with the NumPy default too (where the batch goes through
    transposed copies), the same numbers."""
    from subgraph_ad.compile import config
    from subgraph_ad.compile.lambdify import Compiled

    stacked, calls = Compiled.stacked, []
    monkeypatch.setattr(Compiled, "stacked", lambda self, *args: calls.append(self.backend) or stacked(self, *args))
    for x, W, v in corpus(5, 2):
        f = lambda x, W=W, v=v: array_f(np, x, W, v)  # noqa: E731
        jf = lambda x, W=W, v=v: array_f(jnp, x, W, v)  # noqa: E731
        X = np.random.default_rng(len(x)).normal(size=(7, len(x)))
        d = np.cos(np.arange(len(x)))
        want_grad = np.asarray(jax.vmap(jax.grad(jf))(X))
        want_hvp = np.asarray(jax.vmap(lambda x: jax.jvp(jax.grad(jf), (x,), (d,))[1])(X))
        for backend in ("numba", "numpy"):
            monkeypatch.setattr(config, "backend", backend)
            np.testing.assert_allclose(sad.vmap(sad.grad(f))(X), want_grad, **TOL)
            np.testing.assert_allclose(sad.vmap(lambda x: sad.hvp(f, x, d))(X), want_hvp, **TOL)
            np.testing.assert_allclose(sad.vmap(sad.vmap(sad.grad(f)))(X[:, None])[:, 0], want_grad, **TOL)
    assert calls and set(calls) == {"numba"}  # Numba's kernels took the columns in place; NumPy's did not
    calls.clear()  # vmap of a function that asks for Numba inside compiles it for Numba, whatever the default
    monkeypatch.setattr(config, "backend", "numpy")
    np.testing.assert_allclose(sad.vmap(lambda x: sad.hvp(f, x, d, backend="numba"))(X), want_hvp, **TOL)
    np.testing.assert_allclose(sad.vmap(lambda x: sad.hvp(f, x, d))(X), want_hvp, **TOL)
    assert calls == ["numba"]


@pytest.mark.parametrize("array_f", [mlp, einsum_net])
def test_traced_transforms_on_the_numba_backend_match_jax(array_f, monkeypatch):
    """backend="numba" (grad, hvp, jvp, vjp) expands the array graph and runs it on the Numba
    kernel (at one point too: forced for these small graphs)."""
    from subgraph_ad.compile import lambdify as lambdify_module
    from subgraph_ad.trace import transforms

    monkeypatch.setattr(lambdify_module, "NATIVE_POINT", 0)
    for x, W, v in corpus(4, 2):
        f = lambda x, W=W, v=v: array_f(np, x, W, v)  # noqa: E731
        jf = lambda x, W=W, v=v: array_f(jnp, x, W, v)  # noqa: E731
        d = np.cos(np.arange(len(x)))
        np.testing.assert_allclose(sad.grad(f, backend="numba")(x), np.asarray(jax.grad(jf)(x)), **TOL)
        np.testing.assert_allclose(sad.hvp(f, x, d, backend="numba"),
                                   np.asarray(jax.jvp(jax.grad(jf), (x,), (d,))[1]), **TOL)
        value, tangent = sad.jvp(f, (x,), (d,), backend="numba")
        jvalue, jtangent = jax.jvp(jf, (x,), (d,))
        np.testing.assert_allclose([value, tangent], [float(jvalue), float(jtangent)], **TOL)
        value, back = sad.vjp(f, x, backend="numba")
        np.testing.assert_allclose(back(2.5)[0], np.asarray(jax.vjp(jf, x)[1](2.5)[0]), **TOL)
        made = [transforms._hvp_transform(f, "numba"), transforms._jvp_transform(f, 1, "numba"),
                transforms._vjp_transform(f, 1, "numba"), transforms.value_transform(f, "vjp", "numba")]
        for transform in made:  # each compiled for Numba: the expanded graph on its kernel
            assert [type(c) for c, _ in transform.cache.entries.values()] == [Expanded]
            assert all(c.inner.backend == "numba" for c, _ in transform.cache.entries.values())


@pytest.mark.parametrize("array_f", [mlp, einsum_net])
def test_traced_transforms_on_the_jax_backend_match_jax(array_f):
    """sad.grad and sad.hvp with backend="jax" run the array program in JAX: values as JAX's."""
    f = lambda x, W, v: array_f(np, x, W, v)  # noqa: E731
    jf = lambda x, W, v: array_f(jnp, x, W, v)  # noqa: E731
    for x, W, v in corpus(3, 2):
        grads = sad.grad(f, argnums=(0, 1, 2), backend="jax")(x, W, v)
        for g, jg in zip(grads, jax.grad(jf, argnums=(0, 1, 2))(x, W, v)):
            assert isinstance(g, np.ndarray)
            np.testing.assert_allclose(g, np.asarray(jg), **TOL)


def test_a_table_times_a_batch_of_matrices_is_the_per_point_product():
    """The batch folded into one matrix product gives each point's own product (to rounding)."""
    rng = np.random.default_rng(2)
    tape = sad.Tape()
    A = tape.array("A", rng.normal(size=(3, 5)))
    B = tape.array("B", rng.normal(size=(5, 4)))
    b = tape.array("b", rng.normal(size=5))
    Bs, bs = rng.normal(size=(7, 2, 5, 4)), rng.normal(size=(7, 2, 5))
    As = rng.normal(size=(7, 2, 3, 5))
    cases = [(A @ B, {B: Bs}, lambda k: A.value @ Bs[k]), (A @ b, {b: bs}, lambda k: A.value @ bs[k]),
             (b @ B, {b: bs}, lambda k: bs[k] @ B.value), (b @ B, {B: Bs}, lambda k: b.value @ Bs[k]),
             (A @ B, {A: As}, lambda k: As[k] @ B.value), (A @ b, {A: As}, lambda k: As[k] @ b.value)]
    for term, values, point in cases:
        found = term.eval(values)
        for k in np.ndindex(7, 2):
            np.testing.assert_allclose(found[k], point(k), rtol=1e-15, atol=1e-14)
