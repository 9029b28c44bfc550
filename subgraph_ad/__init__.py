"""subgraph_ad: higher-order derivatives as derivative subgraphs on a shared tape."""

from . import testing
from .animate import Animation, animate
from .compile import lambdify
from .derive import gen_graph
from .functions import (
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
from .numeric import Grad
from .orders import Step, derivatives, diff
from .parse import ParseError, parse
from .render import GraphTooLarge, GraphvizError, GraphvizNotFound
from .sympy_bridge import SympyConversionError
from .taylor import taylor_graph
from .tape import LimitError, Node, Tape, Term

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
