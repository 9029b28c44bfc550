"""The Jacobians and Hessians of traced functions, as JAX names them: ``jacobian``/``jacfwd``/
``jacrev`` and ``hessian`` (on Terms, each calls the Term form in ``ad.matrices``). Each is a
``Transformed`` whose build makes the matrix from one set of sweeps on the trace, with its
structural zeros; a Hessian in one array argument with a dense layer is one array node.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..ad.matrices import hessian as hessian_terms
from ..ad.matrices import jacobian as jacobian_terms
from ..ad.operators.array_laplacian import dense, hessian_block
from ..core import Term
from .results import Assemble, argument_tree, block, blocks, result_tree, single, sparse_result
from .tracer import Traced, positions
from .transform import Transformed


def jacobian(f: Any, inputs: Any = None, argnums: int | tuple[int, ...] = 0, sparse: bool = False, *,
             backend: str | None = None) -> Any:
    """``jacobian(outputs, inputs)`` on Terms: rows of Terms, or a ``Sparse`` matrix with
    ``sparse=True`` (see ``ad.matrices``). Given a Python function, a callable returning the
    Jacobian of its output (array) with respect to argument ``argnums`` as a NumPy array of shape
    output.shape + argument.shape; pytrees as JAX lays them out (a tuple of argnums, a dict
    argument or result: the result's structure of the arguments' structure of blocks). With
    ``sparse=True`` a ``scipy.sparse`` matrix of shape (output.size, argument.size) holding only
    the structural nonzeros. Reverse sweeps or forward passes, whichever are fewer."""
    if inputs is not None or isinstance(f, (Term, list, tuple, np.ndarray)):
        return jacobian_terms(f, inputs, sparse=sparse)
    return _jacobian(f, "jacobian", argnums, sparse, backend)


def _jacobian(f: Any, what: str, argnums: int | tuple[int, ...], sparse: bool, backend: str | None) -> Transformed:
    def build(trace: Traced) -> tuple[list[Term], Assemble]:
        nums = positions(argnums, len(trace.trees), what)
        outs, out_tree = result_tree(trace, what)
        in_tree = argument_tree(trace, argnums, nums)
        matrix = jacobian_terms(trace.scalars(outs), [v for k in nums for v in trace.scalar_vars(k)], sparse=True)
        if sparse:
            single(out_tree, in_tree, what)
            return sparse_result(matrix, trace.tape)
        return blocks(matrix, trace.tape, out_tree, in_tree)

    return Transformed(f, what, build, backend)


def jacfwd(f: Callable[..., Any], argnums: int | tuple[int, ...] = 0, *, backend: str | None = None) -> Any:
    """``jax.jacfwd``: the Jacobian of f (``jacobian``). Both of JAX's names give the same
    matrix; the sweeps are the cheaper of forward and reverse for its shape, whichever name."""
    return _jacobian(f, "jacfwd", argnums, False, backend)


def jacrev(f: Callable[..., Any], argnums: int | tuple[int, ...] = 0, *, backend: str | None = None) -> Any:
    """``jax.jacrev``: the Jacobian of f (``jacobian``; see ``jacfwd``)."""
    return _jacobian(f, "jacrev", argnums, False, backend)


def hessian(f: Any, inputs: Any = None, argnums: int | tuple[int, ...] = 0, sparse: bool = False, *,
            backend: str | None = None) -> Any:
    """``hessian(output, inputs)`` on Terms: rows of Terms, or a ``Sparse`` matrix with
    ``sparse=True`` (see ``ad.matrices``). Given a Python function, a callable returning its
    Hessian with respect to argument ``argnums`` as a NumPy array (shape argument.shape * 2);
    pytrees as ``jax.hessian`` lays them out (``argnums=(0, 1)``: the blocks ((H00, H01), (H10,
    H11)); a dict argument: a dict of dicts); with ``sparse=True`` a ``scipy.sparse`` matrix of
    shape (argument.size, argument.size). Built from one gradient, each symmetric pair once."""
    if inputs is not None or isinstance(f, Term):
        return hessian_terms(f, inputs, sparse=sparse)

    def build(trace: Traced) -> tuple[list[Term], Assemble]:
        nums = positions(argnums, len(trace.trees), "hessian")
        z = trace.scalar_output("hessian")
        found = None if sparse or not isinstance(argnums, int) else _array_hessian(trace, nums[0], z)
        if found is not None:
            return found
        in_tree = argument_tree(trace, argnums, nums)
        matrix = hessian_terms(trace.scalars([z])[0], [v for k in nums for v in trace.scalar_vars(k)], sparse=True)
        if sparse:
            single(in_tree, in_tree, "hessian")
            return sparse_result(matrix, trace.tape)
        return blocks(matrix, trace.tape, in_tree, in_tree)

    return Transformed(f, "hessian", build, backend)


def _array_hessian(trace: Traced, k: int, z: Term) -> tuple[list[Term], Assemble] | None:
    """The Hessian in array argument k as ONE array node, where z holds a dense layer: the array
    pass's Jacobian block of the gradient, one product per layer (a 16-unit layer at d = 300:
    a few nodes, where the scalar form is 90,000 entries of 16 terms). None: the scalar path."""
    xs = trace.vars_of(k)
    if len(xs) != 1 or not xs[0].shape or not dense(z):
        return None
    (x,) = xs
    found = hessian_block(z, x)
    if found is None:
        return None
    shape = x.shape + x.shape

    def assemble(values: list[Any], batch: tuple[int, ...]) -> Any:
        if isinstance(values, list) and isinstance(values[0], Term):  # nested: the outer trace's array Term
            return values[0]
        return block(values, 0, shape, batch)

    return [found.reshape(shape)], assemble


__all__ = ["hessian", "jacfwd", "jacobian", "jacrev"]
