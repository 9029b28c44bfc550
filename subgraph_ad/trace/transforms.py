"""The transforms of traced functions, as JAX names them: ``grad``, ``value_and_grad``,
``derivative``, ``jit``, and the function forms of ``jvp``, ``vjp`` and ``hvp`` (on Terms, each
calls the Term form); the Jacobians and Hessians are ``matrices``. Each is a ``Transformed``
with its own ``build``: which derivative subgraph to make on the trace, and how to assemble the
program's values into the result.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

import numpy as np

from ..ad.diff import diff
from ..ad.forward import directional, gen_graph
from ..ad.matrices import hvp as hvp_terms
from ..ad.reverse import grad_graph
from ..core import Tape, Term, checks
from ..numeric import modes
from ..pytrees import Tree, flatten, real_leaf, shown, static_key
from .compiled import call, collector_paused
from .nesting import lifted, substitute
from .results import Assemble, Filled, block, leafwise, shaped, term_array, tree_values
from .tracer import Traced, check_callable, positions
from .transform import Transformed, outer_of


def _gradient(f: Callable[..., Any], what: str, argnums: int | tuple[int, ...], has_aux: bool,
              with_value: bool, backend: str | None) -> Transformed:
    """grad and value_and_grad: one reverse sweep (``grad_graph``) on the trace; by one scalar
    var, one forward pass (``gen_graph``), which is as cheap for one input and appends fewer
    nodes when it is repeated: ``grad(grad(f))`` is then the graph of ``derivative(f, 2)``."""

    def build(trace: Traced) -> tuple[list[Term], Assemble]:
        nums = positions(argnums, len(trace.trees), what)
        value, aux = trace.split_aux(has_aux, what)
        z = trace.scalar(value, what)
        wrts = [v for k in nums for v in trace.vars_of(k)]
        one = len(wrts) == 1 and not wrts[0].shape
        terms = [gen_graph(z, wrts[0])] if one else list(grad_graph(z, wrts))
        aux_terms, aux_tree = trace.tree_outputs(aux, what) if has_aux else ([], Tree("none", None))
        head = [z] if with_value else []
        if isinstance(argnums, int) and not has_aux and not with_value:  # the common gradient: one tree
            return terms, Filled(trace.trees[nums[0]])

        def assemble(values: list[Any], batch: tuple[int, ...]) -> Any:
            at = len(head)
            parts = []
            for k in nums:
                part, at = leafwise(trace, k, values, at, batch)
                parts.append(part)
            gradient = parts[0] if isinstance(argnums, int) else tuple(parts)
            aux_value = tree_values(aux_tree, values, at, batch)[0] if has_aux else None
            if with_value:
                first = block(values, 0, (), batch)
                return ((first, aux_value), gradient) if has_aux else (first, gradient)
            return (gradient, aux_value) if has_aux else gradient

        return head + terms + aux_terms, assemble

    return Transformed(f, what, build, backend)


def grad(f: Callable[..., Any], argnums: int | tuple[int, ...] = 0, has_aux: bool = False, *,
         backend: str | None = None) -> Callable[..., Any]:
    """The gradient of a scalar function, as ``jax.grad``: ``grad(f)(*args)`` is ∂f/∂args[argnums]
    in the structure of that argument (a float for a number, an array of its shape for an array,
    the same dict or tuple for a pytree; a tuple of those for several argnums). With ``has_aux``,
    f returns (value, aux) and the result is (gradient, aux). Built by one reverse sweep
    (``grad_graph``) on the trace (by one number, one forward pass: ``gen_graph``), compiled once per signature by ``lambdify`` with ``backend``
    (None: ``config.default_backend()``; results come back as NumPy from any backend)."""
    return _gradient(f, "grad", argnums, has_aux, with_value=False, backend=backend)


def value_and_grad(f: Callable[..., Any], argnums: int | tuple[int, ...] = 0,
                   has_aux: bool = False, *, backend: str | None = None) -> Callable[..., Any]:
    """``jax.value_and_grad``: (f(*args), ∂f/∂args[argnums]) from one compiled program; with
    ``has_aux``, ((value, aux), gradient).

    >>> import numpy as np
    >>> import subgraph_ad as sad
    >>> def loss(w, x):
    ...     return np.sum((x @ w) ** 2), x @ w
    >>> (v, pred), g = sad.value_and_grad(loss, has_aux=True)(np.array([1.0, -1.0]), np.eye(2))
    >>> v, pred, g
    (2.0, array([ 1., -1.]), array([ 2., -2.]))
    """
    return _gradient(f, "value_and_grad", argnums, has_aux, with_value=True, backend=backend)


class _Derivative(Transformed):
    """``derivative(f, n)``: every argument is a number (an array of them is points), so the
    trace has one var per argument whatever the shapes, and the compiled program broadcasts."""

    def _program(self, trace: Traced) -> tuple[list[Term], Term | list[Term], Assemble]:
        terms, assemble = self.build(trace)
        return trace.flat, terms[0], assemble  # one Term: the program returns an array, not a tuple

    def run(self, args: Sequence[Any], kwargs: dict[str, Any], levels: Sequence[tuple[bool, ...]] | None) -> Any:
        tape = outer_of(args, self.what) if levels is None else None
        if tape is not None:
            return self.inline(tape, args, kwargs)
        check = real_leaf(self.what)
        for k, a in enumerate(args):
            check(a, f"argument {k}")
        key = (len(args), static_key(kwargs, self.what))
        entry = self.cache.get(key)
        if entry is None:
            with collector_paused():
                entry = self.cache.make(key, [()] * len(args), kwargs)
        return call(entry[0], args)

    def inline(self, tape: Tape, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        """Inside a trace: the derivative traced once on fresh vars of its tape, then each point of
        the broadcast arguments substituted for them (``nesting``)."""
        points = np.broadcast_arrays(*(np.asarray(a, dtype=object) for a in args))
        trace = Traced(self.f, [()] * len(args), self.what, kwargs, tape)
        terms, _ = self.build(trace)
        found = [substitute(tape, terms, {v.index: lifted(tape, p[i]) for v, p in
                                                   zip(trace.flat, points)})[0] for i in np.ndindex(*points[0].shape)]
        return found[0] if not points[0].shape else term_array(found, points[0].shape)


def derivative(f: Callable[..., Any], n: int = 1, argnum: int = 0, *, backend: str | None = None) -> Callable[..., Any]:
    """The n-th derivative of a scalar function in one argument, elementwise on arrays of
    points: ``derivative(f, 4)(np.linspace(-2, 2, 9))``. Built by ``diff`` (Taylor mode from
    the third order) on the trace."""
    checks.count(n, "the order n", "derivative")

    def build(trace: Traced) -> tuple[list[Term], Assemble]:
        (k,) = positions(argnum, len(trace.trees), "derivative", one=True)
        z = trace.scalar_output("derivative")
        return [diff(z, trace.vars_of(k)[0], n) if n else z], shaped(())

    return _Derivative(f, "derivative", build, backend)


def jit(f: Callable[..., Any], *, backend: str | None = None) -> Any:
    """``jax.jit``: f traced once per signature and compiled, no derivative taken; its result
    pytree comes back as NumPy. Unlike JAX's, a closed-over array is not frozen: it is checked
    before every call and f traced again where it changed. Inside another trace, f simply runs
    on that trace's values.

    >>> import numpy as np
    >>> import subgraph_ad as sad
    >>> sad.jit(lambda x: {"s": np.sum(np.sin(x))})(np.zeros(3))
    {'s': 0.0}
    """
    check_callable(f, "jit")

    def build(trace: Traced) -> tuple[list[Term], Assemble]:
        outs, tree = trace.tree_outputs(trace.out, "jit")
        return outs, Filled(tree)

    return Transformed(f, "jit", build, backend)


def _pairs(primals: Any, tangents: Any, what: str) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """JAX's (primals, tangents): two tuples (or lists) of arguments of the same structure."""
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError(f"{what}(f, primals, tangents): primals and tangents are tuples of the arguments of f, got "
                        f"{shown(primals)} and {shown(tangents)}")
    if len(primals) != len(tangents):
        raise ValueError(f"{what}: {len(primals)} primal(s) but {len(tangents)} tangent(s); give one tangent per "
                         "argument, of the same structure")
    for k, (p, t) in enumerate(zip(primals, tangents)):
        if flatten(p)[1] != flatten(t)[1]:
            raise ValueError(f"{what}: tangent {k} has the structure {flatten(t)[1]}, not the primal's "
                             f"{flatten(p)[1]}")
    return tuple(primals), tuple(tangents)


