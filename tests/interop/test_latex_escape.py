"""A name is text, never LaTeX: a function (or a to_sympy hook's symbol) named with braces,
backslashes or LaTeX's special characters prints as those characters in every LaTeX path
(``_repr_latex_``, the notebook bundle, ``sympy.latex(term)``, aligned temporaries, a sparse
matrix), and cannot open a command or unbalance a group.

The checks read the LaTeX with a tokenizer of their own: braces balance, every control word is
one the same expression prints with a plain name (or an escape for a character), no special
character is left bare, and the name reads back from its ``\\operatorname``."""

import re

import numpy as np
import pytest
import sympy
from hypothesis import given, settings, strategies as st

import subgraph_ad as sad

HOSTILE = [
    "x}\\href{javascript:alert(3)}{y",
    "{", "}", "}}}{", "\\", "\\\\", "\\def\\x{}", "\\operatorname{", "%s", "%(a)s", "%", "#1", "$x$", "a&b",
    "a^b", "a_b}", "_", "~", "a b", "tab\there", "new\nline", "\\end{aligned}", "\\\\ x &= 1",
    "x}\\\\{", "\\text{", "^{", "_{",
]
#: what a bare special character would do in LaTeX: comment, parameter, math shift, alignment,
#: super/subscript, non-breaking space
SPECIAL = "%#$&^_~"


def tokens(latex: str) -> list[str]:
    """Control words (``\\name``), control symbols (``\\{``) and single characters."""
    return re.findall(r"\\[A-Za-z]+|\\.|.", latex, flags=re.S)


def balanced(latex: str) -> bool:
    depth = 0
    for tok in tokens(latex):
        depth += (tok == "{") - (tok == "}")
        if depth < 0:
            return False
    return depth == 0


def words(latex: str) -> set[str]:
    return {t for t in tokens(latex) if re.fullmatch(r"\\[A-Za-z]+", t)}


def bare(latex: str) -> dict[str, int]:
    counts = dict.fromkeys(SPECIAL, 0)
    for tok in tokens(latex):
        if tok in counts:
            counts[tok] += 1
    return counts


#: how the escapes read, for reading the name back (an independent decoder)
READ = {"\\backslash": "\\", "\\{": "{", "\\}": "}", "\\%": "%", "\\#": "#", "\\$": "$", "\\&": "&", "\\_": "_",
        "\\hat": "^", "\\tilde": "~", "\\ ": " "}


def read_operatorname(latex: str) -> list[str]:
    """The text of each ``\\operatorname{…}`` group, escapes read back."""
    toks, names, k = tokens(latex), [], 0
    while k < len(toks):
        if toks[k] == "\\operatorname" and toks[k + 1] == "{":
            depth, k, text = 1, k + 2, []
            while True:
                tok = toks[k]
                if tok in ("{", "}"):
                    depth += 1 if tok == "{" else -1
                    if depth == 0:
                        break
                elif tok in READ:
                    text.append(READ[tok])
                elif tok.startswith("\\") and len(tok) > 2:
                    text.append(tok)  # an unknown command: the comparison with the name fails
                else:
                    text.append(tok)
                k += 1
            names.append("".join(text))
        k += 1
    return names


def named(name, rule_name=None):
    """A user function called ``name`` whose derivative is one called ``rule_name`` (not registered:
    any text is a name)."""

    class Slope(sad.UnaryFn):
        def f(self, v):
            return np.cos(v)

        def fdiff(self, input, output):
            return None

    Slope.name = rule_name or name

    class Fn(sad.UnaryFn):
        def f(self, v):
            return np.sin(v)

        def fdiff(self, input, output):
            return Slope()(input)

    Fn.name = name
    return Fn()


def plain_name(name: str) -> str:
    """An identifier as long as ``name``, so the formula is laid out the same."""
    return "p" * len(name)


