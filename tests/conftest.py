"""Shared fixtures: a fresh tape with the seeds' vars, and a SymPy reference evaluator."""

import math

import numpy as np

import pytest
import sympy

import subgraph_ad as sad


@pytest.fixture
def tape() -> sad.Tape:
    return sad.Tape()


def sympy_value(expr: sympy.Expr, **point: float) -> float:
    """Evaluate a SymPy expression at a point with 30 digits: the independent reference."""
    value = expr.evalf(30, subs={sympy.Symbol(k): sympy.Float(v, 30) for k, v in point.items()})
    return float(value)


def close(ours: float, ref: float, rtol: float = 1e-9) -> bool:
    """Relative agreement, absolute near zero; high orders lose a few digits, never nine."""
    if math.isnan(ref):
        return math.isnan(ours)
    return abs(ours - ref) <= rtol * max(1.0, abs(ref))


class Softplus(sad.UnaryFn):
    """The user function from the API contract, shared by the tests of every layer."""

    name = "softplus"

    def f(self, v):
        return np.logaddexp(0.0, v)

    def grad(self, v):
        return 1.0 / (1.0 + np.exp(-v))

    def gen_graph(self, input, output, derived):
        return sad.sigmoid(input) * derived

    def to_sympy(self, arg):
        return sympy.log(1 + sympy.exp(arg))


class Cube(sad.UnaryFn):
    """A minimal user function (value, numeric and symbolic derivative) for parser and bridge tests."""

    def __init__(self, name: str = "cube") -> None:
        self.name = name

    def f(self, v):
        return v**3

    def grad(self, v):
        return 3 * v**2

    def gen_graph(self, input, output, derived):
        return 3 * input * input * derived
