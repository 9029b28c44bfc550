"""NumPy functions on Terms (``Term.__array_ufunc__``): a ufunc call appends the node the
package's own function appends, NumPy-written code builds a graph, and anything NumPy could
only do on numbers is a clear TypeError, as are math functions and truth tests on a Term."""

import math

import numpy as np
import pytest

import subgraph_ad as sad
from subgraph_ad import Tape, Term
from subgraph_ad.functions import FUNCTIONS
from subgraph_ad.interop.numpy_dispatch import array_ufunc, function_of, supported

POINTS = [0.3, 0.5, 1.7, 2.5]

PAIRS = [(np.sin, sad.sin), (np.cos, sad.cos), (np.tan, sad.tan), (np.exp, sad.exp), (np.log, sad.log),
         (np.sqrt, sad.sqrt), (np.tanh, sad.tanh)]


def test_the_attached_protocol_is_this_module():
    assert Term.__array_ufunc__ is array_ufunc


@pytest.mark.parametrize("ufunc, fn", PAIRS, ids=lambda p: getattr(p, "__name__", None) or p.name)
def test_a_ufunc_on_a_term_is_the_same_node_as_the_package_function(ufunc, fn):
    tape = Tape()
    x = tape.var("x")
    z = ufunc(x)
    assert isinstance(z, Term) and z.index == fn(x).index
    for p in POINTS:
        assert z.eval({x: p}) == pytest.approx(ufunc(p), rel=1e-15)  # NumPy on floats: the oracle
    values = np.array(POINTS)
    assert np.allclose(z.eval({x: values}), ufunc(values), rtol=1e-15, atol=0)


def test_binary_functions_of_the_registry_and_numbers_as_constants():
    tape = Tape()
    x, y = tape.var("x", 0.5), tape.var("y", -2.0)
    assert np.arctan2(y, x).index == sad.atan2(y, x).index
    assert np.arctan2(x, y).index != np.arctan2(y, x).index
    assert np.hypot(3.0, x).index == sad.hypot(3.0, x).index
    assert np.arctan2(y, x).eval() == np.arctan2(-2.0, 0.5)


def test_arithmetic_ufuncs_build_term_arithmetic():
    tape = Tape()
    x, y = tape.var("x", 1.5), tape.var("y", 2.0)
    cases = [
        (np.add(x, 2.0), x + 2.0), (np.add(2.0, x), 2.0 + x), (np.subtract(x, y), x - y),
        (np.subtract(3, x), 3 - x), (np.multiply(x, y), x * y), (np.divide(x, y), x / y),
        (np.true_divide(1.0, x), 1.0 / x), (np.power(x, 3), x**3), (np.float_power(x, y), x**y),
        (np.power(2.0, x), 2.0**x), (np.negative(x), -x), (np.positive(x), x), (np.square(x), x * x),
        (np.reciprocal(x), 1.0 / x),
    ]
    for built, expected in cases:
        assert isinstance(built, Term) and built.index == expected.index
    assert np.power(x, 3).eval() == 1.5**3 and np.reciprocal(x).eval() == 1 / 1.5
    assert np.square(x).diff(x).eval() == 3.0


def test_numpy_scalars_still_combine_with_terms():
    tape = Tape()
    x = tape.var("x", 4.0)
    for built, expected in [(np.float64(2.0) * x, 2.0 * x), (x * np.float64(2), x * 2.0),
                            (np.float64(1) / x, 1.0 / x), (2**x, 2.0**x), (np.float64(2) ** x, 2.0**x),
                            (np.int64(3) - x, 3.0 - x), (np.float32(0.5) + x, 0.5 + x),
                            (np.array(2.0) * x, 2.0 * x)]:
        assert isinstance(built, Term) and built.index == expected.index


def test_a_numpy_written_function_builds_the_graph_sad_builds():
    def f_numpy(v):
        return np.exp(-v**2 / 2) * np.sin(3 * v)

    def f_sad(v):
        return sad.exp(-v**2 / 2) * sad.sin(3 * v)

    tape = Tape()
    x = tape.var("x", 0.7)
    assert f_numpy(x).index == f_sad(x).index
    other = Tape()
    u = other.var("x", 0.7)
    ours, theirs = f_numpy(x).diff(x, 3), f_sad(u).diff(u, 3)
    assert ours.eval() == theirs.eval()
    # and the function itself still runs on plain NumPy values
    assert f_numpy(0.7) == pytest.approx(f_sad(x).eval(), rel=1e-15)
    values = np.linspace(-2, 2, 9)
    assert np.allclose(f_numpy(x).eval({x: values}), f_numpy(values), rtol=1e-14, atol=1e-300)


def test_every_registered_ufunc_is_found_at_call_time():
    for fn in FUNCTIONS.values():
        if isinstance(fn.numpy, np.ufunc):
            assert function_of(fn.numpy) is not None
            assert f"np.{fn.numpy.__name__}" in supported()
    assert function_of(np.floor) is sad.floor and function_of(np.maximum) is sad.maximum
    assert function_of(np.deg2rad) is None

    class Deg2rad(sad.UnaryFn):
        name = "deg2rad_for_dispatch_test"
        numpy = np.deg2rad

        def f(self, v):
            return np.deg2rad(v)

        def fdiff(self, input, output):
            return input.tape.const(math.pi / 180)

    tape = Tape()
    x = tape.var("x", 90.0)
    with pytest.raises(TypeError, match="np.deg2rad is not supported"):
        np.deg2rad(x)
    deg2rad = sad.register(Deg2rad())
    try:
        assert np.deg2rad(x).index == deg2rad(x).index and np.deg2rad(x).eval() == math.pi / 2
        assert "np.deg2rad" in supported()
    finally:
        del FUNCTIONS[deg2rad.name]


