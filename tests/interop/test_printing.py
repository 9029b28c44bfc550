"""str(term) is the formula, repr stays short, LaTeX and the notebook bundle show it too.

The oracle is SymPy reading the printed text back (temporaries substituted line by line) and
comparing it with the same expression built independently in SymPy.
"""

import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest
import sympy

import subgraph_ad as sad
from subgraph_ad.interop.printing import formula, latex

X, Y = sympy.symbols("x y")
FUNCTIONS = {"exp": sympy.exp, "sin": sympy.sin, "cos": sympy.cos, "tanh": sympy.tanh, "log": sympy.log,
             "sqrt": sympy.sqrt, "atan2": sympy.atan2, "xlogy": lambda a, b: a * sympy.log(b), "x": X, "y": Y}


POINTS = ((0.3, 0.7), (0.8, -1.9), (1.4, 0.45))  # x > 0: real powers of x are real


def read(text: str, **point: float) -> sympy.Expr:
    """What SymPy makes of a printed formula: each ``t = …`` line, then the result line; at a
    point (30 digits, each temporary a number, so the text is never expanded) or symbolic."""
    env = dict(FUNCTIONS)
    env.update({name: sympy.Float(v, 30) for name, v in point.items()})
    *temps, result = text.splitlines()
    for line in temps:
        name, equals, rhs = line.partition(" = ")
        assert equals and name.isidentifier(), line
        env[name] = sympy.parse_expr(rhs, local_dict=env)
        if point:
            env[name] = env[name].evalf(30)
    return sympy.parse_expr(result, local_dict=env)


def close(a: sympy.Expr, b: sympy.Expr) -> bool:
    a, b = complex(a.evalf(30)), complex(b.evalf(30))
    return abs(a - b) <= 1e-12 * max(1.0, abs(b))


def same(a: sympy.Expr, b: sympy.Expr) -> bool:
    """Equal as functions: at a few points, to 12 digits (30-digit evaluation)."""
    return all(close(a.subs({X: px, Y: py}), b.subs({X: px, Y: py})) for px, py in POINTS)


def says(text: str, b: sympy.Expr) -> bool:
    """The printed formula has the value of ``b`` at a few points."""
    return all(close(read(text, x=px, y=py), b.subs({X: px, Y: py})) for px, py in POINTS)


@pytest.fixture
def xy():
    tape = sad.Tape()
    return tape, tape.var("x", 0.3), tape.var("y", 0.7)


def test_str_of_a_derivative_is_its_formula(xy):
    tape, x, y = xy
    f, ref = sad.exp(-x**2 / 2), sympy.exp(-X**2 / 2)
    for order in range(6):
        text = str(f.diff(x, order))
        assert "Term(" not in text
        assert says(text, sympy.diff(ref, X, order)), (order, text)


OURS, THEIRS = {"sin": sad.sin, "atan2": sad.atan2}, {"sin": sympy.sin, "atan2": sympy.atan2}


@pytest.mark.parametrize("build, text", [
    (lambda x, y, f: -x**2, "-x**2"),
    (lambda x, y, f: (-x)**2, "(-x)**2"),
    (lambda x, y, f: x**-1.0, "x**(-1)"),
    (lambda x, y, f: (x * y)**2, "(x*y)**2"),
    (lambda x, y, f: x**y**2, "x**y**2"),
    (lambda x, y, f: (x**y)**2, "(x**y)**2"),
    (lambda x, y, f: x - (y + 1), "x - (y + 1)"),
    (lambda x, y, f: x - (y - x), "x - (y - x)"),
    (lambda x, y, f: x / (x * y), "x/(x*y)"),
    (lambda x, y, f: x * (x / y), "x*x/y"),
    (lambda x, y, f: -(x + y), "-(x + y)"),
    (lambda x, y, f: x * -y, "-x*y"),
    (lambda x, y, f: (-2)**x, "(-2)**x"),
    (lambda x, y, f: x + 1, "x + 1"),
    (lambda x, y, f: x - 2, "x - 2"),
    (lambda x, y, f: 1 - x, "1 - x"),
    (lambda x, y, f: f["atan2"](y, x + 1) * 0.1, "0.1*atan2(y, x + 1)"),
    (lambda x, y, f: f["sin"](x)**0.5, "sin(x)**0.5"),
    (lambda x, y, f: x * 1e-5 + 2.0, "1e-05*x + 2"),
    (lambda x, y, f: x * (1 / 3), "0.3333333333333333*x"),
])
def test_fewest_parentheses_and_shortest_constants(xy, build, text):
    tape, x, y = xy
    assert str(build(x, y, OURS)) == text
    parsed, reference = sympy.parse_expr(text, local_dict=dict(FUNCTIONS)), build(X, Y, THEIRS)
    assert parsed == reference if text == "(-2)**x" else same(parsed, reference)


