"""Gradient descent, PyTorch-style: the gradient comes from the tape (z.grad()) or from a
traced Python function (sad.grad(f)); both walks are the same. Plots the loss curves."""

import numpy as np

import subgraph_ad as sad
from _plot import save

# 1. log((x - 7)^2 + 10) from x = 6: the minimum is at x = 7
tape = sad.Tape()
x = tape.var("x", 6.0)
loss = sad.log((x - 7) ** 2 + 10)
rate, curve1 = 2.0, []
for step in range(60):
    curve1.append(loss.eval())
    x.set(x.value - rate * loss.grad()[x])
print(f"log((x-7)^2+10): x = {x.value:.10f} after 60 steps (minimum at 7), loss {loss.eval():.10f} = log(10)")
assert abs(x.value - 7.0) < 1e-8

traced = sad.grad(lambda x: np.log((x - 7) ** 2 + 10))
v = 6.0
for step in range(60):
    v -= rate * traced(v)
print(f"  the same with a traced sad.grad(f): x = {v:.10f}")
assert abs(v - x.value) < 1e-12

# 2. 0.5x^2 + xy + 0.5y^2 - 2x - 2y from (6, 6): = 0.5(x+y)^2 - 2(x+y), minimal where x + y = 2
tape = sad.Tape()
x, y = tape.var("x", 6.0), tape.var("y", 6.0)
loss = 0.5 * x**2 + x * y + 0.5 * y**2 - 2 * x - 2 * y
rate, curve2 = 0.2, []
for step in range(80):
    curve2.append(loss.eval())
    g = loss.grad()
    x.set(x.value - rate * g[x])
    y.set(y.value - rate * g[y])
print(f"0.5x²+xy+0.5y²-2x-2y: (x, y) = ({x.value:.10f}, {y.value:.10f}), x + y = {x.value + y.value:.12f}, "
      f"loss {loss.eval():.12f} (minimum -2)")
assert abs(x.value + y.value - 2.0) < 1e-9 and abs(loss.eval() + 2.0) < 1e-12

grad2 = sad.grad(lambda x, y: 0.5 * x**2 + x * y + 0.5 * y**2 - 2 * x - 2 * y, argnums=(0, 1))
p = np.array([6.0, 6.0])
for step in range(80):
    p = p - rate * np.array(grad2(*p))
print(f"  the same with a traced sad.grad(f, argnums=(0, 1)): ({p[0]:.10f}, {p[1]:.10f})")
assert np.allclose(p, [x.value, y.value], atol=1e-12)


def draw(plt):
    plt.semilogy(np.array(curve1) - np.log(10) + 1e-16, label="log((x−7)²+10) − log 10")
    plt.semilogy(np.array(curve2) + 2 + 1e-16, label="0.5x²+xy+0.5y²−2x−2y + 2")
    plt.xlabel("step")
    plt.ylabel("loss above its minimum")
    plt.legend()
    plt.title("Gradient descent with gradients from the tape")


save("gradient_descent", draw)
