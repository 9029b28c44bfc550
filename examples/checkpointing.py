"""Checkpointed reverse mode on a 1,000-step loop, Euler steps x_{k+1} = x_k + 0.01·sin(x_k) of
dx/dt = sin x: the CTZ schedule
keeps O(log n) states and runs O(n log n) steps, where plain reverse mode keeps all n states."""

import math

import subgraph_ad as sad

n = 1000
result = sad.checkpointed_grad(lambda x: x + 0.01 * sad.sin(x), 0.3, n)
x, slope = 0.3, 1.0
for _ in range(n):  # the plain chain rule, every state at hand
    slope *= 1 + 0.01 * math.cos(x)
    x = x + 0.01 * math.sin(x)
print(f"x_{n} = {result.value!r}, dx_{n}/dx_0 = {result.derivative!r}")
print(f"plain chain rule:   {x!r}, {slope!r}")
print(f"{'':<22}{'states stored':>14}{'step calls':>12}")
print(f"{'plain reverse mode':<22}{n:>14}{n:>12}")
print(f"{'CTZ checkpointing':<22}{result.stored_states:>14}{result.step_calls:>12}"
      f"   (log2 n = {math.log2(n):.1f}; n·log2 n / 2 = {n * math.log2(n) / 2:.0f})")
assert abs(result.value - x) <= 1e-13 and abs(result.derivative - slope) <= 1e-11 * abs(slope) and result.stored_states <= 11
