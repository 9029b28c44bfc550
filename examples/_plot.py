"""Plots for the examples: saved under out/ when matplotlib is installed (the ``plot`` extra),
skipped with a note otherwise; the examples print their results either way."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable


def save(name: str, draw: Callable[[Any], None]) -> None:
    """``draw(pyplot)`` a figure and save it as out/<name>.png."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"(plot {name}.png skipped: pip install matplotlib)")
        return
    Path("out").mkdir(exist_ok=True)
    plt.figure(figsize=(6, 4))
    draw(plt)
    plt.tight_layout()
    plt.savefig(f"out/{name}.png", dpi=110)
    plt.close()
    print(f"wrote out/{name}.png")
