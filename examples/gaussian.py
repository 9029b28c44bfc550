"""The built-in demo: derivatives 1..6 of the Gaussian exp(-x^2/2) at x = 0.5, checked against SymPy.

It then draws the derivative graph (out/gaussian.svg) and an animation of it being built,
one frame per new node on a layout that never moves (out/gaussian.html).
"""

import sys
import time
from pathlib import Path

import subgraph_ad as sad
from subgraph_ad.ad.diff import AUTO_TAYLOR_SURE
from subgraph_ad.testing import check_against_sympy

tape = sad.Tape()
x = tape.var("x", 0.5)
f = sad.exp(-x**2 / 2)
built = len(tape)

print(f"f(x) = {f.to_sympy()}   at x = {x.value}   ({built} nodes)")
print(f"{'order':>5} {'value':>22} {'nodes':>6} {'SymPy check':>12}")
d = f
derivatives = []
for order in range(1, 7):
    d = d.gen_graph(x)
    derivatives.append(d)
    report = check_against_sympy(f, x, order, derivative=d)  # checks the derivative built above
    print(f"{order:>5} {d.eval():>22.15g} {len(tape) - built:>6} {report.status:>12}")
    assert report.status == "pass", report

taylor_tape = sad.Tape()
t = taylor_tape.var("x", 0.5)
g = sad.exp(-t**2 / 2)
start = len(taylor_tape)
sixth = sad.taylor_graph(g, t, 6)[-1]
assert abs(sixth.eval() - d.eval()) <= 1e-12 * abs(d.eval())
print(f"Taylor mode builds all 6 orders in {len(taylor_tape) - start} nodes (same values); "
      f"f.diff(x, n) picks it when it appends fewer nodes (from order {AUTO_TAYLOR_SURE} on, always)")

alone_tape = sad.Tape()
a = alone_tape.var("x", 0.5)
h = sad.exp(-a**2 / 2)
start = len(alone_tape)
closed = h.diff(a, 6, method="taylor")  # the 6th alone: its closed form, in Horner form
report = check_against_sympy(h, a, 6, derivative=closed)
assert report.status == "pass", report
print(f"the 6th alone, f.diff(x, 6): {len(alone_tape) - start} nodes, {closed.to_sympy()}   SymPy check {report.status}")

out = Path("out")
out.mkdir(exist_ok=True)
try:
    graph = d.render(out / "gaussian.svg", outputs=[f, *derivatives])
    # The animation differentiates a fresh copy, so that every pass appends its nodes anew.
    fresh = sad.Tape()
    y = fresh.var("x", 0.5)
    start = time.perf_counter()
    movie = sad.animate(sad.exp(-y**2 / 2), y, 6, out / "gaussian.html", method="graph")
    seconds = time.perf_counter() - start
except sad.GraphvizNotFound as exc:
    print(f"no drawings: {exc}", file=sys.stderr)
else:
    print(f"graph of f and its 6 derivatives: {Path(graph).resolve()}")
    print(f"animation, {movie.frames} frames over {movie.nodes} nodes ({seconds:.2f} s): {Path(movie.path).resolve()}")
