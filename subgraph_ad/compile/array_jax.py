"""The array ops that an array program in JAX (``array_code``, flavour ``"jax"``) calls rather
than writes inline: each as ``core.arrays`` computes it in NumPy, in ``jax.numpy`` (under
``jax.jit`` every shape is known, so the batch axes are read off the values)."""

from __future__ import annotations

from typing import Any, Sequence

import jax.numpy as jnp

from ..core.arrays import Shape, as_index
from ..core.ops import Node
from .array_runtime import aligned


def batch(values: Sequence[Any], points: Sequence[int]) -> tuple[int, ...]:
    """The inputs' common batch: their shapes, less each one's ``points`` trailing axes."""
    return tuple(jnp.broadcast_shapes(*(jnp.shape(v)[:jnp.ndim(v) - k] for v, k in zip(values, points))))


def full(value: Any, shape: tuple[int, ...]) -> Any:
    """An output broadcast to its batch and shape."""
    return jnp.broadcast_to(value, shape)


def _batch(value: Any, shape: Shape) -> Shape:
    return tuple(jnp.shape(value)[:jnp.ndim(value) - len(shape)])


def _common(values: list[Any], shapes: list[Shape]) -> list[Any]:
    common = jnp.broadcast_shapes(*(_batch(v, s) for v, s in zip(values, shapes)))
    return [jnp.broadcast_to(v, tuple(common) + s) for v, s in zip(values, shapes)]


def value(node: Node, values: list[Any], shapes: list[Shape]) -> Any:
    """The value of a broadcast, place, concat or stack node."""
    op, target = node.op, node.payload[0]
    if op == "broadcast":
        (a,), (s,) = values, shapes
        return jnp.broadcast_to(aligned(jnp.asarray(a), s, len(target)), _batch(a, s) + target)
    if op == "place":
        (a,), (s,) = values, shapes
        out = jnp.zeros(_batch(a, s) + target, dtype=jnp.result_type(a))
        return out.at[(Ellipsis,) + as_index(node.payload[1], len(target))].set(a)
    if op == "concat":
        return jnp.concatenate(_common(values, shapes), axis=node.payload[1] - len(shapes[0]))
    if op == "stack":
        return jnp.stack(_common(values, shapes), axis=-len(target))
    raise NotImplementedError(f"array op {op!r} is written inline, not computed here")


__all__ = ["batch", "full", "value"]
