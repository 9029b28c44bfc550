"""NumPy's ufuncs, operators, reductions and array functions on any mix of Terms, arrays of
Terms, numeric arrays, numbers and 0-d arrays: the result has NumPy's broadcast shape, and its
values are what NumPy computes on the numbers (the oracle); gradients through them are checked
against closed forms and central differences. SymPy numbers become exact constants."""

import itertools
import math

import numpy as np
import pytest
import sympy

import subgraph_ad as sad

SHAPES = [(), (3,), (2, 3), (1, 3), (2, 1)]


def values(t, at):
    """The numbers of a result (a Term, a TermArray, or numbers) at the var values ``at``."""
    if isinstance(t, sad.Term):
        return t.eval(at)
    if isinstance(t, np.ndarray) and t.dtype == object:
        return np.array([values(v, at) for v in t.ravel()], dtype=float).reshape(t.shape)
    return t


def operands(tape, shape, kind, rng):
    """One operand of a shape as each kind of thing NumPy code meets, and its numbers."""
    numbers = rng.uniform(0.5, 2.0, size=shape)
    if kind == "numbers":
        return (numbers if shape else float(numbers)), numbers, {}
    if kind == "0-d array":
        return np.array(float(np.ravel(numbers)[0])), np.array(float(np.ravel(numbers)[0])), {}
    vs = [tape.var(f"v{len(tape.vars)}") for _ in range(max(1, int(np.prod(shape))))]
    at = {v: float(n) for v, n in zip(vs, np.ravel(numbers))}
    if not shape:
        return vs[0], numbers, at
    return np.array(vs, dtype=object).reshape(shape).view(sad.TermArray), numbers, at


UFUNCS = [np.add, np.subtract, np.multiply, np.divide, np.power, np.maximum, np.minimum, np.arctan2, np.hypot,
          np.logaddexp, np.less, np.greater_equal, np.fmod, np.mod, np.floor_divide, np.fmax, np.heaviside]


@pytest.mark.parametrize("ufunc", UFUNCS, ids=lambda u: u.__name__)
def test_binary_ufuncs_broadcast_as_numpy_does(ufunc):
    rng = np.random.default_rng(0)
    kinds = ["terms", "numbers", "0-d array"]
    for (sa, ka), (sb, kb) in itertools.product(itertools.product(SHAPES, kinds), repeat=2):
        if "terms" not in (ka, kb) or (ka == "0-d array" and sa) or (kb == "0-d array" and sb):
            continue
        tape = sad.Tape()
        a, na, at_a = operands(tape, sa if ka != "0-d array" else (), ka, rng)
        b, nb, at_b = operands(tape, sb if kb != "0-d array" else (), kb, rng)
        got = ufunc(a, b)
        want = ufunc(na, nb)
        assert np.shape(got) == np.shape(want), (ufunc, sa, ka, sb, kb)
        np.testing.assert_allclose(values(got, {**at_a, **at_b}), want, rtol=1e-15, atol=0)


@pytest.mark.parametrize("op", ["+", "-", "*", "/", "**", "<", ">=", "%", "//"])
def test_operators_broadcast_as_numpy_does(op):
    rng = np.random.default_rng(1)
    for sa, sb in itertools.product(SHAPES, repeat=2):
        tape = sad.Tape()
        a, na, at_a = operands(tape, sa, "terms", rng)
        b, nb, at_b = operands(tape, sb, "numbers", rng)
        for left, right, nleft, nright in ((a, b, na, nb), (b, a, nb, na)):
            got = eval(f"left {op} right")  # noqa: S307 - the operator under test, from the list above
            want = eval(f"nleft {op} nright")  # noqa: S307
            assert np.shape(got) == np.shape(want), (op, sa, sb)
            np.testing.assert_allclose(values(got, {**at_a, **at_b}), want, rtol=1e-15, atol=0)


def test_the_bias_add_of_the_issue_and_an_mlp_layer():
    np.testing.assert_array_equal(sad.grad(lambda p: np.sum(p[:2] + p[2]))(np.array([1.0, 2.0, 3.0])), [1.0, 1.0, 2.0])
    np.testing.assert_array_equal(sad.grad(lambda p: np.sum(p[:2] * p[2]))(np.array([1.0, 2.0, 3.0])), [3.0, 3.0, 3.0])
    rng = np.random.default_rng(2)
    x, W1, b1, W2, b2 = (rng.normal(size=s) for s in ((4, 3), (3, 5), (5,), (5, 2), (2,)))

    def loss(W2, b2):
        hid = np.tanh(x @ W1 + b1)
        return np.sum((hid @ W2 + b2) ** 2)

    gW, gb = sad.grad(loss, argnums=(0, 1))(W2, b2)
    hid = np.tanh(x @ W1 + b1)
    residual = 2 * (hid @ W2 + b2)  # the closed form: ∂/∂W2 = hidᵀ·2r, ∂/∂b2 = Σ 2r
    np.testing.assert_allclose(gW, hid.T @ residual, rtol=1e-13)
    np.testing.assert_allclose(gb, residual.sum(axis=0), rtol=1e-13)


