"""Safe text input: a tokenizer and an operator-precedence parser with explicit stacks build Terms;
nothing in the text is run, and nothing recurses.

>>> import subgraph_ad as sad
>>> t = sad.parse("exp(-x^2/2) * sin(y)")
>>> t.to_sympy()
exp(-x**2/2)*sin(y)
>>> sad.parse("2x + sinn(x)")
Traceback (most recent call last):
...
subgraph_ad.interop.parse.ParseError: column 2: implicit multiplication is not accepted; write 2*x + sinn(x)
>>> sad.parse("2*x + sinn(x)")
Traceback (most recent call last):
...
subgraph_ad.interop.parse.ParseError: column 7: a call of sinn is not allowed: sinn is not a known function; did you mean sin?

The grammar is Python's for these operators: ``-x^2`` is ``-(x^2)``, ``^`` and ``**`` group to
the right, ``2^-x`` works; numbers are Python's literals (``1_000``, ``0x1F``, ``.5``, ``1e-3``);
names are NFKC-normalised as Python does (``𝑥`` is ``x``); whitespace, newlines included, and
``#`` comments are skipped. Errors give the column (and line) in characters of the text as written.
Python's own ``ast`` is not used because its limits are too low and move with the interpreter:
it refuses more than 200 nested parentheses and, at the default recursion limit, fails on a sum,
product or power chain of about 3,000 operands (RecursionError or MemoryError).

Limits, each refused with a ParseError that names the limit and what was given:

- ``MAX_LENGTH`` = 200,000 characters of text;
- ``MAX_DEPTH`` = 10,000 levels of nesting: parentheses and calls open at once, plus signs and
  powers still waiting for their operand. A sum or product of any length nests one level, so
  ``"+".join(["x"] * 10_000)`` parses, and so does ``"(" * 10_000 + "x" + ")" * 10_000``;
- ``MAX_DIGITS`` = 1,000 digits in one number literal, in any base. A number beyond the float
  range (about 1.8e308, e.g. ``1e999``) is refused too; a tiny one rounds to 0 as in Python.

Memory and time grow linearly with the length of the text. A tape made with ``max_nodes`` may
still raise its own LimitError (and roll back).
"""

from __future__ import annotations

import difflib
import keyword
import math
import operator
import re
import unicodedata
from dataclasses import dataclass
from typing import Iterator, Mapping, NamedTuple, cast

from ..core import Tape, Term
from ..functions import FUNCTIONS, Function

#: Longest text accepted, in characters.
MAX_LENGTH = 200_000
#: Most parentheses, calls, signs and powers open at once.
MAX_DEPTH = 10_000
#: Most digits in one number literal (a float holds 17 significant digits; 10**309 overflows).
MAX_DIGITS = 1_000
#: Names that mean a constant unless the tape already has a var of that name.
CONSTANTS = {"e": math.e, "E": math.e, "pi": math.pi, "PI": math.pi}
#: Other names of known functions, as NumPy and mathematicians write them.
ALIASES = {"ln": "log", "arcsin": "asin", "arccos": "acos", "arctan": "atan", "arctan2": "atan2",
           "arcsinh": "asinh", "arccosh": "acosh", "arctanh": "atanh", "absolute": "abs", "power": "pow"}


class ParseError(ValueError):
    """Text that is not an expression of numbers, names, + - * / ^ ** and known functions."""


_ONLY = "only numbers, names, + - * / ^ ** and known functions"
_NUM, _NAME, _OP, _END = "number", "name", "operator", "end"
# a number as far as it reaches; _LITERAL then says whether it is one Python would accept
_NUMBER = r"0[xXoObB]\w*|(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9][0-9_]*)(?:[eE][-+]?[0-9][0-9_]*)?[jJ]?"
_SYMBOL = r"\*\*|//|<<|>>|<=|>=|==|!=|:=|->|[-+*/^(),.%@&|~<>=!:;\[\]{}'\"\\`$?]"
# blanks and comments are skipped by a match of their own: inside the token pattern, a failing
# token after them would make the engine retry every way of splitting them (exponential time)
_SKIP = re.compile(r"(?:\s+|#[^\n]*)*")
_TOKEN = re.compile(rf"(?P<number>{_NUMBER})|(?P<name>[^\W\d]\w*)|(?P<symbol>{_SYMBOL})|(?P<end>\Z)")
_DIGITS = r"[0-9](?:_?[0-9])*"
_FLOAT = rf"(?:(?:{_DIGITS})?\.{_DIGITS}|{_DIGITS}\.)(?:[eE][-+]?{_DIGITS})?|{_DIGITS}[eE][-+]?{_DIGITS}"
_LITERAL = re.compile(rf"0[xX](?:_?[0-9a-fA-F])+|0[oO](?:_?[0-7])+|0[bB](?:_?[01])+"
                      rf"|(?:{_FLOAT}|{_DIGITS})[jJ]|{_FLOAT}|[1-9](?:_?[0-9])*|0(?:_?0)*")
