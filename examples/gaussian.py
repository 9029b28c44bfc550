"""The built-in demo: derivatives 1..6 of the Gaussian exp(-x^2/2) at x = 0.5, checked against SymPy."""

import subgraph_ad as sad
from subgraph_ad.testing import check_against_sympy

tape = sad.Tape()
x = tape.var("x", 0.5)
f = sad.exp(-x**2 / 2)
built = len(tape)

print(f"f(x) = {f.to_sympy()}   at x = {x.value}   ({built} nodes)")
print(f"{'order':>5} {'value':>22} {'nodes':>6} {'SymPy check':>12}")
d = f
for order in range(1, 7):
    d = d.gen_graph(x)
    report = check_against_sympy(f, x, order)
    print(f"{order:>5} {d.eval():>22.15g} {len(tape) - built:>6} {report.status:>12}")
    assert report.status == "pass", report
