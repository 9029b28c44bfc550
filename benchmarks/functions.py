"""The five benchmark functions F1–F5: on a fresh tape (tape, f, wrt), as text, and written with
another library's functions (a module with exp, sin, cos, log, sqrt, tanh: jax.numpy, torch)."""

from __future__ import annotations

from typing import Any, Callable

import subgraph_ad as sad
from subgraph_ad import Tape, Term


def f1() -> tuple[Tape, Term, Term]:
    tape = Tape(); x = tape.var("x", 0.5)
    return tape, sad.exp(-x**2 / 2), x


def f2() -> tuple[Tape, Term, Term]:
    tape = Tape(); x = tape.var("x", 0.5); y = tape.var("y", 4.2)
    return tape, x * y + sad.sin(x), x


def f3() -> tuple[Tape, Term, Term]:
    tape = Tape(); x = tape.var("x", 0.5)
    return tape, sad.sin(x) * sad.exp(sad.cos(x)) / (1 + x**2), x


def f4() -> tuple[Tape, Term, Term]:
    tape = Tape(); x = tape.var("x", 0.5)
    return tape, sad.tanh(sad.tanh(sad.tanh(x))), x


def f5() -> tuple[Tape, Term, Term]:
    tape = Tape(); w1 = tape.var("w1", 1.5); w2 = tape.var("w2", 0.7)
    return tape, w2 * sad.log(w1) + sad.sqrt(w2 * sad.log(w1)), w1


FUNCTIONS: dict[str, Callable[[], tuple[Tape, Term, Term]]] = {"F1": f1, "F2": f2, "F3": f3, "F4": f4, "F5": f5}
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
