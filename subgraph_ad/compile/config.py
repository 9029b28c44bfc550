"""Package defaults for compiling: the backend a compile uses when the call names none.

``backend`` is None until set in code; while it is None, the environment variable
``SUBGRAPH_AD_BACKEND`` is read at each compile (so a shell or a test can choose), else
``"numpy"``. ``lambdify`` and every entry that compiles through it without a ``backend=``
(``sad.grad``, ``sad.hessian``, ...) read it.

>>> from subgraph_ad.compile import config
>>> config.backend = "numba"
>>> config.default_backend()
'numba'
>>> config.backend = None
"""

from __future__ import annotations

import os

#: The environment variable read while ``backend`` is None.
ENV = "SUBGRAPH_AD_BACKEND"

#: The default backend set in code (``"numpy"``, ``"numba"``, ...), or None to read ``ENV``.
backend: str | None = None


def default_backend() -> str:
    """``backend`` if set, else ``SUBGRAPH_AD_BACKEND`` if set, else ``"numpy"``."""
    if backend is not None:
        return backend
    return os.environ.get(ENV, "").strip() or "numpy"