def test_constants_read_back_exactly(xy):
    tape, x, y = xy
    for value in (0.1, 1 / 3, 2.0, -7.25, 1e-300, 123456789.123, 1e22):
        printed = str(tape.const(value) * x).split("*")[0]
        assert float(printed) == value, (value, printed)
    assert str(tape.const(Fraction(1, 3)) * x) == "1/3*x"


def test_exact_constants_print_exactly(xy):
    tape, x, y = xy
    assert str(tape.from_sympy(sympy.pi * X + sympy.log(2) * sympy.sqrt(3) + sympy.Rational(2, 7))) == \
        "pi*x + 2/7 + sqrt(3)*log(2)"
    assert str(tape.from_sympy(sympy.Float(0.5) * sympy.E**2 * X - sympy.Rational(1, 3))) == "0.5*exp(2)*x - 1/3"


def test_a_big_expression_is_written_with_shared_temporaries(xy):
    tape, x, y = xy
    d4 = sad.exp(-x**2 / 2).diff(x, 4, method="graph", closed_form=False)
    text = str(d4)
    lines = text.splitlines()
    assert len(lines) > 1 and lines[0].startswith("t1 = ")
    assert text.count("exp(") == 1  # the shared exponential is written once
    assert all(len(line) <= 90 for line in lines)
    assert says(text, sympy.diff(sympy.exp(-X**2 / 2), X, 4))


def test_long_output_is_capped_with_a_note(xy):
    tape, x, y = xy
    d = (sad.exp(-x**2 / 2) * sad.sin(3 * x)).diff(x, 10, method="graph", closed_form=False)
    text = str(d)
    lines = text.splitlines()
    assert len(lines) == 61
    assert "more lines cut" in lines[-2] and "max_lines=None" in lines[-2]
    full = formula(d, max_lines=None)
    assert "cut" not in full and len(full.splitlines()) > 61
    assert says(full, sympy.diff(sympy.exp(-X**2 / 2) * sympy.sin(3 * X), X, 10))
    assert formula(d, max_lines=5).splitlines()[:4] == full.splitlines()[:4]


def test_printing_is_deterministic():
    def build():
        tape = sad.Tape()
        x, y = tape.var("x"), tape.var("y")
        return str((sad.exp(x * y) * sad.sin(x - y)).diff(x, 3, y, 2))
    assert build() == build()


def test_random_expressions_print_as_themselves():
    rng = np.random.default_rng(7)
    unary = [(sad.exp, sympy.exp), (sad.sin, sympy.sin), (lambda a: -a, lambda a: -a),
             (lambda a: a**2, lambda a: a**2), (lambda a: 2**a, lambda a: 2**a)]
    binary = [(lambda a, b: a + b,) * 2, (lambda a, b: a - b,) * 2, (lambda a, b: a * b,) * 2,
              (lambda a, b: a / (1.5 + b * b),) * 2, (lambda a, b: (1 + a * a)**(b / 4),) * 2]
    for _ in range(20):
        tape = sad.Tape()
        pool = [(tape.var("x"), X), (tape.var("y"), Y), (tape.const(-3), sympy.Integer(-3))]
        for _ in range(12):
            if rng.random() < 0.4:
                ours, theirs = unary[rng.integers(len(unary))]
                a = pool[rng.integers(len(pool))]
                pool.append((ours(a[0]), theirs(a[1])))
            else:
                ours, theirs = binary[rng.integers(len(binary))]
                a, b = pool[rng.integers(len(pool))], pool[rng.integers(len(pool))]
                pool.append((ours(a[0], b[0]), theirs(a[1], b[1])))
        term, reference = pool[-1]
        assert says(str(term), reference), str(term)
        derivative = term.diff(tape.vars["x"], method="graph")  # shared subexpressions: temporaries
        assert says(str(derivative), sympy.diff(reference, X)), str(derivative)


