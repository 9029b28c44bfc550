"""subgraph_ad: higher-order derivatives as derivative subgraphs on a shared tape."""

from . import methods  # noqa: F401  (Term and Tape methods of the layers above the core)
from .ad.diff import Step, derivatives, diff
from .ad.forward import gen_graph
from .ad.taylor import taylor_graph
from .compile.lambdify import lambdify
from .core import LimitError, Node, Tape, Term
from .functions import FUNCTIONS, SinFn, UnaryFn, cos, exp, log, register, sigmoid, sin, sqrt, tan, tanh
from .interop.parse import ParseError, parse
from .numeric.modes import Grad
from .viz.animate import Animation, animate
from .viz.render import GraphTooLarge, GraphvizError, GraphvizNotFound

#: Names whose modules import SymPy, loaded on first use so that ``import subgraph_ad`` does not.
_LAZY = {"testing": ("subgraph_ad.testing", None),
         "SympyConversionError": ("subgraph_ad.interop.sympy_bridge", "SympyConversionError")}


def __getattr__(name: str) -> object:
    if name not in _LAZY:
        raise AttributeError(f"module 'subgraph_ad' has no attribute {name!r}")
    import importlib

    module_name, attribute = _LAZY[name]
    module = importlib.import_module(module_name)
    return module if attribute is None else getattr(module, attribute)


__version__ = "0.1.0"

__all__ = [
    "Animation",
    "FUNCTIONS",
    "Grad",
    "GraphTooLarge",
    "GraphvizError",
    "GraphvizNotFound",
    "LimitError",
    "Node",
    "ParseError",
    "SinFn",
    "Step",
    "SympyConversionError",
    "Tape",
    "Term",
    "UnaryFn",
    "animate",
    "cos",
    "derivatives",
    "diff",
    "exp",
    "gen_graph",
    "lambdify",
    "log",
    "parse",
    "register",
    "sigmoid",
    "sin",
    "sqrt",
    "tan",
    "tanh",
    "taylor_graph",
    "testing",
]
