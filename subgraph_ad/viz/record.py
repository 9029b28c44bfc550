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
from ..core import UNFED, Tape, Term, dependencies
from ..interop.printing import formula
from .labels import describe

PER = ("node", "pass")
#: Outline colour of the nodes a frame adds, in every format.
NEW = "#d62728"
#: Seconds the last frame is held before the animated SVG or the GIF starts over.
HOLD = 2.5
#: Characters of the result's formula that the last frame's caption shows (then an ellipsis).
FORMULA_CHARS = 80


def carry(term: Term, wrts: Sequence[Term]) -> tuple[Term, list[Term]]:
    """``term`` and ``wrts`` on a new tape that holds only ``term``'s nodes and the vars: an
    animation records there, so every pass appends its nodes anew (none is found already built
    or memoised) and the caller's tape stays exactly as it was.

    Nodes are carried over in index order with their derivative-order tags, vars with their
    names and values; interning them again keeps the nodes as they are (they are canonical).

    >>> from subgraph_ad import Tape, sin
    >>> tape = Tape(); x = tape.var("x", 0.5); f = sin(x); d = f.diff(x)
    >>> g, [y] = carry(f, [x])
    >>> len(g.tape), len(tape), str(g), y.tape is g.tape, g.tape is not tape
    (2, 4, 'sin(x)', True, True)
    """
    tape = term.tape
    new = Tape(max_nodes=tape.max_nodes)
    values = tape.current_values()
    keep = dependencies(tape, sorted({term.index, *(w.index for w in wrts)}))
    moved: dict[int, int] = {}
    with new.transaction():
        for i in keep:
            node = tape.nodes[i]
            new.tag(tape.orders[i])
            if node.op == "var":
                value = values[i]
                moved[i] = (new.placeholder(node.payload) if value is UNFED else new.var(node.payload, value)).index
            else:
                moved[i] = new.intern(node._replace(args=tuple([moved[a] for a in node.args])))
    return Term(new, moved[term.index]), [Term(new, moved[w.index]) for w in wrts]


def result_formula(term: Term, limit: int = FORMULA_CHARS) -> str:
    """The formula of ``term`` on one line, cut to ``limit`` characters with an ellipsis; a
    formula written with temporaries is joined with ``;``.

    >>> from subgraph_ad import Tape, exp
    >>> tape = Tape(); x = tape.var("x", 0.5)
    >>> result_formula(exp(-x**2 / 2).diff(x, 2))
    'x*x*exp(-0.5*x**2) - exp(-0.5*x**2)'
    >>> len(result_formula(exp(-x**2 / 2).diff(x, 9, method="graph", closed_form=False)))
    80
    """
    text = "; ".join(formula(term, max_lines=4).splitlines())
    return text if len(text) <= limit else text[:limit - 1] + "…"


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
    """Differentiate once per var in ``wrts`` and record the frames (appends to the tape: the
    animation passes a ``carry`` copy): one gen_graph pass each, or with ``method="taylor"`` /
    ``"auto"`` (the rule of ``diff``) the orders of a Taylor-mode run, each node shown with the
    order that first needed it. The last frame's caption ends with the result's formula.

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

    last = frames[-1]
    frames[-1] = Frame(last.pass_no, last.new,
                       f"{last.caption} · {notation(names)} = {result_formula(derivatives[-1])}")

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
