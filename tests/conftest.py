"""Shared fixtures: a fresh tape with the seeds' vars, and a SymPy reference evaluator."""

import math

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
