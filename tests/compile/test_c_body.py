"""The C that the CUDA backend runs (``c_body``), compiled on the CPU by ``cc`` and checked against
the NumPy backend: every built-in function at IEEE edge points (lgamma against mpmath), F1–F5's
derivatives to order 12, powers, constants without literals, float32, and functions C cannot
compute."""

import math
import re
import shutil

import mpmath
import numpy as np
import pytest

import subgraph_ad as sad
from subgraph_ad import Tape, lambdify
from subgraph_ad.compile.backends import c
from subgraph_ad.compile.program import build_program
from subgraph_ad.functions import FUNCTIONS, Function
from subgraph_ad import benchmark_functions as bench

from conftest import Softplus

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler (cc) on this machine")

EPS = np.finfo(float).eps
#: The smallest normal double: a subnormal result carries fewer than 53 bits, so below this
#: libraries may differ by all of it (SciPy's erfc(27) is 0, glibc's 5.2e-319).
TINY = np.finfo(float).tiny
#: Domain edges and IEEE specials: nan, ±inf, ±0, subnormals, ±1 (asin, acosh, atanh), exp's
#: overflow and underflow, π/2 (tan), a huge trig argument, the largest doubles.
EDGES = np.array([math.nan, math.inf, -math.inf, 0.0, -0.0, 5e-324, -5e-324, 1e-300, 1.0, -1.0, 1 - 2**-53,
                  1 + 2**-52, 0.5, -0.5, 2.0, -2.0, 3.0, 27.0, -27.0, 30.0, -30.0, 709.78, 710.0, -710.0,
                  -745.2, 800.0, math.pi / 2, math.pi, 1e16, -1e16, 1e300, -1e300, 1.7976931348623157e308])


#: The built-ins that C99's <math.h> cannot compute although they have a spelling: erfinv and
#: digamma (SciPy's ufuncs; C99 has neither). The CUDA backend warns and runs NumPy for them.
NOT_IN_C99 = ("digamma", "erfinv")
#: The built-ins spelled with elementaries that C has.
SPELLED = sorted(name for name, fn in FUNCTIONS.items() if fn.spelling and name not in NOT_IN_C99)


@pytest.mark.parametrize("name", NOT_IN_C99)
def test_a_builtin_whose_elementary_c99_lacks_is_refused_by_name(name):
    """Refused when the C is written (CUDA then falls back), not as an undefined symbol at load."""
    tape, ins, z, args = _function_program(FUNCTIONS[name], np.array([0.5]))
    with pytest.raises(c.NotLowerable, match=f"'{name}' cannot be compiled to C or CUDA: .* calls {name}, which "
                                             "C99's <math.h> does not have"):
        c.c_body(build_program(tape, ins, [z]))


def test_every_builtin_has_a_spelling():
    """Every built-in declares its value on arrays and on one float (``spelling``), so the Numba
    backend compiles each; a function with only ``f`` is a user's, refused by name (below)."""
    assert [name for name, fn in FUNCTIONS.items() if not fn.spelling] == []


def agree(got: np.ndarray, ref: np.ndarray, rtol: float) -> np.ndarray:
    """nan exactly where NumPy has nan, infinities equal, else within rtol relative (absolute
    TINY: subnormal results)."""
    with np.errstate(all="ignore"):
        close = np.abs(got - ref) <= rtol * np.abs(ref) + TINY
    return np.where(np.isnan(ref), np.isnan(got), (got == ref) | close)


def _function_program(fn: Function, points: np.ndarray) -> tuple[sad.Tape, list, sad.Term, tuple]:
    tape = Tape()
    if fn.arity == 1:
        x = tape.var("x")
        return tape, [x], fn(x), (points,)
    x, y = tape.var("x"), tape.var("y")
    a, b = np.meshgrid(points, points)
    return tape, [x, y], fn(x, y), (a.ravel(), b.ravel())


def _lgamma_reference(points: np.ndarray, numpy: np.ndarray) -> np.ndarray:
    """log|Γ| by mpmath where NumPy's is finite: SciPy's gammaln (the NumPy path) is off by up to
    2e-16 absolute next to lgamma's zeros at 1 and 2 (2.2e-16 for 6.4e-17 at 1 − 2⁻⁵³), where
    glibc's lgamma is correctly rounded."""
    with mpmath.workdps(40):
        exact = [float(mpmath.loggamma(mpmath.mpf(float(p))).real) if math.isfinite(r) else r
                 for p, r in zip(points, numpy)]
    return np.array(exact)