_BASES = {"x": 16, "o": 8, "b": 2}
_NUMBER_LIKE = re.compile(r"[\w.]*")

_BINARY = {"+": (1, operator.add), "-": (1, operator.sub), "*": (2, operator.mul), "/": (2, operator.truediv),
           "**": (4, operator.pow), "^": (4, operator.pow)}
_UNARY = 3  # between * and **: -x*y is (-x)*y, -x**2 is -(x**2)
_REFUSED = {
    ".": "attribute access", "[": "subscripting", "'": "a string", '"': "a string",
    "{": "a dict or set", "=": "an assignment", ":=": "an assignment", ";": "a second statement",
    "<": "a comparison", ">": "a comparison", "<=": "a comparison", ">=": "a comparison",
    "==": "a comparison", "!=": "a comparison", "\\": "a backslash", "->": "an annotation",
}
_OPERATORS = {"%", "//", "@", "&", "|", "<<", ">>", "~"}  # Python's, not this grammar's
_KEYWORDS = {"lambda": "a lambda", "if": "a conditional expression", "else": "a conditional expression",
             "for": "a comprehension", "async": "a comprehension", "and": "a boolean operator",
             "or": "a boolean operator", "not": "a boolean operator", "in": "a comparison",
             "is": "a comparison", "await": "await", "yield": "yield"}


class _Token(NamedTuple):
    kind: str
    text: str  # as written (a name NFKC-normalised, as Python reads it)
    start: int
    end: int
    value: float = 0.0


@dataclass
class _Open:
    """An open parenthesis on the operator stack; for a call, the function and its arguments so far."""

    start: int  # of the call, or of the '('
    paren: int
    name: str | None = None
    fn: Function | None = None
    args: int = 0


class _Op(NamedTuple):
    """A binary or prefix operator waiting on the operator stack for its right operand."""

    text: str
    precedence: int
    start: int
    unary: bool = False


def _shown(text: str, limit: int = 40) -> str:
    """A piece of the user's text that is safe to print: escapes for what is not printable, cut when long."""
    if len(text) > limit:
        text = text[: limit - 15] + "..." + text[-12:]
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class _Text:
    """The text being parsed: where a position is, in words."""

    def __init__(self, text: str) -> None:
        self.text = text

    def where(self, pos: int) -> str:
        line = self.text.count("\n", 0, pos)
        column = pos - (self.text.rfind("\n", 0, pos) + 1) + 1
        return f"line {line + 1}, column {column}" if "\n" in self.text else f"column {column}"

    def error(self, pos: int, message: str) -> ParseError:
        return ParseError(f"{self.where(pos)}: {message}")


def _tokens(source: _Text) -> Iterator[_Token]:
    """The tokens of the text, read lazily so that the first problem in reading order is the one reported."""
    text = source.text
    pos = 0
    while True:
        pos = _SKIP.match(text, pos).end()  # type: ignore[union-attr]
        match = _TOKEN.match(text, pos)
        if match is None:
            ch = text[pos]
            described = "a lone surrogate" if "\ud800" <= ch <= "\udfff" else unicodedata.name(ch, "")
            raise source.error(pos, f"character {ch!r} (U+{ord(ch):04X}{' ' + described if described else ''}) "
                                    f"is not allowed; {_ONLY}")
        kind, written, start = match.lastgroup, match.group(), pos
        pos = match.end()
        if kind == "number":
            yield _number(source, written, start)
        elif kind == "name":
            yield _name(source, written, start)
        elif kind == "symbol":
            yield _Token(_OP, written, start, pos)
        else:
            yield _Token(_END, "", start, start)
            return


