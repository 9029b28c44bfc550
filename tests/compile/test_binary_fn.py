"""Two-operand function nodes (a BinaryFn) in both backends: lowered by the function's spelling
(elementaries on both operands: ufuncs for blocks, a scalar of two floats for Numba), or by its
``f`` alone."""

import math
import warnings

import numpy as np
import pytest

import subgraph_ad as sad
from subgraph_ad import Tape, lambdify
from subgraph_ad.compile.backends import numba as numba_backend
from subgraph_ad.compile.backends.numpy import block_source
from subgraph_ad.compile.lambdify import BackendWarning
from subgraph_ad.compile.program import build_program

#: The backends that compute on NumPy arrays in this process.
HOSTS = ("numba", "numpy")


class Atan2(sad.BinaryFn):
    """A user atan2 spelled with the built-in elementary: a ufunc for blocks, ``math.atan2`` for
    Numba; its value and numeric partials are derived."""

    name = "my_atan2"
    spelling = ("atan2",)

    def fdiff(self, lhs, rhs, output):
        r2 = lhs * lhs + rhs * rhs
        return rhs / r2, -lhs / r2


class WeightedHypot(sad.BinaryFn):
    """sqrt(a² + 4 b²), with no lowering of its own: every backend calls (or compiles) ``f``."""

    name = "whypot"

    def f(self, a, b):
        return np.sqrt(a * a + 4.0 * b * b)

    def grad(self, a, b):
        out = np.sqrt(a * a + 4.0 * b * b)
        return a / out, 4.0 * b / out

    def fdiff(self, lhs, rhs, output):
        return lhs / output, 4.0 * rhs / output


def _compile(inputs, outputs, backend):
    if backend == "numba":
        pytest.importorskip("numba")
    with warnings.catch_warnings():
        warnings.simplefilter("error", BackendWarning)
        g = lambdify(inputs, outputs, backend=backend)
    assert g.backend == backend
    return g


@pytest.mark.parametrize("backend", HOSTS)
def test_a_user_binaryfn_with_lowering_matches_numpy_and_eval(backend):
    tape = Tape()
    y, x = tape.var("y"), tape.var("x")
    z = Atan2()(y, x)
    g = _compile([y, x], z, backend)
    ys, xs = np.linspace(-2, 2, 41), np.linspace(3, -1, 41)  # every quadrant, x = 0 and y = 0

    def same(ours, ref):  # math.atan2 (libm) and np.arctan2 may differ in the last bit
        return np.allclose(ours, ref, rtol=1e-15, atol=0) and np.array_equal(np.signbit(ours), np.signbit(ref))

    assert same(g(ys, xs), np.arctan2(ys, xs))  # the independent oracle
    assert same(g(ys, xs), z.eval({y: ys, x: xs}))
    assert same(g(ys, 0.5), np.arctan2(ys, 0.5))  # one operand a number
    assert same(g(0.5, xs), np.arctan2(0.5, xs))
    for a, b in [(0.3, 0.7), (1.0, -2.0), (-0.0, -1.0), (2.0, 0.0)]:
        assert g(a, b) == np.arctan2(a, b) == z.eval({y: a, x: b})
    assert g(1.0, -2.0) != g(-2.0, 1.0)  # the operand order is kept


@pytest.mark.parametrize("backend", HOSTS)
def test_a_binaryfn_inside_derivatives_compiles_and_matches_eval(backend):
    tape = Tape()
    y, x = tape.var("y"), tape.var("x")
    z = Atan2()(y * y + 1.0, x) * WeightedHypot()(x, y)
    ds = [z, z.diff(x), z.diff(y), z.diff(x, 2)]
    g = _compile([y, x], ds, backend)
    ys, xs = np.linspace(-2, 2, 101), np.linspace(0.5, 3, 101)
    for value, term in zip(g(ys, xs), ds):
        assert np.allclose(value, term.eval({y: ys, x: xs}), rtol=1e-12, atol=0)
    for value, term in zip(g(0.25, 1.5), ds):
        assert math.isclose(value, term.eval({y: 0.25, x: 1.5}), rel_tol=1e-12)


@pytest.mark.parametrize("backend", HOSTS)
def test_a_binaryfn_without_lowering_uses_its_f(backend):
    tape = Tape()
    a, b = tape.var("a"), tape.var("b")
    z = WeightedHypot()(a, b)
    g = _compile([a, b], z, backend)
    xs, ys = np.linspace(-3, 3, 31), np.linspace(1, -2, 31)
    assert np.allclose(g(xs, ys), np.sqrt(xs**2 + 4 * ys**2), rtol=1e-15)
    assert np.array_equal(g(xs, ys), z.eval({a: xs, b: ys}))
    assert g(3.0, 2.0) == 5.0 and g(2.0, 3.0) != 5.0


