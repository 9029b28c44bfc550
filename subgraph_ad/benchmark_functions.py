"""The functions the benchmarks measure and the tests check, in one place both import:

- F1–F5, each on a fresh tape as (tape, f, the var to differentiate by) — ``BENCHMARKS`` —, as
  text (``TEXT``) and written with another library's functions (``written_with``: jax.numpy,
  torch, NumPy);
- the many-variable losses (``MANY_VARIABLES``: Rosenbrock, S, the tanh network M), Python loops
  over x[i] written with a module's functions (``SAD``: subgraph_ad's under NumPy's names);
- the operators' cases (``OPERATOR_CASES``: gauss_sin, the seeded tanh network ``mlp``,
  Rosenbrock), written with scalars.

>>> tape, f, x = BENCHMARKS["F1"]()
>>> round(f.eval(), 12), TEXT["F1"]
(0.882496902585, 'exp(-x**2/2)')
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .core import Tape, Term
from .functions import cos, exp, log, sin, sqrt, tanh


def f1() -> tuple[Tape, Term, Term]:
    tape = Tape()
    x = tape.var("x", 0.5)
    return tape, exp(-x**2 / 2), x


def f2() -> tuple[Tape, Term, Term]:
    tape = Tape()
    x = tape.var("x", 0.5)
    y = tape.var("y", 4.2)
    return tape, x * y + sin(x), x


def f3() -> tuple[Tape, Term, Term]:
    tape = Tape()
    x = tape.var("x", 0.5)
    return tape, sin(x) * exp(cos(x)) / (1 + x**2), x


def f4() -> tuple[Tape, Term, Term]:
    tape = Tape()
    x = tape.var("x", 0.5)
    return tape, tanh(tanh(tanh(x))), x


def f5() -> tuple[Tape, Term, Term]:
    tape = Tape()
    w1 = tape.var("w1", 1.5)
    w2 = tape.var("w2", 0.7)
    return tape, w2 * log(w1) + sqrt(w2 * log(w1)), w1


BENCHMARKS: dict[str, Callable[[], tuple[Tape, Term, Term]]] = {"F1": f1, "F2": f2, "F3": f3, "F4": f4, "F5": f5}
TEXT = {
    "F1": "exp(-x**2/2)",
    "F2": "x*y + sin(x)",
    "F3": "sin(x)*exp(cos(x))/(1+x**2)",
    "F4": "tanh(tanh(tanh(x)))",
    "F5": "w2*log(w1) + sqrt(w2*log(w1))",
}


def written_with(m: Any, name: str) -> Callable[[Any], Any]:
    """F1–F5 in x alone, written with module m (F2's y = 4.2 and F5's w2 = 0.7 as on the tape)."""
    return {
        "F1": lambda x: m.exp(-x**2 / 2),
        "F2": lambda x: x * 4.2 + m.sin(x),
        "F3": lambda x: m.sin(x) * m.exp(m.cos(x)) / (1 + x**2),
        "F4": lambda x: m.tanh(m.tanh(m.tanh(x))),
        "F5": lambda x: 0.7 * m.log(x) + m.sqrt(0.7 * m.log(x)),
    }[name]


#: subgraph_ad's functions under NumPy's names, for the loops written with ``np_``
SAD = type("sadnp", (), {"sin": staticmethod(sin), "exp": staticmethod(exp), "tanh": staticmethod(tanh)})
#: the many-variable network M: samples in R⁴ and hidden units
SAMPLES, HIDDEN = 8, 16
#: the operators' tanh network: its width
WIDTH = 8


def rosenbrock(x: Any, np_: Any = np) -> Any:
    return sum(100 * (x[i + 1] - x[i] ** 2) ** 2 + (1 - x[i]) ** 2 for i in range(len(x) - 1))


def s_function(x: Any, np_: Any = np) -> Any:
    squares = x[0] * x[0]
    for v in x[1:]:
        squares = squares + v * v
    return sum(np_.sin(x[i] * x[i + 1]) for i in range(len(x) - 1)) + np_.exp(squares)


def network_data() -> tuple[np.ndarray, np.ndarray]:
    """M's samples and targets, seeded."""
    rng = np.random.default_rng(0)
    return rng.standard_normal((SAMPLES, 4)), rng.standard_normal(SAMPLES)


def network(w: Any, np_: Any = np) -> Any:
    """Squared loss of tanh(W1 x + b1) · W2 + b2 over the samples; w holds W1, b1, W2, b2."""
    inputs, targets = network_data()
    loss = 0.0
    for x, y in zip(inputs, targets):
        out = w[96]
        for h in range(HIDDEN):
            pre = w[64 + h]
            for j in range(4):
                pre = pre + w[4 * h + j] * float(x[j])
            out = out + w[80 + h] * np_.tanh(pre)
        loss = loss + (out - float(y)) ** 2
    return loss


#: name: (the scalar loop, number of variables)
MANY_VARIABLES: dict[str, tuple[Callable[..., Any], int]] = {
    "R10": (rosenbrock, 10), "R100": (rosenbrock, 100), "R1000": (rosenbrock, 1000),
    "S": (s_function, 50), "M": (network, 97),
}


def gauss_sin(x: Any, np_: Any = SAD) -> Any:
    """exp(−Σ xᵢ²)·Π sin xᵢ, written with scalars (x a list of Terms or SymPy symbols)."""
    squares = x[0] ** 2
    for v in x[1:]:
        squares = squares + v**2
    product = np_.sin(x[0])
    for v in x[1:]:
        product = product * np_.sin(v)
    return np_.exp(-squares) * product


def weights(d: int) -> tuple[np.ndarray, ...]:
    """The network's weights, seeded: W₁ (8×d), b₁, W₂ (8×8), b₂, w₃, scaled by 1/√fan-in."""
    rng = np.random.default_rng(d)
    return (rng.standard_normal((WIDTH, d)) / np.sqrt(d), rng.standard_normal(WIDTH),
            rng.standard_normal((WIDTH, WIDTH)) / np.sqrt(WIDTH), rng.standard_normal(WIDTH),
            rng.standard_normal(WIDTH) / np.sqrt(WIDTH))


def mlp(x: Any, np_: Any = SAD) -> Any:
    """w₃·tanh(W₂ tanh(W₁x + b₁) + b₂), written with scalars."""
    W1, b1, W2, b2, w3 = weights(len(x))
    hidden = []
    for j in range(WIDTH):
        pre = float(b1[j])
        for i, v in enumerate(x):
            pre = pre + float(W1[j, i]) * v
        hidden.append(np_.tanh(pre))
    out = 0.0
    for k in range(WIDTH):
        pre = float(b2[k])
        for j, h in enumerate(hidden):
            pre = pre + float(W2[k, j]) * h
        out = out + float(w3[k]) * np_.tanh(pre)
    return out


#: name: (u, dimension d)
OPERATOR_CASES: dict[str, tuple[Callable[..., Any], int]] = {
    "gauss_sin-4": (gauss_sin, 4), "gauss_sin-16": (gauss_sin, 16), "gauss_sin-64": (gauss_sin, 64),
    "mlp-4": (mlp, 4), "mlp-16": (mlp, 16), "rosenbrock-100": (rosenbrock, 100),
}


__all__ = ["BENCHMARKS", "HIDDEN", "MANY_VARIABLES", "OPERATOR_CASES", "SAD", "SAMPLES", "TEXT", "WIDTH", "f1", "f2",
           "f3", "f4", "f5", "gauss_sin", "mlp", "network", "network_data", "rosenbrock", "s_function", "weights",
           "written_with"]
