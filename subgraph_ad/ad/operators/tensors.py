"""Symmetric derivative tensors T[i, j, …] = ∂ᵏu/∂xᵢ∂xⱼ…, each distinct entry built once."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...core import Callback, Term
from ..forward import gen_graph_many
from ..reverse import grad_graph
from .arguments import check_vars
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
    """

    def __init__(self, vars: list[Term], order: int, entries: dict[tuple[int, ...], Term]) -> None:
        self.vars = vars
        self.order = order
        self.entries = entries
        self.zero = vars[0].tape.zero

    @property
    def shape(self) -> tuple[int, ...]:
        return (len(self.vars),) * self.order

    def __getitem__(self, index: Any) -> Term:
        key = index if isinstance(index, tuple) else (index,)
        d = len(self.vars)
        if len(key) != self.order or not all(isinstance(k, (int, np.integer)) and not isinstance(k, bool) for k in key):
            raise IndexError(f"a derivative tensor of order {self.order} takes {self.order} int indices, got {index!r}")
        if not all(-d <= k < d for k in key):
            raise IndexError(f"index {index!r} is out of range for {d} vars")
        return self.entries.get(tuple(sorted(int(k) % d for k in key)), self.zero)

    def __repr__(self) -> str:
        return (f"DerivativeTensor(order {self.order} over {[x.name for x in self.vars]}, "
                f"{len(self.entries)} distinct nonzero entries)")


def derivative_tensor(u: Term, xs: Any, k: int, callback: Callback | None = None) -> DerivativeTensor:
    """The tensor of the k-th partial derivatives of u by ``xs`` (1 <= k <= 4): the gradient by one
    reverse sweep, then each order by forward passes over the entries of the previous one whose
    sorted index tuple ends at or before the new index and that reach its var — one node per
    distinct entry, memoised per node and var. Transactional."""
    xs = check_vars(u, xs, "derivative_tensor")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= 4:
        raise ValueError(f"derivative_tensor: the order k must be an int from 1 to 4, got {k!r}")
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