def _number(source: _Text, written: str, start: int) -> _Token:
    """A number token: checked against Python's literal syntax and the limits, converted to a float."""
    end = start + len(written)
    text = source.text
    based = written[:2].lower() in ("0x", "0o", "0b")
    digits = len(written) - 2 - written.count("_") if based else sum(c.isdigit() for c in written)
    if digits > MAX_DIGITS:
        raise source.error(start, f"the number {_shown(written)} has {digits} digits; "
                                  f"at most MAX_DIGITS = {MAX_DIGITS} are accepted")
    if end < len(text) and (text[end] in "._" or text[end].isdigit()) or not _LITERAL.fullmatch(written):
        bad = _NUMBER_LIKE.match(text, start).group()  # type: ignore[union-attr]
        raise source.error(start, f"invalid syntax: {_shown(bad)!r} is not a valid number")
    if written[-1] in "jJ":
        raise source.error(start, f"only real numbers are allowed, got the imaginary number {_shown(written)}")
    try:
        value = float(int(written[2:].replace("_", ""), _BASES[written[1].lower()]) if based
                      else written.replace("_", ""))
    except OverflowError:
        value = math.inf
    if math.isinf(value):
        raise source.error(start, f"the number {_shown(written)} is too large for a float (at most about 1.8e308)")
    return _Token(_NUM, written, start, end, value)


def _name(source: _Text, written: str, start: int) -> _Token:
    """A name token, normalised as Python normalises identifiers (NFKC)."""
    if not written.isidentifier():  # the first character must start a name, the others continue one
        i = next(i for i, ch in enumerate(written) if not (ch if i == 0 else "a" + ch).isidentifier())
        ch = written[i]
        raise source.error(start + i, f"character {ch!r} (U+{ord(ch):04X} {unicodedata.name(ch, '')}) "
                                      f"{'cannot start' if i == 0 else 'is not allowed in'} a name")
    name = unicodedata.normalize("NFKC", written) if not written.isascii() else written
    if keyword.iskeyword(name) and name not in ("True", "False", "None"):
        what = _KEYWORDS.get(name, f"the keyword {name}")
        raise source.error(start, f"{what} is not allowed; {_ONLY}")
    return _Token(_NAME, name, start, start + len(written))


def _program(source: _Text, known: Mapping[str, Function]) -> list[tuple[str, object]]:
    """The text as a postfix program: (code, argument) pairs that a value stack turns into Terms.

    A shunting-yard pass: operators wait on an explicit stack until an operator that binds less
    tightly (or the end of a group) arrives, so no nesting ever reaches Python's call stack.
    """
    program: list[tuple[str, object]] = []
    stack: list[_Open | _Op] = []
    tokens = _tokens(source)
    token = next(tokens)
    if token.kind == _END:
        raise ParseError("empty expression: expected a formula such as x^2 + sin(y), got only "
                         + ("whitespace and comments" if source.text else "an empty string"))
    operand = True  # is an operand expected next?
    before: _Token | None = None  # the token before this one
    last_start = 0  # where the most recent complete operand starts

    def push(item: _Open | _Op) -> None:
        stack.append(item)
        if len(stack) > MAX_DEPTH:
            raise source.error(item.start, f"the expression nests {len(stack)} levels deep here (open parentheses "
                                           "and calls, signs and powers waiting for an operand); "
                                           f"at most MAX_DEPTH = {MAX_DEPTH} are accepted")

    while True:
        following: _Token | None = None
        if operand:
            if token.kind == _NUM:
                program.append(("const", token.value))
                operand, last_start = False, token.start
            elif token.kind == _NAME:
                following = next(tokens)
                if following.kind == _OP and following.text == "(":
                    push(_call(source, token, following.start, known))
                    token, following = following, None  # the '(' is read
                else:
                    _check_bare_name(source, token, following, known)
                    program.append(("name", token.text))
                    operand, last_start = False, token.start
            elif token.kind == _OP and token.text == "(":
                push(_Open(token.start, token.start))
            elif token.kind == _OP and token.text == "-":
                push(_Op("neg", _UNARY, token.start, unary=True))
            elif not (token.kind == _OP and token.text == "+"):
                raise _no_operand(source, token, before, stack)
        elif token.kind == _OP and token.text in _BINARY:
            precedence = _BINARY[token.text][0]
            right = precedence == 4
            while stack and isinstance(stack[-1], _Op) and (
                    stack[-1].precedence > precedence or stack[-1].precedence == precedence and not right):
                program.append(_emit(cast(_Op, stack.pop())))
            push(_Op(token.text, precedence, token.start))
            operand = True
        elif token.kind == _OP and token.text == ")":
            group = _close(source, token, stack, program)
            if group.fn is not None:
                _check_arity(source, group, group.args + 1)
                program.append(("call", (group.fn, group.args + 1)))
            last_start = group.start
        elif token.kind == _OP and token.text == ",":
            group = _close(source, token, stack, program, keep=True)
            group.args += 1
            operand = True
        elif token.kind == _END:
            while stack:
                item = stack.pop()
                if isinstance(item, _Open):
                    opened = f" of the call of {item.name}" if item.name else ""
                    raise source.error(item.paren, f"invalid syntax: this '('{opened} is never closed "
                                                   "(a ')' is missing)")
                program.append(_emit(item))
            return program
        else:
            raise _no_operator(source, token, before, last_start, stack)
        before = token
        token = following if following is not None else next(tokens)


