"""``expand``: array nodes lowered to scalar nodes on the same tape, for what knows only scalars
(the SymPy bridge, Taylor mode, the operators, detailed pictures, C) and to check an array
result against its scalar twin.

An array var's elements become scalar vars ``W_0_1`` (made once, reused), whose values are read
from the array's (``numeric.modes.bind``). Scalar nodes over expanded operands are rebuilt with
the tape's own builder, so they fold and intern as the same expression written with scalars
would.

>>> from subgraph_ad import Tape
>>> import numpy as np
>>> tape = Tape(); W = tape.array("W", np.eye(2)); x = tape.var("x", 3.0)
>>> [str(t) for t in (W @ np.array([1.0, x])).expand()]
['W_0_0 + x*W_0_1', 'W_1_0 + x*W_1_1']
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np

from .arrays import ARRAY_OPS, has_arrays
from .graph import dependencies
from .ops import OPS

if TYPE_CHECKING:  # pragma: no cover - typing only
    from .tape import Tape
    from .term import Term


def element_vars(tape: Tape, name: str | None) -> Any:
    """The scalar vars of array var ``name``'s elements, as an object array of its shape."""
    from .term import Term

    if name not in tape.var_shapes:
        raise TypeError(f"element_vars takes the name of an array var of the tape, got {name!r}")
    assert name is not None  # for the type checker: var_shapes holds names
    shape = tape.var_shapes[name]
    names = tape.elements.get(name)
    if names is None:
        value = tape._values[tape._vars[name]]
        names = []
        for flat, where in enumerate(np.ndindex(*shape)):
            element = f"{name}_{'_'.join(map(str, where))}"
            if tape.find_var(element) is not None:
                raise ValueError(f"cannot expand array {name!r}: its element {where} would be var {element!r}, "
                                 "which exists already; rename one of them")
            tape.var(element, np.asarray(value, dtype=float)[(Ellipsis,) + where])
            names.append(element)
        tape.elements[name] = names
    out = np.empty(shape, dtype=object)
    for flat, element in enumerate(names):
        out[np.unravel_index(flat, shape)] = Term(tape, tape._vars[element])
    return out


def expand_many(tape: Tape, roots: Sequence[int], leaves: Mapping[int, Term] | None = None,
                indexed: bool = False) -> list[Any]:
    """Each root as scalar nodes: a Term for a scalar, an object array of Terms for an array.
    ``leaves`` puts a Term in place of a node (an array Term there makes every node above it an
    elementwise array node: ``trace.batched``); ``indexed`` reads an array var's elements as
    index nodes W[i, j] instead of element vars, so that a gradient in W still reaches them.
    Transactional: if it fails, the tape is as it was."""
    from .term import Term

    leaves = leaves or {}
    with tape.transaction():
        parts: dict[int, Any] = {}
        nodes = tape.nodes
        for i in dependencies(tape, list(roots), stop=leaves.__contains__):
            node = nodes[i]
            if i in leaves:
                parts[i] = leaves[i]
            elif node.op == "var" and node.payload in tape.var_shapes:
                parts[i] = indexed_elements(Term(tape, i)) if indexed else element_vars(tape, node.payload)
            elif node.op == "var":
                parts[i] = Term(tape, i)
            elif node.op in ARRAY_OPS:
                parts[i] = ARRAY_OPS[node.op].expand(tape, node, [parts[a] for a in node.args])
            elif not node.args or all(parts[a].index == a for a in node.args):
                parts[i] = Term(tape, i)  # nothing under it changed
            elif node.op == "fn":
                parts[i] = tape.apply(node.payload, *(parts[a] for a in node.args))
            else:
                parts[i] = OPS[node.op].apply(*(parts[a] for a in node.args))
        return [_scalar(tape, parts[r]) for r in roots]


def indexed_elements(array: Term) -> Any:
    """An array Term's elements as index nodes, in an object array of its shape."""
    out = np.empty(array.shape, dtype=object)
    for at in np.ndindex(*array.shape):
        out[at] = array[at]
    return out


def _scalar(tape: Tape, part: Any) -> Any:
    """A 0-d object array is its Term; an array's numbers (a folded table) become constants."""
    from .term import Term

    if isinstance(part, np.ndarray):
        if part.ndim == 0:
            return _scalar(tape, part[()])
        return np.frompyfunc(lambda v: _scalar(tape, v), 1, 1)(part)
    return part if isinstance(part, Term) else tape.const(float(part))


def scalar_roots(tape: Tape, roots: Sequence[int], what: str) -> list[int]:
    """The roots as scalar nodes, for an engine that knows only scalars: themselves when no
    array node is under them, else their expansion (each root must be a scalar)."""
    if not has_arrays(tape, dependencies(tape, list(roots))):
        return list(roots)
    out = []
    for root, part in zip(roots, expand_many(tape, roots)):
        if isinstance(part, np.ndarray):
            raise TypeError(f"{what} takes scalar Terms; node {root} is an array of shape {part.shape}: "
                            "index or sum it first")
        out.append(part.index)
    return out


def expand(term: Term) -> Any:
    """``term`` as scalar nodes: an object array of Terms for an array, a Term for a scalar."""
    return expand_many(term.tape, [term.index])[0]


__all__ = ["element_vars", "expand", "expand_many", "indexed_elements", "scalar_roots"]