def assert_safe(hostile: str, plain: str, name: str):
    """``hostile`` is ``plain`` with a function renamed ``name``: same commands (but escapes), no
    bare special character beyond the plain one's, balanced, and the name reads back."""
    assert balanced(hostile), hostile
    # SymPy prints a one-letter identifier bare, any other name in \operatorname
    assert words(hostile) <= words(plain) | {"\\operatorname", "\\backslash", "\\hat", "\\tilde"}, hostile
    assert "\\href" not in words(hostile)
    assert bare(hostile) == bare(plain), hostile
    assert re.sub(r"\s", " ", name) in read_operatorname(hostile), (read_operatorname(hostile), hostile)


def render_all(term):
    """Every LaTeX path of a term."""
    return {
        "repr": term._repr_latex_(),
        "bundle": term._repr_mimebundle_()["text/latex"],
        "sympy.latex": "$" + sympy.latex(term) + "$",
        "aligned": sad.interop.printing.latex(term, width=10),
    }


@pytest.mark.parametrize("name", HOSTILE, ids=repr)
def test_hostile_function_names_are_escaped_in_every_latex_path(name):
    tape = sad.Tape()
    x = tape.var("x", 0.5)
    build = lambda fn: (fn(x) * sad.exp(x)).diff(x, 2) + fn(x**2)  # noqa: E731 - one shape, two names
    hostile = render_all(build(named(name, name + "'")))
    plain = render_all(build(named(plain_name(name), plain_name(name) + "d")))
    for path in hostile:
        assert_safe(hostile[path], plain[path], name)
        assert re.sub(r"\s", " ", name) + "'" in read_operatorname(hostile[path]), path


@pytest.mark.parametrize("name", HOSTILE[:6], ids=repr)
def test_hostile_names_in_a_sparse_matrix(name):
    tape = sad.Tape()
    x, y = tape.var("x", 0.5), tape.var("y", 0.2)
    hostile = sad.hessian(named(name, name)(x * y), [x, y], sparse=True)._repr_latex_()
    plain = sad.hessian(named(plain_name(name))(x * y), [x, y], sparse=True)._repr_latex_()
    assert_safe(hostile, plain, name)


@pytest.mark.parametrize("name", HOSTILE[:8], ids=repr)
def test_a_hooks_hostile_symbol_and_function_are_escaped(name):
    """A to_sympy hook may return any SymPy expression: its symbols and undefined functions are
    names too."""

    def hook(arg):
        return sympy.Function(name)(arg) + sympy.Symbol(name) * arg

    class Hooked(sad.UnaryFn):
        def f(self, v):
            return v

        def fdiff(self, input, output):
            return None

    Hooked.name = "hooked"
    Hooked.to_sympy = staticmethod(hook)
    tape = sad.Tape()
    x = tape.var("x", 0.5)
    text = Hooked()(x)._repr_latex_()
    assert balanced(text) and "\\href" not in words(text)
    assert bare(text) == dict.fromkeys(SPECIAL, 0) | {"$": 2}, text
    assert name in read_operatorname(text)
    assert words(text) <= {"\\displaystyle", "\\operatorname", "\\left", "\\right", "\\mathrm", "\\backslash", "\\hat",
                           "\\tilde"}


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.text(alphabet="ab{}\\%#$&^_~ \t\nxyz", min_size=1, max_size=12).filter(lambda s: not s.isidentifier()))
def test_any_text_is_a_safe_function_name(name):
    tape = sad.Tape()
    x = tape.var("x", 0.5)
    hostile = named(name)(x)._repr_latex_()
    plain = named(plain_name(name))(x)._repr_latex_()
    assert_safe(hostile, plain, name)


@pytest.mark.parametrize("name", ["softplus", "my_fn", "f", "alpha_1", "x__2", "gamma2"])
def test_plain_names_print_as_sympy_prints_them(name):
    """Identifiers keep SymPy's rendering: subscripts, Greek letters, \\operatorname."""
    tape = sad.Tape()
    x, y = tape.var("x", 0.5), tape.var(name, 0.2)
    term = named(name)(x) * y
    expected = sympy.latex(sympy.Function(name)(sympy.Symbol("x")) * sympy.Symbol(name))
    assert term._repr_latex_() == f"$\\displaystyle {expected}$"
