"""The op registry: every op has a row in every transformation's and backend's table, and its
value and symbolic form agree with plain arithmetic and SymPy."""

import importlib
import math
import pkgutil
from fractions import Fraction

import numpy as np
import pytest
import sympy

import subgraph_ad
from subgraph_ad.core import OPS, Node, Tape
from subgraph_ad.core.ops import exact_field, intern_key, plain_fraction
from subgraph_ad.tables import RULE_TABLES

#: Every module of the package, imported, so every table it makes is registered whatever the tests
#: imported before (the command line's __main__ aside: it runs the CLI).
MODULES = [importlib.import_module(m.name) for m in pkgutil.walk_packages(subgraph_ad.__path__, "subgraph_ad.")
           if not m.name.endswith("__main__")]

#: Every table the package keeps, by name: a table made without the register fails here.
EXPECTED = {"forward RULES", "reverse VJPS", "numeric PARTIALS", "Taylor FORMS", "Taylor PRODUCTS", "Taylor COMPUTE",
            "Taylor DEGREES", "closed-form EXPAND", "Laplacian LAPLACIAN", "operator PARTIALS",
            "operator ADJOINTS", "NumPy LOWERING", "Numba LOWERING", "C LOWERING", "JAX LOWERING",
            "ODE VALUE_OPS", "array forward", "array reverse", "array LAPLACIAN",
            "array code ARITHMETIC", "array loops OPERATIONS"}
#: The tables keyed by the array ops.
ARRAY_TABLES = {"array forward", "array reverse", "array LAPLACIAN"}
#: The module-level dicts keyed by ops that are no rule table, each with the reason.
NOT_RULE_TABLES = {
    "subgraph_ad.interop.printing.SEPARATORS": "made from OPS itself, so it has every binary op",
    "subgraph_ad.interop.sympy_bridge.CHAINS": "the ops SymPy flattens into one Add or Mul: the others are not chains",
    "subgraph_ad.interop.sympy_bridge.FAMILY": "the same ops, by the SymPy class they flatten into",
    "subgraph_ad.ad.taylor.plan.LINEAR": "keyed by Taylor kind (Taylor PRODUCTS' keys): the kinds it names",
    "subgraph_ad.ode.system._SAME_ORDER": "keyed by Taylor kind: the kinds _reads does not read its own way",
    "subgraph_ad.compile.program.INFIX": "the infix rows that C's and JAX's LOWERING (both registered) share",
}


def _missing(name: str) -> set[str]:
    table = RULE_TABLES[name]
    keys = set(table.keys()) if table.keys is not None else (set(OPS) | {"fn"}) - set(table.without)
    return keys - set(table.rows)


def test_every_rule_table_is_made_through_the_register():
    assert set(RULE_TABLES) == EXPECTED


def test_every_op_keyed_dict_of_the_package_is_a_registered_table():
    """A module-level dict with three or more of the ops as keys is a rule table, made through
    the register, or one of ``NOT_RULE_TABLES``: an op-keyed table made any other way fails."""
    from subgraph_ad.core.arrays import ARRAY_OPS

    registered = {id(table.rows) for table in RULE_TABLES.values()} | {id(OPS), id(ARRAY_OPS)}
    found: dict[int, set[str]] = {}  # each dict by every name a module gives it
    for module in MODULES:
        for name, value in vars(module).items():
            if isinstance(value, dict) and id(value) not in registered and len(set(OPS) & set(value)) >= 3:
                found.setdefault(id(value), set()).add(f"{module.__name__}.{name}")
    unexplained = [sorted(names) for names in found.values() if not names & set(NOT_RULE_TABLES)]
    assert not unexplained, f"op-keyed tables made without tables.rule_table: {unexplained}"
    assert set(NOT_RULE_TABLES) <= set().union(*found.values())


@pytest.mark.parametrize("table", sorted(EXPECTED))
def test_every_table_has_a_row_for_every_op(table):
    assert not _missing(table), f"{table} has no row for {sorted(_missing(table))}"


