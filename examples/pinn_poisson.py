"""A physics-informed network for Poisson's equation in 2-D, trained end to end.

Δu + f = 0 on the unit square, u = 0 on its boundary, with f = 2π² sin(πx) sin(πy): the exact
solution is u = sin(πx) sin(πy). A small tanh network u_θ(x) is trained by Adam (written in
NumPy) on the loss

    mean over collocation points of (Δu_θ + f)²  +  mean over boundary points of u_θ²,

whose gradient with respect to θ comes from ``sad.value_and_grad`` of a loss that calls
``sad.laplacian(u, argnums=0)`` inside: the Laplacian in x is built on the gradient's trace,
and the gradient in θ is taken through it. The L2 error against the exact solution on a test
grid is printed at the end.
"""

import time

import numpy as np

import subgraph_ad as sad

WIDTH = 16          # one hidden layer of tanh units
STEPS = 3000        # Adam steps
GRID = 8            # collocation points: GRID x GRID inside the square
BOUNDARY = 8        # points per side on the boundary
WEIGHT = 100.0      # of the boundary term


def network(x, params):
    """u_θ(x) for one point x of shape (2,): a tanh layer, then a linear one."""
    hidden = np.tanh(params["W"] @ x + params["b"])
    return params["v"] @ hidden + params["c"]


def source(points):
    return 2 * np.pi**2 * np.sin(np.pi * points[:, 0]) * np.sin(np.pi * points[:, 1])


def exact(points):
    return np.sin(np.pi * points[:, 0]) * np.sin(np.pi * points[:, 1])


laplacian = sad.laplacian(network, argnums=0)   # Δₓu(x, θ): θ passed through


def loss(params, inside, boundary, f):
    residual = laplacian(inside, params) + f
    edge = sad.vmap(network, in_axes=(0, None))(boundary, params)
    return np.mean(residual**2) + WEIGHT * np.mean(edge**2)


def points():
    t = (np.arange(GRID) + 0.5) / GRID
    inside = np.array([[a, b] for a in t for b in t])
    s = np.linspace(0.0, 1.0, BOUNDARY, endpoint=False)
    boundary = np.concatenate([np.stack([s, 0 * s], 1), np.stack([1 + 0 * s, s], 1),
                               np.stack([1 - s, 1 + 0 * s], 1), np.stack([0 * s, 1 - s], 1)])
    return inside, boundary


def initial(seed=0):
    rng = np.random.default_rng(seed)
    return {"W": rng.normal(0.0, 2.0, (WIDTH, 2)), "b": rng.normal(0.0, 1.0, WIDTH),
            "v": rng.normal(0.0, 1.0 / np.sqrt(WIDTH), WIDTH), "c": 0.0}


def train(steps=STEPS, rate=0.02, seed=0):
    """Adam on the PINN loss: (the trained parameters, the losses)."""
    inside, boundary = points()
    f = source(inside)
    step = sad.value_and_grad(loss)
    params = initial(seed)
    m = {k: np.zeros_like(v) for k, v in params.items()}
    s = {k: np.zeros_like(v) for k, v in params.items()}
    losses = []
    for n in range(1, steps + 1):
        value, g = step(params, inside, boundary, f)
        losses.append(value)
        lr = rate * (0.1 ** (n / steps))   # decays tenfold over the run
        for k in params:
            m[k] = 0.9 * m[k] + 0.1 * g[k]
            s[k] = 0.999 * s[k] + 0.001 * g[k] ** 2
            params[k] = params[k] - lr * (m[k] / (1 - 0.9**n)) / (np.sqrt(s[k] / (1 - 0.999**n)) + 1e-8)
    return params, losses


def l2_error(params, n=21):
    t = np.linspace(0.0, 1.0, n)
    grid = np.array([[a, b] for a in t for b in t])
    predicted = sad.vmap(sad.jit(network), in_axes=(0, None))(grid, params)
    return float(np.sqrt(np.mean((predicted - exact(grid)) ** 2)))


if __name__ == "__main__":
    start = time.perf_counter()
    params, losses = train()
    error = l2_error(params)
    print(f"loss {losses[0]:.3g} -> {losses[-1]:.3g} in {len(losses)} Adam steps "
          f"({time.perf_counter() - start:.1f} s)")
    print(f"L2 error against sin(pi x) sin(pi y) on a 21 x 21 grid: {error:.2e}")
    assert error < 1e-2, error
