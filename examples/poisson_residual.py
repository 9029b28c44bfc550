"""A PINN-style residual of Poisson's equation −Δu = f on the unit square, at collocation points.

The trial function u(x, y) = x(1−x)·y(1−y)·N(x, y), with N a small tanh network (seeded
weights), vanishes on the boundary, so only the interior residual r = Δu + f matters. The
Laplacian is built once as a derivative subgraph of the traced function (one forward pass,
no Hessian) and evaluated on all collocation points in one compiled call. The check: for
N ≡ 1 the exact solution of −Δu = f with f = 2(x(1−x) + y(1−y)) is u itself, so the residual
must vanish to rounding; and the network's Laplacian must equal the trace of its Hessian.
"""

import numpy as np

import subgraph_ad as sad

rng = np.random.default_rng(0)
WIDTH = 6
W1, b1 = rng.standard_normal((WIDTH, 2)), rng.standard_normal(WIDTH)
w2 = rng.standard_normal(WIDTH) / np.sqrt(WIDTH)


def network(p):
    """N(x, y) = 1 + w₂·tanh(W₁p + b₁), written as NumPy code on the point p = (x, y)."""
    return 1.0 + np.dot(w2, np.tanh(W1 @ p + b1))


def bubble(p):
    x, y = p[0], p[1]
    return x * (1 - x) * y * (1 - y)


def trial(p):
    return bubble(p) * network(p)


def source(points):
    """f for which u = bubble solves −Δu = f."""
    x, y = points[:, 0], points[:, 1]
    return 2 * (x * (1 - x) + y * (1 - y))


points = rng.uniform(0.0, 1.0, (5_000, 2))  # interior collocation points

exact = sad.laplacian(bubble)(points) + source(points)
print(f"residual of the exact solution on {len(points)} points: max |Δu + f| = {np.max(np.abs(exact)):.1e}")
assert np.max(np.abs(exact)) < 1e-12

residual = sad.laplacian(trial)(points) + source(points)
print(f"residual of the network trial function: mean square {np.mean(residual ** 2):.4f}")

hessian = sad.hessian(trial)
check = np.array([np.trace(hessian(p)) for p in points[:50]])
error = np.max(np.abs(sad.laplacian(trial)(points[:50]) - check))
print(f"Laplacian against the Hessian's trace on 50 points: max difference {error:.1e}")
assert error < 1e-12

tape = sad.Tape()
xs = [tape.var("x", 0.3), tape.var("y", 0.6)]
u = trial(np.array(xs, dtype=object))
size = len(tape)
lap = sad.laplacian(u, xs)
print(f"nodes: u {size}, its Laplacian appends {len(tape) - size}")
