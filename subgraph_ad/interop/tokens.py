"""The tokenizer of the safe parser: the text as numbers, names and operator symbols, each
checked as Python would read it (literals, NFKC-normalised names, keywords refused by what they
would be), with the position of every problem in words.
"""

from __future__ import annotations

import keyword
import math
import re
import unicodedata
from typing import Iterator, NamedTuple

#: Most digits in one number literal (a float holds 17 significant digits; 10**309 overflows).
MAX_DIGITS = 1_000


class ParseError(ValueError):
    """Text that is not an expression of numbers, names, + - * / ^ ** and known functions.

    Raised here and in the parser; public in ``parse``, so its name (and every traceback) reads
    ``subgraph_ad.interop.parse.ParseError``."""

    __module__ = "subgraph_ad.interop.parse"


ONLY = "only numbers, names, + - * / ^ ** and known functions"
NUM, NAME, OP, END = "number", "name", "operator", "end"
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

_KEYWORDS = {"lambda": "a lambda", "if": "a conditional expression", "else": "a conditional expression",
             "for": "a comprehension", "async": "a comprehension", "and": "a boolean operator",
             "or": "a boolean operator", "not": "a boolean operator", "in": "a comparison",
             "is": "a comparison", "await": "await", "yield": "yield"}


class Token(NamedTuple):
    kind: str
    text: str  # as written (a name NFKC-normalised, as Python reads it)
    start: int
    end: int
    value: float = 0.0


def shown(text: str, limit: int = 40) -> str:
    """A piece of the user's text that is safe to print: escapes for what is not printable, cut when long."""
    if len(text) > limit:
        text = text[: limit - 15] + "..." + text[-12:]
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class Text:
    """The text being parsed: where a position is, in words."""

    def __init__(self, text: str) -> None:
        self.text = text

    def where(self, pos: int) -> str:
        line = self.text.count("\n", 0, pos)
        column = pos - (self.text.rfind("\n", 0, pos) + 1) + 1
        return f"line {line + 1}, column {column}" if "\n" in self.text else f"column {column}"

    def error(self, pos: int, message: str) -> ParseError:
        return ParseError(f"{self.where(pos)}: {message}")


def tokenize(source: Text) -> Iterator[Token]:
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
                                    f"is not allowed; {ONLY}")
        kind, written, start = match.lastgroup, match.group(), pos
        pos = match.end()
        if kind == "number":
            yield _number(source, written, start)
        elif kind == "name":
            yield _name(source, written, start)
        elif kind == "symbol":
            yield Token(OP, written, start, pos)
        else:
            yield Token(END, "", start, start)
            return


def _number(source: Text, written: str, start: int) -> Token:
    """A number token: checked against Python's literal syntax and the limits, converted to a float."""
    end = start + len(written)
    text = source.text
    based = written[:2].lower() in ("0x", "0o", "0b")
    digits = len(written) - 2 - written.count("_") if based else sum(c.isdigit() for c in written)
    if digits > MAX_DIGITS:
        raise source.error(start, f"the number {shown(written)} has {digits} digits; "
                                  f"at most MAX_DIGITS = {MAX_DIGITS} are accepted")
    if end < len(text) and (text[end] in "._" or text[end].isdigit()) or not _LITERAL.fullmatch(written):
        bad = _NUMBER_LIKE.match(text, start).group()  # type: ignore[union-attr]
        raise source.error(start, f"invalid syntax: {shown(bad)!r} is not a valid number")
    if written[-1] in "jJ":
        raise source.error(start, f"only real numbers are allowed, got the imaginary number {shown(written)}")
    try:
        value = float(int(written[2:].replace("_", ""), _BASES[written[1].lower()]) if based
                      else written.replace("_", ""))
    except OverflowError:
        value = math.inf
    if math.isinf(value):
        raise source.error(start, f"the number {shown(written)} is too large for a float (at most about 1.8e308)")
    return Token(NUM, written, start, end, value)


def _name(source: Text, written: str, start: int) -> Token:
    """A name token, normalised as Python normalises identifiers (NFKC)."""
    if not written.isidentifier():  # the first character must start a name, the others continue one
        i = next(i for i, ch in enumerate(written) if not (ch if i == 0 else "a" + ch).isidentifier())
        ch = written[i]
        raise source.error(start + i, f"character {ch!r} (U+{ord(ch):04X} {unicodedata.name(ch, '')}) "
                                      f"{'cannot start' if i == 0 else 'is not allowed in'} a name")
    name = unicodedata.normalize("NFKC", written) if not written.isascii() else written
    if keyword.iskeyword(name) and name not in ("True", "False", "None"):
        what = _KEYWORDS.get(name, f"the keyword {name}")
        raise source.error(start, f"{what} is not allowed; {ONLY}")
    return Token(NAME, name, start, start + len(written))
