"""Terms as formulas: ``str(term)`` in infix text, ``term._repr_latex_()`` in LaTeX.

A derivative subgraph shares its subexpressions, and written out as a tree it can be
exponentially long. So a formula that fits on one line is written on one line, and a longer
one is written as numbered temporaries, one per shared subexpression and wherever a line would
grow too long, then the result, capped at ``max_lines`` with a note saying what was cut. One
walk in tape order, no recursion: a 100,000-node chain prints.

Text follows Python's grammar with the fewest parentheses that keep the value (``-x**2`` is
``-(x**2)``, ``x**(-1)``, ``(a*b)**c``, ``a - (b + c)``; ``a*(b*c)`` is ``a*b*c``). A constant
is the shortest float that reads back the same (``0.1``, ``2``), or its exact form when it has
one (``1/3``, ``log(2)``, ``pi``).

>>> import subgraph_ad as sad
>>> tape = sad.Tape(); x = tape.var("x")
>>> print(sad.exp(-x**2 / 2) * sad.sin(3 * x))
exp(-0.5*x**2)*sin(3*x)
>>> print(x / 3 + sad.sqrt(x) + 1)
1/3*x + sqrt(x) + 1
>>> print(sad.tanh(sad.tanh(x)).diff(x, 2))
t1 = sech2(tanh(x))
t1*(-2*tanh(x)*sech2(x)) + sech2(x)*(-2*tanh(tanh(x))*sech2(x)*t1)
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, NamedTuple

from ..core import OPS, Tape, Term, dependencies
from ..core.arrays import ARRAY_OPS
from ..core.ops import Node, reduce_exact
from ..functions import Function

#: Lines (temporaries and the result) that ``str`` prints before it cuts.
MAX_LINES = 60
#: A formula up to this many characters is written on one line; longer lines are split.
WIDTH = 80
#: A shared subexpression longer than this becomes a temporary; shorter ones are repeated.
SHORT = 8

ATOM = 5
NEG = OPS["neg"].precedence
POW = OPS["pow"].precedence
MUL = OPS["mul"].precedence
#: How each infix op is written between its operands: the loosest (+, -) with spaces around.
SEPARATORS = {name: f" {op.symbol} " if op.precedence == 1 else op.symbol for name, op in OPS.items() if op.arity == 2}


class Piece(NamedTuple):
    """Printed text, how tightly it binds (an op's precedence, ``ATOM`` for names and calls),
    whether it starts with a minus sign, and whether it is a constant."""

    text: str
    prec: int
    signed: bool = False
    constant: bool = False


def _paren(piece: Piece) -> str:
    return f"({piece.text})"


def _signed(text: str, prec: int) -> Piece:
    """A constant's piece: a leading minus binds like negation."""
    return Piece(text, NEG, True, True) if text.startswith("-") else Piece(text, prec, False, True)


def _number(value: float) -> Piece:
    if value != value:
        return _signed("nan", ATOM)
    if value.is_integer() and abs(value) < 1e16 and repr(value) != "-0.0":
        return _signed(str(int(value)), ATOM)
    return _signed(repr(value), ATOM)


def _fraction(value: Fraction) -> Piece:
    if value.denominator == 1:
        return _signed(str(value), ATOM)
    return Piece(f"{value.numerator}/{value.denominator}", MUL, value < 0, True)


def combine(op: str, operands: list[Piece]) -> Piece:
    """The text of an arithmetic op applied to printed operands, parenthesised as needed."""
    constant = operands[0].constant and operands[-1].constant
    if op == "neg":
        (a,) = operands
        if a.prec >= MUL and not a.signed:
            return Piece("-" + a.text, MUL if a.prec == MUL else NEG, True, constant)
        return Piece(f"-({a.text})", NEG, True, constant)
    left, right = operands
    prec = OPS[op].precedence
    if op == "add" and left.constant and not right.constant:  # the constant last, as in x + 1
        left, right = right, left
        if right.signed:  # x - 2, not x + (-2): the same value
            return Piece(f"{left.text} - {right.text[1:]}", prec, left.signed)
    if op == "pow":
        lhs = _paren(left) if left.prec <= POW or left.signed else left.text
        rhs = _paren(right) if right.prec < POW or right.signed else right.text
    else:
        lhs = _paren(left) if left.prec < prec else left.text
        if op == "add" and right.signed and right.prec > prec:  # a - 12*b, not a + (-12*b)
            return Piece(f"{lhs} - {right.text[1:]}", prec, left.signed and lhs is left.text, constant)
        associative = OPS[op].commutative and right.prec == prec  # a + (b - c) is a + b - c
        rhs = _paren(right) if (right.prec <= prec and not associative) or right.signed else right.text
    return Piece(f"{lhs}{SEPARATORS[op]}{rhs}", prec, left.signed and lhs is left.text, constant)


def call(fn: Function, operands: list[Piece]) -> Piece:
    """The text of a function applied to printed operands, as the function prints
    (``printed``): ``-sin`` (sin then negation) is the negation of ``sin(…)``."""
    text = operands[0].text if len(operands) == 1 else ", ".join([a.text for a in operands])
    constant = operands[0].constant and operands[-1].constant
    name, negated = fn.printed
    piece = Piece(f"{name}({text})", ATOM, False, constant)
    return combine("neg", [piece]) if negated else piece


def exact_piece(exact: Any) -> Piece:
    """The text of an exact constant (``core.ops.Exact``)."""

    def leaf(item: Any) -> Piece:
        if isinstance(item, Fraction):
            return _fraction(item)
        return Piece(item[1], ATOM, False, True) if item[0] == "named" else _number(item[1])

    def apply(item: tuple, args: list[Piece]) -> Piece:
        return call(item[1], args) if item[0] == "fn" else combine(item[0], args)

    return reduce_exact(exact, leaf, apply)


def node_piece(node: Node, operands: list[Piece]) -> Piece:
    """The text of one node, given the texts of its operands."""
    if node.op == "var":
        return Piece(node.payload, ATOM)
    if node.op == "const":
        if node.exact is not None:
            return exact_piece(node.exact)
        return _number(node.payload)
    if node.op == "fn":
        return call(node.payload, operands)
    if node.op in ARRAY_OPS:
        return array_piece(node, operands)
    return combine(node.op, operands)


def array_piece(node: Node, operands: list[Piece]) -> Piece:
    """The text of an array node, as NumPy code writes it: ``W @ tanh(x)``, ``h.sum(axis=0)``,
    ``h[1:3]``; a constant table by its shape, ``table[2, 3]``."""
    op, payload = node.op, node.payload
    if op == "map":
        p = payload[1]
        return combine(p, operands) if isinstance(p, str) else call(p, operands)
    if op == "table":
        return Piece(f"table{list(payload[0])}", ATOM, False, True)
    if op == "matmul":
        left, right = operands
        lhs = _paren(left) if left.prec < MUL or left.signed else left.text
        rhs = _paren(right) if right.prec <= MUL or right.signed else right.text
        return Piece(f"{lhs} @ {rhs}", MUL, False)
    inner = operands[0].text if operands[0].prec == ATOM else _paren(operands[0])
    if op == "transpose" and payload[1] == (1, 0):
        return Piece(f"{inner}.T", ATOM)
    if op == "index":
        items = ["None" if item is None else str(item) if isinstance(item, int) else _slice_text(item)
                 for item in payload[1]]
        return Piece(f"{inner}[{', '.join(items)}]", ATOM)
    if op in ("concat", "stack"):
        listed = ", ".join(a.text for a in operands)
        return Piece(f"concatenate([{listed}], axis={payload[1]})" if op == "concat" else f"stack([{listed}])", ATOM)
    argument = {"sum": lambda: "" if not payload[0] else f"axis={payload[1]}",
                "broadcast": lambda: str(payload[0]), "reshape": lambda: str(payload[0]),
                "transpose": lambda: str(payload[1]), "place": lambda: f"{payload[0]}, {payload[1]}"}[op]()
    return Piece(f"{inner}.{'broadcast_to' if op == 'broadcast' else op}({argument})", ATOM)


def _slice_text(item: tuple[int, int | None, int]) -> str:
    start, stop, step = item
    return f"{start}:{'' if stop is None else stop}" + (f":{step}" if step != 1 else "")


@dataclass
class Layout:
    """How a term is written: how many nodes it depends on, the temporaries among them (in
    tape order) and the prefix of their names (``t``, unless a var is called ``t1``)."""

    root: int
    size: int
    temps: list[int]
    prefix: str = "t"

    @property
    def names(self) -> dict[int, str]:
        return {i: f"{self.prefix}{k}" for k, i in enumerate(self.temps, 1)}

    def shown(self, max_lines: int | None) -> tuple[list[int], int]:
        """The temporaries printed within ``max_lines`` lines (the result is one), and how
        many are left out."""
        if max_lines is None or len(self.temps) + 1 <= max_lines:
            return self.temps, 0
        return self.temps[:max_lines - 1], len(self.temps) - (max_lines - 1)


def _render(tape: Tape, roots: list[int], names: dict[int, str]) -> dict[int, Piece]:
    """The texts of the roots, the temporaries in ``names`` written by name."""
    pieces: dict[int, Piece] = {}
    nodes = tape.nodes
    wanted = set(roots)
    for i in dependencies(tape, roots, lambda i: i in names and i not in wanted):
        if i in names and i not in wanted:
            continue
        node = nodes[i]
        pieces[i] = node_piece(node, [Piece(names[a], ATOM) if a in names else pieces[a] for a in node.args])
    return pieces


def _prefix(tape: Tape, order: list[int]) -> str:
    """``t``, or ``_t``, ``__t``, …: the first that no var of the expression starts with."""
    names = [tape.nodes[i].payload for i in order if tape.nodes[i].op == "var"]
    prefix = "t"
    while any(n.startswith(prefix) and n[len(prefix):].lstrip("_").isdigit() for n in names):
        prefix = "_" + prefix
    return prefix


def layout(term: Term, width: int = WIDTH) -> Layout:
    """Choose the temporaries: none if the whole formula fits in ``width`` characters; else
    every shared subexpression longer than ``SHORT``, and the longest operands of any line
    that would pass ``width``."""
    tape, root = term.tape, term.index
    order = dependencies(tape, [root])
    nodes = tape.nodes
    pieces: dict[int, Piece] = {}
    for i in order:  # on one line, if it fits
        node = nodes[i]
        pieces[i] = node_piece(node, [pieces[a] for a in node.args])
        if len(pieces[i].text) > width:
            break
    else:
        return Layout(root, len(order), [])
    uses = dict.fromkeys(order, 0)
    for i in order:
        for a in nodes[i].args:
            uses[a] += 1
    name = Piece("t" * 4, ATOM)  # a temporary, about as wide as its name will be
    temps: list[int] = []
    pieces.clear()
    for i in order:
        node = nodes[i]
        piece = node_piece(node, [pieces[a] for a in node.args])
        while len(piece.text) > width:
            open_ = [a for a in node.args if pieces[a] is not name and nodes[a].args]
            if not open_:
                break
            longest = max(open_, key=lambda a: len(pieces[a].text))
            temps.append(longest)
            pieces[longest] = name
            piece = node_piece(node, [pieces[a] for a in node.args])
        shared = i != root and node.args and uses[i] > 1 and len(piece.text) > SHORT
        if shared:
            temps.append(i)
        pieces[i] = name if shared else piece
    return Layout(root, len(order), sorted(temps), _prefix(tape, order))


def _note(cut: int, size: int) -> str:
    return (f"{cut} more line{'s' if cut > 1 else ''} cut: the expression has {size} nodes; "
            "subgraph_ad.interop.printing.formula(term, max_lines=None) prints them all")


def _check(max_lines: int | None, width: int) -> None:
    if max_lines is not None and (not isinstance(max_lines, int) or max_lines < 1):
        raise ValueError(f"max_lines must be a whole number of at least 1 (the result's line) or None, got {max_lines!r}")
    if not isinstance(width, int) or width < 1:
        raise ValueError(f"width must be a positive whole number of characters, got {width!r}")


def formula(term: Term, max_lines: int | None = MAX_LINES, width: int = WIDTH) -> str:
    """The formula of ``term`` as text (what ``str(term)`` is): one line if it fits in
    ``width`` characters, else temporaries ``t1 = …`` then the result; at most ``max_lines``
    lines (None: no limit), with a note when some were cut."""
    _check(max_lines, width)
    plan = layout(term, width)
    names = plan.names
    shown, cut = plan.shown(max_lines)
    pieces = _render(term.tape, [*shown, plan.root], names)
    lines = [f"{names[i]} = {pieces[i].text}" for i in shown]
    if cut:
        lines.append(f"... {_note(cut, plan.size)}")
    lines.append(pieces[plan.root].text)
    return "\n".join(lines)


def latex(term: Term, max_lines: int | None = MAX_LINES, width: int = WIDTH) -> str:
    """The formula of ``term`` in LaTeX for notebooks, written by SymPy (imported on the first
    call): laid out as ``formula`` lays out the text, each temporary a row of an ``aligned``
    block, so a large derivative is never expanded into one exponentially long expression."""
    import sympy

    from .latex import to_latex
    from .sympy_bridge import convert

    _check(max_lines, width)
    plan = layout(term, width)
    tape = term.tape
    if not plan.temps:
        return f"$\\displaystyle {to_latex(convert(tape, [plan.root])[plan.root])}$"
    symbols = {i: sympy.Symbol(f"{plan.prefix}_{k}") for k, i in enumerate(plan.temps, 1)}
    shown, cut = plan.shown(max_lines)
    exprs = convert(tape, [*shown, plan.root], symbols)
    rows = [f"{to_latex(symbols[i])} &= {to_latex(exprs[i])}" for i in shown]
    if cut:
        rows.append(f"& \\text{{{_note(cut, plan.size)}}}".replace("_", "\\_"))
    rows.append(f"& {to_latex(exprs[plan.root])}")
    return "$\\displaystyle \\begin{aligned}" + " \\\\ ".join(rows) + "\\end{aligned}$"
