"""What the code of an array program (``array_code``) calls as it runs, besides NumPy: the
batch axes kept apart from a node's own axes, a value placed into zeros, a vector of ones."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ..core.arrays import Shape


def aligned(value: Any, shape: Shape, ndim: int) -> Any:
    """``core.arrays.aligned`` on NumPy or JAX values: size-1 axes between the batch and the
    node's own axes, so that batch meets batch."""
    nb = value.ndim - len(shape)
    if not nb:
        return value
    return value.reshape(value.shape[:nb] + (1,) * (ndim - len(shape)) + shape)


def reshaped(value: Any, own: int, shape: Shape) -> Any:
    """A value of a node of ``own`` axes reshaped to ``shape``, its batch axes kept."""
    return value.reshape(value.shape[:value.ndim - own] + shape)


def placed(value: Any, own: int, shape: Shape, where: tuple[Any, ...]) -> Any:
    """Zeros of ``shape`` (behind the value's batch axes) with the value at ``where``."""
    out = np.zeros(np.shape(value)[:np.ndim(value) - own] + shape)
    out[where] = value
    return out


@functools.lru_cache(maxsize=64)
def ones(n: int) -> np.ndarray:
    """A read-only vector of n ones, made once per length."""
    found = np.ones(n)
    found.flags.writeable = False
    return found


__all__ = ["aligned", "ones", "placed", "reshaped"]
