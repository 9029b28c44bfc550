"""Taylor-series ODE integration: ``taylor_integrate`` (see docs/ode.md).

``traced`` turns ``fun`` and the events into a ``system`` (one coefficient program per system),
which ``kernel`` runs order by order; ``stepper`` chooses the order and the step and keeps the
time, ``dense`` evaluates and isolates zeros on the step polynomials, ``events`` reads scipy's
event attributes, ``integrate`` runs the loop and ``result`` holds what it returns.
"""

from .integrate import taylor_integrate
from .result import OdeResult

__all__ = ["OdeResult", "taylor_integrate"]
