"""The op registry: every op has a row in every transformation's and backend's table, and its
value and symbolic form agree with plain arithmetic and SymPy."""

import math

import numpy as np
import pytest
import sympy

from subgraph_ad.ad.closed_form import EXPAND
from subgraph_ad.ad.forward import RULES
from subgraph_ad.ad.reverse import VJPS
from subgraph_ad.compile.backends import numba as numba_backend
from subgraph_ad.compile.backends import numpy as numpy_backend
from subgraph_ad.ad.taylor.recurrences import COMPUTE, FORMS, PRODUCTS
from subgraph_ad.core import OPS
from subgraph_ad.numeric.modes import PARTIALS

TABLES = {"forward RULES": RULES, "reverse VJPS": VJPS, "numeric PARTIALS": PARTIALS, "Taylor FORMS": FORMS,
          "closed-form EXPAND": EXPAND, "NumPy LOWERING": numpy_backend.LOWERING,
          "Numba LOWERING": numba_backend.LOWERING}


@pytest.mark.parametrize("table", sorted(TABLES))
def test_every_table_has_a_row_for_every_op(table):
    assert set(OPS) <= set(TABLES[table]), set(OPS) - set(TABLES[table])


@pytest.mark.parametrize("table", ["forward RULES", "reverse VJPS", "numeric PARTIALS", "Taylor FORMS",
                                   "NumPy LOWERING", "Numba LOWERING"])
def test_transformations_have_a_row_for_function_nodes(table):
    assert "fn" in TABLES[table]


def test_every_taylor_kind_has_its_products_and_its_coefficient():
    assert set(PRODUCTS) == set(COMPUTE)


CASES = {"add": (3.5, 1.25, 4.75), "sub": (3.5, 1.25, 2.25), "mul": (3.5, 1.25, 4.375),
         "div": (3.5, 1.25, 2.8), "pow": (2.0, 0.5, math.sqrt(2.0))}


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_follow_plain_arithmetic_and_ieee(name):
    a, b, expected = CASES[name]
    assert OPS[name].value(np.float64(a), np.float64(b)) == pytest.approx(expected, rel=1e-15)
    with np.errstate(all="ignore"):
        assert math.isnan(OPS["pow"].value(np.float64(-8.0), np.float64(1 / 3)))  # real powers only
        assert OPS["div"].value(np.float64(1.0), np.float64(0.0)) == math.inf


def test_symbolic_forms_are_sympys():
    a, b = sympy.symbols("a b")
    assert [OPS[n].apply(a, b) for n in ("add", "sub", "mul", "div", "pow")] == [a + b, a - b, a * b, a / b, a**b]
    assert OPS["neg"].apply(a) == -a
    assert [n for n, op in OPS.items() if op.ordered] == ["sub", "div", "pow"]
