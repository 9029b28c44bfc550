"""subgraph_ad: higher-order derivatives as derivative subgraphs on a shared tape."""

from . import testing
from .viz.animate import Animation, animate
from .compile.lambdify import lambdify
from .ad.forward import gen_graph
from .functions.base import (
    FUNCTIONS,
    SinFn,
    UnaryFn,
    cos,
    exp,
    log,
    register,
    sigmoid,
    sin,
    sqrt,
    tan,
    tanh,
)
from .numeric.modes import Grad
from .ad.diff import Step, derivatives, diff
from .interop.parse import ParseError, parse
from .viz.render import GraphTooLarge, GraphvizError, GraphvizNotFound
from .interop.sympy_bridge import SympyConversionError
from .ad.taylor.build import taylor_graph
from .core.tape import LimitError, Node, Tape, Term

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
