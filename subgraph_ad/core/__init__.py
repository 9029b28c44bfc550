"""The core: op records, the tape with its builder and scopes, Terms, folding and graph walks.
It imports nothing from the layers above."""

from .graph import appended, dependencies
from .ops import FUNCTION, LEAVES, OPS, Node, Op
from .scopes import Callback, Trial
from .ownership import TapeThreadError
from .tape import MAX_NODES, LimitError, Tape
from .values import UNFED, UnfedPlaceholder
from .term import Term

__all__ = ["MAX_NODES", "UNFED", "UnfedPlaceholder", "Callback", "FUNCTION", "LEAVES", "LimitError", "Node", "OPS", "Op", "Tape", "TapeThreadError", "Term", "Trial",
           "appended", "dependencies"]
