"""Benchmark, transforms that nest: ``sad.grad(sad.grad(f))`` against ``sad.derivative(f, 2)``
(the same second derivative, built by two nested reverse sweeps against one Taylor pass) and
against ``jax.jit(jax.grad(jax.grad(f)))``, for f(t) = exp(−t²/2)·sin 3t: one call at one
point (the per-call overhead of the transform: best of 5 loops of 2,000 calls) and one call on
10⁵ points (``sad.vmap`` of the nested grad; ``jax.vmap`` under ``jit``; medians, ours
interleaved round by round). The values
are checked against the closed form of f″ before anything is timed.

    python benchmarks/transforms.py [--quick] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import statistics
import timeit
from pathlib import Path
from typing import Any, Callable

import numpy as np

import subgraph_ad as sad

import many_variables  # the script's folder is on sys.path when it runs

RESULTS = Path(__file__).resolve().parent / "results"
POINT = 0.3


def f(t: Any) -> Any:
    return np.exp(-t * t / 2) * np.sin(3 * t)


def exact(t: np.ndarray) -> np.ndarray:
    """f″ in closed form: e^(−t²/2)·((t² − 10)·sin 3t − 6t·cos 3t)."""
    return np.exp(-t * t / 2) * ((t * t - 10) * np.sin(3 * t) - 6 * t * np.cos(3 * t))


def per_call(fn: Callable[[], Any], number: int) -> float:
    """Seconds per call: the best of 5 loops of ``number`` calls (timeit's way for calls of µs)."""
    return min(timeit.repeat(fn, number=number, repeat=5)) / number


def interleaved(calls: dict[str, Callable[[], Any]], rounds: int = 15) -> dict[str, float]:
    """Each call's median seconds over ``rounds`` rounds that run every call once in turn (after
    one untimed round): a slow minute of the machine falls on all of them alike."""
    times: dict[str, list[float]] = {name: [] for name in calls}
    for r in range(rounds + 1):
        for name, call in calls.items():
            start = timeit.default_timer()
            call()
            if r:
                times[name].append(timeit.default_timer() - start)
    return {name: statistics.median(found) for name, found in times.items()}


def nested(points: int) -> dict[str, Any]:
    """One point and ``points`` points, each way; the first calls (trace, build, compile) too."""
    batch = np.linspace(-2.0, 2.0, points)
    start = timeit.default_timer()
    twice = sad.grad(sad.grad(f))
    one = twice(POINT)
    first_nested = timeit.default_timer() - start
    start = timeit.default_timer()
    second = sad.derivative(f, 2)
    two = second(POINT)
    first_derivative = timeit.default_timer() - start
    batched = sad.vmap(twice)
    for value in (one, two):
        assert abs(value - exact(np.array(POINT))) <= 1e-12 * abs(exact(np.array(POINT)))
    for values in (batched(batch), second(batch)):
        assert np.allclose(values, exact(batch), rtol=1e-12, atol=1e-12)
    row: dict[str, Any] = {
        "points": points,
        "first": {"nested": first_nested, "derivative": first_derivative},
        "one": {"nested": per_call(lambda: twice(POINT), 2_000), "derivative": per_call(lambda: second(POINT), 2_000)},
        "batch": interleaved({"nested": lambda: batched(batch), "derivative": lambda: second(batch)}),
    }
    try:
        import jax
    except ImportError:
        return row
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    g = jax.grad(jax.grad(lambda t: jnp.exp(-t * t / 2) * jnp.sin(3 * t)))
    at_one, on_batch, device = jax.jit(g), jax.jit(jax.vmap(g)), jnp.asarray(batch)
    assert np.allclose(on_batch(device), exact(batch), rtol=1e-12, atol=1e-12)
    row["one"]["jax"] = per_call(lambda: float(at_one(POINT)), 2_000)
    row["batch"]["jax"] = many_variables.timed(lambda: jax.block_until_ready(on_batch(device)), warm=True)[0]
    return row


def table(row: dict[str, Any]) -> str:
    """Times per call and the ratio that the transforms' issue asks for (nested ÷ derivative ≤ 1)."""
    lines = ["| f″ of exp(−t²/2)·sin 3t | grad(grad(f)) | derivative(f, 2) | JAX jit(grad(grad)) | "
             "nested ÷ derivative | nested ÷ JAX |", "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for key, label, unit, scale in (("one", "one point", "µs", 1e6), ("batch", f"{row['points']:,} points", "ms", 1e3)):
        times = row[key]
        peer = times.get("jax")
        lines.append(f"| {label} | {times['nested'] * scale:.2f} {unit} | {times['derivative'] * scale:.2f} {unit} | "
                     + ("–" if peer is None else f"{peer * scale:.2f} {unit}")
                     + f" | {times['nested'] / times['derivative']:.2f} | "
                     + ("–" if peer is None else f"{times['nested'] / peer:.2f}") + " |")
    first = row["first"]
    lines.append(f"| first call (trace, build, compile) | {first['nested'] * 1e3:.1f} ms | "
                 f"{first['derivative'] * 1e3:.1f} ms | | | |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="10³ points instead of 10⁵")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    row = nested(1_000 if args.quick else 100_000)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "transforms.json").write_text(json.dumps(row, indent=2))
    print(table(row), flush=True)


if __name__ == "__main__":
    main()
