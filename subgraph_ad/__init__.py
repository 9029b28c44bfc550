"""subgraph_ad: higher-order derivatives as derivative subgraphs on a shared tape."""

from . import methods  # noqa: F401  (Term and Tape methods of the layers above the core)
from .ad.diff import Step, derivatives, diff
from .ad.forward import gen_graph
from .ad.matrices import Dense, Sparse, hutchinson_trace
from .ad.reverse import grad_graph
from .ad.accuracy import AccuracyWarning
from .compile import config
from .compile.lambdify import BackendWarning, lambdify
from .core import LimitError, Node, Tape, TapeThreadError, Term, UnfedPlaceholder
from .functions import (FUNCTIONS, BinaryFn, Elementary, SinFn, UnaryFn, acos, acosh, asin, asinh, atan, atan2, atanh, cbrt,
                        cos, cosh, cot, csc, erf, erfc, exp, expm1, hypot, log, log1p, log2, log10, register, sec,
                        sigmoid, sign, sin, sinh, sqrt, tan, tanh)
from .functions import abs_ as abs  # noqa: A004  (sad.abs, like np.abs)
from .functions import pow_ as pow  # noqa: A004  (sad.pow(a, b) is a ** b)
from .core.ops import E as e
from .core.ops import PI as pi
from .interop.parse import ParseError, parse
from .numeric.modes import Grad
from .checkpoint import Checkpointed, checkpointed_grad
from .trace import derivative, grad, hessian, jacfwd, jacobian, jacrev, jit
from .trace import hvp, jvp, value_and_grad, vjp, vmap  # the function forms; on Terms they call the Term forms
from .functions.kinks import (ceil, clip, floor, fmax, fmin, fmod, heaviside, maximum, minimum, mod, relu, trunc,
                              where)
from .functions.kinks import round_ as round  # noqa: A004  (sad.round, like np.round)
from .functions.gamma import digamma, erfinv, gamma, lgamma, logaddexp, logaddexp2, logsumexp, polygamma, softplus
from .functions.sinc import sinc
from .interop.numpy_dispatch import TermArray, stack
from .interop.bridge_entry import from_sympy
from .operators import biharmonic, derivative_tensor, laplacian, taylor_graph
from .ode import taylor_integrate
from .viz.animate import Animation, animate
from .viz.render import GraphTooLarge, GraphvizError, GraphvizNotFound

#: Names loaded on first use, so that ``import subgraph_ad`` imports neither SymPy nor the Dask
#: support (``dask``: ``compile.cluster``).
_LAZY = {"testing": ("subgraph_ad.testing", None), "dask": ("subgraph_ad.compile.cluster", None),
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
    "BinaryFn",
    "Dense",
    "Elementary",
    "Checkpointed",
    "FUNCTIONS",
    "Grad",
    "GraphTooLarge",
    "GraphvizError",
    "GraphvizNotFound",
    "LimitError",
    "TapeThreadError",
    "Node",
    "ParseError",
    "SinFn",
    "Sparse",
    "Step",
    "SympyConversionError",
    "Tape",
    "Term",
    "TermArray",
    "stack",
    "from_sympy",
    "UnaryFn",
    "UnfedPlaceholder",
    "abs",
    "acos",
    "acosh",
    "animate",
    "asin",
    "asinh",
    "atan",
    "atan2",
    "atanh",
    "biharmonic",
    "cbrt",
    "ceil",
    "clip",
    "digamma",
    "erfinv",
    "floor",
    "fmax",
    "fmin",
    "fmod",
    "gamma",
    "heaviside",
    "lgamma",
    "logaddexp",
    "logaddexp2",
    "logsumexp",
    "maximum",
    "minimum",
    "mod",
    "polygamma",
    "relu",
    "round",
    "sinc",
    "softplus",
    "trunc",
    "value_and_grad",
    "vmap",
    "where",
    "checkpointed_grad",
    "cos",
    "cosh",
    "cot",
    "csc",
    "derivatives",
    "derivative",
    "derivative_tensor",
    "diff",
    "erf",
    "erfc",
    "exp",
    "expm1",
    "gen_graph",
    "grad",
    "grad_graph",
    "hessian",
    "hutchinson_trace",
    "hvp",
    "jacfwd",
    "jacobian",
    "jacrev",
    "jit",
    "jvp",
    "laplacian",
    "hypot",
    "lambdify",
    "BackendWarning",
    "AccuracyWarning",
    "config",
    "dask",
    "log",
    "log10",
    "log1p",
    "log2",
    "parse",
    "pi",
    "e",
    "pow",
    "register",
    "sec",
    "sigmoid",
    "sign",
    "sin",
    "sinh",
    "sqrt",
    "tan",
    "tanh",
    "taylor_graph",
    "taylor_integrate",
    "testing",
    "vjp",
]
