"""Symmetric derivative tensors T[i, j, …] = ∂ᵏu/∂xᵢ∂xⱼ…, each distinct entry built once."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...core import Callback, Term
from ..forward import gen_graph_many
from ..matrices import Dense
from ..reverse import grad_graph
from .arguments import scalar_form
from .passes import Pass


class DerivativeTensor:
    """The symmetric tensor T[i, j, …] = ∂ᵏu/∂xᵢ∂xⱼ… of order k over the vars ``vars``: indexed
    in any order of its indices (T[0, 1, 1] is T[1, 0, 1], the same node), the tape's 0 where an
    entry is zero by structure. ``entries`` lists the distinct structural nonzeros by sorted
    index tuple.

    >>> from subgraph_ad import Tape
    >>> tape = Tape(); x = tape.var("x"); y = tape.var("y")
    >>> T = derivative_tensor(x**3 * y, [x, y], 3)
    >>> T[1, 0, 0].to_sympy(), T[0, 1, 0] is T[0, 0, 1], sorted(T.entries)
    (6*x, True, [(0, 0, 0), (0, 0, 1)])
    >>> T[0]                        # a slice: the matrix of ∂/∂x ∂²u/∂xᵢ∂xⱼ
    [6*y  6*x]
    [6*x  0  ]
    """

    def __init__(self, vars: list[Term], order: int, entries: dict[tuple[int, ...], Term]) -> None:
        self.vars = vars
        self.order = order
        self.entries = entries
        self.zero = vars[0].tape.zero

    @property
    def shape(self) -> tuple[int, ...]:
        return (len(self.vars),) * self.order

    def __getitem__(self, index: Any) -> Any:
        """An entry (``order`` ints), or a slice: fewer ints than the order, or ``:`` for an axis,
        leave axes free; two free axes are a ``Dense`` matrix (``T[i]`` of an order-3 tensor),
        one a list of Terms, more nested lists of them."""
        key = index if isinstance(index, tuple) else (index,)
        d = len(self.vars)
        full = slice(None)
        if len(key) > self.order or not all(
                k == full if isinstance(k, slice) else isinstance(k, (int, np.integer)) and not isinstance(k, bool)
                for k in key):
            raise IndexError(f"a derivative tensor of order {self.order} takes up to {self.order} int indices "
                             f"or `:`, got {index!r}")
        if not all(isinstance(k, slice) or -d <= k < d for k in key):
            raise IndexError(f"index {index!r} is out of range for {d} vars")
        key = key + (full,) * (self.order - len(key))
        free = [a for a, k in enumerate(key) if isinstance(k, slice)]
        if not free:
            return self.entries.get(tuple(sorted(int(k) % d for k in key)), self.zero)
        grid = np.empty((d,) * len(free), dtype=object)
        for spot in np.ndindex(grid.shape):
            chosen = list(key)
            for a, k in zip(free, spot):
                chosen[a] = k
            grid[spot] = self.entries.get(tuple(sorted(int(k) % d for k in chosen)), self.zero)
        if len(free) == 1:
            return list(grid)
        return _nested(grid)

    def __repr__(self) -> str:
        return (f"DerivativeTensor(order {self.order} over {[x.name for x in self.vars]}, "
                f"{len(self.entries)} distinct nonzero entries)")


def _nested(grid: np.ndarray) -> Any:
    """An object array of two or more axes as nested lists whose innermost two axes are ``Dense``."""
    nested: list[Any] = [Dense([list(row) for row in m]) for m in grid.reshape((-1,) + grid.shape[-2:])]
    for size in reversed(grid.shape[:-2]):
        nested = [nested[k:k + size] for k in range(0, len(nested), size)]
    return nested[0]


def derivative_tensor(u: Term, xs: Any, k: int, callback: Callback | None = None) -> DerivativeTensor:
    """The tensor of the k-th partial derivatives of u by ``xs`` (1 <= k <= 4): the gradient by one
    reverse sweep, then each order by forward passes over the entries of the previous one whose
    sorted index tuple ends at or before the new index and that reach its var — one node per
    distinct entry, memoised per node and var. Transactional."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= 4:
        raise ValueError(f"derivative_tensor: the order k must be an int from 1 to 4, got {k!r}")
    u, xs = scalar_form(u, xs, "derivative_tensor")
    tape = u.tape
    with tape.transaction(callback):
        zero = tape.zero
        first = grad_graph(u, xs)
        level: dict[tuple[int, ...], Term] = {(i,): g for i, g in enumerate(first) if g != zero}
        entries = dict(level)
        for _ in range(1, int(k)):
            p = Pass(tape, xs)
            following: dict[tuple[int, ...], Term] = {}
            for j, x in enumerate(xs):
                keys = [key for key, t in level.items() if key[-1] <= j and p.mask(t.index) >> j & 1]
                if keys:
                    for key, t in zip(keys, gen_graph_many([level[key] for key in keys], x)):
                        if t != zero:
                            following[key + (j,)] = t
            level = dict(sorted(following.items()))
            entries.update(level)
    return DerivativeTensor(xs, int(k), {key: t for key, t in entries.items() if len(key) == k})