def _emit(op: _Op) -> tuple[str, object]:
    return ("neg", None) if op.unary else ("binary", _BINARY[op.text][1])


def _call(source: _Text, token: _Token, paren: int, known: Mapping[str, Function]) -> _Open:
    """The open group of a call of a known function, or a ParseError that suggests the name meant."""
    fn = known.get(token.text)
    if fn is None:
        names = sorted(known)
        close = difflib.get_close_matches(token.text, names, n=1) if len(token.text) <= 40 else []
        hint = (f"did you mean {close[0]}?" if close
                else "known functions: " + ", ".join(n for n in names if n not in ALIASES)
                + f"; for a product write {_shown(token.text)}*(...)")
        raise source.error(token.start, f"a call of {_shown(token.text)} is not allowed: "
                                        f"{_shown(token.text)} is not a known function; {hint}")
    return _Open(token.start, paren, token.text, fn)


def _check_bare_name(source: _Text, token: _Token, following: _Token, known: Mapping[str, Function]) -> None:
    if token.text in ("True", "False", "None"):
        raise source.error(token.start, f"only real numbers are allowed, got {token.text}")
    if token.text in known:
        call = (f"{token.text}({_shown(following.text)})" if following.kind in (_NUM, _NAME) else f"{token.text}(...)")
        raise source.error(token.start, f"{token.text} is a function; write {call}")


def _check_arity(source: _Text, group: _Open, given: int) -> None:
    arity = group.fn.arity  # type: ignore[union-attr]
    if given != arity:
        count = "one positional argument" if arity == 1 else f"{arity} positional arguments"
        raise source.error(group.start, f"{group.name}() takes exactly {count}, got {given}")


def _close(source: _Text, token: _Token, stack: list[_Open | _Op], program: list[tuple[str, object]],
           keep: bool = False) -> _Open:
    """Emit the operators of the innermost group and return it: popped at ')', kept at ',' (a call's
    argument separator; anywhere else a comma would make a tuple)."""
    while stack and isinstance(stack[-1], _Op):
        program.append(_emit(cast(_Op, stack.pop())))
    group = stack[-1] if stack else None
    if keep and not (isinstance(group, _Open) and group.fn is not None):
        raise source.error(token.start, f"a tuple is not allowed; {_ONLY}")
    if not isinstance(group, _Open):
        raise source.error(token.start, "invalid syntax: ')' without a matching '('")
    if not keep:
        stack.pop()
    return group


def _no_operand(source: _Text, token: _Token, before: _Token | None, stack: list[_Open | _Op]) -> ParseError:
    """The error for a token where a number, a name or '(' belongs."""
    symbol = token.text if token.kind == _OP else None
    inside = stack[-1] if stack else None
    if symbol == ")" and isinstance(inside, _Open) and inside.fn is not None and before is not None \
            and before.text == "(":
        _check_arity(source, inside, 0)
    if symbol in ("*", "**") and (before is None or before.text in ("(", ",")):
        return source.error(token.start, f"unpacking is not allowed; {_ONLY}")
    if symbol in ("[", "~") or symbol in _REFUSED and symbol != ".":
        what = {"[": "a list", "~": "the unary operator ~"}.get(symbol) or _REFUSED[symbol]  # type: ignore[index]
        return source.error(token.start, f"{what} is not allowed; {_ONLY}")
    after = f"after {_shown(before.text)!r}" if before is not None else "at the start"
    if token.kind == _END:
        return source.error(token.start, f"invalid syntax: the expression ends {after}; "
                                         "expected a number, a name or '('")
    return source.error(token.start, f"invalid syntax: expected a number, a name or '(' {after}, "
                                     f"got {_shown(token.text)!r}")


