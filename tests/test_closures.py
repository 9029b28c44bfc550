"""Closures are live: what a traced function reads outside its arguments — a global, a closure
cell, an attribute, a list element, an array changed in place, a rebound number, a default
argument, a global read in nested code or by a helper function — is read at every call of every
transform, never frozen into the compiled program.

Each case builds a transform of f(w) = Σᵢ cᵢ·wᵢ³ (or the vector c·w³), where f reads c in one of
those ways; calls it (the trace); changes c; calls it again. The oracle is the closed form with
the CURRENT c: ∇f = 3c·w², ∇²f = diag(6c·w), Δf = Σ 6cᵢwᵢ, J(c·w³) = diag(3c·w²) — exact in
floating point up to a few ulps, so the tolerance is 1e-12 relative.
"""

import functools
import types

import numpy as np
import pytest

import subgraph_ad as sad

W = np.array([0.7, -1.3])
BATCH = np.array([[0.7, -1.3], [1.1, 0.4], [-0.5, 2.0]])
FIRST, SECOND = np.array([1.0, 2.0]), np.array([-3.0, 0.5])

GLOBAL_C = FIRST.copy()
NESTED_C = FIRST.copy()
HELPER_C = FIRST.copy()


def scalar_body(c, w):
    return np.sum(c * w ** 3)


def vector_body(c, w):
    return c * w ** 3


def _helper(w, body):
    return body(HELPER_C, w)


class Model:
    def __init__(self, c, body=scalar_body):
        self.c, self.body = c, body

    def energy(self, w):
        return self.body(self.c, w)


def _reset_globals():
    global GLOBAL_C, NESTED_C, HELPER_C
    GLOBAL_C, NESTED_C, HELPER_C = FIRST.copy(), FIRST.copy(), FIRST.copy()


def by_global(body):
    def f(w):
        return body(GLOBAL_C, w)

    def update(c):
        global GLOBAL_C
        GLOBAL_C = c.copy()

    return f, update


def by_global_in_nested_code(body):
    def f(w):
        read = lambda: NESTED_C  # noqa: E731 - the global is read by the nested code object
        return body(read(), w)

    def update(c):
        global NESTED_C
        NESTED_C = c.copy()

    return f, update


def by_helper_global(body):
    def f(w):
        return _helper(w, body)

    def update(c):
        HELPER_C[:] = c

    return f, update


def by_cell(body):
    c = FIRST.copy()

    def f(w):
        return body(c, w)

    def update(new):
        nonlocal c
        c = new.copy()

    return f, update


def by_array_in_place(body):
    c = FIRST.copy()

    def f(w):
        return body(c, w)

    def update(new):
        c[:] = new

    return f, update


def by_attribute(body):
    model = Model(FIRST.copy())

    def f(w):
        return body(model.c, w)

    def update(new):
        model.c = new.copy()

    return f, update


def by_nested_attribute_in_place(body):
    config = types.SimpleNamespace(params={"c": FIRST.copy()})

    def f(w):
        return body(config.params["c"], w)

    def update(new):
        config.params["c"][:] = new

    return f, update


def by_list_element(body):
    params = [FIRST.copy()]

    def f(w):
        return body(params[0], w)

    def update(new):
        params[0] = new.copy()

    return f, update


def by_rebound_scalars(body):
    c0, c1 = FIRST

    def f(w):
        return body(np.array([c0, c1]), w)

    def update(new):
        nonlocal c0, c1
        c0, c1 = float(new[0]), float(new[1])

    return f, update


def by_default_argument(body):
    c = FIRST.copy()

    def f(w, c=c):
        return body(c, w)

    def update(new):
        c[:] = new

    return f, update


def by_bound_method(body):
    model = Model(FIRST.copy(), body)

    def update(new):
        model.c = new.copy()

    return model.energy, update


class Energy:
    """A callable object: the traced function is its __call__, the data its attribute."""

    def __init__(self, body):
        self.c, self.body = FIRST.copy(), body

    def __call__(self, w):
        return self.body(self.c, w)


def by_callable_object(body):
    energy = Energy(body)

    def update(new):
        energy.c = new.copy()

    return energy, update


def by_partial(body):
    c = FIRST.copy()

    def update(new):
        c[:] = new

    return functools.partial(lambda w, c: body(c, w), c=c), update


KINDS = [by_global, by_global_in_nested_code, by_helper_global, by_cell, by_array_in_place, by_attribute,
         by_nested_attribute_in_place, by_list_element, by_rebound_scalars, by_default_argument, by_bound_method,
         by_callable_object, by_partial]


def _grad(c, w):
    return 3 * c * w ** 2


