"""Recording the derivative passes as frames: which nodes each frame adds, and its caption.

The writers (``animate.py``, ``gif.py``) draw every frame from one recording of the *final*
graph, so a node sits at the same place from the frame it appears in to the last frame.

>>> from subgraph_ad import Tape, exp
>>> tape = Tape(); x = tape.var("x", 0.5)
>>> rec = record(exp(-x * x), [x, x])
>>> [d.eval() for d in rec.derivatives] == [exp(-x * x).diff(x).eval(), exp(-x * x).diff(x, 2).eval()]
True
>>> rec.frames[1].caption
'df/dx (pass 1 of 2) · new node 8: constant -2.0 · 1 of 3 in this pass'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..ad.diff import derivatives as derivative_steps, notation
from ..core import Tape, Term, dependencies
from .labels import describe

PER = ("node", "pass")
#: Outline colour of the nodes a frame adds, in every format.
NEW = "#d62728"
#: Seconds the last frame is held before the animated SVG or the GIF starts over.
HOLD = 2.5


@dataclass(frozen=True)
class Frame:
    """One picture: which pass it belongs to (0 = before any), the nodes it adds, its caption."""

    pass_no: int
    new: tuple[int, ...]
    caption: str


@dataclass(frozen=True)
class Recording:
    """What the passes did (gen_graph passes, or the orders of a Taylor run): the drawn nodes,
    the frame each appears in, the frames."""

    tape: Tape
    term: Term
    wrts: tuple[Term, ...]
    derivatives: tuple[Term, ...]
    indices: tuple[int, ...]
    appear: dict[int, int]
    frames: tuple[Frame, ...]
    added: tuple[int, ...]  # how much each pass grew the tape (unused nodes included)

    @property
    def new_nodes(self) -> int:
        return sum(len(f.new) for f in self.frames)

    @property
    def drawn(self) -> list[Term]:
        """The drawn nodes as Terms, for drawing the final graph that every frame is cut from."""
        return [Term(self.tape, i) for i in self.indices]

    @property
    def outputs(self) -> list[Term]:
        """f and its derivatives: the nodes drawn with a double outline."""
        return [self.term, *self.derivatives]

    @property
    def labels(self) -> list[str]:
        """The name of each output on the picture: f, df/dx, d²f/dx², …"""
        names = [w.name or "?" for w in self.wrts]
        return [notation(names[:k]) for k in range(len(self.derivatives) + 1)]

    @property
    def edges(self) -> list[tuple[int, int]]:
        """Every drawn edge as (head, k): into ``head`` from its k-th operand, DOT id ``e{head}_{k}``."""
        return [(i, k) for i in self.indices for k in range(len(self.tape.nodes[i].args))]


def record(term: Term, wrts: Sequence[Term], per: str = "node", include_unused: bool = False,
           method: str = "graph") -> Recording:
    """Differentiate once per var in ``wrts`` and record the frames (appends to the tape): one
    gen_graph pass each, or with ``method="taylor"`` / ``"auto"`` (the rule of ``diff``) the
    orders of a Taylor-mode run, each node shown with the order that first needed it.

    Folding can leave a few appended nodes that no derivative uses (``x * 1`` becomes ``x``
    after ``1`` was appended); they are left out of the drawing unless ``include_unused``.
    """
    if per not in PER:
        raise ValueError(f"per must be 'node' or 'pass', got {per!r}")
    tape = term.tape
    initial = dependencies(tape, [term.index])
    steps = derivative_steps(term, *wrts, method=method)
    passes = [list(step.appended) for step in steps]
    derivatives = [step.term for step in steps]
    added = [len(step.appended) for step in steps]
    if not include_unused:
        used = set(dependencies(tape, sorted({term.index, *(d.index for d in derivatives)})))
        passes = [[i for i in appended if i in used] for appended in passes]

    total = len(wrts)
    names = [w.name or "?" for w in wrts]
    frames = [Frame(0, (), f"f: {len(initial)} nodes, before differentiating")]
    shown_at: dict[int, int] = {}  # node -> first frame it must be visible in
    for p, (appended, result, step) in enumerate(zip(passes, derivatives, steps), 1):
        how = "Taylor-mode order" if step.method == "taylor" else "pass"
        head = f"{notation(names[:p])} ({how} {p} of {total})"
        if not appended:
            frames.append(Frame(p, (), f"{head} · no new nodes: the result, node {result.index}, "
                                       "was already on the tape"))
        elif per == "pass":
            frames.append(Frame(p, tuple(appended), f"{head} · {len(appended)} new nodes, "
                                                    f"result: node {result.index}"))
        else:
            for k, i in enumerate(appended, 1):
                frames.append(Frame(p, (i,), f"{head} · new {describe(tape, i, with_order=False)} · {k} of {len(appended)} "
                                             "in this pass"))
        for f in range(len(frames) - 1, 0, -1):
            if frames[f].pass_no != p:
                break
            for i in frames[f].new:
                shown_at.setdefault(i, f)
        shown_at[result.index] = min(shown_at.get(result.index, len(frames) - 1), len(frames) - 1)

    roots = {term.index, *(d.index for d in derivatives), *(i for a in passes for i in a)}
    indices = dependencies(tape, sorted(roots))
    start = set(initial)
    never = len(frames)
    appear = {i: 0 if i in start else shown_at.get(i, never) for i in indices}
    # A node that existed before but is first used by a derivative appears with its first user.
    for i in reversed(indices):
        for a in tape.nodes[i].args:
            if appear[a] > appear[i]:
                appear[a] = appear[i]
    return Recording(tape, term, tuple(wrts), tuple(derivatives), tuple(indices), appear, tuple(frames),
                     tuple(added))