def test_a_new_op_missing_from_a_table_fails_with_the_tables_name(monkeypatch):
    monkeypatch.setitem(OPS, "fma", OPS["add"])
    assert {name for name in EXPECTED if _missing(name)} == EXPECTED - {"Taylor PRODUCTS", "Taylor COMPUTE"} - ARRAY_TABLES


def test_a_new_array_op_missing_from_a_table_fails_with_the_tables_name(monkeypatch):
    from subgraph_ad.core.arrays import ARRAY_OPS

    monkeypatch.setitem(ARRAY_OPS, "cumsum", ARRAY_OPS["sum"])
    assert {name for name in EXPECTED if _missing(name)} == ARRAY_TABLES


def test_every_taylor_kind_has_its_products_and_its_coefficient():
    assert set(RULE_TABLES["Taylor PRODUCTS"].rows) == set(RULE_TABLES["Taylor COMPUTE"].rows)


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


def test_a_node_is_still_built_and_read_as_before():
    node = Node("mul", (1, 2))
    assert (node.op, node.args, node.payload, node.exact) == ("mul", (1, 2), None, None)
    assert node == Node("mul", (1, 2), None) and node._replace(args=(2, 3)).args == (2, 3)
    tape = Tape()
    assert tape.const(1.0).node == Node("const", (), 1.0)  # a plain constant records no exact form
    assert tape.const(2).index == tape.const(2.0).index


@pytest.mark.parametrize("value, plain", [
    (0.5, Fraction(1, 2)), (-3.0, Fraction(-3)), (2.125, Fraction(17, 8)), (2.0**52, Fraction(2**52)),
    (0.1, None), (1 / 3, None), (2.0**60, None), (1e300, None), (math.inf, None), (math.nan, None),
])
def test_plain_fractions_are_integers_and_short_binary_fractions(value, plain):
    assert plain_fraction(value) == plain
    if plain is not None:
        assert sympy.Rational(plain.numerator, plain.denominator) == sympy.Rational(value)  # the float's exact value


def test_constants_are_interned_by_their_bits_and_exact_form():
    third = Node("const", (), 1 / 3, Fraction(1, 3))
    assert intern_key(third) != intern_key(Node("const", (), 1 / 3))
    assert intern_key(Node("const", (), 0.0)) != intern_key(Node("const", (), -0.0))
    assert exact_field(0.5, Fraction(1, 2)) is None and exact_field(1 / 3, Fraction(1, 3)) == Fraction(1, 3)
    assert exact_field(math.inf, Fraction(1, 3)) is None


def test_an_engines_recomputed_float_is_the_exact_constant_of_its_bits():
    tape = Tape()
    third = tape.const(Fraction(1, 3))
    assert tape.constant(1 / 3) == third.index  # recomputed in floats (Taylor mode): the exact one
    assert tape.const(1 / 3).index != third.index  # a user's float stays a float
    x = tape.var("x")
    assert ((x * 3) * (1 / 9)).node.args[0] == third.index  # float arithmetic landing on its bits


@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "cbrt", "tanh", "sin", "atan", "sigmoid", "erf"])
@pytest.mark.parametrize("method", ["graph", "taylor", "auto"])
def test_exact_constants_add_no_nodes_to_derivatives(monkeypatch, name, method):
    """x/3 makes the exact constant 1/3; with exact forms switched off (every constant only a
    float, as before they existed) its derivatives append as many nodes or more."""
    import subgraph_ad as sad
    from subgraph_ad.core import ops

    def appended() -> int:
        tape = Tape()
        x = tape.var("x", 0.3)
        f = sad.FUNCTIONS[name](0.5 + x * x / 3)
        start = len(tape)
        f.diff(x, 10, method=method)
        return len(tape) - start

    with_exact = appended()
    monkeypatch.setattr(ops, "exact_field", lambda value, exact: None)
    without = appended()
    # exact scalars merge terms that rounded ones keep apart (fewer nodes); erf′'s 2/√π is not
    # a rational, so it stays a node where the float folded into Taylor mode's scalars
    assert with_exact <= (2 * without if name == "erf" and method != "graph" else without)