def _first(f: Callable[..., Any], count: int) -> Callable[..., Any]:
    """f of the first ``count`` arguments (the rest are the tangents or cotangents), named as f."""

    @functools.wraps(f)
    def head(*args: Any, **kwargs: Any) -> Any:
        return f(*args[:count], **kwargs)

    return head


@functools.lru_cache(maxsize=128)
def _jvp_transform(f: Callable[..., Any], count: int, backend: str | None = None) -> Transformed:
    """f's value and its derivative along the tangents: the trace of f on the primals, with the
    tangents as vars of their own; one forward sweep (``directional``)."""

    def build(trace: Traced) -> tuple[list[Term], Assemble]:
        outs, tree = trace.tree_outputs(trace.out, "jvp")
        seeds = {p: t for k in range(count) for p, t in zip(trace.vars[k], trace.vars[count + k])}
        tangents = directional(outs, seeds) if outs else []

        def assemble(values: list[Any], batch: tuple[int, ...]) -> Any:
            primal, at = tree_values(tree, values, 0, batch)
            return primal, tree_values(tree, values, at, batch)[0]

        return outs + tangents, assemble

    return Transformed(_first(f, count), "jvp", build, backend)


def jvp(f: Any, primals: Any, tangents: Any = None, values: Any = None, *, warn: bool = False,
        backend: str | None = None) -> Any:
    """``jax.jvp``: ``jvp(f, primals, tangents)`` is (f(*primals), the derivative of f along the
    tangents), both in the structure of f's result; one forward sweep, compiled (by ``backend``;
    None: ``config.default_backend()``).

    On Terms, the numeric form: ``jvp([z, w], {x: 1.0, y: 0.0}, values)`` is a list of floats
    (``numeric.modes.jvp``).

    >>> import numpy as np
    >>> import subgraph_ad as sad
    >>> value, tangent = sad.jvp(lambda x: np.sin(x) * x, (0.5,), (2.0,))
    >>> round(tangent, 12), round(float(2.0 * (np.cos(0.5) * 0.5 + np.sin(0.5))), 12)
    (1.836433639099, 1.836433639099)
    """
    if not callable(f):
        return modes.jvp(f, primals, tangents if values is None else values, warn=warn)
    ps, ts = _pairs(primals, tangents, "jvp")
    return _jvp_transform(f, len(ps), backend)(*ps, *ts)


