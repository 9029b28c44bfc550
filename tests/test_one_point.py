"""The one-point call of a transform on float64 arrays (the common call): a result that is one
pytree of the program's outputs in order (a gradient, an HVP, ``jit``'s value) is filled
straight from the vector of their numbers, on the NumPy and the Numba backend alike. Checked
against closed forms and against f itself run by NumPy; the path is the one taken (the general
assembly refused after the first call); successive results are new arrays, not one buffer."""

import numpy as np
import pytest

import subgraph_ad as sad
from random_programs import BINARY, UNARY, grown
from subgraph_ad.trace.transform import Transformed

BACKENDS = ["numpy", "numba"]


def f(d):
    """Σ a³ + Σ_ij sin(B_ij) c_j + Σ (a − a): a repeated operand, and a part with zero tangent."""
    return np.sum(d["a"] ** 3) + np.sum(np.sin(d["B"]) @ d["c"]) + np.sum(d["a"] - d["a"])


def gradient(d):
    return {"B": np.cos(d["B"]) * d["c"], "a": 3 * d["a"] ** 2, "c": np.sin(d["B"]).sum(axis=0)}


def hessian_times(d, v):
    B, c = d["B"], d["c"]
    return {"B": -np.sin(B) * c * v["B"] + np.cos(B) * v["c"], "a": 6 * d["a"] * v["a"],
            "c": (np.cos(B) * v["B"]).sum(axis=0)}


def point(seed):
    rng = np.random.default_rng(seed)
    return {"a": rng.normal(size=3), "B": rng.normal(size=(4, 2)), "c": rng.normal(size=2)}


def _general_path_refused(monkeypatch):
    def refuse(*args):
        raise AssertionError("assembled from the program's values one by one, not filled from its vector")

    monkeypatch.setattr(Transformed, "_run", staticmethod(refuse))


def _close(found, expected):
    assert sorted(found) == sorted(expected)
    for k in expected:
        assert type(found[k]) is np.ndarray and found[k].shape == expected[k].shape
        np.testing.assert_allclose(found[k], expected[k], rtol=1e-13, atol=1e-14)


@pytest.mark.parametrize("backend", BACKENDS)
def test_gradient_and_hvp_of_a_dict_of_arrays_are_filled_from_one_vector(backend, monkeypatch):
    g = sad.grad(f, backend=backend)
    d, e, v = point(0), point(1), point(2)
    _close(g(d), gradient(d))  # the first call: traced, compiled
    _close(sad.hvp(f, d, v, backend=backend), hessian_times(d, v))
    _general_path_refused(monkeypatch)
    first = g(d)
    second = g(e)
    _close(first, gradient(d))  # not overwritten by the call after it
    _close(second, gradient(e))
    assert not any(np.shares_memory(first[k], second[k]) for k in first)
    _close(sad.hvp(f, e, v, backend=backend), hessian_times(e, v))


