"""Differential operators as derivative subgraphs: the Laplacian Δu = Σ ∂²u/∂xᵢ² (weighted:
Σ aᵢⱼ ∂ᵢⱼu), the biharmonic Δ²u, directional Taylor jets ∂ʲu[v,…,v] and symmetric derivative
tensors, each appended to u's tape as ordinary Terms.

The Laplacian is ONE forward pass over the nodes u needs, by a rule per op (``LAPLACIAN``):
Δ(a ± b) = Δa ± Δb, Δ(ab) = aΔb + bΔa + 2∇a·∇b, and for a function (``fn``, ``pow``)
Δf(a, …) = Σₖ fₖ Δaₖ + Σₖₗ fₖₗ ∇aₖ·∇aₗ, where fₖ are the function's own local partials
(``Function.partials``, from its ``fdiff``) and fₖₗ those differentiated once more with the
operand as the variable (``Pass.second``): every built-in and user function works with no rule
of its own. With weights A the pairing ∇a·∇b becomes ∇aᵀA∇b.

Gradients are not carried forward — along a product of d factors that would build d²/2
entries. A pairing reads the gradients it needs on demand (``Pass.gradient``): one reverse sweep
from the node, stopping at gradients already built, for only the vars both sides reach (a
sparse gradient carries only the vars that reach its node; a pairing of disjoint sides is a
structural zero and builds nothing). Numbers stay out of the graph while they can: values are
linear combinations Σ cᵢ·Tᵢ of nodes with number coefficients (``Lin``), turned into nodes only
where a product needs them, summed by coefficient so that Σ 4·xᵢ·xᵢ meets the Σ xᵢ·xᵢ u already
has. Δ of Π sin xᵢ is then −d·Π sin xᵢ without a node.

Directional jets (``directional_taylor``) are the Taylor engine (``ad.taylor``) seeded by the
direction v: the truncated Taylor coefficients of t ↦ u(x + t·v), with its plan, its lazy
coefficients and its exact scalars at high order.

The package: ``algebra`` (the values), ``local`` and ``passes`` (what every pass shares),
``laplacian`` and ``tensors`` (one propagation table each), ``jets`` (the Taylor engine by a
direction), ``arguments`` (the checks).

>>> from subgraph_ad import Tape, exp, sin
>>> tape = Tape(); x = tape.var("x", 0.5); y = tape.var("y", 1.0)
>>> laplacian(x**2 * y + sin(y), [x, y]).to_sympy()
2*y - sin(y)
>>> [d.to_sympy() for d in directional_taylor(x * y, {x: 1.0, y: 2.0}, 2)]
[2*x + y, 4]
"""

from .arguments import check_vars
from .jets import directional_taylor
from .laplacian import BIHARMONIC_METHODS, biharmonic, laplacian
from .passes import Pass
from .tensors import DerivativeTensor, derivative_tensor

__all__ = ["BIHARMONIC_METHODS", "DerivativeTensor", "Pass", "biharmonic", "check_vars", "derivative_tensor",
           "directional_taylor", "laplacian"]
