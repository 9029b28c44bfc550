"""The command line's limits and errors: each limit is a flag's default (tighter than the
library's), and an error is one line with an exit status — 1 for what was asked, 2 for a
command line that cannot be right."""

from __future__ import annotations

import subgraph_ad as sad


PROG = "subgraph-ad"

#: The command line's own limits (each flag raises its limit; 0 lifts it). Tighter than the
#: library's: a typo such as --order 10000 or a runaway mixed derivative should stop with a
#: message naming the flag, not fill the memory.
MAX_ORDER = 200
MAX_LENGTH = 5_000
MAX_TAPE_NODES = 1_000_000
MAX_FRAMES = 200
MAX_SYMPY_CHARS = 2_000
SYMPY_TIMEOUT = 5.0
MAX_POINTS = 10_000


class CliError(Exception):
    """A problem with what the user asked for: reported as one line, exit status 1."""

    status = 1


class UsageError(CliError):
    """A command line that cannot be right whatever the expression (a bad flag value, two flags
    that contradict each other): one line and exit status 2, like argparse's own errors."""

    status = 2


def limit_message(exc: Exception) -> str:
    """An error about a limit, worded with the flag that raises it: the library's messages name
    its keyword arguments (max_frames=, max_nodes=), which mean nothing on the command line."""
    if isinstance(exc, sad.GraphTooLarge) and exc.option == "max_frames":
        return (f"the GIF would have {exc.size} frames, more than --max-frames {exc.limit}; raise it "
                f"(--max-frames {exc.size}, or 0 for no cap), use --per pass (one frame per derivative "
                "order), or write .html or .svg")
    if isinstance(exc, sad.GraphTooLarge):
        return (f"the drawing would have {exc.size} nodes, more than --max-nodes {exc.limit}; Graphviz layout "
                f"time grows steeply with size: raise it (--max-nodes {exc.size}, or 0 for no cap)")
    return f"{exc} (on the command line: raise --max-tape-nodes, or 0 for no limit)"


__all__ = ["CliError", "MAX_FRAMES", "MAX_LENGTH", "MAX_ORDER", "MAX_POINTS", "MAX_SYMPY_CHARS", "MAX_TAPE_NODES", "PROG", "SYMPY_TIMEOUT", "UsageError", "limit_message"]
