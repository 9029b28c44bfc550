"""What a var holds: a real number or an array of them (``check_value``), or ``UNFED``, the value
of a placeholder nobody fed."""

from __future__ import annotations

from typing import Any

import numpy as np


def check_value(value: Any, what: str) -> Any:
    """A var value must be a real number or an array of them; anything else is refused early."""
    if not isinstance(value, (bool, str, bytes)) and value is not None:
        try:
            np.asarray(value, dtype=float)
            return value
        except (TypeError, ValueError):
            pass
    raise TypeError(f"{what} must be a number or an array of numbers, got {type(value).__name__} {value!r}")


class UnfedPlaceholder(ValueError):
    """A value was asked of a graph that needs a placeholder nobody fed."""


class _Placeholder:
    """The value of a placeholder: none yet."""

    def __repr__(self) -> str:
        return "<unfed>"

    def __reduce__(self) -> str:
        return "UNFED"  # a pickled placeholder is still unfed: the one instance, found by name


#: The current value of a placeholder that has not been fed.
UNFED = _Placeholder()
