"""``taylor_integrate``: scipy's ``solve_ivp`` interface over Taylor steps (see docs/ode.md)."""

from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np

from .chunks import by_chunks, is_dask
from .events import events_of
from .result import OdeResult
from .run import Run
from .stepper import order_for
from .traced import system_of

_EPS = float(np.finfo(float).eps)


def _number(value: Any, what: str) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"taylor_integrate: {what} must be a real number, got {type(value).__name__} {value!r:.80}")
    if not math.isfinite(value):
        raise ValueError(f"taylor_integrate: {what} must be finite, got {value!r}")
    return float(value)


def _span(t_span: Any) -> tuple[float, float]:
    if not isinstance(t_span, (tuple, list, np.ndarray)) or len(t_span) != 2:
        raise ValueError(f"taylor_integrate: t_span must be two numbers (t0, t1), got {t_span!r:.80}")
    return _number(t_span[0], "t_span[0]"), _number(t_span[1], "t_span[1]")


def _tolerance(value: Optional[float], default: float, what: str) -> float:
    if value is None:
        return default
    found = _number(value, what)
    if found <= 0.0:
        raise ValueError(f"taylor_integrate: {what} must be > 0, got {value!r}")
    return found


def _initial(y0: Any) -> np.ndarray:
    try:
        y = np.array(y0, dtype=float)
    except (TypeError, ValueError) as error:
        raise TypeError(f"taylor_integrate: y0 must be an array of real numbers, got {type(y0).__name__} "
                        f"{y0!r:.80}") from error
    if y.ndim not in (1, 2) or y.shape[0] == 0 or (y.ndim == 2 and y.shape[1] == 0):
        raise ValueError(f"taylor_integrate: y0 must have shape (n,) or (n, B) (an ensemble), got shape {y.shape}")
    if not np.all(np.isfinite(y)):
        bad = tuple(int(i) for i in np.argwhere(~np.isfinite(y))[0])
        raise ValueError(f"taylor_integrate: y0 must be finite, got {y[bad]} at index {bad}")
    return y


def _times(t_eval: Any, t0: float, t1: float) -> Optional[np.ndarray]:
    if t_eval is None:
        return None
    t = np.asarray(t_eval, dtype=float)
    if t.ndim != 1 or not np.all(np.isfinite(t)):
        raise ValueError(f"taylor_integrate: t_eval must be a 1-D array of finite times, got {t_eval!r:.80}")
    low, high = min(t0, t1), max(t0, t1)
    if np.any((t < low) | (t > high)):
        raise ValueError(f"taylor_integrate: t_eval must lie within t_span [{low}, {high}], got values from "
                         f"{t.min()} to {t.max()}")
    steps = np.diff(t) * (1.0 if t1 >= t0 else -1.0)
    if np.any(steps <= 0.0):
        raise ValueError("taylor_integrate: t_eval must be strictly " + ("increasing" if t1 >= t0 else "decreasing")
                         + " (the direction of integration)")
    return t


def _backend(backend: Optional[str]) -> str:
    if backend is None:
        try:
            import numba  # noqa: F401
        except ImportError:
            return "numpy"
        return "numba"
    if backend not in ("numpy", "numba"):
        raise ValueError(f"taylor_integrate: backend must be 'numpy' or 'numba', got {backend!r}")
    return backend


def taylor_integrate(fun: Any, t_span: Any, y0: Any, rtol: Optional[float] = None, atol: Optional[float] = None,
                     t_eval: Any = None, dense_output: bool = False, events: Any = None, args: tuple = (),
                     order: Optional[int] = None, max_steps: Optional[int] = None, backend: Optional[str] = None,
                     variational: bool = False) -> OdeResult:
    """Integrate y′ = fun(t, y, *args) from t_span[0] to t_span[1] by Taylor steps, as scipy's
    ``solve_ivp`` does by Runge–Kutta ones (the same names and result fields; see docs/ode.md).

    ``rtol``/``atol`` default to machine ε (``atol`` to ``rtol``); ``order`` overrides the order
    the tolerance chooses; ``max_steps`` bounds the steps (per ensemble member);
    ``backend`` runs the coefficient kernel with ``"numba"`` (the default where Numba imports)
    or ``"numpy"``; ``variational=True`` adds ``res.sensitivity`` = ∂y(t)/∂y0.

    >>> import numpy as np
    >>> res = taylor_integrate(lambda t, y: np.array([y[1], -y[0]]), (0.0, np.pi), [0.0, 1.0])
    >>> bool(abs(res.y[0, -1]) < 1e-14), res.status, res.order
    (True, 0, 20)
    """
    if is_dask(y0):  # each chunk along B a task: traced once here, then shared
        kwargs = dict(rtol=rtol, atol=atol, t_eval=t_eval, dense_output=dense_output, events=events, args=args,
                      order=order, max_steps=max_steps, backend=backend, variational=variational)
        if len(y0.shape) == 2 and y0.shape[0] > 0:
            _prepare(fun, y0.shape[0], kwargs)
        return by_chunks(y0, lambda block: taylor_integrate(fun, t_span, block, **kwargs))
    t0, t1 = _span(t_span)
    y = _initial(y0)
    rtol_ = _tolerance(rtol, _EPS, "rtol")
    atol_ = _tolerance(atol, rtol_, "atol")
    if order is not None and (isinstance(order, bool) or not isinstance(order, (int, np.integer)) or order < 2):
        raise ValueError(f"taylor_integrate: order must be an int >= 2, got {order!r}")
    if max_steps is not None and (isinstance(max_steps, bool) or not isinstance(max_steps, (int, np.integer))
                                  or max_steps < 1):
        raise ValueError(f"taylor_integrate: max_steps must be an int >= 1, got {max_steps!r}")
    if not isinstance(args, tuple):
        raise TypeError(f"taylor_integrate: args must be a tuple, got {type(args).__name__} {args!r:.80}")
    times = _times(t_eval, t0, t1)
    specs = events_of(events)
    name = _backend(backend)
    n = y.shape[0]
    p = int(order) if order is not None else order_for(min(rtol_, atol_))
    system = system_of(fun, n, specs, args, bool(variational), p)
    ensemble = y.ndim == 2
    members = y if ensemble else y[:, None]
    if variational:  # Φ(t0) = I for each member
        eye = np.broadcast_to(np.eye(n).reshape(n * n, 1), (n * n, members.shape[1]))
        members = np.concatenate([members, eye], axis=0)
    run = Run(system, specs, p, rtol_, atol_, t0, t1, times, dense_output, max_steps, name, ensemble)
    run.loop(members)
    return run.result(n, bool(variational))


def _prepare(fun: Any, n: int, kwargs: dict[str, Any]) -> None:
    """Trace and lay out the system the chunks will share (``traced`` keeps it)."""
    rtol = _tolerance(kwargs["rtol"], _EPS, "rtol")
    tol = min(rtol, _tolerance(kwargs["atol"], rtol, "atol"))
    order = kwargs["order"]
    given = isinstance(order, (int, np.integer)) and not isinstance(order, bool) and order >= 2
    if (order is not None and not given) or not isinstance(kwargs["args"], tuple):
        return  # the chunks' calls say what is wrong
    p = int(order) if given else order_for(tol)
    system_of(fun, n, events_of(kwargs["events"]), kwargs["args"], bool(kwargs["variational"]), p)