@functools.lru_cache(maxsize=128)
def _vjp_transform(f: Callable[..., Any], count: int, backend: str | None = None) -> Transformed:
    """The cotangents of the primals for a cotangent of f's result: Σ cᵢ·outᵢ, reverse swept."""

    def build(trace: Traced) -> tuple[list[Term], Assemble]:
        outs, tree = trace.tree_outputs(trace.out, "vjp")
        given = trace.trees[count]
        if given != tree:
            raise ValueError(f"vjp: the cotangent has the structure {given}, not that of f's result {tree}")
        weighted = trace.tape.zero
        for o, c in zip(outs, trace.vars[count]):
            product = o * c
            weighted = weighted + (product.sum() if product.shape else product)
        wrts = [v for k in range(count) for v in trace.vars[k]]
        terms = list(grad_graph(weighted, wrts)) if wrts else []

        def assemble(values: list[Any], batch: tuple[int, ...]) -> Any:
            parts, at = [], 0
            for k in range(count):
                part, at = leafwise(trace, k, values, at, batch)
                parts.append(part)
            return tuple(parts)

        return terms, assemble

    return Transformed(_first(f, count), "vjp", build, backend)


@functools.lru_cache(maxsize=128)
def value_transform(f: Callable[..., Any], what: str, backend: str | None = None) -> Transformed:
    """f itself, traced and compiled: its result pytree (what ``vmap`` of a plain function runs)."""

    def build(trace: Traced) -> tuple[list[Term], Assemble]:
        outs, tree = trace.tree_outputs(trace.out, what)
        return outs, Filled(tree)

    return Transformed(f, what, build, backend)


