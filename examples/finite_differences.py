"""Finite differences against the exact derivative: forward differences lose accuracy like h
(truncation) and 1/h (rounding), central ones like h² and 1/h, so each has a best step and
neither reaches full precision. A derivative subgraph has no step at all."""

import numpy as np

import subgraph_ad as sad
from _plot import save

tape = sad.Tape()
x = tape.var("x", 0.7)
f = sad.exp(sad.sin(x)) * sad.atan(x)
exact = f.gen_graph(x).eval()
value = sad.lambdify([x], f)

steps = np.logspace(-16, -1, 61)
forward = np.abs((value(0.7 + steps) - value(0.7)) / steps - exact) / abs(exact)
central = np.abs((value(0.7 + steps) - value(0.7 - steps)) / (2 * steps) - exact) / abs(exact)
print(f"f'(0.7) = {exact!r} (derivative subgraph)")
print(f"forward differences: best relative error {forward.min():.1e} at h = {steps[forward.argmin()]:.0e}")
print(f"central differences: best relative error {central.min():.1e} at h = {steps[central.argmin()]:.0e}")
assert forward.min() > 1e-10 and central.min() > 1e-13 > 1e-16  # neither reaches the AD result's accuracy


def draw(plt):
    plt.loglog(steps, forward + 1e-17, label="forward difference")
    plt.loglog(steps, central + 1e-17, label="central difference")
    plt.axhline(np.finfo(float).eps, color="k", linestyle=":", label="machine epsilon")
    plt.xlabel("step h")
    plt.ylabel("relative error of f′(0.7)")
    plt.legend()
    plt.title("Finite differences: a step-size trade-off AD does not have")


save("finite_differences", draw)