@pytest.mark.parametrize("name", SPELLED)
def test_every_builtin_function_matches_numpy_to_a_few_ulps_at_ieee_edges(name):
    """glibc's libm and NumPy/SciPy differ by at most 2 ulps on these (measured: 2.6e-16 at
    most, erf); 4 ulps leaves room for other C libraries. NumPy's sigmoid, exp(−logaddexp(0, −x)),
    is the less accurate one: exp turns the rounding of its argument (≈ |x| ulps of 1) into that
    relative error (5 ulps at x = −30, where C's 1/(1 + exp(30)) is correctly rounded). lgamma's
    oracle is mpmath (``_lgamma_reference``)."""
    points = np.array(list(EDGES))
    tape, ins, z, args = _function_program(FUNCTIONS[name], points)
    got, = c.cpu_function(build_program(tape, ins, [z]))(*args)
    ref = lambdify(ins, z, backend="numpy")(*args)
    if name == "lgamma":
        ref = _lgamma_reference(points, ref)
    with np.errstate(invalid="ignore"):
        ok = agree(got, ref, 4 * EPS * (1.0 + np.abs(args[0]) if name == "sigmoid" else 1.0))
    bad = np.nonzero(~ok)[0][:5]
    assert ok.all(), [(tuple(a[i] for a in args), got[i], ref[i]) for i in bad]
    zeros = (ref == 0) & (got == 0)
    assert (np.signbit(got[zeros]) == np.signbit(ref[zeros])).all()  # -0.0 stays -0.0


def test_sign_of_infinity_in_c():
    tape = Tape()
    x = tape.var("x")
    got, = c.cpu_function(build_program(tape, [x], [sad.sign(x)]))(np.array([math.inf, -math.inf]))
    assert got.tolist() == [1.0, -1.0]


@pytest.mark.parametrize("name", sorted(bench.BENCHMARKS))
def test_benchmark_derivatives_to_order_12_match_numpy(name):
    """F1–F5 and their derivatives of orders 1..12, one program. Each elementary agrees to 2 ulps,
    and the programs sum terms as large as the result's scale, so the error is a few ulps of the
    largest value on the grid (measured ≤ 8e-16 of it; pointwise near a zero of a derivative the
    relative error is unbounded, 2.6e-12 at one of F4's). F5's grid reaches w1 < 0, where log
    and sqrt make nan."""
    tape, f, x = bench.BENCHMARKS[name]()
    ds = [f] + [f.diff(x, n) for n in range(1, 13)]
    variables = [sad.Term(tape, i) for i, node in enumerate(tape.nodes) if node.op == "var"]
    grid = np.linspace(-3.0, 3.0, 241) + (2.0 if name == "F5" else 0.0)
    args = [grid if v.index == x.index else np.float64(0.7) for v in variables]
    got = c.cpu_function(build_program(tape, variables, ds))(*args)
    refs = lambdify(variables, ds, backend="numpy")(*args)
    for n, (value, ref) in enumerate(zip(got, refs)):
        finite = np.isfinite(ref)
        assert agree(value[~finite], ref[~finite], 0.0).all(), (name, n)  # nan and inf where NumPy has them
        scale = np.abs(ref[finite]).max(initial=0.0)
        assert np.abs(value[finite] - ref[finite]).max(initial=0.0) <= 1e-13 * scale, (name, n)
    if name == "F5":
        assert np.isnan(got[3][grid < 0]).all()


def test_mixed_partials_and_outputs_that_are_inputs_constants_or_repeated():
    tape = Tape()
    x, y = tape.var("x"), tape.var("y")
    z = x * y + sad.sin(x) * sad.exp(y)
    outs = [z.diff(x, 2, y), x, tape.const(2.5), z, z, y.diff(x)]
    body = c.c_body(build_program(tape, [x, y], outs))
    assert "out1 = in0;" in body and "out2 = 2.5;" in body and "out5 = 0.0;" in body
    xs, ys = np.linspace(-2, 2, 9), np.linspace(-1, 3, 9)
    got = c.cpu_function(build_program(tape, [x, y], outs))(xs, ys)
    refs = lambdify([x, y], outs, backend="numpy")(xs, ys)
    for value, ref in zip(got, refs):
        assert np.allclose(value, ref, rtol=4 * EPS, atol=0)


def test_powers_are_numpys_products_quotients_and_square_roots_else_pow():
    """NumPy's power ufunc with a scalar exponent (the NumPy backend's call) computes x ** 2 as
    x*x, x ** -1 as 1/x and x ** 0.5 as sqrt(x); C gives the same bits, signed zeros, nan and inf
    included (pow would differ: pow(7.7, 2) rounds the other way, pow(-inf, 0.5) is +inf).
    x ** 3 and x ** -2 would round twice as products, so they stay pow(), as does x ** y."""
    tape = Tape()
    x, y = tape.var("x"), tape.var("y")
    outs = [x**2, x ** -1.0, x**0.5, x**3, x ** -2.0, x**y]
    body = c.c_body(build_program(tape, [x, y], outs))
    assert "in0 * in0" in body and "1.0 / in0" in body and "sqrt(in0)" in body
    assert "pow(in0, 3.0)" in body and "pow(in0, (-2.0))" in body and "pow(in0, in1)" in body
    points = np.concatenate([EDGES, [7.7], np.random.default_rng(0).uniform(-1e3, 1e3, 2000)])
    exponents = np.resize(np.array([2.0, -1.0, 0.5, 3.0, -3.5]), points.shape)
    got = c.cpu_function(build_program(tape, [x, y], outs))(points, exponents)
    with np.errstate(all="ignore"):
        refs = [np.power(points, e) for e in (2.0, -1.0, 0.5, 3.0, -2.0)] + [np.power(points, exponents)]
    for k in (0, 1, 2):  # bit for bit
        assert np.array_equal(got[k].view(np.int64), refs[k].view(np.int64)), k
    for k in (3, 4, 5):
        assert agree(got[k], refs[k], 2 * EPS).all(), k


