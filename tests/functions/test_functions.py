"""UnaryFn built-ins and the extension point: values, derivatives to order 4 against SymPy."""

import numpy as np
import pytest
import sympy

import subgraph_ad as sad
from conftest import Softplus, close, sympy_value

X = sympy.Symbol("x")
BUILTINS = [
    (sad.exp, sympy.exp(X)),
    (sad.log, sympy.log(X)),
    (sad.sin, sympy.sin(X)),
    (sad.cos, sympy.cos(X)),
    (sad.tan, sympy.tan(X)),
    (sad.sqrt, sympy.sqrt(X)),
    (sad.tanh, sympy.tanh(X)),
    (sad.sigmoid, 1 / (1 + sympy.exp(-X))),
    (sad.SinFn(2), -sympy.sin(X)),
    (sad.SinFn(3), -sympy.cos(X)),
]
POINTS = [0.3, 0.9, 1.4]


@pytest.mark.parametrize("fn, reference", BUILTINS, ids=lambda v: getattr(v, "name", ""))
def test_builtin_value_on_floats_and_arrays(fn, reference):
    for p in POINTS:
        assert close(fn(p), sympy_value(reference, x=p), 1e-14)
        assert isinstance(fn(p), float)
    values = fn(np.array(POINTS))
    assert isinstance(values, np.ndarray) and values.shape == (3,)


@pytest.mark.parametrize("fn, reference", BUILTINS, ids=lambda v: getattr(v, "name", ""))
@pytest.mark.parametrize("order", [1, 2, 3, 4])
def test_builtin_derivatives_match_sympy(fn, reference, order):
    tape = sad.Tape()
    x = tape.var("x")
    d = fn(x).diff(x, order)
    expected = sympy.diff(reference, X, order)
    for p in POINTS:
        assert close(d.eval({x: p}), sympy_value(expected, x=p))


@pytest.mark.parametrize("fn, reference", BUILTINS, ids=lambda v: getattr(v, "name", ""))
def test_builtin_numeric_grad_matches_sympy(fn, reference):
    tape = sad.Tape()
    x = tape.var("x", 0.7)
    y = fn(x)
    expected = sympy_value(sympy.diff(reference, X), x=0.7)
    assert close(y.derive(x), expected, 1e-12)
    assert close(y.grad()[x], expected, 1e-12)


def test_hundredth_derivative_of_sin_is_one_node_away():
    tape = sad.Tape()
    x = tape.var("x", 0.4)
    d = sad.sin(x)
    sizes = []
    for _ in range(100):
        d = d.gen_graph(x)
        sizes.append(len(tape))
    assert d.node.payload == sad.SinFn(0) and d.node.args == (x.index,)
    assert sizes[-1] == sizes[3]  # sin, cos, -sin, -cos, then nothing new
    assert close(d.eval(), np.sin(0.4))


def test_equal_function_objects_share_nodes():
    tape = sad.Tape()
    x = tape.var("x")
    assert sad.SinFn(1)(x).index == sad.cos(x).index
    assert sad.SinFn(5) == sad.SinFn(1)


def test_user_softplus_to_order_4_matches_sympy():
    tape = sad.Tape()
    x, y = tape.var("x", 0.5), tape.var("y", 4.2)
    w = Softplus()(x * y)
    reference = sympy.log(1 + sympy.exp(sympy.Symbol("x") * sympy.Symbol("y")))
    for order in range(1, 5):
        d = w.diff(x, order)
        expected = sympy.diff(reference, X, order)
        for p in POINTS:
            assert close(d.eval({x: p, y: 0.8}), sympy_value(expected, x=p, y=0.8))
    assert w.to_sympy() == reference  # through its to_sympy hook


class NoRule(sad.UnaryFn):
    name = "norule"

    def f(self, v):
        return np.cbrt(v)

    def grad(self, v):
        return 1.0 / (3.0 * np.cbrt(v) ** 2)


class FloatRule(NoRule):
    name = "floatrule"

    def gen_graph(self, input, output, derived):
        return 1.0


class ForeignRule(NoRule):
    name = "foreignrule"

    def gen_graph(self, input, output, derived):
        return sad.Tape().var("q")


def test_function_without_rule_evaluates_but_refuses_gen_graph():
    tape = sad.Tape()
    x = tape.var("x", 8.0)
    y = sad.sin(NoRule()(x))
    assert str(y.to_sympy()) == "sin(norule(x))"  # no to_sympy hook: an undefined function by name
    assert close(y.eval(), np.sin(2.0), 1e-15)
    assert close(y.derive(x), np.cos(2.0) / 12.0, 1e-14)
    assert close(y.grad()[x], np.cos(2.0) / 12.0, 1e-14)
    before = list(tape.nodes)
    with pytest.raises(NotImplementedError, match="norule"):
        y.diff(x, 2)
    assert tape.nodes == before


@pytest.mark.parametrize("fn, returned", [(FloatRule(), "float 1.0"), (ForeignRule(), "Term")])
def test_rule_returning_a_non_term_is_a_type_error_and_rolls_back(fn, returned):
    tape = sad.Tape()
    x = tape.var("x", 2.0)
    y = sad.exp(x) * fn(x * x)
    before, cache = list(tape.nodes), dict(tape.deriv_cache)
    with pytest.raises(TypeError, match=fn.name) as info:
        y.gen_graph(x)
    assert returned in str(info.value) and "expected a Term of the same tape or None" in str(info.value)
    assert tape.nodes == before and tape.deriv_cache == cache


def test_calling_a_function_on_a_string_is_a_type_error():
    with pytest.raises(TypeError, match="sin"):
        sad.sin("0.5")


class MySoftplus(Softplus):
    name = "my_softplus"  # not a built-in name, so only register() can make the parser know it


def test_register_makes_a_function_known_to_the_parser():
    with pytest.raises(sad.ParseError, match="my_softplus"):
        sad.parse("my_softplus(2*x)")
    softplus = sad.register(MySoftplus())
    try:
        t = sad.parse("my_softplus(2*x)")
        assert close(t.eval({"x": 0.25}), np.logaddexp(0, 0.5), 1e-15)
    finally:
        del sad.FUNCTIONS[softplus.name]
