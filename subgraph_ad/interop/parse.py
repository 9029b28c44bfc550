"""Safe text input: a tokenizer (``tokens.py``) and an operator-precedence parser with explicit
stacks build Terms; nothing in the text is run, and nothing recurses.

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
from dataclasses import dataclass
from typing import Mapping, NamedTuple, cast

from ..core import OPS, Tape, Term
from ..core.ops import E, PI
from ..functions import FUNCTIONS, Function
from ..functions.elementary import steps
from .tokens import MAX_DIGITS  # noqa: F401  (a limit of this parser, read in the tokenizer)
from .tokens import END, NAME, NUM, ONLY, OP, ParseError, Text, Token, shown, tokenize

#: Longest text accepted, in characters.
MAX_LENGTH = 200_000
#: Most parentheses, calls, signs and powers open at once.
MAX_DEPTH = 10_000
#: Names that mean a constant unless the tape already has a var of that name.
CONSTANTS = {"e": E, "E": E, "pi": PI, "PI": PI}


def aliases() -> dict[str, str]:
    """Other names of the registered functions, as NumPy and mathematicians write them: a
    function spelled as one elementary answers to that elementary's names (``arctan``, ``ln``,
    ``fabs``) besides its own."""
    found: dict[str, str] = {}
    for name, fn in FUNCTIONS.items():
        chain = steps(fn.spelling)
        if len(chain) == 1:
            for alias in (chain[0].name, *chain[0].aliases):
                if alias != name and alias not in FUNCTIONS:
                    found.setdefault(alias, name)
    return found


#: The other names of the built-in functions (``aliases()`` when this module was loaded).
ALIASES = aliases()

#: The infix operators, read from the op registry (``^`` is ``**``): symbol -> (precedence, apply).
_BINARY = {op.symbol: (op.precedence, op.apply) for op in OPS.values() if op.arity == 2}
_BINARY["^"] = _BINARY["**"]
_UNARY = OPS["neg"].precedence  # between * and **: -x*y is (-x)*y, -x**2 is -(x**2)
_REFUSED = {
    ".": "attribute access", "[": "subscripting", "'": "a string", '"': "a string",
    "{": "a dict or set", "=": "an assignment", ":=": "an assignment", ";": "a second statement",
    "<": "a comparison", ">": "a comparison", "<=": "a comparison", ">=": "a comparison",
    "==": "a comparison", "!=": "a comparison", "\\": "a backslash", "->": "an annotation",
}
_OPERATORS = {"%", "//", "@", "&", "|", "<<", ">>", "~"}  # Python's, not this grammar's


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


def _program(source: Text, known: Mapping[str, Function]) -> list[tuple[str, object]]:
    """The text as a postfix program: (code, argument) pairs that a value stack turns into Terms.

    A shunting-yard pass: operators wait on an explicit stack until an operator that binds less
    tightly (or the end of a group) arrives, so no nesting ever reaches Python's call stack.
    """
    program: list[tuple[str, object]] = []
    stack: list[_Open | _Op] = []
    tokens = tokenize(source)
    token = next(tokens)
    if token.kind == END:
        raise ParseError("empty expression: expected a formula such as x^2 + sin(y), got only "
                         + ("whitespace and comments" if source.text else "an empty string"))
    operand = True  # is an operand expected next?
    before: Token | None = None  # the token before this one
    last_start = 0  # where the most recent complete operand starts

    def push(item: _Open | _Op) -> None:
        stack.append(item)
        if len(stack) > MAX_DEPTH:
            raise source.error(item.start, f"the expression nests {len(stack)} levels deep here (open parentheses "
                                           "and calls, signs and powers waiting for an operand); "
                                           f"at most MAX_DEPTH = {MAX_DEPTH} are accepted")

    while True:
        following: Token | None = None
        if operand:
            if token.kind == NUM:
                program.append(("const", token.value))
                operand, last_start = False, token.start
            elif token.kind == NAME:
                if token.text.startswith("_"):
                    raise source.error(token.start, f"{shown(token.text)}: names starting with `_` are not "
                                                    "allowed; start a variable's name with a letter")
                following = next(tokens)
                if following.kind == OP and following.text == "(":
                    push(_call(source, token, following.start, known))
                    token, following = following, None  # the '(' is read
                else:
                    _check_bare_name(source, token, following, known)
                    program.append(("name", token.text))
                    operand, last_start = False, token.start
            elif token.kind == OP and token.text == "(":
                push(_Open(token.start, token.start))
            elif token.kind == OP and token.text == "-":
                push(_Op("neg", _UNARY, token.start, unary=True))
            elif not (token.kind == OP and token.text == "+"):
                raise _no_operand(source, token, before, stack)
        elif token.kind == OP and token.text in _BINARY:
            precedence = _BINARY[token.text][0]
            right = precedence == OPS["pow"].precedence  # a^b^c is a^(b^c)
            while stack and isinstance(stack[-1], _Op) and (
                    stack[-1].precedence > precedence or stack[-1].precedence == precedence and not right):
                program.append(_emit(cast(_Op, stack.pop())))
            push(_Op(token.text, precedence, token.start))
            operand = True
        elif token.kind == OP and token.text == ")":
            group = _close(source, token, stack, program)
            if group.fn is not None:
                _check_arity(source, group, group.args + 1)
                program.append(("call", (group.fn, group.args + 1)))
            last_start = group.start
        elif token.kind == OP and token.text == ",":
            group = _close(source, token, stack, program, keep=True)
            group.args += 1
            operand = True
        elif token.kind == END:
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


def _call(source: Text, token: Token, paren: int, known: Mapping[str, Function]) -> _Open:
    """The open group of a call of a known function, or a ParseError that suggests the name meant."""
    fn = known.get(token.text)
    if fn is None:
        names = sorted(known)
        close = difflib.get_close_matches(token.text, names, n=1) if len(token.text) <= 40 else []
        hint = (f"did you mean {close[0]}?" if close
                else "known functions: " + ", ".join(n for n in names if n not in aliases())
                + f"; for a product write {shown(token.text)}*(...)")
        raise source.error(token.start, f"a call of {shown(token.text)} is not allowed: "
                                        f"{shown(token.text)} is not a known function; {hint}")
    return _Open(token.start, paren, token.text, fn)


def _check_bare_name(source: Text, token: Token, following: Token, known: Mapping[str, Function]) -> None:
    if token.text in ("True", "False", "None"):
        raise source.error(token.start, f"only real numbers are allowed, got {token.text}")
    if token.text in known:
        call = (f"{token.text}({shown(following.text)})" if following.kind in (NUM, NAME) else f"{token.text}(...)")
        raise source.error(token.start, f"{token.text} is a function; write {call}")


def _check_arity(source: Text, group: _Open, given: int) -> None:
    arity = group.fn.arity  # type: ignore[union-attr]
    if given != arity:
        count = "one positional argument" if arity == 1 else f"{arity} positional arguments"
        raise source.error(group.start, f"{group.name}() takes exactly {count}, got {given}")


def _close(source: Text, token: Token, stack: list[_Open | _Op], program: list[tuple[str, object]],
           keep: bool = False) -> _Open:
    """Emit the operators of the innermost group and return it: popped at ')', kept at ',' (a call's
    argument separator; anywhere else a comma would make a tuple)."""
    while stack and isinstance(stack[-1], _Op):
        program.append(_emit(cast(_Op, stack.pop())))
    group = stack[-1] if stack else None
    if keep and not (isinstance(group, _Open) and group.fn is not None):
        raise source.error(token.start, f"a tuple is not allowed; {ONLY}")
    if not isinstance(group, _Open):
        raise source.error(token.start, "invalid syntax: ')' without a matching '('")
    if not keep:
        stack.pop()
    return group


def _no_operand(source: Text, token: Token, before: Token | None, stack: list[_Open | _Op]) -> ParseError:
    """The error for a token where a number, a name or '(' belongs."""
    symbol = token.text if token.kind == OP else None
    inside = stack[-1] if stack else None
    if symbol == ")" and isinstance(inside, _Open) and inside.fn is not None and before is not None \
            and before.text == "(":
        _check_arity(source, inside, 0)
    if symbol in ("*", "**") and (before is None or before.text in ("(", ",")):
        return source.error(token.start, f"unpacking is not allowed; {ONLY}")
    if symbol in ("[", "~") or symbol in _REFUSED and symbol != ".":
        what = {"[": "a list", "~": "the unary operator ~"}.get(symbol) or _REFUSED[symbol]
        return source.error(token.start, f"{what} is not allowed; {ONLY}")
    after = f"after {shown(before.text)!r}" if before is not None else "at the start"
    if token.kind == END:
        return source.error(token.start, f"invalid syntax: the expression ends {after}; "
                                         "expected a number, a name or '('")
    return source.error(token.start, f"invalid syntax: expected a number, a name or '(' {after}, "
                                     f"got {shown(token.text)!r}")


def _no_operator(source: Text, token: Token, before: Token | None, last_start: int,
                 stack: list[_Open | _Op]) -> ParseError:
    """The error for a token where an operator, ',' , ')' or the end belongs."""
    if token.kind in (NUM, NAME) or token.text == "(":
        text = source.text
        gap = before.end if before is not None else token.start
        fixed = text[:gap] + "*" + text[token.start:]
        if len(fixed) > 60:  # the neighbourhood of the fix
            fixed = ("..." if gap > 25 else "") + fixed[max(0, gap - 25): gap + 26] + \
                    ("..." if gap + 26 < len(fixed) else "")
        return source.error(token.start, f"implicit multiplication is not accepted; write {shown(fixed, 80)}")
    calls = [item for item in stack if isinstance(item, _Open) and item.fn is not None]
    if token.text == "=" and calls:
        arity = calls[-1].fn.arity  # type: ignore[union-attr]
        count = "one positional argument" if arity == 1 else f"{arity} positional arguments"
        return source.error(token.start, f"keyword arguments are not allowed: {calls[-1].name}() "
                                         f"takes exactly {count}")
    if token.text in (".", "["):  # like Python, point at what is accessed
        return source.error(last_start, f"{_REFUSED[token.text]} is not allowed; {ONLY}")
    if token.text in _REFUSED:
        return source.error(token.start, f"{_REFUSED[token.text]} is not allowed; {ONLY}")
    if token.text in _OPERATORS:
        return source.error(token.start, f"the operator {token.text} is not allowed (use + - * / ^ **)")
    return source.error(token.start, f"invalid syntax: {token.text!r} after an operand; expected an operator, "
                                     "',' or ')'")


def _known(functions: Mapping[str, Function] | None) -> dict[str, Function]:
    for name, fn in (functions or {}).items():
        if not isinstance(name, str) or not isinstance(fn, Function):
            raise TypeError(f"functions maps names to UnaryFn or BinaryFn instances; got {name!r}: "
                            f"{type(fn).__name__} {fn!r:.60}")
    return {**{alias: FUNCTIONS[name] for alias, name in aliases().items()},
            **FUNCTIONS, **(functions or {})}


def _read(text: object, functions: Mapping[str, Function] | None) -> list[tuple[str, object]]:
    if not isinstance(text, str):
        raise TypeError(f"parse() takes a str, got {type(text).__name__} {text!r:.80}")
    if len(text) > MAX_LENGTH:
        raise ParseError(f"the expression is {len(text)} characters long; "
                         f"at most MAX_LENGTH = {MAX_LENGTH} are accepted")
    return _program(Text(text), _known(functions))


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
            fn, count = cast("tuple[Function, int]", arg)
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
    constant = CONSTANTS[name]
    return Term(tape, tape.constant(float(constant), ("named", constant.name)))
