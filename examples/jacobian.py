"""The static-graph article's Jacobian: f(x) = (x1 + x2 + log x1, x1/x2 + (x1 - x2)^2) at (1, 2)
is [[2, 1], [-1.5, 1.75]] — symbolically, numerically, with placeholders fed by a dict, and through
sad.jacobian(f) of NumPy code."""

import numpy as np

import subgraph_ad as sad

tape = sad.Tape()
x1, x2 = tape.placeholder("x1"), tape.placeholder("x2")  # a static graph: no values yet
f1 = x1 + x2 + sad.log(x1)
f2 = x1 / x2 + (x1 - x2) ** 2
J = sad.jacobian([f1, f2], [x1, x2])
print("symbolic Jacobian:")
for row in J:
    print("  ", [str(t.to_sympy()) for t in row])
feed = {x1: 1.0, x2: 2.0}
numeric = [[t.eval(feed) for t in row] for row in J]
print("fed with {x1: 1, x2: 2}:", numeric)
assert numeric == [[2.0, 1.0], [-1.5, 1.75]]
try:
    f1.eval()
except sad.UnfedPlaceholder as error:
    print("unfed:", error)

compiled = sad.lambdify([x1, x2], [t for row in J for t in row])
print("compiled, on a grid of points x1 = 1, 2, 3 (x2 = 2):",
      np.array(compiled(np.array([1.0, 2.0, 3.0]), 2.0)).T.reshape(3, 2, 2).tolist()[0])


def f(x):
    return np.array([x[0] + x[1] + np.log(x[0]), x[0] / x[1] + (x[0] - x[1]) ** 2])


traced = sad.jacobian(f)(np.array([1.0, 2.0]))
print("sad.jacobian(f) of NumPy code:", traced.tolist())
assert np.array_equal(traced, [[2.0, 1.0], [-1.5, 1.75]])
