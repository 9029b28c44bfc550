"""Benchmark, differential operators of networks written with arrays (the array pass), against
JAX and folx (the bench extra) in the same run, each compiled first, all under ``jit(vmap)``:

- the Laplacian of w₃·tanh(W₂ tanh(W₁x + b₁) + b₂) (width 32, seeded weights) traced by
  ``sad.laplacian(fn)`` on 10⁴ points, d = 4 and 16, on the NumPy and the JAX backend, against
  JAX's ``trace∘hessian`` and folx's ``forward_laplacian`` (targets: ≤ 0.8× the best at d = 4,
  ≤ 0.5× at d = 16);
- the biharmonic of that network at d = 4 against JAX's loop of Hessian-vector products over
  the trace of ``jax.hessian`` (target ≤ 0.5×);
- a per-particle network (32 particles in 3-D through the same width-32 layers, summed), its
  Laplacian on 10³ points against the best of folx and JAX's ``trace∘hessian`` (no target: the
  sparsity the operators' issue asks to keep);
- the forward-Laplacian papers' 50 → 768 → 768 → 512 → 512 → 1 tanh network, the exact
  Laplacian on 10³ points against folx (target ≤ 1.0×), and its order-10 directional jet on
  10³ points and directions against ``jax.experimental.jet`` (target ≤ 0.5×).

Values agree with the peers to 1e-10 (the jets to 1e-9 of their largest; asserted). Writes results/networks.json.

    python benchmarks/networks.py [--quick] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

import subgraph_ad as sad

import many_variables  # the script's folder is on sys.path when it runs

RESULTS = Path(__file__).resolve().parent / "results"
POINTS = 10_000


def timed(fn: Any, most: int = 7) -> tuple[float, Any]:
    """many_variables' median timing, after one untimed run."""
    return many_variables.timed(fn, most=most, warm=True)


def jax64() -> Any:
    """JAX with its 64-bit types on (the peers compute in float64 as ours do), or None where it
    is not installed."""
    try:
        import jax
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    return jax


def measured(operator: Any, *args: Any, most: int = 7) -> tuple[Any, float, float]:
    """An operator's values, its first call (trace, build, compile) and its later calls' median."""
    start = time.perf_counter()
    found = operator(*args)
    first = time.perf_counter() - start
    return found, first, timed(lambda: operator(*args), most)[0]


#: The traced network's dimensions and the target ratio of each to JAX's trace∘hessian.
NETWORK_TARGETS = {4: 0.8, 16: 0.5}
NETWORK_WIDTH = 32


def network_weights(d: int) -> tuple[np.ndarray, ...]:
    """W₁ (32×d), b₁, W₂ (32×32), b₂, w₃, seeded, scaled by 1/√fan-in."""
    rng = np.random.default_rng(100 + d)
    w = NETWORK_WIDTH
    return (rng.standard_normal((w, d)) / np.sqrt(d), rng.standard_normal(w),
            rng.standard_normal((w, w)) / np.sqrt(w), rng.standard_normal(w), rng.standard_normal(w) / np.sqrt(w))


