"""eval, derive (forward) and grad (reverse): values, arrays, IEEE semantics, errors."""

import math

import numpy as np
import pytest

from subgraph_ad import Tape, exp, log, sin, sqrt


def test_eval_at_current_and_temporary_values(tape):
    x, y = tape.var("x", 0.5), tape.var("y", 4.2)
    z = x * y + sin(x)
    assert z.eval() == pytest.approx(0.5 * 4.2 + math.sin(0.5), rel=1e-15)
    assert z.eval({x: 1.0}) == pytest.approx(4.2 + math.sin(1.0), rel=1e-15)
    assert z.eval({"y": 0.0}) == pytest.approx(math.sin(0.5), rel=1e-15)
    assert x.value == 0.5  # temporary values do not stick
    x.set(1.3)
    assert z.eval() == pytest.approx(1.3 * 4.2 + math.sin(1.3), rel=1e-15)
    assert isinstance(z.eval(), float)


def test_eval_broadcasts_numpy_arrays(tape):
    x, y = tape.var("x", 0.5), tape.var("y", 2.0)
    z = x * y + exp(x)
    xs = np.linspace(-2, 2, 5)
    out = z.eval({x: xs})
    assert isinstance(out, np.ndarray) and out.shape == (5,)
    np.testing.assert_allclose(out, xs * 2.0 + np.exp(xs), rtol=1e-15)
    grid = z.eval({x: xs[:, None], y: np.array([1.0, 3.0])[None, :]})
    assert grid.shape == (5, 2)


def test_ieee_semantics_never_raise(tape):
    x = tape.var("x", -1.0)
    assert math.isnan(log(x).eval())
    assert math.isnan(sqrt(x).eval())
    assert (1 / (x + 1)).eval() == math.inf
    assert math.isnan(((x + 1) / (x + 1)).eval())
    assert log(x).derive(x) == -1.0  # d log = 1/x is finite at -1 even though log is nan
    assert (1 / (x + 1)).derive(x) == -math.inf


def test_derive_matches_closed_forms(tape):
    x, y = tape.var("x", 0.7), tape.var("y", 1.9)
    z = exp(x * y) / (1 + x**2)
    dzdx = math.exp(0.7 * 1.9) * (1.9 * (1 + 0.49) - 1.4) / (1 + 0.49) ** 2
    assert z.derive(x) == pytest.approx(dzdx, rel=1e-14)
    assert z.derive(y) == pytest.approx(0.7 * math.exp(0.7 * 1.9) / 1.49, rel=1e-14)
    assert z.derive(x, {x: 0.0}) == pytest.approx(1.9, rel=1e-14)


def test_grad_gives_every_partial_and_zero_for_unused_vars(tape):
    x, y, u = tape.var("x", 0.7), tape.var("y", 1.9), tape.var("u", 5.0)
    z = x * x * y + y
    g = z.grad()
    assert g[x] == pytest.approx(2 * 0.7 * 1.9, rel=1e-15)
    assert g.wrt(y) == pytest.approx(0.49 + 1, rel=1e-15)
    assert g[u] == 0.0
    assert "u: 0.0" in repr(g)


def test_grad_and_derive_work_elementwise_on_arrays(tape):
    x = tape.var("x", 0.0)
    z = sin(x) * x
    xs = np.linspace(0, 1, 4)
    expected = np.cos(xs) * xs + np.sin(xs)
    np.testing.assert_allclose(z.grad({x: xs})[x], expected, rtol=1e-14)
    np.testing.assert_allclose(z.derive(x, {x: xs}), expected, rtol=1e-14)


def test_constant_exponent_power_derivative_at_negative_base(tape):
    x = tape.var("x", -2.0)
    assert (x**3).derive(x) == pytest.approx(12.0)
    assert (x**3).grad()[x] == pytest.approx(12.0)
    assert (x**3).gen_graph(x).eval() == pytest.approx(12.0)


def test_value_errors_are_clear(tape):
    x = tape.var("x", 0.5)
    z = sin(x)
    with pytest.raises(TypeError, match="must be a number or an array, got str"):
        z.eval({x: "1.0"})
    with pytest.raises(KeyError, match="no var named 'q'"):
        z.eval({"q": 1.0})
    with pytest.raises(ValueError, match="another tape"):
        z.eval({Tape().var("x"): 1.0})
    with pytest.raises(ValueError, match="must be a var"):
        z.eval({z: 1.0})
    with pytest.raises(ValueError, match="must be a var"):
        z.set(2.0)
    with pytest.raises(TypeError, match="the value of var 'x' must be a number or an array of numbers, got str"):
        x.set("abc")
    with pytest.raises(TypeError, match="got NoneType"):
        tape.var("w", None)
    assert x.value == 0.5 and "w" not in tape.vars


def test_grad_prints_as_a_table_of_partials(tape):
    # z = x·y + x³: ∂z/∂x = y + 3x² = 4.2 + 0.75, ∂z/∂y = x = 0.5; w has no part in z
    x, y = tape.var("x", 0.5), tape.var("y", 4.2)
    tape.var("w", 1.0)
    g = (x * y + x**3).grad()
    assert str(g).splitlines() == [
        "var  partial",
        "---  -------",
        "x       4.95",
        "y        0.5",
        "w        0.0",
    ]
    html = g._repr_html_()
    assert html.startswith("<table><caption>gradient: 3 vars</caption><thead><tr><th>var</th><th>partial</th>")
    assert html.count("<tr>") == 4 and ">4.95</td>" in html and "<td>w</td>" in html


def test_grad_repr_stays_one_short_line(tape):
    xs = [tape.var(f"x{k}", float(k)) for k in range(50)]
    z = sum(k * x for k, x in enumerate(xs))
    text = repr(z.grad())
    assert text == "Grad({x0: 0.0, x1: 1.0, x2: 2.0, x3: 3.0, x4: 4.0, x5: 5.0, … 44 more})"
    assert len(str(z.grad()).splitlines()) == 52  # the table has them all


def test_grad_of_arrays_prints_each_partial_on_one_line(tape):
    x, y = tape.var("x", 0.0), tape.var("y", 2.0)
    g = (x * x * y).grad({x: np.array([1.0, 2.0, 3.0])})  # ∂/∂x = 2xy, ∂/∂y = x²
    rows = str(g).splitlines()[2:]
    assert rows == ["x    [ 4.  8. 12.]", "y    [1. 4. 9.]"]
