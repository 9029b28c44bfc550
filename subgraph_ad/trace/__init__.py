"""Traced Python functions, as JAX users write them: ``grad``, ``value_and_grad``, ``jacobian``,
``hessian``, ``derivative``, the function forms of ``jvp``, ``vjp`` and ``hvp``, and ``vmap``.

``f`` is ordinary Python using ``sad.*`` or NumPy functions. It is called once per call
signature — the structure of the arguments, the shapes of their arrays, and the keyword
arguments, which are static (part of the cache key, never differentiated) — on fresh vars: a
number argument as a Term, an array as a ``TermArray`` of vars (so NumPy code written for arrays
runs on Terms), and a container — tuples, lists, dicts, None, nested (JAX's pytrees) — taken
apart into those, in JAX's order: dict entries by sorted key, then depth first. A list of plain
numbers is an array, as ``np.asarray`` reads it. The derivative subgraph is built, compiled and
cached; later calls with the same signature only run the compiled program — after checking that
what f read outside its arguments (closed-over arrays, globals, attributes, defaults) is as it
was at the trace, and tracing again where it is not (``captured``). Python control flow
on the value of a traced argument cannot be recorded (the graph is traced once) and raises a
TypeError that says so, as JAX's concretization error does.

``vmap(fn)`` maps over a leading batch axis by running the same compiled program once on the
columns of the batch (each var gets the array of its values across the batch): no Python loop
over points.

>>> import numpy as np
>>> import subgraph_ad as sad
>>> def f(x, y):
...     return x * y + np.sin(x)
>>> [round(v, 12) for v in sad.grad(f, argnums=(0, 1))(0.5, 4.2)]
[5.07758256189, 0.5]
>>> sad.derivative(np.sin, 4)(np.array([0.0, np.pi / 2]))
array([0., 1.])
>>> value, g = sad.value_and_grad(lambda p: np.sum(p["w"] ** 2) + p["b"])({"w": np.array([1.0, 2.0]), "b": 0.5})
>>> value, g["w"], g["b"]
(5.5, array([2., 4.]), 1.0)
>>> sad.vmap(sad.grad(lambda x: np.sum(x ** 3)))(np.array([[1.0, 2.0], [3.0, 4.0]]))
array([[ 3., 12.],
       [27., 48.]])

The package, by job: ``tracer`` (the trace of f on fresh vars), ``compiled`` (the one
trace-and-compile path and the program cache, shared with the operators of functions and
``checkpointed_grad``), ``captured`` (what f read outside its arguments), ``transform`` (a
transform: compiled, batched or nested), ``results`` (values into results), ``transforms``
(grad … jit), ``vmap``, ``nesting`` (transforms inside a trace) and ``errors`` (tracebacks
that end in the user's line).
"""

from .tracer import Traced
from .matrices import hessian, jacfwd, jacobian, jacrev
from .transforms import derivative, grad, hvp, jit, jvp, value_and_grad, vjp
from .vmap import vmap

__all__ = ["Traced", "derivative", "grad", "hessian", "hvp", "jacfwd", "jacobian", "jacrev", "jit", "jvp",
           "value_and_grad", "vjp", "vmap"]