def vjp(f: Any, *primals: Any, values: Any = None, warn: bool = False, backend: str | None = None) -> Any:
    """``jax.vjp``: ``vjp(f, *primals)`` is (f(*primals), vjp_fn), where vjp_fn(cotangent) — a
    cotangent in the structure of f's result — is the tuple of cotangents of the primals; one
    reverse sweep, traced once and compiled (by ``backend``; None: ``config.default_backend()``).

    On Terms, the numeric form: ``vjp([z, w], [1.0, 2.0], values)`` is a Grad
    (``numeric.modes.vjp``).

    >>> import numpy as np
    >>> import subgraph_ad as sad
    >>> out, back = sad.vjp(lambda x: x ** 2, np.array([1.0, 3.0]))
    >>> out, back(np.array([1.0, 10.0]))
    (array([1., 9.]), (array([ 2., 60.]),))
    """
    if not callable(f):
        if len(primals) not in (1, 2):
            raise TypeError(f"vjp(outputs, cotangents, values) on Terms takes 2 or 3 arguments, got {1 + len(primals)}")
        return modes.vjp(f, primals[0], primals[1] if len(primals) == 2 else values, warn=warn)
    check_callable(f, "vjp")
    primal_out = value_transform(f, "vjp", backend)(*primals)
    backward = _vjp_transform(f, len(primals), backend)

    def vjp_fn(cotangent: Any) -> tuple[Any, ...]:
        return backward(*primals, cotangent)  # type: ignore[no-any-return]

    return primal_out, vjp_fn


@functools.lru_cache(maxsize=128)
def _hvp_transform(f: Callable[..., Any], backend: str | None = None) -> Transformed:
    """H·v of a scalar function of one (pytree) argument: its gradient (reverse), then one forward
    sweep of that along v."""

    def build(trace: Traced) -> tuple[list[Term], Assemble]:
        z = trace.scalar_output("hvp")
        xs = trace.vars_of(0)
        if trace.trees[1] != trace.trees[0]:
            raise ValueError(f"hvp: v has the structure {trace.trees[1]}, not x's {trace.trees[0]}")
        gradient = list(grad_graph(z, xs))
        terms = directional(gradient, dict(zip(xs, trace.vars[1])))
        return terms, Filled(trace.trees[0])

    return Transformed(_first(f, 1), "hvp", build, backend)


def hvp(f: Any, x: Any, v: Any, *, backend: str | None = None) -> Any:
    """The Hessian-vector product H(x)·v of a scalar function of one argument x (an array, a
    number or a pytree; v of the same structure), in x's structure: ``jvp(grad(f), (x,), (v,))``
    compiled as one program (by ``backend``; None: ``config.default_backend()``), without
    building H.

    On Terms, the symbolic form: ``hvp(z, [x, y], [vx, vy])`` is a list of Terms
    (``ad.matrices.hvp``).

    >>> import numpy as np
    >>> import subgraph_ad as sad
    >>> sad.hvp(lambda x: np.sum(x ** 3), np.array([1.0, 2.0]), np.array([1.0, 1.0]))
    array([ 6., 12.])
    """
    if not callable(f):
        return hvp_terms(f, x, v)
    return _hvp_transform(f, backend)(x, v)


__all__ = ["derivative", "grad", "hvp", "jit", "jvp", "value_and_grad",
           "value_transform", "vjp"]