def test_constants_without_literals_are_spelled_nan_and_infinity():
    tape = Tape()
    x = tape.var("x")
    outs = [x + math.inf, x * math.nan, x - math.inf, sad.atan2(tape.const(-0.0), x), tape.const(-0.0)]
    body = c.c_body(build_program(tape, [x], outs))
    assert "INFINITY" in body and "NAN" in body and "atan2((-0.0), in0)" in body and "out4 = (-0.0);" in body
    points = np.array([1.0, -2.0, 0.0])
    got = c.cpu_function(build_program(tape, [x], outs))(points)
    assert got[0].tolist() == [math.inf] * 3 and np.isnan(got[1]).all() and got[2].tolist() == [-math.inf] * 3
    assert got[3].tolist() == [0.0, -math.pi, 0.0] and np.signbit(got[3]).tolist() == [True, True, True]
    assert np.signbit(got[4]).all() and not got[4].any()


def test_a_function_without_a_spelling_is_not_lowerable_and_says_which():
    tape = Tape()
    x = tape.var("x")
    program = build_program(tape, [x], [Softplus()(x) * 2.0])
    with pytest.raises(c.NotLowerable, match="UnaryFn 'softplus' has no spelling") as error:
        c.c_body(program)
    assert isinstance(error.value, TypeError)


def test_an_unknown_dtype_is_refused():
    tape = Tape()
    x = tape.var("x")
    with pytest.raises(ValueError, match="dtype must be one of .* got 'half'"):
        c.c_body(build_program(tape, [x], [sad.exp(x)]), dtype="half")


FLOAT_POINTS = np.concatenate([[math.nan, math.inf, -math.inf, 0.0, -0.0, 1.0, -1.0],
                               np.linspace(-10.0, 10.0, 401)]).astype(np.float32)


def _float_cancellation(name: str, args: tuple) -> np.ndarray:
    """The size of the terms that float rounds where the result cancels: logaddexp's max(a, b) +
    log1p(…) near 0 (|max(a, b)| + 1), sinc's sin(πx)/(πx) near its zeros at the integers (πx is
    rounded, an error of one float ulp of 1 in the quotient); none elsewhere."""
    if name in ("logaddexp", "logaddexp2"):
        return np.maximum(np.abs(args[0]), np.abs(args[1])).astype(float) + 1.0
    return np.full(args[0].shape, 1.0 if name == "sinc" else 0.0)


@pytest.mark.parametrize("name", SPELLED)
def test_float32_computes_every_builtin_in_float_to_a_few_float_ulps(name):
    """In float every call is C99's float form (or a type-generic macro) and every literal a
    float (nothing widens to double), and the values are within 4 float ulps of the double result
    at the same (float) inputs, glibc's float functions being within 1–2; where the result cancels,
    4 float ulps of the terms that cancel (``_float_cancellation``)."""
    points = np.array(list(FLOAT_POINTS), dtype=np.float32)
    tape, ins, z, args = _function_program(FUNCTIONS[name], points)
    program = build_program(tape, ins, [z])
    body = c.c_body(program, "float")
    calls = re.findall(r"\b([a-z][a-z0-9]*)\(", body)
    assert all((call.endswith("f") and call[:-1] in c.C99_MATH) or call in c.C99_MACROS for call in calls), calls
    assert not re.search(r"(?<![\w.])\d+\.\d*(?![\w.])(?!f)", body) and "double" not in body
    got, = c.cpu_function(program, "float")(*args)
    assert got.dtype == np.float32
    ref = lambdify(ins, z, backend="numpy")(*(a.astype(float) for a in args))
    finite = np.abs(ref) < np.finfo(np.float32).max  # beyond it float overflows where double does not
    ok = agree(got.astype(float)[finite], ref[finite], 4 * 2.0**-23) | (np.abs(ref[finite]) < np.finfo(np.float32).tiny)
    ok |= np.abs(got.astype(float)[finite] - ref[finite]) <= 4 * 2.0**-23 * _float_cancellation(name, args)[finite]
    assert ok.all(), [tuple(a[finite][i] for a in args) for i in np.nonzero(~ok)[0][:5]]
