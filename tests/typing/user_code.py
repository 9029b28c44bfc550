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


# A user's functions: name and spelling stated as class attributes or computed by a property, the
# local derivative and its values in each kind's own signature — none needs a type: ignore.
class Cube(sad.UnaryFn):
    name = "cube"

    def f(self, v: float) -> float:
        return v**3

    def fdiff(self, input: Term, output: Term) -> Term:
        return 3 * input * input

    def grad(self, v: float) -> float:
        return 3 * v * v


class Scaled(sad.UnaryFn):
    def __init__(self, k: int) -> None:
        self.k = k

    @property
    def name(self) -> str:
        return f"scaled{self.k}"

    @property
    def spelling(self) -> tuple[str, ...]:
        return ()

    def f(self, v: float) -> float:
        return self.k * v

    def fdiff(self, input: Term, output: Term) -> Term:
        return tape.const(float(self.k))


class Mean(sad.BinaryFn):
    name = "mean"

    def f(self, a: float, b: float) -> float:
        return (a + b) / 2

    def fdiff(self, lhs: Term, rhs: Term, output: Term) -> tuple[Term, Term]:
        half = tape.const(0.5)
        return half, half

    def grad(self, a: float, b: float) -> tuple[float, float]:
        return 0.5, 0.5


assert_type(Cube()(x).diff(x, 2), Term)
assert_type(Scaled(2).name, str)
assert_type(Mean()(x, y), Term)
assert_type(Mean().fdiff(x, y, x), tuple[Term, Term])