def test_the_block_source_calls_the_ufunc_on_both_operands_in_place():
    tape = Tape()
    y, x = tape.var("y"), tape.var("x")
    source, _, registers = block_source(build_program(tape, [y, x], [Atan2()(y, x)]))
    assert "_np.arctan2(b0, b1, out=o0)" in source and "copyto" not in source and registers == 0
    source, _, _ = block_source(build_program(tape, [y, x], [Atan2()(x, y)]))
    assert "_np.arctan2(b1, b0, out=o0)" in source
    z = WeightedHypot()(y, x)
    source, names, _ = block_source(build_program(tape, [y, x], [z]))
    assert f"_np.copyto(o0, _fn{z.index}(b0, b1))" in source and names[f"_fn{z.index}"] == z.node.payload.f


def test_a_binaryfn_with_several_ufuncs_applies_the_rest_in_place():
    class NegAtan2(Atan2):
        name = "neg_atan2"
        spelling = ("atan2", "neg")

    tape = Tape()
    y, x = tape.var("y"), tape.var("x")
    z = NegAtan2()(y, x)
    source, _, _ = block_source(build_program(tape, [y, x], [z]))
    assert "_np.arctan2(b0, b1, out=o0)\n    _np.negative(o0, out=o0)" in source
    ys, xs = np.linspace(-1, 1, 9), np.linspace(2, -2, 9)
    assert np.array_equal(lambdify([y, x], z)(ys, xs), -np.arctan2(ys, xs))


def test_the_numba_kernel_calls_the_c_library_atan2_on_both_operands_in_order():
    pytest.importorskip("numba")
    tape = Tape()
    y, x = tape.var("y"), tape.var("x")
    source, tables = numba_backend.kernel_source(build_program(tape, [y, x], [Atan2()(x, y)]), (False, False))
    # the built-in elementary: C's atan2 (libmvec's on whole vectors, else lane by lane), no Numba callback
    (kind, name), = tables.helpers
    assert (kind, name.rsplit("_", 1)[-1]) in (("libm", "atan2"), ("mvec", "atan2"))
    g = _compile([y, x], Atan2()(x, y), "numba")
    ys, xs = np.linspace(-2, 2, 9), np.array([3.0, -1.0, 0.0, 2.0, -0.5, 1.0, -3.0, 0.25, 4.0])
    assert np.allclose(g(ys, xs), np.arctan2(xs, ys), rtol=1e-15, atol=0)


def test_a_builtin_binaryfn_in_the_scalar_source_keeps_its_operands():
    tape = Tape()
    y, x = tape.var("y"), tape.var("x")
    z = sad.hypot(y, 2.0 * x)
    g = lambdify([y, x], z)
    assert f"t{z.index} = _fn{z.index}(v0, t{z.node.args[1]})" in g.source
    assert g(3.0, 2.0) == 5.0


def _whypot(a: float, b: float) -> float:
    return math.sqrt(a * a + 4.0 * b * b)


def _whypot_array(a, b):
    return np.sqrt(a * a + 4.0 * b * b)


class JittedWeightedHypot(WeightedHypot):
    """The same function spelled by an elementary of its own whose scalar is a plain Python
    function of two floats, which Numba jits."""

    name = "whypot_jit"
    spelling = (sad.Elementary("whypot", 2, (_whypot_array,), _whypot,
                               "sqrt({0} * {0} + 4.0 * {1} * {1})", lambda a, b: (a * a + 4 * b * b) ** 0.5),)


def test_a_plain_python_scalar_of_two_floats_is_jitted_for_numba():
    pytest.importorskip("numba")
    tape = Tape()
    a, b = tape.var("a"), tape.var("b")
    z = JittedWeightedHypot()(a, b - 1.0)
    g = _compile([a, b], [z, z.diff(b)], "numba")
    xs, ys = np.linspace(-3, 3, 31), np.linspace(2, -2, 31)
    for value, term in zip(g(xs, ys), [z, z.diff(b)]):
        assert np.allclose(value, term.eval({a: xs, b: ys}), rtol=1e-14, atol=0)
    assert numba_backend._jit(_whypot) is numba_backend._jit(_whypot)  # once per process
