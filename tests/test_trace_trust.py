"""Traced functions that must not give a wrong answer quietly: writes into a traced argument,
complex input, NumPy's statistics on traced arrays, and the memory of a large dense Hessian.
The oracles are closed forms and central differences of the same function run on floats."""

import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import subgraph_ad as sad


def central_gradient(f, x, h=1e-5):
    """∂f/∂x by central differences on a float copy for each step (f may write into its
    argument). Error O(h²·f‴) ≈ 1e-10 for the smooth functions here, far below the 1e-7 used."""
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += h
        down[i] -= h
        g[i] = (f(up) - f(down)) / (2 * h)
    return g


def swap_linear(x):
    x[0], x[1] = x[1], x[0]
    return 2 * x[0] + 3 * x[1]


def swap_cubic(x):
    x[0], x[1] = x[1], x[0]
    return x[0] ** 3 * x[1]


def copy_over(x):
    x[0] = x[1]
    return 2 * x[0] + 3 * x[1]


def scale_in_place(x):
    x[0] = x[0] * 2  # legal NumPy: the function depends on the original x[0]
    return x[0] * x[1]


def zero_in_place(x):
    x[1] = 0.0  # a number written over a var: the result no longer depends on x[1]
    return x[0] ** 2 + x[1]


def swap_vector(x):
    x[0], x[1] = x[1], x[0]
    return np.array([2 * x[0], x[1] ** 2, x[0] * x[2]])


@pytest.mark.parametrize("f, expected", [
    (swap_linear, [3.0, 2.0]),            # 2·x1 + 3·x0
    (copy_over, [0.0, 5.0]),              # 5·x1
    (scale_in_place, [4.0, 2.0]),         # 2·x0·x1 at (1, 2)
    (zero_in_place, [2.0, 0.0]),          # x0²
])
def test_grad_differentiates_by_the_vars_as_created_whatever_f_writes(f, expected):
    x0 = np.array([1.0, 2.0])
    np.testing.assert_allclose(sad.grad(f)(x0), expected, rtol=1e-15)
    np.testing.assert_allclose(sad.grad(f)(x0), central_gradient(f, x0), rtol=1e-7, atol=1e-9)
    np.testing.assert_array_equal(x0, [1.0, 2.0])  # the caller's array is never written


def test_hessians_after_a_swap_are_not_permuted():
    x0 = np.array([1.0, 2.0])
    # swap_cubic is x1³·x0: ∂²/∂x0² = 0, ∂²/∂x0∂x1 = 3·x1², ∂²/∂x1² = 6·x0·x1
    expected = np.array([[0.0, 3 * 2.0**2], [3 * 2.0**2, 6 * 1.0 * 2.0]])
    np.testing.assert_allclose(sad.hessian(swap_cubic)(x0), expected, rtol=1e-15)
    np.testing.assert_allclose(sad.hessian(swap_cubic, sparse=True)(x0).toarray(), expected, rtol=1e-15)
    np.testing.assert_allclose(sad.hessian(scale_in_place)(x0), [[0.0, 2.0], [2.0, 0.0]], rtol=1e-15)


def test_jacobians_after_a_swap_are_not_permuted():
    x0 = np.array([1.0, 2.0, 5.0])
    # swap_vector is (2·x1, x0², x1·x2)
    expected = np.array([[0.0, 2.0, 0.0], [2 * 1.0, 0.0, 0.0], [0.0, 5.0, 2.0]])
    np.testing.assert_allclose(sad.jacobian(swap_vector)(x0), expected, rtol=1e-15)
    np.testing.assert_allclose(sad.jacobian(swap_vector, sparse=True)(x0).toarray(), expected, rtol=1e-15)


def test_writes_across_two_traced_arguments():
    def f(x, y):
        x[0], y[0] = y[0], x[0]
        return 2 * x[0] + 5 * y[0] + x[1] * y[1]  # 2·y0 + 5·x0 + x1·y1

    gx, gy = sad.grad(f, argnums=(0, 1))(np.array([1.0, 3.0]), np.array([2.0, 4.0]))
    np.testing.assert_allclose(gx, [5.0, 4.0], rtol=1e-15)
    np.testing.assert_allclose(gy, [2.0, 3.0], rtol=1e-15)


def sum_of_squares(x):
    return np.sum(x * x) if np.ndim(x) else x * x


COMPLEX = [np.array([1.0 + 2.0j, 3.0]), np.array([1.0 + 0.0j]), 1.0 + 2.0j, np.complex128(2.0),
           np.array([1.0, 2.0j], dtype=object)]


@pytest.mark.parametrize("transform", [
    lambda: sad.grad(sum_of_squares),
    lambda: sad.hessian(sum_of_squares),
    lambda: sad.hessian(sum_of_squares, sparse=True),
    lambda: sad.jacobian(lambda x: x * x),
    lambda: sad.derivative(lambda x: x * x, 2),
], ids=["grad", "hessian", "hessian-sparse", "jacobian", "derivative"])
@pytest.mark.parametrize("value", COMPLEX, ids=repr)
def test_complex_input_is_refused_up_front(transform, value):
    fn = transform()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no ComplexWarning on the way: refused before any cast
        with pytest.raises(TypeError, match=r"argument 0 is complex .*complex input is not supported; "
                                            r"give a real number or an array of real numbers"):
            fn(value)
    assert not fn.cache  # nothing was traced


