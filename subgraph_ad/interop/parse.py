"""Safe text input: Python's ``ast`` parses, a whitelist of node types builds Terms, nothing runs.

>>> import subgraph_ad as sad
>>> t = sad.parse("exp(-x^2/2) * sin(y)")
>>> t.to_sympy()
exp(-x**2/2)*sin(y)
>>> sad.parse("__import__('os')")
Traceback (most recent call last):
...
subgraph_ad.interop.parse.ParseError: column 1: a call of __import__ is not allowed (known functions: abs, ..., tanh)
"""

from __future__ import annotations

import ast
import math
from typing import Mapping

from ..functions import FUNCTIONS, Function
from ..core import Tape, Term

MAX_LENGTH = 20_000
MAX_DEPTH = 200
#: Names that mean a constant unless the tape already has a var of that name.
CONSTANTS = {"e": math.e, "E": math.e, "pi": math.pi, "PI": math.pi}
#: Other names of known functions, as NumPy and mathematicians write them.
ALIASES = {"ln": "log", "arcsin": "asin", "arccos": "acos", "arctan": "atan", "arctan2": "atan2",
           "arcsinh": "asinh", "arccosh": "acosh", "arctanh": "atanh", "absolute": "abs", "power": "pow"}

_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**"}
_DESCRIBE = {
    ast.Attribute: "attribute access",
    ast.Subscript: "subscripting",
    ast.Lambda: "a lambda",
    ast.ListComp: "a comprehension",
    ast.SetComp: "a comprehension",
    ast.DictComp: "a comprehension",
    ast.GeneratorExp: "a generator expression",
    ast.Compare: "a comparison",
    ast.BoolOp: "a boolean operator",
    ast.IfExp: "a conditional expression",
    ast.NamedExpr: "an assignment",
    ast.JoinedStr: "a string",
    ast.List: "a list",
    ast.Tuple: "a tuple",
    ast.Dict: "a dict",
    ast.Set: "a set",
    ast.Starred: "unpacking",
    ast.Await: "await",
}


class ParseError(ValueError):
    """Text that is not an expression of numbers, names, + - * / ^ ** and known functions."""


def _where(node: ast.AST, carets_before: list[int]) -> str:
    col = getattr(node, "col_offset", None)
    if col is None:
        return "expression"
    # each '^' became '**': map the column back to the text the user wrote
    shift = sum(1 for c in carets_before if c < col)
    return f"column {col - shift + 1}"


def _check_size(text: str) -> None:
    if len(text) > MAX_LENGTH:
        raise ParseError(f"expression is {len(text)} characters long; at most {MAX_LENGTH} are accepted")
    depth = deepest = 0
    for ch in text:
        depth += ch == "("
        depth -= ch == ")"
        deepest = max(deepest, depth)
    if deepest > MAX_DEPTH:
        raise ParseError(f"parentheses nest {deepest} deep; at most {MAX_DEPTH} are accepted")


def _syntax_tree(text: str) -> tuple[ast.Expression, list[int]]:
    carets = []
    pieces = []
    for i, ch in enumerate(text):
        if ch == "^":
            carets.append(i + len(carets))  # column of the '**' in the rewritten text
            pieces.append("**")
        else:
            pieces.append(ch)
    source = "".join(pieces)
    try:
        tree = ast.parse(source.strip() or " ", mode="eval")
    except SyntaxError as exc:
        col = (exc.offset or 1) - 1
        shift = sum(1 for c in carets if c < col)
        raise ParseError(f"column {col - shift + 1}: invalid syntax ({exc.msg}) in {text!r}") from None
    except (RecursionError, MemoryError):
        raise ParseError(f"expression nests too deeply to parse (at most {MAX_DEPTH} levels)") from None
    return tree, carets


def _check_depth(tree: ast.AST) -> None:
    stack = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ParseError(f"expression nests more than {MAX_DEPTH} levels deep")
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))