def traced_network(d: int, n: int = POINTS) -> dict[str, Any]:
    """Δu of w₃·tanh(W₂ tanh(W₁x + b₁) + b₂), written with arrays and traced by
    ``sad.laplacian(fn)``: the first call (trace, build, compile) and later calls on n points,
    against ``jax.jit(jax.vmap)`` of the trace of ``jax.hessian`` and of folx's
    ``forward_laplacian`` (each compiled first)."""
    W1, b1, W2, b2, w3 = network_weights(d)
    batch = np.random.default_rng(1).uniform(-1.0, 1.0, (n, d))
    found, first, later = measured(sad.laplacian(lambda x: w3 @ np.tanh(W2 @ np.tanh(W1 @ x + b1) + b2)), batch)
    row: dict[str, Any] = {"d": d, "points": n, "first": first, "eval": later, "jax": None,
                           "target": NETWORK_TARGETS[d]}
    try:
        import jax
    except ImportError:
        return row
    # the same array program compiled by the JAX backend (XLA fuses its passes over the blocks)
    on_jax, row["first_jax"], row["eval_jax"] = measured(
        sad.laplacian(lambda x: w3 @ np.tanh(W2 @ np.tanh(W1 @ x + b1) + b2), backend="jax"), batch)
    same = bool(np.allclose(on_jax, found, rtol=1e-12, atol=1e-12))
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    Ws = [jnp.asarray(w) for w in (W1, b1, W2, b2, w3)]
    f = lambda x: Ws[4] @ jnp.tanh(Ws[2] @ jnp.tanh(Ws[0] @ x + Ws[1]) + Ws[3])  # noqa: E731
    compiled = jax.jit(jax.vmap(lambda x: jnp.trace(jax.hessian(f)(x))))
    points_ = jnp.asarray(batch)
    expected = np.asarray(compiled(points_))
    row["jax"] = timed(lambda: compiled(points_).block_until_ready())[0]
    row["agree"] = same and bool(np.allclose(found, expected, rtol=1e-10, atol=1e-10))
    try:  # folx's forward Laplacian (the bench extra), as its README calls it, under jit(vmap)
        from folx import forward_laplacian
    except ImportError:
        return row
    folx = jax.jit(jax.vmap(lambda x: forward_laplacian(f)(x).laplacian))
    row["agree"] = row["agree"] and bool(np.allclose(found, np.asarray(folx(points_)), rtol=1e-10, atol=1e-10))
    row["folx"] = timed(lambda: folx(points_).block_until_ready())[0]
    return row


