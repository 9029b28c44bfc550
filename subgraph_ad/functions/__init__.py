"""The function layer: the UnaryFn/BinaryFn protocol and the built-ins, one module per family."""

from .base import FUNCTIONS, BinaryFn, Function, UnaryFn, register, sympy_hook
from .chain_rule import chain, differentiate, gate, is_gate, local_derivatives, shares
from .dual import slope
from .elementary import ELEMENTARY, Elementary
from .binary import Atan2, Hypot, Pow, Xlogy, atan2, hypot, pow_, power_partial, xlogy
from .exponential import (Cbrt, Exp, Expm1, Log, Log1p, LogBase, Sigmoid, SigmoidSlope, Sqrt, cbrt, exp, expm1, log, log1p,
                          log2, log10, sigmoid, sqrt)
from .hyperbolic import Acosh, Asinh, Atanh, Sech2, SinhFn, Tanh, acosh, asinh, atanh, cosh, sinh, tanh
from .piecewise import Abs, Sign, abs_, sign
from .special import Erf, erf, erfc
from .kinks import (Compare, Extremum, Heaviside, Relu, Remainder, Rounding, Select, StopGradient, Predicate, ceil,
                    clip, equal, fmax, fmin, fmod, floor, greater, greater_equal, heaviside, is_condition, isfinite,
                    isnan, less, less_equal, logical_and, logical_not, logical_or, maximum, minimum, mod, not_equal,
                    relu, round_, select, selection, stop_gradient, trunc, truth, where)
from .gamma import (Erfinv, Gamma, Lgamma, LogAddExp, Polygamma, Softplus, digamma, erfinv, gamma, lgamma,
                    logaddexp, logaddexp2, logsumexp, polygamma, softplus)
from .sinc import Sinc, SincDerivative, sinc
from .trigonometric import Acos, Asin, Atan, Cot, Csc, Sec, SinFn, Tan, acos, asin, atan, cos, cot, csc, sec, sin, tan

__all__ = ["ELEMENTARY", "FUNCTIONS", "BinaryFn", "Elementary", "Function", "UnaryFn", "chain", "differentiate", "gate", "is_gate",
           "local_derivatives", "register", "shares", "slope", "sympy_hook",
           "Abs", "Acos", "Acosh", "Asin", "Asinh", "Atan", "Atan2", "Atanh", "Cbrt", "Cot", "Csc", "Erf", "Exp",
           "Expm1", "Hypot", "Log", "Log1p", "LogBase", "Pow", "Sec", "Sech2", "Sigmoid", "SigmoidSlope", "Sign", "SinFn", "SinhFn", "Sqrt",
           "Tan", "Tanh", "Xlogy",
           "abs_", "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "cbrt", "cos", "cosh", "cot", "csc",
           "erf", "erfc", "exp", "expm1", "hypot", "log", "log1p", "log2", "log10", "pow_", "power_partial", "sec", "sigmoid", "sign",
           "sin", "sinh", "sqrt", "tan", "tanh", "xlogy",
           "Compare", "Extremum", "Heaviside", "Relu", "Remainder", "Rounding", "Select", "StopGradient", "Predicate",
           "ceil", "clip", "equal", "fmax", "fmin", "fmod", "floor", "greater", "greater_equal", "heaviside",
           "is_condition", "isfinite", "isnan", "less", "less_equal", "logical_and", "logical_not", "logical_or",
           "maximum", "minimum", "mod", "not_equal", "relu", "round_", "select", "selection", "stop_gradient", "trunc",
           "truth",
           "where",
           "Erfinv", "Gamma", "Lgamma", "LogAddExp", "Polygamma", "Sinc", "SincDerivative", "Softplus",
           "digamma", "erfinv", "gamma", "lgamma", "logaddexp", "logaddexp2", "logsumexp", "polygamma", "sinc",
           "softplus"]
