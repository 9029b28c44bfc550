"""z = x·y + sin(x) at (0.5, 4.2), the reverse-mode tutorial's example, four ways: forward mode
(derive), reverse mode (grad, with the adjoints of the intermediates a = x·y and b = sin(x)),
and as derivative subgraphs (gen_graph per var, grad_graph for all at once)."""

import math

import subgraph_ad as sad

tape = sad.Tape()
x, y = tape.var("x", 0.5), tape.var("y", 4.2)
a = x * y
b = sad.sin(x)
z = a + b

print(f"z = {z.eval()!r}")
print(f"forward mode:  dz/dx = {z.derive(x)!r}, dz/dy = {z.derive(y)!r}")
g = z.grad()
print(f"reverse mode:  dz/dx = {g[x]!r}, dz/dy = {g[y]!r}   (one backward sweep)")
print(f"  adjoints of the intermediates: z̄ = 1, ā = dz/da = {g[a]!r}, b̄ = dz/db = {g[b]!r}")
print(f"  x̄ = ā·y + b̄·cos(x) = {g[a] * y.value + g[b] * math.cos(x.value)!r}, ȳ = ā·x = {g[a] * x.value!r}")
dx, dy = z.gen_graph(x), z.gen_graph(y)
print(f"gen_graph:     dz/dx = {dx.to_sympy()} = {dx.eval()!r}, dz/dy = {dy.to_sympy()} = {dy.eval()!r}")
gx, gy = z.grad_graph([x, y])
print(f"grad_graph:    dz/dx = {gx.to_sympy()}, dz/dy = {gy.to_sympy()}   (one backward sweep, as Terms)")

assert z.eval() == 2.579425538604203
assert abs(g[x] - 5.077582561890373) < 1e-15 and g[y] == 0.5
assert gx.index == dx.index and gy.index == dy.index  # the same nodes, shared by interning