def test_a_var_named_like_a_temporary_is_not_shadowed():
    tape = sad.Tape()
    t1 = tape.var("t1", 0.2)
    d = sad.exp(-t1**2 / 2).diff(t1, 4, method="graph", closed_form=False)
    text = str(d)
    assert "_t1 = " in text
    T = sympy.Symbol("t1")
    reference = sympy.diff(sympy.exp(-T**2 / 2), T, 4)
    assert close(read(text, t1=0.2), reference.subs(T, 0.2))


def test_a_100000_node_chain_prints_without_recursion():
    tape = sad.Tape()
    z = tape.var("x").index
    for _ in range(100_000):  # built at the index level: the test is about printing
        z = tape.intern(sad.Node("fn", (z,), sad.sin))
    lines = str(sad.Term(tape, z)).splitlines()
    assert len(lines) == 61 and lines[-1].startswith("sin(") and "100001 nodes" in lines[-2]


def test_repr_stays_short(xy):
    tape, x, y = xy
    term = sad.exp(x) * y
    assert repr(term) == f"Term({term.index}: mul)"


def test_str_does_not_import_sympy():
    code = ("import sys, subgraph_ad as sad; t = sad.Tape(); x = t.var('x'); "
            "print(sad.exp(-x**2/2).diff(x, 4)); print('sympy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines()[-1] == "False" and "exp(" in out


def test_latex_is_sympys_latex_of_the_formula(xy):
    tape, x, y = xy
    term = sad.sin(x) * sad.exp(y) / 3
    assert term._repr_latex_() == f"$\\displaystyle {sympy.latex(sympy.sin(X) * sympy.exp(Y) / 3)}$"


def test_latex_of_a_big_expression_is_an_aligned_block_of_temporaries(xy):
    tape, x, y = xy
    d = (sad.exp(-x**2 / 2) * sad.sin(3 * x)).diff(x, 10, method="graph", closed_form=False)
    text = latex(d)
    assert text.startswith("$\\displaystyle \\begin{aligned}t_{1} &= ") and text.endswith("\\end{aligned}$")
    rows = text.split(" \\\\ ")
    assert len(rows) == 61 and "more lines cut" in rows[-2]


def test_the_notebook_bundle_has_the_formula_in_text_and_latex(xy):
    tape, x, y = xy
    term = sad.exp(-x**2 / 2).diff(x, 2)
    bundle = term._repr_mimebundle_()
    assert bundle["text/plain"] == str(term)
    assert bundle["text/latex"] == term._repr_latex_()
    assert "image/svg+xml" in bundle or "no drawing" in bundle["text/plain"]
    assert "text/latex" not in term._repr_mimebundle_(exclude={"text/latex"})


@pytest.mark.parametrize("options, message", [({"max_lines": 0}, "max_lines must be"), ({"max_lines": 2.5}, "got 2.5"),
                                              ({"width": 0}, "width must be")])
def test_bad_limits_are_refused(xy, options, message):
    tape, x, y = xy
    with pytest.raises(ValueError, match=message):
        formula(x + 1, **options)


def test_a_negated_family_member_prints_as_a_negation(xy):
    tape, x, y = xy
    assert str(sad.sin(x).diff(x, 2)) == "-sin(x)"
    assert str(y * sad.cos(x).diff(x)) == "y*(-sin(x))"
    assert says(str(sad.sin(x * y).diff(x, 2, y)), sympy.diff(sympy.sin(X * Y), X, 2, Y))
