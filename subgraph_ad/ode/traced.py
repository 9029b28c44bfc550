"""From ``fun`` (NumPy code, or Terms over a tape's vars) and the events to a ``System``.

A Python ``fun(t, y, *args)`` is traced once per (function, size, events, args, variational,
order) on fresh vars, as ``sad.grad`` traces (``Traced``); its events are traced on the same
vars. With ``variational=True`` the n² variational equations Φ′ = J(t, y)·Φ are appended,
J = ∂f/∂y the graph Jacobian, so the sensitivities ∂y(t)/∂y0 = Φ(t) come from the same step.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Optional, Sequence

import numpy as np

from ..ad.matrices import jacobian
from ..core import Tape, Term
from ..core.expand import scalar_roots
from ..interop.numpy_dispatch import TermArray
from ..trace import Traced
from .events import Event
from .system import System, build

_SYSTEMS: dict[Any, System] = {}
_KEEP = 32  # systems kept per process (oldest dropped first)
#: Held while a system is looked up and traced: threads that ask for one system at once trace it
#: once (re-entrant: a system whose function integrates another).
_TRACING = threading.RLock()


def system_of(fun: Any, n: int, events: Sequence[Event], args: tuple, variational: bool, order: int) -> System:
    """The system of ``fun`` with n states, traced and laid out once per key."""
    terms = isinstance(fun, (list, tuple)) and len(fun) > 0 and all(isinstance(f, Term) for f in fun)
    try:
        key: Any = (fun if not terms else tuple(f.index for f in fun), id(fun[0].tape) if terms else None, n,
                    tuple(e.fn for e in events), args, variational, order)
        hash(key)
    except TypeError:  # unhashable args: traced afresh
        key = None
    with _TRACING:  # (a Dask worker's threads, each given a chunk of one ensemble: one trace)
        if key is not None and key in _SYSTEMS:
            return _SYSTEMS[key]
        if terms:
            found = _from_terms(list(fun), n, events, args, variational, order)
        elif callable(fun):
            found = _from_function(fun, n, events, args, variational, order)
        else:
            raise TypeError(f"taylor_integrate: fun must be a callable fun(t, y, *args) or a non-empty list of "
                            f"Terms, got {type(fun).__name__} {fun!r:.80}")
        if key is not None:
            if len(_SYSTEMS) >= _KEEP:
                del _SYSTEMS[next(iter(_SYSTEMS))]
            _SYSTEMS[key] = found
        return found


def _name(fun: Any) -> str:
    return getattr(fun, "__name__", type(fun).__name__)


def _events(tape: Tape, time: Term, y: Any, events: Sequence[Event], args: tuple) -> list[Term]:
    out = []
    for k, event in enumerate(events):
        value = event.fn(time, y.copy(), *args)
        if isinstance(value, np.ndarray) and value.shape == ():
            value = value[()]
        if isinstance(value, Term):
            out.append(value)
        elif np.ndim(value) == 0 and isinstance(value, (int, float, np.number)):
            out.append(tape.const(float(value)))
        else:
            raise ValueError(f"taylor_integrate: event {k} ({_name(event.fn)}) must return one number, got "
                             f"{type(value).__name__} of shape {np.shape(value)}")
    return out


def _from_function(fun: Callable[..., Any], n: int, events: Sequence[Event], args: tuple, variational: bool,
                   order: int) -> System:
    trace = Traced(lambda t, y: fun(t, y.copy(), *args), [(), (n,)], "taylor_integrate")
    rhs, shape = trace.outputs("taylor_integrate")
    if shape != (n,) and not (shape == () and n == 1):
        raise ValueError(f"taylor_integrate: fun ({_name(fun)}) returned shape {shape} for a state of shape ({n},); "
                         f"expected shape ({n},)")
    (time,), states = trace.vars
    y = np.array(states, dtype=object).view(TermArray)
    return _finish(trace.tape, time, states, rhs, _events(trace.tape, time, y, events, args), variational, order)


def _from_terms(rhs: list[Term], n: int, events: Sequence[Event], args: tuple, variational: bool,
                order: int) -> System:
    """Terms over a tape's vars: the state is the tape's vars in creation order, but for a var
    named ``t``, which is time."""
    tape = rhs[0].tape
    found = tape.vars
    time = found.pop("t", None)
    states = list(found.values())
    if len(rhs) != n or len(states) != n:
        raise ValueError(f"taylor_integrate: {len(rhs)} right-hand sides over the vars {list(found)} (and t) for a "
                         f"state of size {n}; expected one right-hand side per var, as many as y0 has entries")
    for f in rhs:
        rhs[0]._lift(f)
    if events and time is None:
        time = tape.var("t")
    y = np.array(states, dtype=object).view(TermArray)
    gs = [] if time is None else _events(tape, time, y, events, args)
    return _finish(tape, time, states, rhs, gs, variational, order)


def _finish(tape: Tape, time: Optional[Term], states: list[Term], rhs: list[Term], gs: list[Term], variational: bool,
            order: int) -> System:
    # the Taylor kernel is scalar: array nodes (a constant vector times a Term, sad.stack) are expanded
    rhs, gs = ([Term(tape, i) for i in scalar_roots(tape, [t.index for t in terms], "taylor_integrate")]
               for terms in (rhs, gs))
    if variational:
        states, rhs = _variational(tape, states, rhs)
    return build(tape, time, states, rhs, gs, order)


def _variational(tape: Tape, states: list[Term], rhs: list[Term]) -> tuple[list[Term], list[Term]]:
    """y and Φ (n × n, row-major: Φ_ij = ∂y_i/∂y0_j) with Φ′ = J·Φ, J's structural zeros skipped."""
    n = len(states)
    names = set(tape.vars)
    phi = []
    for i in range(n):
        for j in range(n):
            name = f"phi_{i}_{j}"
            while name in names:
                name = "_" + name
            phi.append(tape.var(name))
    jac = jacobian(rhs, states)
    zero = tape.zero.index
    extra = []
    for i in range(n):
        for j in range(n):
            total: Optional[Term] = None
            for k in range(n):
                if jac[i][k].index != zero:
                    term = jac[i][k] * phi[k * n + j]
                    total = term if total is None else total + term
            extra.append(tape.zero if total is None else total)
    return states + phi, rhs + extra
