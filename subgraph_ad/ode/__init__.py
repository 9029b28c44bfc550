"""Taylor-series ODE integration: ``taylor_integrate`` (see docs/ode.md).

``traced`` turns ``fun`` and the events into a ``system`` (the value and coefficient tables of
one system), which ``compiled`` runs in one Numba loop of many steps a call and ``kernel`` in
NumPy over an ensemble; ``stepper`` chooses the order and the step and keeps time and state as
compensated pairs, ``run`` drives the steps and records them, ``dense`` evaluates and isolates
zeros on the step polynomials, ``events`` reads scipy's event attributes, ``chunks`` runs a
Dask ensemble a chunk per task, ``integrate`` checks the input and ``result`` holds what it
returns.
"""

from .integrate import taylor_integrate
from .result import OdeResult

__all__ = ["OdeResult", "taylor_integrate"]