def network_table(rows: list[dict[str, Any]]) -> str:
    lines = ["| traced Δu, width-32 two-layer tanh (arrays) | points | first call (NumPy, JAX backend) | "
             "ours, NumPy | ours, JAX backend | JAX trace∘hessian | folx | ours (best) ÷ best peer | target | ÷ target |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for row in rows:
        first = f"{row['first']:.2f} s" + (f", {row['first_jax']:.2f} s" if "first_jax" in row else "")
        cells = [f"d = {row['d']}", str(row["points"]), first, f"{row['eval'] * 1e3:.1f} ms"]
        peers = [t for t in (row["jax"], row.get("folx")) if t is not None]
        cells += [f"{t * 1e3:.1f} ms" if t is not None else "–" for t in (row.get("eval_jax"), row["jax"], row.get("folx"))]
        if not peers:
            cells += ["–", f"≤ {row['target']}", "–"]
        else:
            ratio = min(t for t in (row["eval"], row.get("eval_jax")) if t is not None) / min(peers)
            cells += [f"{ratio:.2f}", f"≤ {row['target']}", f"{ratio / row['target']:.2f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def biharmonic(d: int = 4, n: int = POINTS) -> dict[str, Any]:
    """Δ²u of the width-32 network: ours (``sad.biharmonic(fn)``) against ``jax.jit(jax.vmap)``
    of Σᵢ eᵢᵀ∇²(Δu)eᵢ by Hessian-vector products of the trace of ``jax.hessian``."""
    W1, b1, W2, b2, w3 = network_weights(d)
    batch = np.random.default_rng(1).uniform(-1.0, 1.0, (n, d))
    found, first, later = measured(sad.biharmonic(lambda x: w3 @ np.tanh(W2 @ np.tanh(W1 @ x + b1) + b2)), batch)
    row: dict[str, Any] = {"d": d, "points": n, "first": first, "eval": later, "jax": None, "target": 0.5}
    jax = jax64()
    if jax is None:
        return row
    jnp = jax.numpy
    Ws = [jnp.asarray(w) for w in (W1, b1, W2, b2, w3)]
    f = lambda x: Ws[4] @ jnp.tanh(Ws[2] @ jnp.tanh(Ws[0] @ x + Ws[1]) + Ws[3])  # noqa: E731
    grad_lap = jax.grad(lambda x: jnp.trace(jax.hessian(f)(x)))
    basis = jnp.eye(d)
    hvps = jax.jit(jax.vmap(lambda x: jnp.sum(jax.vmap(lambda e: jax.jvp(grad_lap, (x,), (e,))[1] @ e)(basis))))
    points_ = jnp.asarray(batch)
    expected = np.asarray(hvps(points_))
    assert np.allclose(found, expected, rtol=1e-10, atol=1e-10 * np.max(np.abs(expected)))
    row["jax"] = timed(lambda: hvps(points_).block_until_ready())[0]
    return row


#: The per-particle network: P particles in 3-D, each through the same width-32 layers.
PARTICLES = 32


def particles(n: int = 1_000, count: int = PARTICLES) -> dict[str, Any]:
    """Δu of Σₚ w₃·tanh(tanh(xₚW₁ + b₁)W₂ + b₂) over ``count`` particles xₚ ∈ R³ (d = 3·count;
    the point reshaped into rows, as a per-particle model writes it) on n points: ours (its
    Jacobian blocks held by rows) against the best of folx and JAX's trace∘hessian."""
    rng = np.random.default_rng(3)
    W1, b1 = rng.standard_normal((3, 32)) / np.sqrt(3), rng.standard_normal(32)
    W2, b2, w3 = rng.standard_normal((32, 32)) / np.sqrt(32), rng.standard_normal(32), rng.standard_normal(32)

    def u(x: Any, np_: Any = np) -> Any:
        return np_.sum(np_.tanh(np_.tanh(x.reshape(count, 3) @ W1 + b1) @ W2 + b2) @ w3)

    batch = rng.uniform(-1.0, 1.0, (n, 3 * count))
    found, first, later = measured(sad.laplacian(u), batch)
    row: dict[str, Any] = {"points": n, "d": 3 * count, "first": first, "eval": later, "peer": None, "target": None}
    jax = jax64()
    if jax is None:
        return row
    jnp = jax.numpy
    points_ = jnp.asarray(batch)
    peers = {"jax": jax.jit(jax.vmap(lambda x: jnp.trace(jax.hessian(lambda y: u(y, jnp))(x))))}
    try:
        from folx import forward_laplacian
        peers["folx"] = jax.jit(jax.vmap(lambda x: forward_laplacian(lambda y: u(y, jnp))(x).laplacian))
    except ImportError:
        pass
    for name, peer in peers.items():
        expected = np.asarray(peer(points_))
        assert np.allclose(found, expected, rtol=1e-10, atol=1e-10 * np.max(np.abs(expected)))
        row[name] = timed(lambda: peer(points_).block_until_ready(), most=3)[0]
    row["peer"] = min(row[name] for name in peers)
    return row


WIDE = [50, 768, 768, 512, 512, 1]


def wide_network() -> tuple[Any, np.random.Generator]:
    """u(x, np_) of the 50 → 768 → 768 → 512 → 512 → 1 tanh network (seeded, 1/√fan-in), and the
    generator to draw its points from."""
    rng = np.random.default_rng(0)
    Ws = [rng.standard_normal((o, i)) / np.sqrt(i) for i, o in zip(WIDE[:-1], WIDE[1:])]
    bs = [0.1 * rng.standard_normal(o) for o in WIDE[1:]]

    def u(x: Any, np_: Any = np) -> Any:
        for W, b in zip(Ws[:-1], bs[:-1]):
            x = np_.tanh(W @ x + b)
        return (Ws[-1] @ x + bs[-1])[0]

    return u, rng


def wide(n: int = 1_000) -> dict[str, Any]:
    """The exact Laplacian of the 768-wide network on n points: ours against folx's
    ``forward_laplacian``."""
    u, rng = wide_network()
    batch = rng.uniform(-1.0, 1.0, (n, WIDE[0]))
    found, first, later = measured(sad.laplacian(u), batch, most=3)
    row: dict[str, Any] = {"points": n, "first": first, "eval": later, "folx": None, "target": 1.0}
    jax = jax64()
    try:
        from folx import forward_laplacian
    except ImportError:
        return row
    folx = jax.jit(jax.vmap(lambda x: forward_laplacian(lambda y: u(y, jax.numpy))(x).laplacian))
    points_ = jax.numpy.asarray(batch)
    expected = np.asarray(folx(points_))
    assert np.allclose(found, expected, rtol=1e-10, atol=1e-10 * np.max(np.abs(expected)))
    row["folx"] = timed(lambda: folx(points_).block_until_ready(), most=3)[0]
    return row


def wide_jet(n: int = 1_000, order: int = 10) -> dict[str, Any]:
    """The directional jet ∂ᵏu[v, …, v], k = 1..order, of the 768-wide network at n points and
    directions: ours (``sad.taylor_graph(fn, order)``, the jet over array nodes) against
    ``jax.experimental.jet`` under ``jit(vmap)``."""
    u, rng = wide_network()
    points, directions = rng.uniform(-1.0, 1.0, (n, WIDE[0])), rng.standard_normal((n, WIDE[0]))
    found, first, later = measured(sad.taylor_graph(u, order), points, directions, most=3)
    row: dict[str, Any] = {"points": n, "order": order, "first": first, "eval": later, "jax": None, "target": 0.5}
    jax = jax64()
    if jax is None:
        return row
    from jax.experimental import jet

    jnp = jax.numpy
    zeros = jnp.zeros(WIDE[0])
    theirs = jax.jit(jax.vmap(lambda x, v: jnp.stack(jet.jet(lambda y: u(y, jnp), (x,), ((v,) + (zeros,) * (order - 1),))[1])))
    args = jnp.asarray(points), jnp.asarray(directions)
    expected = np.asarray(theirs(*args))
    assert np.allclose(found, expected, rtol=1e-9, atol=1e-9 * np.max(np.abs(expected)))
    row["jax"] = timed(lambda: theirs(*args).block_until_ready(), most=3)[0]
    return row


def other_table(bih: dict[str, Any], big: dict[str, Any] | None, jets: dict[str, Any] | None = None,
                parts: dict[str, Any] | None = None) -> str:
    lines = ["| network | points | first call | ours | peer | ours ÷ peer | target |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    rows = [("width-32 two-layer tanh, Δ²u, d = 4 (peer: JAX's HVP loop over trace∘hessian)", bih, "jax")]
    if parts is not None:
        rows.append((f"per-particle width-32 two-layer tanh, {parts['d'] // 3} particles, Δu, d = {parts['d']} "
                     "(peer: the best of folx and JAX's trace∘hessian)", parts, "peer"))
    if big is not None:
        rows.append(("50 → 768 → 768 → 512 → 512 → 1 tanh, Δu (peer: folx)", big, "folx"))
    if jets is not None:
        rows.append((f"the same network, order-{jets['order']} directional jet (peer: jax.experimental.jet)", jets, "jax"))
    for label, row, peer in rows:
        theirs = row[peer]
        ratio = "–" if theirs is None else f"{row['eval'] / theirs:.2f}"
        lines.append(f"| {label} | {row['points']} | {row['first']:.2f} s | {row['eval'] * 1e3:.1f} ms | "
                     + ("–" if theirs is None else f"{theirs * 1e3:.1f} ms") + f" | {ratio} | "
                     + ("–" if row["target"] is None else f"≤ {row['target']}") + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="10³ points, no 768-wide network")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    n = 1_000 if args.quick else POINTS
    rows = [traced_network(d, n) for d in NETWORK_TARGETS]
    print(network_table(rows), flush=True)
    bih, big, jets = biharmonic(4, n), None if args.quick else wide(), None if args.quick else wide_jet()
    parts = particles(100 if args.quick else 1_000, 8 if args.quick else PARTICLES)
    print(other_table(bih, big, jets, parts), flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "networks.json").write_text(json.dumps({"laplacian": rows, "biharmonic": bih, "wide": big,
                                                        "jet": jets, "particles": parts}, indent=2))


if __name__ == "__main__":
    main()
