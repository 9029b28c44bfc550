"""The one-point code on Python floats writes a value read once into the expression that reads
it and reuses the names of dead values: the values stay those of the same float operations."""

import math
import re

from subgraph_ad import Tape, lambdify, sin
from subgraph_ad.compile.backends import numpy as numpy_backend


def test_reused_names_never_overwrite_a_value_an_inlined_expression_still_reads():
    # v is read by a (read once: written into w's expression) and then last by u = sin(v), a
    # statement: were v's name freed at u, u would take it and a's expression, evaluated at w,
    # would read sin(v) for v
    tape = Tape()
    x, y = tape.var("x"), tape.var("y")
    total = tape.zero
    for k in range(1, 400):
        v = x * (y + float(k))
        a = v + float(k)
        u = sin(v)
        total = total + (a * u + u)
    f = lambdify([x, y], total)
    assert f.built == ()
    value = f(0.3, 0.7)

    expected = 0.0  # the same float operations, in plain Python
    for k in range(1, 400):
        v = 0.3 * (0.7 + k)
        expected = expected + ((v + k) * math.sin(v) + math.sin(v))
    # every term is positive, the tape may reorder a sum of two or a product: a few ulp per term
    assert math.isclose(value, expected, rel_tol=1e-12)
    assert f.built == ("point",)

    source = numpy_backend.scalar_source(f.program, python=True)[0]
    assigned = set(re.findall(r"^\s+(t\d+) = ", source, flags=re.M))
    assert len(f.program.steps) > 2000 and len(assigned) < 100  # a name per live value, not per node
