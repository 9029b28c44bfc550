"""The function layer: the UnaryFn protocol and the built-ins, one module per family."""

from .base import FUNCTIONS, BinaryFn, Function, UnaryFn, chain, differentiate, local_derivatives, register
from .exponential import Exp, Log, Sigmoid, Sqrt, exp, log, sigmoid, sqrt
from .hyperbolic import Tanh, tanh
from .trigonometric import SinFn, Tan, cos, sin, tan

__all__ = ["FUNCTIONS", "BinaryFn", "Function", "UnaryFn", "chain", "differentiate", "local_derivatives", "register",
           "Exp", "Log", "Sigmoid", "Sqrt", "SinFn", "Tan", "Tanh",
           "exp", "log", "sigmoid", "sqrt", "sin", "cos", "tan", "tanh"]
