"""The steps the property tests' random programs are made of: every built-in function on
arguments inside its domain, and the arithmetic kinds (repeated operands among them), written
once for scalar Terms, array Terms, object arrays of Terms and plain numbers alike."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

import subgraph_ad as sad

#: Every registered function, by arity.
UNARY = sorted(name for name, f in sad.FUNCTIONS.items() if f.arity == 1)
BINARY = sorted(name for name, f in sad.FUNCTIONS.items() if f.arity == 2)
#: The arithmetic kinds ``arithmetic`` knows.
ARITHMETIC = ("add", "sub", "same", "mul", "div", "where")


def inside(a: Any) -> Any:
    """Into (0.3, 0.9): every built-in's domain (log, acos, atanh, erfinv, gamma, tan…)."""
    return 0.6 + 0.3 * np.sin(a)


def function(name: str, a: Any, b: Any) -> Any:
    """The built-in ``name`` at a (and b, for two arguments: pass a again for f(a, a))."""
    fn = sad.FUNCTIONS[name]
    first = 1 + inside(a) if name == "acosh" else inside(a)
    return fn(first) if fn.arity == 1 else fn(first, inside(b))


def where(a: Any, b: Any) -> Any:
    """where(a > b, cos a, b²), as a NumPy user writes it."""
    return np.where(a > b, np.cos(a), b * b)


def arithmetic(kind: str, a: Any, b: Any, chosen: Callable[[Any, Any], Any] = where) -> Any:
    """One of ``ARITHMETIC``: a + b, a − b, a − a + a·a (a repeated), a·b, a/(2 + sin b), and a
    condition (``chosen``)."""
    if kind == "add":
        return a + b
    if kind == "sub":
        return a - b
    if kind == "same":
        return a - a + a * a
    if kind == "mul":
        return a * b
    if kind == "div":
        return a / (2.0 + np.sin(b))
    return chosen(a, b)


def grown(pool: list[Any], names: list[str], rng: np.random.Generator) -> list[Any]:
    """``pool`` grown by two terms a name: the built-in ``name`` of random earlier terms (f(a, a)
    at times), then a random ``arithmetic`` kind of two."""
    for name in names:
        a, b = (pool[int(k)] for k in rng.integers(0, len(pool), 2))
        pool.append(function(name, a, a if rng.integers(2) else b))
        c, d = (pool[int(k)] for k in rng.integers(0, len(pool), 2))
        pool.append(arithmetic(ARITHMETIC[int(rng.integers(len(ARITHMETIC)))], c, d))
    return pool
