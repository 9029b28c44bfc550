"""UnaryFn, the one extension point for functions, and the built-ins written with it.

A function states only its value, its numeric derivative and its *local* derivative subgraph;
the engine applies the chain rule. Built-ins use exactly the API a user subclass does.

>>> import subgraph_ad as sad
>>> round(sad.sin(0.5), 6)
0.479426
>>> tape = sad.Tape(); x = tape.var("x", 0.0)
>>> sad.sin(x).diff(x, 2).to_sympy()
-sin(x)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.tape import Term


class UnaryFn:
    """Base class of pluggable one-argument functions.

    Subclasses set ``name`` and implement ``f`` (value) and ``grad`` (f' as a value); they
    implement ``gen_graph(input, output, derived)`` to make the function differentiable
    symbolically: it returns the Term of d(output) given the Term ``derived`` = d(input), or
    None for zero. Rules may use ``output`` itself (``exp' = output``), which reuses nodes.
    Optional ``to_sympy(arg)`` gives the SymPy form.
    """

    name: str = "fn"

    def f(self, v: Any) -> Any:
        """The value; must work elementwise on floats and NumPy arrays."""
        raise NotImplementedError(f"UnaryFn {self.name!r} does not define f(v)")

    def grad(self, v: Any) -> Any:
        """f'(v) as a value; used by forward and reverse numeric modes."""
        raise NotImplementedError(f"UnaryFn {self.name!r} does not define grad(v)")

    def gen_graph(self, input: Term, output: Term, derived: Term) -> Term | None:
        """The derivative subgraph d(output) = f'(input) * derived, built from Terms."""
        raise NotImplementedError(
            f"UnaryFn {self.name!r} has no gen_graph rule, so it cannot be differentiated "
            "symbolically (eval, derive and grad still work); define gen_graph(input, output, derived)"
        )

    def derivative(self, input: Term, output: Term, derived: Term | None) -> Term | None:
        """``gen_graph`` as the engines call it (gen_graph and Taylor mode alike): a structural
        zero short-circuits, and a rule returning anything but a Term of this tape or None is a
        TypeError naming the function."""
        if derived is None:
            return None
        result = self.gen_graph(input, output, derived)
        if result is not None and not (isinstance(result, Term) and result.tape is output.tape):
            raise TypeError(
                f"gen_graph rule of UnaryFn {self.name!r} returned {type(result).__name__} {result!r}; "
                "expected a Term of the same tape or None"
            )
        return result

    def __call__(self, arg: Any) -> Any:
        """On a Term: append a node. On a number or array: the plain value."""
        if isinstance(arg, Term):
            return arg.tape.apply(self, arg)
        if isinstance(arg, (bool, str)) or arg is None:
            raise TypeError(f"{self.name}() takes a Term, a number or an array, got {type(arg).__name__} {arg!r}")
        with np.errstate(all="ignore"):
            value = self.f(np.asarray(arg, dtype=float) if not np.isscalar(arg) else np.float64(arg))
        return float(value) if np.ndim(value) == 0 else value

    def __repr__(self) -> str:
        return f"<UnaryFn {self.name}>"


@dataclass(frozen=True, repr=False)
class Exp(UnaryFn):
    """exp; its derivative is its own output, so every order reuses one node."""

    name = "exp"

    def f(self, v: Any) -> Any:
        return np.exp(v)

    def grad(self, v: Any) -> Any:
        return np.exp(v)

    def gen_graph(self, input: Term, output: Term, derived: Term) -> Term:
        return output * derived

    def to_sympy(self, arg: Any) -> Any:
        import sympy

        return sympy.exp(arg)


@dataclass(frozen=True, repr=False)
class Log(UnaryFn):
    """Natural log; nan for negative input, as in NumPy."""

    name = "log"

    def f(self, v: Any) -> Any:
        return np.log(v)

    def grad(self, v: Any) -> Any:
        return 1.0 / v

    def gen_graph(self, input: Term, output: Term, derived: Term) -> Term:
        return derived / input

    def to_sympy(self, arg: Any) -> Any:
        import sympy

        return sympy.log(arg)


_SIN_NAMES = ("sin", "cos", "-sin", "-cos")
_SIN_VALUES = (np.sin, np.cos, lambda v: -np.sin(v), lambda v: -np.cos(v))


@dataclass(frozen=True, repr=False)
class SinFn(UnaryFn):
    """The family sin, cos, -sin, -cos as one function with an order state ``n`` (mod 4).

    Its derivative is the next member, so the 100th derivative of sin is one node away.
    """

    n: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "n", self.n % 4)

    @property
    def name(self) -> str:  # type: ignore[override]
        return _SIN_NAMES[self.n]

    def f(self, v: Any) -> Any:
        return _SIN_VALUES[self.n](v)

    def grad(self, v: Any) -> Any:
        return _SIN_VALUES[(self.n + 1) % 4](v)

    def gen_graph(self, input: Term, output: Term, derived: Term) -> Term:
        return SinFn(self.n + 1)(input) * derived

    def to_sympy(self, arg: Any) -> Any:
        import sympy

        base = sympy.sin(arg) if self.n % 2 == 0 else sympy.cos(arg)
        return -base if self.n >= 2 else base


@dataclass(frozen=True, repr=False)
class Tan(UnaryFn):
    """tan; tan' = 1 + tan², written with the output node."""

    name = "tan"

    def f(self, v: Any) -> Any:
        return np.tan(v)

    def grad(self, v: Any) -> Any:
        return 1.0 + np.tan(v) ** 2

    def gen_graph(self, input: Term, output: Term, derived: Term) -> Term:
        return (1.0 + output * output) * derived

    def to_sympy(self, arg: Any) -> Any:
        import sympy

        return sympy.tan(arg)


@dataclass(frozen=True, repr=False)
class Sqrt(UnaryFn):
    """sqrt; sqrt' = 1/(2 sqrt), written with the output node."""

    name = "sqrt"

    def f(self, v: Any) -> Any:
        return np.sqrt(v)

    def grad(self, v: Any) -> Any:
        return 0.5 / np.sqrt(v)

    def gen_graph(self, input: Term, output: Term, derived: Term) -> Term:
        return 0.5 * derived / output

    def to_sympy(self, arg: Any) -> Any:
        import sympy

        return sympy.sqrt(arg)


@dataclass(frozen=True, repr=False)
class Tanh(UnaryFn):
    """tanh; tanh' = 1 - tanh², so its derivatives are polynomials in the output."""

    name = "tanh"

    def f(self, v: Any) -> Any:
        return np.tanh(v)

    def grad(self, v: Any) -> Any:
        return 1.0 - np.tanh(v) ** 2

    def gen_graph(self, input: Term, output: Term, derived: Term) -> Term:
        return (1.0 - output * output) * derived

    def to_sympy(self, arg: Any) -> Any:
        import sympy

        return sympy.tanh(arg)


@dataclass(frozen=True, repr=False)
class Sigmoid(UnaryFn):
    """The logistic function; σ' = σ(1 - σ), a polynomial in the output."""

    name = "sigmoid"

    def f(self, v: Any) -> Any:
        # exp(-logaddexp(0, -v)) == 1 / (1 + exp(-v)) without overflow for large -v
        return np.exp(-np.logaddexp(0.0, -v))

    def grad(self, v: Any) -> Any:
        s = self.f(v)
        return s * (1.0 - s)

    def gen_graph(self, input: Term, output: Term, derived: Term) -> Term:
        return output * (1.0 - output) * derived

    def to_sympy(self, arg: Any) -> Any:
        import sympy

        return 1 / (1 + sympy.exp(-arg))


exp = Exp()
log = Log()
sin = SinFn(0)
cos = SinFn(1)
tan = Tan()
sqrt = Sqrt()
tanh = Tanh()
sigmoid = Sigmoid()

#: Functions known to the parser and the SymPy bridge, by name. Add yours with ``register``.
FUNCTIONS: dict[str, UnaryFn] = {
    fn.name: fn for fn in (exp, log, sin, cos, tan, sqrt, tanh, sigmoid)
}


def register(fn: UnaryFn) -> UnaryFn:
    """Make ``fn`` known by its name to ``parse`` and ``from_sympy``; returns it (decorator-friendly)."""
    if not isinstance(fn, UnaryFn):
        raise TypeError(f"register() takes a UnaryFn instance, got {type(fn).__name__} {fn!r}")
    if not fn.name.isidentifier():
        raise ValueError(f"a registered function needs an identifier name, got {fn.name!r}")
    FUNCTIONS[fn.name] = fn
    return fn