def test_complex_input_is_refused_in_any_position_and_real_input_of_every_kind_is_not():
    with pytest.raises(TypeError, match=r"grad: argument 1 is complex"):
        sad.grad(lambda x, y: x * y)(1.0, 2.0j)
    f = sad.grad(lambda x: np.sum(x * x))
    for value in (np.array([1, 2]), [1.0, 2.0], np.array([1.0, 2.0], dtype=object), np.array([1.0, 2.0], np.float32)):
        np.testing.assert_allclose(f(value), [2.0, 4.0], rtol=1e-15)


def test_text_input_is_refused_naming_the_argument():
    with pytest.raises(TypeError, match=r"grad: argument 0 must be a real number or an array of real numbers, "
                                        r"got str 'ab'"):
        sad.grad(lambda x: x * x)("ab")


def var_gradient(x, ddof=0):
    return 2 * (x - x.mean()) / (x.size - ddof)


@pytest.mark.parametrize("ddof", [0, 1])
def test_np_var_and_np_std_of_a_traced_array(ddof):
    x0 = np.array([1.0, 2.0, 4.0, -0.5])
    n = x0.size
    np.testing.assert_allclose(sad.grad(lambda x: np.var(x, ddof=ddof))(x0), var_gradient(x0, ddof), rtol=1e-14)
    np.testing.assert_allclose(sad.grad(lambda x: x.var(ddof=ddof))(x0), var_gradient(x0, ddof), rtol=1e-14)
    std = x0.std(ddof=ddof)
    std_gradient = (x0 - x0.mean()) / ((n - ddof) * std)
    np.testing.assert_allclose(sad.grad(lambda x: np.std(x, ddof=ddof))(x0), std_gradient, rtol=1e-14)
    np.testing.assert_allclose(sad.grad(lambda x: x.std(ddof=ddof))(x0), std_gradient, rtol=1e-14)
    # var is the quadratic form (2 / (n - ddof))·(I - 11ᵀ/n)
    np.testing.assert_allclose(sad.hessian(lambda x: np.var(x, ddof=ddof))(x0),
                               2 / (n - ddof) * (np.eye(n) - 1 / n), rtol=1e-14, atol=1e-15)
    for f in (lambda x: np.std(x, ddof=ddof), lambda x: np.var(np.exp(x), ddof=ddof)):
        np.testing.assert_allclose(sad.grad(f)(x0), central_gradient(f, x0), rtol=1e-7)


def test_np_var_along_an_axis_and_of_one_element():
    x0 = np.array([[1.0, 2.0, 0.5], [3.0, -1.0, 2.0]])
    jac = sad.jacobian(lambda x: np.var(x, axis=0))(x0)
    expected = np.zeros((3, 2, 3))
    for j in range(3):
        expected[j, :, j] = var_gradient(x0[:, j])
    np.testing.assert_allclose(jac, expected, rtol=1e-14, atol=1e-15)
    np.testing.assert_array_equal(sad.grad(lambda v: np.var(v) + v[0])(np.array([2.0])), [1.0])  # var of one is 0


def test_np_vdot_of_traced_arrays():
    x0, y0 = np.array([[1.0, 2.0], [3.0, -1.0]]), np.array([[0.5, -2.0], [4.0, 1.5]])
    gx, gy = sad.grad(lambda x, y: np.vdot(x, y), argnums=(0, 1))(x0, y0)
    np.testing.assert_array_equal(gx, y0)
    np.testing.assert_array_equal(gy, x0)
    np.testing.assert_allclose(sad.grad(lambda x: np.vdot(x, np.sin(x)))(x0),
                               np.sin(x0) + x0 * np.cos(x0), rtol=1e-15)


def test_a_dense_hessian_of_1000_vars_compiles_only_its_nonzeros():
    """Rosenbrock-1000's dense Hessian holds 1,000,000 entries of which 2,998 are nonzero (1,999
    distinct Terms); compiling every entry took 7.8 GB. Under a 3 GB address-space cap, in a fresh
    process, it must come out right (against the closed form), as must a 999 × 1000 Jacobian."""
    script = textwrap.dedent("""
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (3 * 2**30, 3 * 2**30))
        import numpy as np
        import subgraph_ad as sad

        def rosen(x):
            return np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)

        n = 1000
        x = np.linspace(-1.2, 1.3, n)
        H = sad.hessian(rosen)(x)
        expected = np.zeros((n, n))
        i = np.arange(n - 1)
        expected[i, i] += 1200 * x[:-1] ** 2 - 400 * x[1:] + 2
        expected[i + 1, i + 1] += 200
        expected[i, i + 1] = expected[i + 1, i] = -400 * x[:-1]
        assert H.shape == (n, n), H.shape
        np.testing.assert_allclose(H, expected, rtol=1e-13, atol=0)
        J = sad.jacobian(lambda v: v[1:] - v[:-1] ** 2)(x)
        expected = np.zeros((n - 1, n))
        expected[i, i + 1] = 1.0
        expected[i, i] = -2 * x[:-1]
        np.testing.assert_array_equal(J, expected)
        print("ok")
    """)
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "MALLOC_ARENA_MAX": "2"}  # thread pools and malloc arenas reserve address space per core
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env,
                          cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]