@pytest.mark.parametrize("backend", BACKENDS)
def test_one_array_argument_gives_its_gradient_in_its_shape(backend, monkeypatch):
    """One 2-D leaf: the vector itself, reshaped."""
    g = sad.grad(lambda W: np.sum(np.tanh(W) ** 2), backend=backend)
    W = np.linspace(-1.5, 1.5, 12).reshape(3, 4)
    g(W)
    _general_path_refused(monkeypatch)
    found = g(W)
    assert found.shape == (3, 4)
    np.testing.assert_allclose(found, 2 * np.tanh(W) / np.cosh(W) ** 2, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("backend", BACKENDS)
def test_jit_of_a_nested_result_equals_numpy_running_f(backend, monkeypatch):
    """A result with a number among arrays, nested (a dict in a tuple): the number a float,
    each array a new one of its shape, as NumPy running f gives them."""

    def h(x, W):
        y = np.tanh(W @ x)
        return {"norm": np.sum(y * y), "y": y}, W.T @ y

    jitted = sad.jit(h, backend=backend)
    x, W = np.array([0.3, -1.2, 2.0]), np.arange(6.0).reshape(2, 3) / 7
    jitted(x, W)
    _general_path_refused(monkeypatch)
    (head, back), (head_np, back_np) = jitted(x, W), h(x, W)
    assert type(head["norm"]) is float and head["norm"] == pytest.approx(head_np["norm"], rel=1e-14)
    np.testing.assert_allclose(head["y"], head_np["y"], rtol=1e-14)
    np.testing.assert_allclose(back, back_np, rtol=1e-14)


def test_other_calls_still_take_the_general_path():
    """float32 arguments, lists of numbers, value_and_grad (value and gradient: not one tree):
    the same numbers through the general assembly."""
    g = sad.grad(lambda x: np.sum(x ** 3))
    x = np.array([1.0, -2.0, 0.5])
    np.testing.assert_allclose(g(x), 3 * x ** 2, rtol=1e-15)
    assert g(x.astype(np.float32)).dtype == np.float32
    np.testing.assert_allclose(g(x.astype(np.float32)), 3 * x ** 2, rtol=1e-6)
    value, grad = sad.value_and_grad(lambda x: np.sum(x ** 3))(x)
    assert value == pytest.approx(np.sum(x ** 3), rel=1e-15)
    np.testing.assert_allclose(grad, 3 * x ** 2, rtol=1e-15)


GROUPS = [UNARY[k:k + 8] for k in range(0, len(UNARY), 8)] + [BINARY[k:k + 7] for k in range(0, len(BINARY), 7)]


def random_program(seed: int, names: list[str]):
    """f({"x": (2,), "p": (3,)}) of arrays, drawn by ``seed``: each of ``names`` once, elementwise,
    on random earlier arrays (f(a, a) at times), among the arithmetic kinds (a − a, conditions);
    p[2] reaches f only through a product, x twice in the pool."""

    def f(d):
        x, p = d["x"], d["p"]
        pool = grown([x, p[:2], x * p[2], x], names, np.random.default_rng(seed))
        return np.sum(pool[-1]) + 0.5 * np.sum(pool[-2])

    return f


def _plain_hvp(f, d, v, h=1e-4):
    """H·v by central differences of f at d + h·e_k ± h·v (error O(h²), and 1e-16·|f|/h²)."""
    flat = np.concatenate([d["p"], d["x"]])
    along = np.concatenate([v["p"], v["x"]])

    def at(y):
        return f({"p": y[:3], "x": y[3:]})

    out = np.zeros(flat.size)
    for k in range(flat.size):
        e = np.zeros(flat.size)
        e[k] = h
        out[k] = (at(flat + e + h * along) - at(flat + e - h * along) - at(flat - e + h * along)
                  + at(flat - e - h * along)) / (4 * h * h)
    return {"p": out[:3], "x": out[3:]}


def _plain_gradient(f, d, h=1e-6):
    found = {}
    for key in d:
        found[key] = np.zeros_like(d[key])
        for k in range(d[key].size):
            up, down = {n: a.copy() for n, a in d.items()}, {n: a.copy() for n, a in d.items()}
            up[key][k] += h
            down[key][k] -= h
            found[key][k] = (f(up) - f(down)) / (2 * h)
    return found


def _near(found, want, tolerance):
    scale = max(1.0, max(float(np.max(np.abs(w))) for w in want.values()))
    for key in want:
        np.testing.assert_allclose(found[key], want[key], rtol=tolerance, atol=tolerance * scale)


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("names", GROUPS, ids=lambda names: "-".join(names))
def test_random_programs_over_every_built_in_match_central_differences(names, backend, monkeypatch):
    """Random array programs (every built-in, repeated operands, conditions, a part with zero
    tangent): the filled gradient and HVP at one point against central differences of f run
    by NumPy (h = 1e-6 for the gradient, 1e-4 for the HVP: both errors under 1e-6 here)."""
    f = random_program(sum(map(len, names)), names)
    d = {"p": np.array([0.3, -0.7, 1.1]), "x": np.array([0.45, -0.2])}
    v = {"p": np.array([1.0, 0.5, -0.25]), "x": np.array([-0.5, 2.0])}
    g = sad.grad(f, backend=backend)
    g(d)
    sad.hvp(f, d, v, backend=backend)
    _general_path_refused(monkeypatch)
    _near(g(d), _plain_gradient(f, d), 1e-6)
    _near(sad.hvp(f, d, v, backend=backend), _plain_hvp(f, d, v), 1e-5)


def rosenbrock(d):
    x = np.concatenate([d["head"], d["tail"]])
    return np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def rosenbrock_hvp(x, v):
    """H·v of Rosenbrock by its closed-form tridiagonal Hessian."""
    diagonal = np.zeros_like(x)
    diagonal[:-1] += 1200 * x[:-1] ** 2 - 400 * x[1:] + 2
    diagonal[1:] += 200
    off = -400 * x[:-1]
    out = diagonal * v
    out[:-1] += off * v[1:]
    out[1:] += off * v[:-1]
    return out


def test_a_native_kernel_takes_the_leaves_end_to_end(monkeypatch):
    """On the Numba kernel of one point (a program past ``NATIVE_POINT`` steps), the leaves of x
    and v go into its input vector one after another, with no vector joined first; the HVP is
    the closed form's."""
    from subgraph_ad.compile.backends import numba_point

    given = []
    real = numba_point.Point.on_array

    def spy(self, values):
        given.append(type(values))
        return real(self, values)

    monkeypatch.setattr(numba_point.Point, "on_array", spy)
    rng = np.random.default_rng(3)
    x, v = rng.normal(size=80), rng.normal(size=80)
    d, w = {"head": x[:30], "tail": x[30:]}, {"head": v[:30], "tail": v[30:]}
    for _ in range(2):  # traced, then through the way kept
        found = sad.hvp(rosenbrock, d, w, backend="numba")
        np.testing.assert_allclose(np.concatenate([found["head"], found["tail"]]), rosenbrock_hvp(x, v),
                                   rtol=1e-12, atol=1e-10)
    assert given == [list, list]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_changed_closure_is_seen_on_the_kept_way(backend):
    """Called at one point three times (traced; the way kept; straight there), then with the
    closed-over array changed in place: traced again, the new gradient, not the frozen one."""
    scale = np.array([1.0, 2.0, 3.0])
    g = sad.grad(lambda x: np.sum(scale * x ** 2), backend=backend)
    x = np.array([0.5, -1.0, 2.0])
    for _ in range(3):
        np.testing.assert_allclose(g(x), 2 * scale * x, rtol=1e-15)
    scale[1] = -7.0
    np.testing.assert_allclose(g(x), 2 * np.array([1.0, -7.0, 3.0]) * x, rtol=1e-15)
    np.testing.assert_allclose(g(x), 2 * np.array([1.0, -7.0, 3.0]) * x, rtol=1e-15)


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_hvp_whose_blocks_are_zero_is_zeros_of_each_leafs_shape(backend):
    """H·v of a function linear in a leaf (or constant) is zero there: the tape's 0 for that
    block, given back as zeros of the leaf's shape (it raised ValueError: a reshape of 1 number)."""
    c = np.arange(4.0)
    A, V = np.linspace(0.0, 1.0, 12).reshape(3, 4), np.ones((3, 4))
    for f in (lambda A: np.sum(A), lambda A: np.sum(A * c), lambda A: 3.0 + 0.0 * np.sum(A)):
        for _ in range(2):  # the first call and the kept way
            found = sad.hvp(f, A, V, backend=backend)
            np.testing.assert_array_equal(found, np.zeros((3, 4)))
            assert found.flags.writeable
    d, v = {"a": np.array([1.0, 2.0, 3.0]), "B": np.ones((2, 2))}, {"a": np.ones(3), "B": np.ones((2, 2))}
    found = sad.hvp(lambda d: np.sum(d["a"] ** 3) + np.sum(d["B"] * 2.0), d, v, backend=backend)
    np.testing.assert_array_equal(found["B"], np.zeros((2, 2)))
    np.testing.assert_allclose(found["a"], 6 * d["a"], rtol=1e-15)  # d²/da² Σ a³ = 6a, along ones
    batched = sad.vmap(lambda A: sad.hvp(lambda A: np.sum(A * c), A, V, backend=backend))(np.ones((2, 3, 4)))
    np.testing.assert_array_equal(batched, np.zeros((2, 3, 4)))


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_last_calls_way_serves_only_arguments_laid_out_as_its(backend):
    """The last call's way (checked leaf by leaf, no key built) against calls that differ from
    it in one thing each — other keys of as many, a sequence's type, a shape, float32, a
    byte-swapped float64, an array of numbers where a dict was — each twice in a row, then in
    turns with it: each
    gradient is 2·x of its own leaves (Σ x² over every leaf), in its own structure."""
    g = sad.grad(lambda t: sum(np.sum(leaf ** 2) for leaf in (t.values() if isinstance(t, dict) else t))
                 if not isinstance(t, np.ndarray) else np.sum(t ** 2), backend=backend)
    rng = np.random.default_rng(5)
    base = {"a": rng.normal(size=3), "b": rng.normal(size=(2, 2))}
    others = [{"a": base["a"], "c": base["b"]}, [base["a"], base["b"]], (base["a"], base["b"]),
              {"a": base["a"], "b": rng.normal(size=(2, 3))}, {"a": base["a"], "b": base["b"].astype(np.float32)},
              {"a": base["a"], "b": base["b"].astype(">f8")}, rng.normal(size=4)]
    for other in others:
        for arg in (base, base, other, other, base, other, base):
            found = g(arg)
            if isinstance(arg, np.ndarray):
                np.testing.assert_array_equal(found, 2 * arg)
                continue
            assert type(found) is type(arg)
            if isinstance(arg, dict):
                assert sorted(found) == sorted(arg)
            pairs = [(found[k], arg[k]) for k in arg] if isinstance(arg, dict) else list(zip(found, arg))
            for got, leaf in pairs:  # float64 beside a float64 leaf, as JAX keeps it
                assert got.shape == leaf.shape and got.dtype == np.float64
                np.testing.assert_array_equal(got, 2 * np.asarray(leaf, dtype=np.float64))