@pytest.mark.parametrize("call, named", [
    (lambda x: np.deg2rad(x), "np.deg2rad is not supported on Terms"),
    (lambda x: np.bitwise_and(x, 3), "np.bitwise_and is not supported on Terms"),
    (lambda x: np.add.reduceat(np.stack([x, x]), [0]), "np.add.reduceat is not supported on Terms"),
    (lambda x: np.sin(x, out=np.empty(())), r"np.sin\(..., out=\) is not supported on Terms"),
    (lambda x: np.add(x, 1.0, where=np.array(True)), r"np.add\(..., where=\) is not supported on Terms"),
    (lambda x: np.add.reduce(np.stack([x, x]), out=np.empty(())), r"np.add.reduce\(..., out=\) is not supported"),
])
def test_what_has_no_node_is_a_type_error_naming_it_and_what_is_supported(call, named):
    tape = Tape()
    x = tape.var("x", 1.0)
    before = len(tape)
    with pytest.raises(TypeError, match=named) as caught:
        call(x)
    assert "supported: np.add, np.subtract" in str(caught.value) and "np.sin" in str(caught.value)
    assert len(tape) == before


def test_operands_that_are_not_numbers_or_terms_of_this_tape():
    tape = Tape()
    x = tape.var("x")
    with pytest.raises(TypeError, match="np.add on Terms takes Terms, real numbers and arrays of them, got an array "
                                        "of dtype <U1"):
        np.add(x, np.array(["a"] * 3))
    with pytest.raises(TypeError, match="np.add on a Term takes Terms, real numbers and arrays of them, got str"):
        np.add(x, "a")
    with pytest.raises(TypeError, match="got complex"):
        np.multiply(x, 1j)
    with pytest.raises(ValueError, match="two different tapes"):
        np.add(x, Tape().var("y"))
    with pytest.raises(ValueError, match="two different tapes"):
        np.arctan2(x, Tape().var("y"))


@pytest.mark.parametrize("call, named, advice", [
    (lambda a: np.sort(a), "np.sort", "order of values is not known"),
    (lambda a: np.argmax(a), "np.argmax", "use np.max"),
    (lambda a: np.median(a), "np.median", "order of values"),
    (lambda a: np.linalg.solve(np.eye(2), a), "np.linalg.solve", "no derivative subgraph"),
    (lambda a: np.linalg.det(np.outer(a, a)), "np.linalg.det", "write the computation with arithmetic"),
    (lambda a: np.any(a > 0), "np.any", "not known when the graph is traced"),
    (lambda a: np.where(a > 0), "np.where", "give both branches"),
    (lambda a: np.nonzero(a), "np.nonzero", "branch-free form"),
])
def test_numpy_functions_with_no_derivative_subgraph_are_refused_by_name(call, named, advice):
    tape = Tape()
    x, y = tape.var("x", 1.0), tape.var("y", 2.0)
    for a in (np.stack([x, y]), x):  # an array of Terms, or one Term
        if named == "np.linalg.solve" and a is x:
            continue  # solve needs a vector
        before = len(tape)
        with pytest.raises(TypeError, match=f"{named} is not supported on Terms.*{advice}"):
            call(a)
        assert len(tape) <= before + 3  # at most the comparison the call was given


def test_math_functions_and_conversions_say_what_to_use_instead():
    tape = Tape()
    x = tape.var("x", 0.5)
    for convert in (math.sin, math.exp, float, int, complex, lambda t: [1, 2][t], lambda t: range(t)):
        with pytest.raises(TypeError, match=r"a Term is a node of a graph, not a number.*np\.sin\(x\).*term\.eval\(\)"):
            convert(x)


def test_a_term_has_no_truth_value():
    tape = Tape()
    x = tape.var("x", 0.5)
    with pytest.raises(TypeError, match="a Term has no truth value"):
        if x:
            pass
    with pytest.raises(TypeError, match="no truth value"):
        _ = x or 1.0
    with pytest.raises(TypeError, match="no truth value"):
        _ = not (x - 1)
    assert (x == x) is True and x in [tape.const(1.0), x] and len({x, x}) == 1  # identity still works


def test_a_term_is_its_own_conjugate_so_numpy_statistics_run_on_terms():
    """Terms are real, so np.conjugate (which np.var, np.std and np.vdot call on each element of
    an object array) is the Term itself; the values are NumPy's on the floats."""
    tape = Tape()
    x, y = tape.var("x", 1.5), tape.var("y", -2.0)
    assert np.conjugate(x) is x and np.conj(x * y).index == (x * y).index
    assert "np.conjugate" in supported()
    terms = np.array([x, y, x * y], dtype=object)
    assert [t.index for t in np.conjugate(terms)] == [t.index for t in terms]
    floats = np.array([1.5, -2.0, -3.0])
    for build, reference in [(np.var(terms), np.var(floats)), (np.std(terms, ddof=1), np.std(floats, ddof=1)),
                             (np.vdot(terms, terms[::-1]), np.vdot(floats, floats[::-1]))]:
        assert isinstance(build, Term) and build.eval() == pytest.approx(reference, rel=1e-15)
