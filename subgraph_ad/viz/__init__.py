"""viz: drawings, animations and displays (``matrix`` shows rows of Terms as a matrix of formulas)."""

from .matrices import matrix

__all__ = ["matrix"]