#: name: (the body, f -> a call of one transform object of f, the truth for c). The transform
#: is built once: its compiled program is what must not go stale.
TRANSFORMS = {
    "grad": (scalar_body, lambda f: (lambda g=sad.grad(f): g(W)), lambda c: _grad(c, W)),
    "value_and_grad": (scalar_body, lambda f: (lambda g=sad.value_and_grad(f): np.hstack(g(W))),
                       lambda c: np.hstack([np.sum(c * W ** 3), _grad(c, W)])),
    "hessian": (scalar_body, lambda f: (lambda g=sad.hessian(f): g(W)), lambda c: np.diag(6 * c * W)),
    "jacobian": (vector_body, lambda f: (lambda g=sad.jacobian(f): g(W)), lambda c: np.diag(_grad(c, W))),
    "vmap": (scalar_body, lambda f: (lambda g=sad.vmap(f): g(BATCH)), lambda c: np.sum(c * BATCH ** 3, axis=1)),
    "vmap_grad": (scalar_body, lambda f: (lambda g=sad.vmap(sad.grad(f)): g(BATCH)), lambda c: _grad(c, BATCH)),
    "laplacian": (scalar_body, lambda f: (lambda g=sad.laplacian(f): g(BATCH)),
                  lambda c: np.sum(6 * c * BATCH, axis=1)),
    "biharmonic_of_c_w4": (lambda c, w: np.sum(c * w ** 4), lambda f: (lambda g=sad.biharmonic(f): g(BATCH)),
                           lambda c: np.full(len(BATCH), 24 * np.sum(c))),
    "derivative_tensor": (scalar_body, lambda f: (lambda g=sad.derivative_tensor(f, 2): g(W)),
                          lambda c: np.diag(6 * c * W)),
    "hvp": (scalar_body, lambda f: (lambda: sad.hvp(f, W, np.array([1.0, -2.0]))),
            lambda c: 6 * c * W * [1.0, -2.0]),
    "jvp": (vector_body, lambda f: (lambda: sad.jvp(f, (W,), (np.array([1.0, -2.0]),))[1]),
            lambda c: _grad(c, W) * [1.0, -2.0]),
    "vjp": (vector_body, lambda f: (lambda: sad.vjp(f, W)[1](np.array([1.0, -2.0]))[0]),
            lambda c: _grad(c, W) * [1.0, -2.0]),
    "derivative": (scalar_body, lambda f: (lambda g=sad.derivative(f, 2): g(0.3)), lambda c: 6 * np.sum(c) * 0.3),
}


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.__name__)
@pytest.mark.parametrize("name", list(TRANSFORMS))
def test_a_captured_value_is_read_at_every_call(kind, name):
    _reset_globals()
    body, build, truth = TRANSFORMS[name]
    f, update = kind(body)
    call = build(f)
    np.testing.assert_allclose(call(), truth(FIRST), rtol=1e-12, atol=1e-12)
    update(SECOND)
    np.testing.assert_allclose(call(), truth(SECOND), rtol=1e-12, atol=1e-12)
    update(FIRST)
    np.testing.assert_allclose(call(), truth(FIRST), rtol=1e-12, atol=1e-12)


def _counted(f):
    """f, and a list that grows by one at each trace of it."""
    traces = []

    def counted(w):
        traces.append(1)
        return f(w)

    return counted, traces


def test_nothing_changed_means_no_trace_again():
    """The check is what keeps the cache: state that did not change (arrays with nan and -0.0
    included, a counter f itself bumps while traced, a cycle of containers) traces once."""
    data = np.array([np.nan, -0.0, 2.0])
    ring = [data]
    ring.append(ring)  # a list that holds itself
    model = types.SimpleNamespace(ring=ring, scale=0.5)
    g, traces = _counted(lambda w: np.sum(w * model.ring[0][2] * model.scale))
    grad = sad.grad(g)
    for _ in range(3):
        np.testing.assert_allclose(grad(W), [1.0, 1.0], rtol=1e-15)
    assert len(traces) == 1
    model.scale = 2.0
    np.testing.assert_allclose(grad(W), [4.0, 4.0], rtol=1e-15)
    data[2] = -1.0
    np.testing.assert_allclose(grad(W), [-2.0, -2.0], rtol=1e-15)
    assert len(traces) == 3


def test_a_change_that_reaches_no_constant_still_gives_the_right_answer():
    """Python control flow on captured data (a branch, a loop bound) takes the branch of the
    current data: the trace is made again, not patched."""
    settings = {"order": 2}

    def f(w):
        return np.sum(w ** settings["order"])

    g = sad.grad(f)
    np.testing.assert_allclose(g(W), 2 * W, rtol=1e-15)
    settings["order"] = 3
    np.testing.assert_allclose(g(W), 3 * W ** 2, rtol=1e-15)
    settings["extra"] = None  # a new key: a dict that grew
    np.testing.assert_allclose(g(W), 3 * W ** 2, rtol=1e-15)


def test_a_rebound_helper_function_is_seen():
    def square(v):
        return v ** 2

    helpers = types.SimpleNamespace(apply=square)
    g = sad.grad(lambda w: np.sum(helpers.apply(w)))
    np.testing.assert_allclose(g(W), 2 * W, rtol=1e-15)
    helpers.apply = np.sin
    np.testing.assert_allclose(g(W), np.cos(W), rtol=1e-15)


def test_more_state_than_the_budget_warns_once_and_still_runs():
    from subgraph_ad.trace.captured import BUDGET

    table = [float(k) for k in range(BUDGET + 10)]
    g = sad.grad(lambda w: w * table[1])
    with pytest.warns(RuntimeWarning, match="only the first are checked"):
        assert g(1.0) == 1.0
    assert g(2.0) == 1.0  # the warning is the trace's, not every call's
