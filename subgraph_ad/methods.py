"""The convenience methods of Term and Tape, attached here from the layers that implement them.

The core's Term knows arithmetic and structure only; ``z.eval()``, ``z.gen_graph(x)``,
``z.diff(x, 3)``, ``z.grad()``, ``z.to_sympy()``, ``z.render(path)``, ``str(z)`` (the formula)
and the Jupyter display are the functions of the upper layers, made methods by this one module
so that the core never imports upward. SymPy loads on the first SymPy call, not here.
"""

from __future__ import annotations

import html
from typing import Any

from .ad.diff import diff
from .ad.forward import gen_graph
from .ad.reverse import grad_graph
from .core import Tape, Term
from .functions import FUNCTIONS
from .interop.numpy_dispatch import array_ufunc, ufunc_method
from .interop.printing import formula, latex
from .numeric.modes import derive, evaluate, grad
from .numeric.subs import evalf, subs
from .viz.dot import to_dot
from .viz.render import graph_html, render, repr_mimebundle


def to_sympy(term: Term) -> Any:
    """The SymPy expression of this term; vars become ``sympy.Symbol(name)``."""
    from .interop.sympy_bridge import to_sympy as convert

    return convert(term)


def from_sympy(tape: Tape, expr: Any) -> Term:
    """Build a SymPy expression on this tape; vars are reused or created by name."""
    from .interop.sympy_bridge import from_sympy as convert

    return convert(expr, tape)


def _sympy_(term: Term) -> Any:
    """SymPy's conversion protocol: ``sympy.sin(term)``, ``sympify(term)`` and
    ``sympy.lambdify([x], term)`` take a Term as its SymPy expression."""
    return to_sympy(term)


def _latex(term: Term, printer: Any) -> str:
    """SymPy's LaTeX printer (``sympy.latex(term)``) prints the formula, as Jupyter does."""
    return latex(term).strip("$").removeprefix(r"\displaystyle ")


def _pretty(term: Term, printer: Any) -> Any:
    """SymPy's pretty printer (``sympy.pretty(term)``) draws the SymPy form."""
    return printer._print(to_sympy(term))


def _sympystr(term: Term, printer: Any) -> str:
    return formula(term)


def _repr_latex_(term: Term) -> str:
    """The formula in LaTeX, for notebooks."""
    return latex(term)


def _repr_mimebundle_(obj: Any, include: Any = None, exclude: Any = None) -> dict[str, str]:
    """Jupyter shows a term (or a tape) as the drawing of the nodes it depends on, a term with its
    formula under it. The drawing goes in ``text/html``, which every frontend ranks first and which
    an untrusted notebook still shows (as an image); ``image/svg+xml``, and a term's ``text/latex``
    and ``text/plain``, stay for other readers (nbconvert to LaTeX, a console)."""

    def wanted(mime: str) -> bool:
        return mime not in (exclude or ()) and (include is None or mime in include)

    bundle = repr_mimebundle(obj)
    below = ""
    if isinstance(obj, Term):
        text = str(obj)
        note = bundle.pop("text/plain", None)  # why there is no drawing, if there is none
        bundle["text/plain"] = text if note is None else f"{text}\n{note.splitlines()[-1]}"
        if wanted("text/latex"):
            bundle["text/latex"] = latex(obj)
        below = f'<pre class="sad-formula">{html.escape(text)}</pre>\n'
    if "image/svg+xml" in bundle and wanted("text/html"):
        bundle["text/html"] = graph_html(bundle["image/svg+xml"], below)
    elif "text/html" in bundle:  # a big drawing, in the zoomable viewer
        bundle["text/html"] += below
    return bundle


#: Term's methods from the layers above, by name (declared on Term for type checkers).
TERM_METHODS: dict[str, Any] = {
    "eval": evaluate, "derive": derive, "grad": grad, "gen_graph": gen_graph, "diff": diff,
    "grad_graph": grad_graph, "to_sympy": to_sympy, "to_dot": to_dot, "render": render,
    "_repr_mimebundle_": _repr_mimebundle_, "_repr_latex_": _repr_latex_, "_sympy_": _sympy_,
    "_latex": _latex, "_pretty": _pretty, "_sympystr": _sympystr, "subs": subs, "evalf": evalf,
    "__str__": formula,
    "__array_ufunc__": array_ufunc,  # np.sin(x) appends sin(x)
    "__getattr__": ufunc_method,  # np.sin(array of Terms)
    "__abs__": lambda self: FUNCTIONS["abs"](self),  # abs(x), np.abs
}
TAPE_METHODS: dict[str, Any] = {"to_dot": to_dot, "from_sympy": from_sympy, "_repr_mimebundle_": _repr_mimebundle_}

for _name, _method in TERM_METHODS.items():
    setattr(Term, _name, _method)
for _name, _method in TAPE_METHODS.items():
    setattr(Tape, _name, _method)