def parse(text: str, tape: Tape | None = None, functions: Mapping[str, Function] | None = None) -> Term:
    """Parse ``text`` into a Term on ``tape`` (a new one by default), creating vars by name.

    ``^`` and ``**`` both mean power. ``e`` and ``pi`` (also ``E``, ``PI``) are the constants,
    unless the tape already has a var of that name. ``functions`` adds functions (UnaryFn or
    BinaryFn) by name to the known ones; ``ln``, ``arctan`` and NumPy's other names work too.
    Never evaluates the text; on error raises ParseError and leaves the tape unchanged.
    """
    if not isinstance(text, str):
        raise TypeError(f"parse() takes a str, got {type(text).__name__} {text!r}")
    if tape is None:
        tape = Tape()
    elif not isinstance(tape, Tape):
        raise TypeError(f"tape must be a Tape, got {type(tape).__name__} {tape!r}")
    known = {**{alias: FUNCTIONS[name] for alias, name in ALIASES.items() if name in FUNCTIONS},
             **FUNCTIONS, **(functions or {})}
    _check_size(text)
    tree, carets = _syntax_tree(text)
    _check_depth(tree)
    with tape.transaction():
        return _build(tree.body, tape, known, carets)


def _build(root: ast.AST, tape: Tape, known: Mapping[str, Function], carets: list[int]) -> Term:
    built: dict[int, Term] = {}
    stack: list[tuple[ast.AST, bool]] = [(root, False)]
    while stack:
        node, ready = stack.pop()
        children = _children(node, known, carets)
        if not ready and children:
            stack.append((node, True))
            stack.extend((c, False) for c in reversed(children))
            continue
        built[id(node)] = _term(node, [built[id(c)] for c in children], tape, known, carets)
    return built[id(root)]


def _children(node: ast.AST, known: Mapping[str, Function], carets: list[int]) -> list[ast.AST]:
    """The operands of an allowed node; raises ParseError for anything not on the whitelist."""
    where = _where(node, carets)
    if isinstance(node, ast.BinOp):
        if type(node.op) not in _BINOPS:
            raise ParseError(f"{where}: operator {type(node.op).__name__} is not allowed (use + - * / ^ **)")
        return [node.left, node.right]
    if isinstance(node, ast.UnaryOp):
        if not isinstance(node.op, (ast.USub, ast.UAdd)):
            raise ParseError(f"{where}: unary operator {type(node.op).__name__} is not allowed")
        return [node.operand]
    if isinstance(node, ast.Call):
        name = node.func.id if isinstance(node.func, ast.Name) else None
        if name not in known:
            what = name if name is not None else "a non-name"
            names = sorted(name for name in known if name not in ALIASES)
            raise ParseError(f"{where}: a call of {what} is not allowed (known functions: {', '.join(names)})")
        arity = known[name].arity
        if node.keywords or len(node.args) != arity:
            count = "one positional argument" if arity == 1 else f"{arity} positional arguments"
            raise ParseError(f"{where}: {name}() takes exactly {count}, got {len(node.args) + len(node.keywords)}")
        return list(node.args)
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
            raise ParseError(f"{where}: only real numbers are allowed, got {node.value!r}")
        return []
    if isinstance(node, ast.Name):
        if node.id in known:
            raise ParseError(f"{where}: {node.id} is a function; call it as {node.id}(...)")
        return []
    what = _DESCRIBE.get(type(node), type(node).__name__)
    raise ParseError(f"{where}: {what} is not allowed; only numbers, names, + - * / ^ ** and known functions")


def _term(node: ast.AST, args: list[Term], tape: Tape, known: Mapping[str, Function], carets: list[int]) -> Term:
    if isinstance(node, ast.BinOp):
        a, b = args
        return {ast.Add: a.__add__, ast.Sub: a.__sub__, ast.Mult: a.__mul__, ast.Div: a.__truediv__,
                ast.Pow: a.__pow__}[type(node.op)](b)
    if isinstance(node, ast.UnaryOp):
        return -args[0] if isinstance(node.op, ast.USub) else args[0]
    if isinstance(node, ast.Call):
        return known[node.func.id](*args)  # type: ignore[attr-defined]
    if isinstance(node, ast.Constant):
        try:
            return tape.const(float(node.value))
        except OverflowError:
            raise ParseError(f"{_where(node, carets)}: the number {node.value} is too large for a float") from None
    name = node.id  # type: ignore[attr-defined]
    existing = tape.find_var(name)
    if existing is not None:
        return existing
    return tape.const(CONSTANTS[name]) if name in CONSTANTS else tape.var(name)