@pytest.mark.parametrize("reduce, axis", [
    (r, a) for r, a in itertools.product([np.sum, np.prod, np.max, np.min, np.mean, np.amax, np.cumsum],
                                         [None, 0, 1, (0, 1), -1])
    if not (r is np.cumsum and isinstance(a, tuple))])  # np.cumsum takes one axis
def test_reductions_of_arrays_of_terms(reduce, axis):
    rng = np.random.default_rng(3)
    tape = sad.Tape()
    a, numbers, at = operands(tape, (2, 3), "terms", rng)
    got, want = reduce(a, axis=axis), reduce(numbers, axis=axis)
    assert np.shape(got) == np.shape(want)
    np.testing.assert_allclose(values(got, at), want, rtol=1e-15)
    if reduce not in (np.cumsum,):
        kept = reduce(a, axis=axis, keepdims=True)
        assert np.shape(kept) == np.shape(reduce(numbers, axis=axis, keepdims=True))


def test_a_reduction_of_one_term_is_the_term():
    tape = sad.Tape()
    x = tape.var("x", 2.0)
    assert np.sum(x) is x and np.max(x) is x and np.prod(x) is x and np.mean(x).eval() == 2.0


def test_gradients_through_max_dot_einsum_and_matmul():
    v = np.array([0.3, 1.7, -0.2, 1.1])
    np.testing.assert_array_equal(sad.grad(lambda a: np.max(a))(v), [0.0, 1.0, 0.0, 0.0])
    np.testing.assert_array_equal(sad.grad(lambda a: np.min(a ** 2))(v), [0.0, 0.0, -0.4, 0.0])
    M = np.arange(12.0).reshape(3, 4) / 7
    for f, closed in ((lambda a: np.dot(M @ a, M @ a), 2 * M.T @ M @ v),
                      (lambda a: np.einsum("ij,j,i->", M, a, M @ a), 2 * M.T @ M @ v),
                      (lambda a: np.linalg.norm(a) ** 2, 2 * v),
                      (lambda a: np.vdot(np.outer(a, a), np.eye(4)), 2 * v),
                      (lambda a: np.trace(np.outer(a, a)), 2 * v)):
        np.testing.assert_allclose(sad.grad(f)(v), closed, rtol=1e-13)
    h = 1e-6  # a central difference of np.max of a smooth composite: error h²·f‴ ≈ 1e-12
    f = lambda a: np.max(np.sin(a) * a) + np.mean(np.exp(a))  # noqa: E731
    g = sad.grad(f)(v)
    for i in range(4):
        e = np.eye(4)[i] * h
        assert g[i] == pytest.approx((f(v + e) - f(v - e)) / (2 * h), rel=1e-7, abs=1e-9)


def test_array_functions_keep_arrays_of_terms():
    tape = sad.Tape()
    x, y = tape.var("x", 1.0), tape.var("y", 2.0)
    for built in (np.stack([x, y]), np.concatenate([np.stack([x]), np.array([3.0])]), np.atleast_1d(x),
                  np.reshape(np.stack([x, y, x, y]), (2, 2)).T, np.stack([x, y])[::-1]):
        assert isinstance(built, sad.TermArray)
    assert [t.eval() for t in np.where(np.stack([x, y]) > 1.5, 1.0, np.stack([x, y]))] == [1.0, 1.0]
    assert np.clip(np.stack([x, y]), 0, 1.5).eval().tolist() == [1.0, 1.5]
    assert np.round(np.stack([x * 1.25, y * 1.25])).eval().tolist() == [1.0, 2.0]


def test_out_is_refused_clearly_and_so_are_non_numbers():
    tape = sad.Tape()
    x = tape.var("x", 1.0)
    a = np.stack([x, x])
    before = len(tape)
    with pytest.raises(TypeError, match=r"np.add\(..., out=\) is not supported on Terms .*not a number to store"):
        np.add(x, 1.0, out=np.empty(()))
    with pytest.raises(TypeError, match=r"np.multiply\(..., out=\) is not supported"):
        np.multiply(a, 2.0, out=np.empty(2))
    with pytest.raises(TypeError, match="takes Terms, real numbers and arrays of them, got .*dtype <U1"):
        np.add(a, np.array(["a", "b"]))
    with pytest.raises(TypeError, match="got complex"):
        np.multiply(x, 1j)
    assert len(tape) == before


def test_sympy_numbers_in_term_arithmetic_are_exact_constants():
    tape = sad.Tape()
    x = tape.var("x", 3.0)
    X = sympy.Symbol("x")
    assert (x * sympy.Rational(1, 3)).to_sympy() == X / 3 and isinstance(x * sympy.Rational(1, 3), sad.Term)
    assert (x + sympy.pi).to_sympy() == X + sympy.pi and (x ** sympy.Integer(2)).to_sympy() == X ** 2
    assert (x - sympy.E).to_sympy() == X - sympy.E
    assert (x * sympy.Float(0.1)).to_sympy() == sympy.Float(0.1) * X
    assert (x * sympy.sqrt(2)).eval() == pytest.approx(3 * math.sqrt(2), rel=1e-15)
    assert np.add(x, sympy.Rational(1, 3)).to_sympy() == X + sympy.Rational(1, 3)
    assert (x > sympy.Rational(1, 2)).eval() == 1.0
    assert not isinstance(x * sympy.I, sad.Term)  # no real number: SymPy takes the Term as its expression
