"""The trace of a Python function on fresh vars: ``Traced(f, signature, what)`` calls f once,
each number argument a var, each array a ``TermArray`` of vars, each container taken apart
into those (``pytrees``); what f returns is then Terms on that tape, which a transform
differentiates and compiles. Inside another trace (``tape`` given), the vars are fresh vars of
that trace's tape, named apart from its own.

>>> trace = Traced(lambda x, y: x * y, [(), (2,)], "example")
>>> [v.name for v in trace.flat], trace.out.shape
(['a0', 'a1_0', 'a1_1'], (2,))
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..core import Tape, Term
from ..core.expand import element_vars, expand_many
from ..interop.numpy_dispatch import TermArray
from ..pytrees import Tree, flatten, is_number, leaf_shapes, shown, unflatten
from .errors import in_user_code
from .nesting import fresh_prefix, name_tape, tracing


def check_callable(f: Any, what: str) -> None:
    if not callable(f):
        raise TypeError(f"{what}() takes a Python function to trace, got {type(f).__name__} {f!r}")


def positions(argnums: Any, count: int, what: str, one: bool = False) -> tuple[int, ...]:
    """The argument positions to differentiate by; ``one``: exactly one."""
    nums = (argnums,) if isinstance(argnums, int) and not isinstance(argnums, bool) else argnums
    if one and not (isinstance(nums, tuple) and len(nums) == 1):
        raise TypeError(f"{what} differentiates with respect to one argument: give one int, got {argnums!r}")
    if not isinstance(nums, tuple) or not nums or not all(isinstance(k, int) and not isinstance(k, bool) for k in nums):
        raise TypeError(f"{what}: argnums must be an int or a non-empty tuple of ints, got {argnums!r}")
    for k in nums:
        if not -count <= k < count:
            raise ValueError(f"{what}: argnums {k} is out of range for a function called with {count} argument(s)")
    return tuple(k % count for k in nums)


def _as_tree(spec: Any) -> Tree:
    """A Tree, or a plain shape (a tuple of ints: one array or number argument)."""
    return spec if isinstance(spec, Tree) else Tree("leaf", tuple(spec))


class Traced:
    """The trace of ``f`` for one signature: the tape, the vars of each argument as created (``f``
    gets each leaf as a Term: with ``arrays``, an array leaf is ONE array var, so NumPy code on
    it builds array nodes; else, or where f fails on those (it writes into its argument, or
    calls what only object arrays have), a TermArray of scalar vars) and what it returned.

    ``vars`` is kept apart from the arrays ``f`` gets: NumPy code may write into its argument
    (``x[0], x[1] = x[1], x[0]``), and reading the vars back from it afterwards would
    differentiate by whatever was written there, permuting the result without a word."""

    def __init__(self, f: Callable[..., Any], signature: Sequence[Any], what: str,
                 kwargs: dict[str, Any] | None = None, tape: Tape | None = None, arrays: bool = False) -> None:
        self.trees = [_as_tree(s) for s in signature]
        self.expanded = False  # whether a build took the scalar vars of an array var (``scalar_vars``)
        #: Whether the array arguments are array vars (fed whole) rather than scalar vars each.
        self.arrays = arrays and tape is None and any(shape and 0 not in shape for tree in self.trees
                                                      for shape in leaf_shapes(tree))
        if self.arrays:
            try:
                self._trace(f, what, kwargs, None)
                return
            except Exception:  # code that only scalars take (a write into x, x.var()): traced on those
                self.arrays = False
        self._trace(f, what, kwargs, tape)

    def _trace(self, f: Callable[..., Any], what: str, kwargs: dict[str, Any] | None, tape: Tape | None) -> None:
        self.tape = Tape() if tape is None else tape  # a given tape: a trace nested in the one that made it
        if tape is None:
            name_tape(self.tape, f"the trace of {what} of {getattr(f, '__name__', f)!r}")
        prefix = "" if tape is None else fresh_prefix(tape, what)
        self.vars: list[list[Term]] = []
        self.leaf_vars: list[list[list[Term]]] = []
        args = []
        for k, tree in enumerate(self.trees):
            shapes = leaf_shapes(tree)
            single = tree.kind == "leaf"
            leaves: list[Any] = []
            per_leaf: list[list[Term]] = []
            for j, shape in enumerate(shapes):
                stem = f"{prefix}a{k}" if single else f"{prefix}a{k}_l{j}"
                if self.arrays and shape and 0 not in shape:  # one array var: array code keeps arrays
                    vs = [self.tape.array(stem, np.zeros(shape))]
                    leaves.append(vs[0])
                elif shape:
                    vs = [self.tape.var(f"{stem}_{'_'.join(map(str, i))}") for i in np.ndindex(*shape)]
                    leaves.append(np.array(vs, dtype=object).reshape(shape).view(TermArray))
                else:
                    vs = [self.tape.var(stem)]
                    leaves.append(vs[0])
                per_leaf.append(vs)
            self.leaf_vars.append(per_leaf)
            self.vars.append([v for vs in per_leaf for v in vs])
            args.append(unflatten(tree, leaves))
        self.flat: list[Term] = [v for vars_ in self.vars for v in vars_]
        try:
            with tracing(self.tape):
                self.out = f(*args, **(kwargs or {}))
        except Exception as error:  # shown ending in the user's own line: see errors
            raise in_user_code(error, what, f) from None

    def vars_of(self, k: int) -> list[Term]:
        """The vars of argument k, as created (whatever ``f`` wrote into its array)."""
        if not self.vars[k]:
            tree = self.trees[k]
            what = f"an empty array of shape {tree.meta}" if tree.kind == "leaf" else "a container with no numbers"
            raise ValueError(f"argument {k} is {what}: there is nothing to differentiate with respect to")
        return self.vars[k]

    def scalar_vars(self, k: int) -> list[Term]:
        """The vars of argument k one per number: an array var's element vars (C order), for the
        engines that know only scalars (a Hessian, a Jacobian)."""
        self.expanded = True
        out: list[Term] = []
        for v in self.vars_of(k):
            out += list(element_vars(self.tape, str(v.name)).ravel()) if v.shape else [v]
        return out

    def inputs(self) -> list[Term]:
        """The program's inputs: one var per leaf (an array var fed whole), or where a build went
        to the scalar engines (``scalar_vars``), one var per number, fed as columns."""
        if not self.expanded:
            return self.flat
        out: list[Term] = []
        for v in self.flat:
            out += list(element_vars(self.tape, str(v.name)).ravel()) if v.shape else [v]
        return out

    def scalars(self, terms: Sequence[Term]) -> list[Term]:
        """``terms`` as scalar nodes, one per number (an array Term's elements in C order): what
        the engines that know only scalars differentiate, by ``scalar_vars``."""
        out: list[Term] = []
        for part in expand_many(self.tape, [t.index for t in terms]):
            out += list(part.ravel()) if isinstance(part, np.ndarray) else [part]
        return out

    def array_argument(self, k: int, what: str) -> tuple[int, ...]:
        """The shape of argument k, which must be one number or array (not a container)."""
        if self.trees[k].kind != "leaf":
            raise TypeError(f"{what} takes a number or an array as argument {k}, got a {self.trees[k].kind}; "
                            "for a container use grad, value_and_grad, jvp or vjp")
        return self.trees[k].meta  # type: ignore[no-any-return]

    def scalar(self, out: Any, what: str) -> Term:
        """``out`` as one Term (a number becomes a constant); anything else is an error."""
        if isinstance(out, np.ndarray) and out.shape == ():
            out = out[()]
        if isinstance(out, Term) and not out.shape:  # an array Term (an array var's node) is not one number
            return out
        if is_number(out):
            return self.tape.const(float(out))
        raise TypeError(f"{what} needs a function returning one number, got {shown(out)}")

    def scalar_output(self, what: str) -> Term:
        return self.scalar(self.out, what)

    def split_aux(self, has_aux: bool, what: str) -> tuple[Any, Any]:
        """f's value and, with ``has_aux``, its auxiliary data: f returns the pair (value, aux)."""
        if not has_aux:
            return self.out, None
        if not (isinstance(self.out, (tuple, list)) and len(self.out) == 2):
            raise TypeError(f"{what}(..., has_aux=True) needs a function returning a pair (value, aux), got "
                            f"{shown(self.out)}")
        return self.out[0], self.out[1]

    def outputs(self, what: str, out: Any = None) -> tuple[list[Term], tuple[int, ...]]:
        """f's result (or ``out``) as one array: a flat list of Terms and its shape."""
        out = self.out if out is None else out
        if isinstance(out, Term) and out.shape:  # an array node: one output, fed back whole
            return [out], out.shape
        array = np.array(out, dtype=object) if isinstance(out, Term) else np.asarray(out, dtype=object)
        return [self._term(item, what) for item in array.ravel()], array.shape

    def _term(self, item: Any, what: str) -> Term:
        if isinstance(item, Term):
            return item
        if is_number(item):
            return self.tape.const(float(item))
        raise TypeError(f"{what} needs a function returning numbers, got an element {item!r:.80}")

    def tree_outputs(self, out: Any, what: str) -> tuple[list[Term], Tree]:
        """A result pytree as flat Terms and its structure (leaves: Terms, numbers, arrays)."""
        leaves, tree = flatten(out, "result", lambda value, path: self.outputs(what, value))
        return [t for terms in leaves for t in terms], tree



__all__ = ["Traced", "check_callable", "positions"]
