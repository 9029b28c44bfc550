"""Verify every built-in and a few composite expressions against SymPy, orders 1..4.

Prints one row per (expression, order) with pass / fail / inconclusive; exits non-zero on a fail.
"""

import sys

import subgraph_ad as sad
from subgraph_ad.testing import check_against_sympy

#: Seconds SymPy may take per check; past it the verdict is "inconclusive (SymPy took > 5 s)"
#: and mpmath at 50 digits gives the reference values instead (the special functions' 4th
#: derivatives can take SymPy minutes to simplify).
TIMEOUT = 5

#: every registered function on x (two-argument ones on (x, y)), inside its domain: the points
#: are drawn from [0.2, 1.8], where acosh needs its argument shifted and asin, acos, atanh scaled
ARGUMENT = {"acosh": "x + 1", "asin": "x / 2", "acos": "x / 2", "atanh": "x / 2", "erfinv": "x / 2"}
EXPRESSIONS = [f"{name}({ARGUMENT.get(name, 'x')}{', y' if fn.arity == 2 else ''})"
               for name, fn in sorted(sad.FUNCTIONS.items())] + [
    "exp(-x^2/2)",
    "x*y + sin(x)",
    "sin(x)*exp(cos(x))/(1+x^2)",
    "tanh(tanh(tanh(x)))",
    "y*log(x) + sqrt(y*log(x))",
    "x^y + 2^x - 1/x",
]


def main() -> int:
    failures = 0
    print(f"{'expression':<30} {'order':>5}  {'status':<12} {'symbolic':<10} points")
    for text in EXPRESSIONS:
        term = sad.parse(text)
        x = term.tape.vars["x"]
        for order in range(1, 5):
            report = check_against_sympy(term, x, order, timeout=TIMEOUT)
            passed = sum(p.status == "pass" for p in report.points)
            print(f"{text:<30} {order:>5}  {report.status:<12} {report.symbolic:<10} {passed}/{len(report.points)}")
            failures += report.status == "fail"
    print(f"{failures} failed" if failures else "all derivatives agree with SymPy")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