def _no_operator(source: _Text, token: _Token, before: _Token | None, last_start: int,
                 stack: list[_Open | _Op]) -> ParseError:
    """The error for a token where an operator, ',' , ')' or the end belongs."""
    if token.kind in (_NUM, _NAME) or token.text == "(":
        text = source.text
        gap = before.end if before is not None else token.start
        fixed = text[:gap] + "*" + text[token.start:]
        if len(fixed) > 60:  # the neighbourhood of the fix
            fixed = ("..." if gap > 25 else "") + fixed[max(0, gap - 25): gap + 26] + \
                    ("..." if gap + 26 < len(fixed) else "")
        return source.error(token.start, f"implicit multiplication is not accepted; write {_shown(fixed, 80)}")
    calls = [item for item in stack if isinstance(item, _Open) and item.fn is not None]
    if token.text == "=" and calls:
        arity = calls[-1].fn.arity  # type: ignore[union-attr]
        count = "one positional argument" if arity == 1 else f"{arity} positional arguments"
        return source.error(token.start, f"keyword arguments are not allowed: {calls[-1].name}() "
                                         f"takes exactly {count}")
    if token.text in (".", "["):  # like Python, point at what is accessed
        return source.error(last_start, f"{_REFUSED[token.text]} is not allowed; {_ONLY}")
    if token.text in _REFUSED:
        return source.error(token.start, f"{_REFUSED[token.text]} is not allowed; {_ONLY}")
    if token.text in _OPERATORS:
        return source.error(token.start, f"the operator {token.text} is not allowed (use + - * / ^ **)")
    return source.error(token.start, f"invalid syntax: {token.text!r} after an operand; expected an operator, "
                                     "',' or ')'")


def _known(functions: Mapping[str, Function] | None) -> dict[str, Function]:
    for name, fn in (functions or {}).items():
        if not isinstance(name, str) or not isinstance(fn, Function):
            raise TypeError(f"functions maps names to UnaryFn or BinaryFn instances; got {name!r}: "
                            f"{type(fn).__name__} {fn!r:.60}")
    return {**{alias: FUNCTIONS[name] for alias, name in ALIASES.items() if name in FUNCTIONS},
            **FUNCTIONS, **(functions or {})}


def _read(text: object, functions: Mapping[str, Function] | None) -> list[tuple[str, object]]:
    if not isinstance(text, str):
        raise TypeError(f"parse() takes a str, got {type(text).__name__} {text!r:.80}")
    if len(text) > MAX_LENGTH:
        raise ParseError(f"the expression is {len(text)} characters long; "
                         f"at most MAX_LENGTH = {MAX_LENGTH} are accepted")
    return _program(_Text(text), _known(functions))


def parse(text: str, tape: Tape | None = None, functions: Mapping[str, Function] | None = None) -> Term:
    """Parse ``text`` into a Term on ``tape`` (a new one by default), creating vars by name.

    ``^`` and ``**`` both mean power. ``e`` and ``pi`` (also ``E``, ``PI``) are the constants,
    unless the tape already has a var of that name. ``functions`` adds functions (UnaryFn or
    BinaryFn) by name to the known ones; ``ln``, ``arctan`` and NumPy's other names work too.
    Never evaluates the text; on error raises ParseError and leaves the tape unchanged.
    """
    if tape is not None and not isinstance(tape, Tape):
        raise TypeError(f"tape must be a Tape, got {type(tape).__name__} {tape!r:.80}")
    program = _read(text, functions)
    tape = Tape() if tape is None else tape
    with tape.transaction():
        return _build(program, tape)


def free_names(text: str, functions: Mapping[str, Function] | None = None) -> list[str]:
    """The names ``text`` uses as values, not as calls, in order of first use: the vars it would
    create or reuse, and the constants (``e``, ``pi``) it reads. Raises ParseError like ``parse``.

    >>> free_names("e^x + sin(pi*y) + x")
    ['e', 'x', 'pi', 'y']
    """
    return list(dict.fromkeys(str(arg) for code, arg in _read(text, functions) if code == "name"))


def _build(program: list[tuple[str, object]], tape: Tape) -> Term:
    values: list[Term] = []
    for code, arg in program:
        if code == "const":
            values.append(tape.const(arg))  # type: ignore[arg-type]
        elif code == "name":
            values.append(_resolve(str(arg), tape))
        elif code == "neg":
            values.append(-values.pop())
        elif code == "binary":
            rhs = values.pop()
            values.append(arg(values.pop(), rhs))  # type: ignore[operator]
        else:
            fn, count = arg  # type: ignore[misc]
            args = values[-count:]
            del values[-count:]
            values.append(fn(*args))
    return values[0]


def _resolve(name: str, tape: Tape) -> Term:
    existing = tape.find_var(name)
    if existing is not None:
        return existing
    if name not in CONSTANTS:
        return tape.var(name)
    # exact, so that SymPy and str() see pi and E rather than 15 digits
    return Term(tape, tape.constant(CONSTANTS[name], ("named", "pi" if name.lower() == "pi" else "E")))
