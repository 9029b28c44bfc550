"""The backends lower a function by its spelling (elementaries, a user's own included), never by
its class: a user's function gets the fast path a built-in gets; and each backend's table covers
every op."""

import functools
import math
import warnings

import numpy as np
import pytest

import subgraph_ad as sad
from subgraph_ad import Tape, lambdify
from subgraph_ad.compile.backends import numba as numba_backend
from subgraph_ad.compile.backends import numpy as numpy_backend
from subgraph_ad.compile.backends.numpy import block_source
from subgraph_ad.compile import registry
from subgraph_ad.compile.lambdify import BackendWarning
from subgraph_ad.compile.program import build_program
from subgraph_ad.core import OPS


class Cbrt(sad.UnaryFn):
    """A user function spelled with a built-in elementary: a ufunc for blocks, NumPy's scalar for
    Numba, and ``f`` derived from it."""

    name = "cbrt"
    spelling = ("cbrt",)

    def fdiff(self, input, output):
        return (1.0 / 3.0) / (output * output)


def _softplus(v: float) -> float:
    return max(v, 0.0) + math.log1p(math.exp(-abs(v)))


#: A user's own elementary: a partial of a ufunc for blocks, a plain Python scalar (jitted by Numba).
SOFTPLUS = sad.Elementary("softplus", 1, (functools.partial(np.logaddexp, 0.0),), _softplus,
                          "(fmax({0}, 0.0) + log1p(exp(-fabs({0}))))", lambda a: a)


class FastSoftplus(sad.UnaryFn):
    """A user function spelled by an elementary of its own."""

    name = "softplus"
    spelling = (SOFTPLUS,)


@pytest.mark.parametrize("backend", sorted(registry.BACKENDS))
def test_every_backend_table_has_a_row_for_every_op_and_for_functions(backend):
    assert set(OPS) | {"fn"} <= set(registry.backend(backend).LOWERING)


def test_a_user_function_with_ufuncs_is_lowered_like_a_builtin():
    tape = Tape()
    x = tape.var("x")
    z = Cbrt()(x)
    source, _, registers = block_source(build_program(tape, [x], [z]))
    assert "_np.cbrt(b0, out=o0)" in source and "copyto" not in source and registers == 0
    builtin, _, _ = block_source(build_program(tape, [x], [sad.exp(x)]))
    assert source.replace("cbrt", "exp") == builtin


def test_a_user_function_compiles_with_numba_and_matches_eval():
    pytest.importorskip("numba")
    tape = Tape()
    x = tape.var("x")
    z = Cbrt()(x * x + 1.0) * sad.exp(-x)
    ds = [z, z.diff(x), z.diff(x, 3)]
    points = np.linspace(-3, 3, 2001)
    with warnings.catch_warnings():
        warnings.simplefilter("error", BackendWarning)
        g = lambdify([x], ds, backend="numba")
    assert g.backend == "numba"
    helpers = numba_backend.kernel_source(g.program, (False,))[1].helpers  # C's, lane by lane or libmvec's
    # and the C library's pow for the whole powers its derivatives hold, as every backend computes them
    assert [(kind in ("libm", "mvec"), name.rsplit("_", 1)[-1]) for kind, name in helpers] == [
        (True, "cbrt"), (True, "exp"), (True, "pow")]
    for value, fast, term in zip(g(points), lambdify([x], ds)(points), ds):
        expected = term.eval({x: points})
        assert np.allclose(value, expected, rtol=1e-9) and np.allclose(fast, expected, rtol=1e-9)


def test_a_partial_is_spelled_out_and_a_python_scalar_is_jitted():
    tape = Tape()
    x = tape.var("x")
    z = FastSoftplus()(x)
    program = build_program(tape, [x], [z])
    assert "t1 = _fn1(v0)" in numpy_backend.scalar_source(program)[0]  # a single point calls f
    assert "t1 = _fn1_0(v0)" in numpy_backend.scalar_source(program, python=True)[0]  # its scalar
    assert "_np.logaddexp(0.0, b0, out=o0)" in block_source(program)[0]
    pytest.importorskip("numba")
    assert numba_backend.kernel_source(program, (False,))[1].helpers == [("fn", z.node.payload, 1)]  # Numba's
    with warnings.catch_warnings():
        warnings.simplefilter("error", BackendWarning)
        g = lambdify([x], z, backend="numba")
    points = np.array([-800.0, -2.0, 0.0, 0.5, 40.0, math.inf])
    assert g.backend == "numba" and np.allclose(g(points), np.logaddexp(0.0, points), rtol=1e-15, atol=0)
