"""LaTeX of SymPy expressions whose names are text: a var's or a function's name is shown as
its characters, never read as markup (a name can open no command or group)."""

from __future__ import annotations

from typing import Any

import sympy
from sympy.core.function import AppliedUndef
from sympy.printing.latex import LatexPrinter as SympyLatexPrinter


#: How a character of a name is written in LaTeX's math mode where it would be markup:
#: a command, a group, a comment, a parameter, math shift, alignment, super/subscript, a tie.
LATEX_ESCAPES = {"\\": r"\backslash{}", "{": r"\{", "}": r"\}", "%": r"\%", "#": r"\#", "$": r"\$",
                 "&": r"\&", "_": r"\_", "^": r"\hat{}", "~": r"\tilde{}"}


def latex_text(name: str) -> str:
    """``name`` as LaTeX that shows its characters and can open no command or group: markup
    escaped, whitespace a visible space, what is not printable as its Python escape."""
    out = []
    for c in name:
        if c in LATEX_ESCAPES:
            out.append(LATEX_ESCAPES[c])
        elif c.isspace():
            out.append("\\ ")
        elif not c.isprintable():
            out.append("".join(LATEX_ESCAPES.get(e, e) for e in repr(c)[1:-1]))
        else:
            out.append(c)
    return "".join(out)


def _sympy_writes(name: str) -> bool:
    """Whether SymPy's LaTeX of the name is safe as it is: an identifier, read as a base name
    with ``_``/``__`` subscripts and superscripts (one that starts with ``_`` has no base)."""
    return name.isidentifier() and not name.startswith("_")


class LatexPrinter(SympyLatexPrinter):
    """SymPy's LaTeX printer, with names that are text. SymPy writes a symbol's or an undefined
    function's name into its LaTeX as it is (``\\operatorname{name}``), so a function named
    ``x}\\href{…}{y`` would write a link into a notebook. An identifier prints as SymPy prints
    it (``alpha_1`` as α₁, ``_sympy_writes``); any other name is escaped (``latex_text``), inside
    ``\\operatorname{…}`` for a function and ``\\mathrm{…}`` for a symbol."""

    def _deal_with_super_sub(self, string: str, style: str = "plain") -> str:
        if _sympy_writes(string):
            return str(super()._deal_with_super_sub(string, style=style))
        return f"\\{'mathbf' if style == 'bold' else 'mathrm'}{{{latex_text(string)}}}"

    def _hprint_Function(self, func: str) -> str:
        if _sympy_writes(func):
            return str(super()._hprint_Function(func))
        return f"\\operatorname{{{latex_text(func)}}}"

    def _print_Function(self, expr: Any, exp: Any = None) -> str:
        name = expr.func.__name__
        if not isinstance(expr, AppliedUndef) or _sympy_writes(name):
            return str(super()._print_Function(expr, exp))
        # SymPy's own splices the name into a %-format string: "%s" in a name would take an argument
        power = "" if exp is None else f"^{{{exp}}}"
        args = ",".join(str(self._print(a)) for a in expr.args)
        return f"{self._hprint_Function(name)}{power}{{\\left({args} \\right)}}"


def to_latex(expr: sympy.Basic) -> str:
    """``sympy.latex(expr)`` with every name escaped that is not an identifier (``LatexPrinter``)."""
    return str(LatexPrinter().doprint(expr))


__all__ = ["LATEX_ESCAPES", "LatexPrinter", "latex_text", "to_latex"]
