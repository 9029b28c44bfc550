"""Array-written NumPy code, traced with its arrays kept as array nodes, against JAX.

- **MLP gradient**: ``sad.grad`` of the 961-parameter tanh network's squared loss (10 → 80 → 1,
  batch 32; ``benchmarks/compile.py``'s ``mlp_loss``) against ``jax.jit(jax.grad)``: first call
  (fresh process), repeated call, nodes on the tape.
- **sum of squares**: ``sad.grad(lambda x: np.sum(x**2))`` on 10⁶ elements: first call time and
  peak memory (``tracemalloc``), fresh process.
- **MLP 10 → 64 → 64 → 1, batch 128**: gradient and Hessian-vector product against
  ``jax.jit(jax.grad)`` and ``jax.jit(jax.jvp(jax.grad))``.
- **Hessian at d = 300**: ``sad.hessian`` of a 16-unit tanh network u(x) = v·tanh(Wx + b) of
  300 inputs at one point: first call time and peak memory, fresh process; checked against
  ``jax.hessian`` (after the measurement).

First calls run in a fresh process (they compile nothing twice). Repeated calls are timed in
turns with JAX's, each side warm in its own process (``paired``): the ratio is the median over
rounds of one batch each, so the machine's drift cancels out.

    PYTHONPATH=. python benchmarks/arrays.py [--rounds 20]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from typing import Any, Callable

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compile import mlp_data, mlp_loss
from paired import HERE, Pair


def deep_loss(p: dict[str, Any], x: Any, y: Any, np_: Any = np) -> Any:
    """Squared loss of a 10 → 64 → 64 → 1 tanh network."""
    h = np_.tanh(x @ p["w1"] + p["b1"])
    h = np_.tanh(h @ p["w2"] + p["b2"])
    return np_.mean((h @ p["w3"] + p["b3"] - y) ** 2)


def deep_data() -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    rng = np.random.default_rng(1)
    p = {"w1": rng.normal(size=(10, 64)) / 3, "b1": rng.normal(size=64), "w2": rng.normal(size=(64, 64)) / 8,
         "b2": rng.normal(size=64), "w3": rng.normal(size=(64, 1)) / 8, "b3": rng.normal(size=1)}
    return p, rng.normal(size=(128, 10)), rng.normal(size=(128, 1))


# -- the sides (``paired``): set up in a fresh process, then timed in turns -------------------------
Side = tuple[dict[str, Any], dict[str, Callable[[], Any]]]


def mlp_ours() -> Side:
    import subgraph_ad as sad
    from subgraph_ad.ad.reverse import grad_graph
    from subgraph_ad.trace.tracer import Traced

    p, x, y = mlp_data()
    grad = sad.grad(mlp_loss)
    start = time.perf_counter()
    first = grad(p, x, y)
    info: dict[str, Any] = {"first": time.perf_counter() - start, "check": float(np.linalg.norm(first))}
    trace = Traced(mlp_loss, [p.shape, x.shape, y.shape], "grad", arrays=True)
    grad_graph(trace.scalar_output("grad"), trace.vars_of(0))
    info["nodes"] = len(trace.tape.nodes)
    return info, {"grad": lambda: grad(p, x, y)}


def _jax() -> Any:
    import jax

    jax.config.update("jax_enable_x64", True)
    return jax


def mlp_jax() -> Side:
    jax = _jax()
    import jax.numpy as jnp

    p, x, y = mlp_data()
    grad = jax.jit(jax.grad(lambda p, x, y: mlp_loss(p, x, y, jnp)))
    start = time.perf_counter()
    first = np.asarray(grad(p, x, y))
    info = {"first": time.perf_counter() - start, "check": float(np.linalg.norm(first))}
    return info, {"grad": lambda: grad(p, x, y).block_until_ready()}


def measure_squares() -> dict[str, Any]:
    import tracemalloc

    import subgraph_ad as sad

    x = np.random.default_rng(0).normal(size=10**6)
    tracemalloc.start()
    start = time.perf_counter()
    g = sad.grad(lambda x: np.sum(x ** 2))(x)
    first = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {"first": first, "peak_MB": peak / 2**20, "error": float(np.max(np.abs(g - 2 * x)))}


def measure_hessian() -> dict[str, Any]:
    import tracemalloc

    import subgraph_ad as sad

    rng = np.random.default_rng(1)
    d = 300
    W, b, v, x = rng.normal(size=(16, d)) / np.sqrt(d), rng.normal(size=16), rng.normal(size=16), rng.normal(size=d)
    tracemalloc.start()
    start = time.perf_counter()
    found = sad.hessian(lambda x: v @ np.tanh(W @ x + b))(x)
    first = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    jax = _jax()
    want = np.asarray(jax.hessian(lambda x: v @ jax.numpy.tanh(W @ x + b))(x))
    return {"first": first, "peak_MB": peak / 2**20, "error": float(np.max(np.abs(found - want))),
            "scale": float(np.max(np.abs(want)))}


def deep_ours() -> Side:
    import subgraph_ad as sad

    p, x, y = deep_data()
    v = {k: np.ones_like(a) for k, a in p.items()}
    grad = sad.grad(deep_loss)

    def loss(q: Any) -> Any:
        return deep_loss(q, x, y)

    found = sad.hvp(loss, p, v)  # the first calls, which compile
    grad(p, x, y)
    info = {"check": float(sum(np.linalg.norm(a) for a in found.values()))}
    return info, {"grad": lambda: grad(p, x, y), "hvp": lambda: sad.hvp(loss, p, v)}


def deep_jax() -> Side:
    jax = _jax()
    import jax.numpy as jnp

    p, x, y = deep_data()
    v = {k: np.ones_like(a) for k, a in p.items()}
    grad = jax.jit(jax.grad(lambda p, x, y: deep_loss(p, x, y, jnp)))
    hvp = jax.jit(lambda p, v: jax.jvp(jax.grad(lambda q: deep_loss(q, x, y, jnp)), (p,), (v,))[1])
    grad(p, x, y)
    found = hvp(p, v)
    info = {"check": float(sum(np.linalg.norm(np.asarray(a)) for a in found.values()))}
    return info, {"grad": lambda: jax.block_until_ready(grad(p, x, y)),
                  "hvp": lambda: jax.block_until_ready(hvp(p, v))}


def _fresh(name: str) -> dict[str, Any]:
    """``name()`` in a fresh process, its row as JSON."""
    code = f"import sys, json; sys.argv = ['arrays']; import arrays; print(json.dumps(arrays.{name}()))"
    done = subprocess.run([sys.executable, "-c", code], cwd=HERE, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20, help="pairs of batches timed in turns (default 20)")
    args = parser.parse_args()
    ms = 1e3
    with Pair("arrays:mlp_ours", "arrays:mlp_jax") as pair:
        mlp, mlp_jax = pair.info
        timed = pair.time("grad", args.rounds)
    print("MLP 10 → 80 → 1 gradient (961 parameters, batch 32; theirs: JAX)")
    print(f"  first call   ours {mlp['first'] * ms:9.2f} ms   jax {mlp_jax['first'] * ms:9.2f} ms")
    print(f"  repeated     {timed.summary()} (target <= 1.0x)")
    print(f"  nodes on the tape {mlp['nodes']} (target <= 200); |g| ours {mlp['check']:.12g} jax {mlp_jax['check']:.12g}")
    squares = _fresh("measure_squares")
    print("grad(lambda x: np.sum(x**2)) on 10^6 elements, first call")
    print(f"  {squares['first'] * ms:9.1f} ms (target <= 1000), peak {squares['peak_MB']:.1f} MB (target <= 200), "
          f"max error {squares['error']:.1e}")
    print("MLP 10 → 64 → 64 → 1, batch 128 (theirs: JAX)")
    with Pair("arrays:deep_ours", "arrays:deep_jax") as pair:
        deep, deep_jax = pair.info
        for key, what in (("grad", "gradient"), ("hvp", "Hessian-vector product")):
            print(f"  {what:24s} {pair.time(key, args.rounds).summary()} (target <= 1.0x)")
    print(f"  |Hv| ours {deep['check']:.12g} jax {deep_jax['check']:.12g}")
    hessian = _fresh("measure_hessian")
    print("sad.hessian of a 16-unit tanh network at d = 300, one point, first call")
    print(f"  {hessian['first'] * ms:9.1f} ms (target <= 2000), peak {hessian['peak_MB']:.1f} MB (target <= 1024), "
          f"max error against jax.hessian {hessian['error']:.1e} (entries up to {hessian['scale']:.2g})")


if __name__ == "__main__":
    main()
