"""The lecture's Hessian-vector products on Rosenbrock in 100 dimensions: H·v against SymPy's
hessian(f)·v, what it costs next to the full Hessian (and how many of H's entries are zero by
structure), and Hutchinson's estimate of tr(H), whose error falls like 1/√samples."""

import numpy as np
import sympy

import subgraph_ad as sad
from _plot import save

N = 100
rng = np.random.default_rng(0)
point = rng.uniform(-1.0, 1.0, N)
v = rng.standard_normal(N)

tape = sad.Tape()
xs = [tape.var(f"x{i}", float(point[i])) for i in range(N)]
f = sum(100 * (xs[i + 1] - xs[i] ** 2) ** 2 + (1 - xs[i]) ** 2 for i in range(N - 1))
size = len(tape)
hv = sad.hvp(f, xs, list(v))
hvp_nodes = len(tape) - size

X = sympy.symbols(f"x0:{N}")
F = sum(100 * (X[i + 1] - X[i] ** 2) ** 2 + (1 - X[i]) ** 2 for i in range(N - 1))
H_sympy = sympy.hessian(F, X).subs(dict(zip(X, point)))
reference = np.array(H_sympy * sympy.Matrix(v), dtype=float).ravel()
ours = np.array([t.eval() for t in hv])
error = np.max(np.abs(ours - reference) / (1 + np.abs(reference)))
print(f"H·v for Rosenbrock-{N}: max relative difference from SymPy's hessian(f)·v = {error:.1e}")
assert error < 1e-12

other = sad.Tape()
ys = [other.var(f"x{i}", float(point[i])) for i in range(N)]
g = sum(100 * (ys[i + 1] - ys[i] ** 2) ** 2 + (1 - ys[i]) ** 2 for i in range(N - 1))
start = len(other)
H = sad.hessian(g, ys)
zero = other.zero
nonzero = sum(h != zero for row in H for h in row)
print(f"f: {size} nodes; H·v appended {hvp_nodes}; the full Hessian {len(other) - start}, "
      f"with {nonzero} structural nonzeros of {N * N} (3N − 2 = {3 * N - 2})")
assert nonzero == 3 * N - 2

exact = float(sum(H[i][i].eval() for i in range(N)))
counts = [10, 30, 100, 300, 1000, 3000, 10000]
errors = [np.mean([abs(sad.hutchinson_trace(f, xs, samples=m, seed=s) - exact) for s in range(8)]) for m in counts]
print(f"tr(H) = {exact:.6g}; Hutchinson's mean absolute error over 8 seeds:")
for m, e in zip(counts, errors):
    print(f"  {m:>6} samples: {e:10.4g}")
slope = np.polyfit(np.log(counts), np.log(errors), 1)[0]
print(f"  error ∝ samples^{slope:.2f} (theory: -0.5)")
assert -0.75 < slope < -0.25


def draw(plt):
    plt.loglog(counts, errors, "o-", label="mean |estimate − tr(H)|")
    plt.loglog(counts, errors[0] * np.sqrt(counts[0] / np.array(counts)), "--", label="∝ 1/√samples")
    plt.xlabel("Rademacher samples")
    plt.ylabel("error")
    plt.legend()
    plt.title(f"Hutchinson's trace estimate, Rosenbrock-{N}")


save("hutchinson", draw)
