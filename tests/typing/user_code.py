"""User code as a type checker sees it: ``make test`` runs mypy on this file, and every
``assert_type`` must hold (no Term method or function result may degrade to ``Any``)."""

from __future__ import annotations

import numpy as np
from typing_extensions import assert_type

import subgraph_ad as sad
from subgraph_ad import Term

tape = sad.Tape()
x = tape.var("x", 0.5)
y = tape.var("y", 2.0)
assert_type(x, Term)

f = sad.exp(-x * x / 2) * sad.sin(3 * x) + sad.atan2(y, x)
assert_type(f, Term)
assert_type(f.diff(x, 4), Term)
assert_type(f.diff(x, 2, y), Term)
assert_type(f.gen_graph(x), Term)
assert_type(f.grad_graph(x), Term)
assert_type(f.grad_graph([x, y]), list[Term])
assert_type(sad.sin(0.5), float)
assert_type(sad.sin(np.linspace(0.0, 1.0, 3)), np.ndarray)
assert_type(f.to_dot(), str)
assert_type(str(f), str)
assert_type(f.grad(), sad.Grad)
value: float = float(f.eval())
