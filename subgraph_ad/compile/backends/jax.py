"""The JAX backend: the program as straight-line ``jax.numpy`` code, one assignment per step.

The result is an ordinary function of JAX arrays (or numbers), so it composes with everything
JAX does: ``jax.jit`` compiles it for any XLA device, ``jax.vmap`` batches it, and ``jax.grad``
differentiates our derivative graph once more. Each elementary is called by its NumPy name in
``jax.numpy`` (``np.arctan`` → ``jnp.arctan``; a comparison's booleans become 1.0 and 0.0, as
NumPy writes them into a float buffer), the special functions from ``jax.scipy.special``, the
sigmoid as ``jax.nn.sigmoid``; where JAX's own derivative differs from ours at a point, a
``custom_jvp`` states ours (``|x|′`` is sign(x), 0 at 0; xlogy's strong zero), so ``jax.grad`` of
a program agrees with the next derivative we build. A function with no spelling runs its ``f``,
and an elementary whose array form is one plain function (not NumPy's) runs that function, when
it works on JAX tracers (the polygamma family, whose ``f`` is SciPy's, is
``jax.scipy.special``'s), and otherwise raises ``NotLowerable``.

>>> import jax.numpy as jnp
>>> from subgraph_ad import Tape, exp
>>> from subgraph_ad.compile.program import build_program
>>> tape = Tape(); x = tape.var("x")
>>> f = function(build_program(tape, [x], [exp(-x**2 / 2)]))
>>> [round(float(v), 6) for v in f(jnp.array([0.0, 1.0]))[0]]
[1.0, 0.606531]
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

import numpy as np

from ...tables import rule_table
from ...functions.elementary import Elementary, steps
from ...functions.gamma import Polygamma
from ...functions.special_scalar import asymptotic
from ..devices import DeviceCompiled
from ..program import INFIX, Lowering, Operand, Program, Step, define, literal
from .c import NotLowerable

NAME = "JAX"


def _jax() -> tuple[Any, Any]:
    """JAX and jax.numpy, or ImportError saying how to install them."""
    try:
        import jax
        import jax.numpy as jnp
    except ImportError as error:
        raise ImportError(f"JAX is not installed ({error}); pip install jax") from error
    return jax, jnp


@functools.cache
def _own() -> dict[str, Any]:
    """The elementaries whose JAX derivative must be ours, as ``custom_jvp`` functions (made on
    first use: JAX loads only for this backend)."""
    jax, jnp = _jax()

    @jax.custom_jvp
    def fabs(v: Any) -> Any:
        return jnp.abs(v)

    # JAX's |x|′ is 1 at 0; ours is sign(0) = 0, as SymPy's
    fabs.defjvps(lambda dv, output, v: jnp.sign(v) * dv)

    @jax.custom_jvp
    def xlogy(p: Any, a: Any) -> Any:
        return jnp.where((p == 0) & ~jnp.isnan(a), 0.0, p * jnp.log(a))

    # our partials (Xlogy.fdiff): log(a) where p is not 0 and 0 where it is, which JAX's own rule
    # (dp·log(a)) makes nan at a = 0; one rule per argument, so a zero tangent costs nothing and
    # cannot turn 0·(p/a) into nan
    xlogy.defjvps(lambda dp, output, p, a: dp * xlogy(jnp.abs(jnp.sign(p)), a),
                  lambda da, output, p, a: da * p / a)

    def select(c: Any, a: Any) -> Any:
        return jnp.where(c != 0.0, a, 0.0)  # exactly 0 where c is 0, an inf or nan a included

    return {"fabs": fabs, "xlogy": xlogy, "sigmoid": jax.nn.sigmoid, "select": select}


#: jax.scipy.special's functions that NumPy lacks, by elementary name (gammaln is already +inf at
#: −inf, as the NumPy path's lgamma).
SPECIAL = {"erf": "erf", "erfc": "erfc", "erfinv": "erfinv", "tgamma": "gamma", "lgamma": "gammaln"}


def _polygamma_tail(n: int, v: Any) -> Any:
    """ψ⁽ⁿ⁾(v) by ``asymptotic``: (n−1)!/vⁿ as a product of the falling factors j/v, which never
    underflows before the result does (JAX's own polygamma is 0 at 1e200 for n = 1, where the
    value is 1e-200, and nan at inf, where it is 0)."""
    _, coefficients = asymptotic(n)
    t = 1.0 / v
    y = t * t
    series = coefficients[-1]
    for ck in reversed(coefficients[:-1]):
        series = series * y + ck
    lead = t
    for j in range(1, n):
        lead = lead * (j * t)
    return (1.0 if n % 2 else -1.0) * lead * (1.0 + 0.5 * n * t + series * y)


@functools.cache
def _polygamma() -> Callable[[int, Any], Any]:
    """ψ⁽ⁿ⁾ in JAX: ψ(±0) is ∓inf, as SciPy's digamma (JAX's is nan there); for n >= 1 the
    asymptotic series from where its error bound allows (``asymptotic``), JAX's polygamma below.
    Its derivative is the next member (a ``custom_jvp``), so ``jax.grad`` has the tails too."""
    jax, jnp = _jax()

    @functools.partial(jax.custom_jvp, nondiff_argnums=(0,))
    def polygamma(n: int, v: Any) -> Any:
        if n == 0:
            return jnp.where(v == 0.0, -1.0 / v, jax.scipy.special.digamma(v))
        start, _ = asymptotic(n)
        far = v >= start
        return jnp.where(far, _polygamma_tail(n, jnp.where(far, v, start)), jax.scipy.special.polygamma(n, v))

    @polygamma.defjvp
    def slope(n: int, primals: tuple[Any], tangents: tuple[Any]) -> tuple[Any, Any]:
        (v,), (dv,) = primals, tangents
        return polygamma(n, v), polygamma(n + 1, v) * dv

    return polygamma  # type: ignore[no-any-return]


def _indicator(ufunc: Any) -> Callable[..., Any]:
    """A boolean jax.numpy function as 1.0/0.0 in the floating type of its arguments."""
    _, jnp = _jax()
    decide = getattr(jnp, ufunc.__name__)

    def as_float(*v: Any) -> Any:
        return decide(*v).astype(jnp.result_type(*v, float))

    return as_float


def _traceable(f: Callable[..., Any], arity: int, what: str, remedy: str) -> None:
    """NotLowerable, saying ``what`` and the ``remedy``, unless ``f`` of ``arity`` numbers runs
    on JAX tracers (checked on abstract values: nothing is computed)."""
    jax, jnp = _jax()
    try:
        jax.eval_shape(f, *[jax.ShapeDtypeStruct((), jnp.float32)] * arity)
    except Exception as error:  # whatever f does with a tracer that it cannot do
        first = str(error).splitlines()[0] if str(error) else ""
        raise NotLowerable(f"{what} does not work on JAX arrays ({type(error).__name__}: {first}); {remedy}") from error


def _callees(step: Elementary, names: dict[str, Any]) -> list[str]:
    """How to open the calls of one elementary in JAX, applied in turn: our own ``custom_jvp``,
    a special function, its one plain array function where that traces, or each of its NumPy
    functions by name in ``jax.numpy`` (a ``partial`` with its constants written out).
    NotLowerable where none applies."""
    if step.name in _own():
        names[f"_own_{step.name}"] = _own()[step.name]
        return [f"_own_{step.name}("]
    if step.name in SPECIAL:
        return [f"_jsp.{SPECIAL[step.name]}("]
    _, jnp = _jax()
    plain = step.numpy[0]
    numpy_named = isinstance(plain, (np.ufunc, functools.partial)) or vars(np).get(getattr(plain, "__name__", "")) is plain
    if len(step.numpy) == 1 and not numpy_named:
        _traceable(plain, step.arity, f"the elementary {step.name!r}'s array function",
                   "spell it with NumPy functions, write it with jax.numpy or plain operators")
        names[f"_plain_{step.name}"] = plain
        return [f"_plain_{step.name}("]
    out = []
    for u in step.numpy:
        prefix = ""
        if isinstance(u, functools.partial) and not u.keywords and all(isinstance(a, (int, float)) for a in u.args):
            prefix = "".join(f"{literal(float(a))}, " for a in u.args)
            u = u.func
        name = getattr(u, "__name__", "")
        if not (vars(np).get(name) is u and hasattr(jnp, name)):
            raise NotLowerable(f"the elementary {step.name!r} calls {u!r}, which has no jax.numpy counterpart; "
                               "spell it with NumPy functions, or use another backend")
        if isinstance(u, np.ufunc) and "d" * u.nin + "->?" in u.types:  # boolean on doubles: a comparison, isnan
            names[f"_float_{name}"] = _indicator(u)
            out.append(f"_float_{name}({prefix}")
        else:
            out.append(f"_jnp.{name}({prefix}")
    return out


def _call(names: dict[str, Any], a: list[str], step: Step) -> str:
    """A "fn" step in JAX (``fn_text``)."""
    dest, _, _, fn = step
    assert fn is not None  # a "fn" step carries its function
    return fn_text(names, fn, a, f"_fn{dest}")


def fn_text(names: dict[str, Any], fn: Any, a: list[str], key: str) -> str:
    """A function on its operands in JAX: its spelling, each elementary's calls nested in turn;
    with no spelling, its ``f`` (stored in ``names`` under ``key``) where that traces with JAX
    (checked here, on abstract values)."""
    chain = steps(fn.spelling)
    if isinstance(fn, Polygamma):
        names["_polygamma"] = _polygamma()
        return f"_polygamma({fn.n}, {a[0]})"
    if not chain:
        _traceable(fn.f, fn.arity, f"{fn.kind} {fn.name!r} has no spelling, and its f",
                   "give it a spelling, or write f with jax.numpy")
        names[key] = fn.f
        return f"{key}({', '.join(a)})"
    text = ", ".join(a)
    for elementary in chain:
        for opening in _callees(elementary, names):
            text = f"{opening}{text})"
    return text


#: Each op's JAX expression, in the namespace of the generated code. A power is ``jnp.power``
#: (on the CPU, XLA calls the C library's ``pow``, as the other backends do; real powers: nan, not
#: complex): the powers NumPy computes otherwise are other ops by now (``program.POWERS``).
LOWERING: dict[str, Lowering[dict[str, Any]]] = {
    **INFIX,
    "pow": lambda names, a, step: f"_jnp.power({a[0]}, {a[1]})",
    "fn": _call,
}
rule_table("JAX LOWERING", LOWERING)


def source(program: Program) -> tuple[str, dict[str, Any]]:
    """``_f(v0, …)`` returning the tuple of outputs, each broadcast to the inputs' shape."""
    jax, jnp = _jax()
    names: dict[str, Any] = {"_jnp": jnp, "_jsp": jax.scipy.special, "_nan": np.nan, "_inf": np.inf,
                             "_floating": _floating}

    def ref(r: Operand) -> str:
        kind, v = r
        return f"v{v}" if kind == "in" else literal(v) if kind == "c" else f"t{v}"

    ins = [f"v{k}" for k in range(program.n_inputs)]
    lines = [f"def _f({', '.join(ins)}):", f"    {', '.join(ins)}, = _floating({', '.join(ins)})"]
    for step in program.steps:
        lines.append(f"    t{step[0]} = " + LOWERING[step[1]](names, [ref(r) for r in step[2]], step))
    lines.append(f"    _shape = _jnp.broadcast_shapes({', '.join(f'_jnp.shape({v})' for v in ins)})")
    outs = [f"_jnp.broadcast_to({ref(r)}, _shape)" for r in program.outputs]
    lines.append(f"    return ({', '.join(outs)},)")
    return "\n".join(lines) + "\n", names


def _floating(*values: Any) -> tuple[Any, ...]:
    """The arguments as JAX arrays of a floating type: integers and booleans as JAX's default
    float (float64 with ``jax_enable_x64``), floats as they are (float32 stays float32)."""
    _, jnp = _jax()
    arrays = [jnp.asarray(v) for v in values]
    return tuple(a if jnp.issubdtype(a.dtype, jnp.inexact) else a.astype(jnp.result_type(float)) for a in arrays)


def wide(args: Sequence[Any]) -> bool:
    """Whether a call asks for float64, as NumPy would compute it: an argument of a 64-bit type
    (a float64 or integer array, a float64 JAX array), or nothing but Python numbers. A Python
    number beside a float32 array is weak, as in NumPy and JAX (float32 + 0.5 is float32), and
    JAX's tracers inside a user's ``jit`` are whatever JAX made them."""
    strong = [a for a in args if type(a) not in (bool, int, float)]
    if not strong:
        return True
    for a in strong:
        dtype = np.dtype(a.dtype) if hasattr(a, "dtype") else np.asarray(a).dtype
        if dtype.kind in "biu" or (dtype.kind == "f" and dtype.itemsize >= 8) or (dtype.kind == "c" and dtype.itemsize >= 16):
            return True
    return False


def function(program: Program) -> Callable[..., tuple[Any, ...]]:
    """The program as a function of JAX arrays or numbers (broadcast like NumPy) returning a
    tuple of JAX arrays; usable inside ``jax.jit``, ``jax.vmap`` and ``jax.grad``.

    A float64 call (``wide``) runs with JAX's 64-bit types on for that call only (JAX's
    ``enable_x64`` scope, thread-local): without it JAX would read float64 NumPy input as
    float32 and answer to 1e-7, and the user's global ``jax_enable_x64`` is theirs to set.
    float32 in is computed and returned in float32.

    ImportError without JAX; NotLowerable for a function JAX cannot compute."""
    jax, _ = _jax()
    text, names = source(program)
    compute = define(text, names, "jax")

    def call(*args: Any) -> tuple[Any, ...]:
        if wide(args):
            with jax.enable_x64(True):
                return compute(*args)  # type: ignore[no-any-return]
        return compute(*args)  # type: ignore[no-any-return]

    return call


class JaxCompiled(DeviceCompiled):
    """The program as a function of JAX arrays or numbers, broadcast like NumPy."""

    backend = "jax"

    def __init__(self, program: Program, names: list[str], single: bool) -> None:
        super().__init__(program, names, single)
        self._function = function(program)

    def _run(self, *args: Any) -> Any:
        return self._shaped(self._function(*args))

    def __reduce__(self) -> tuple[Any, ...]:
        return (JaxCompiled, (self.program, self.names, self.single))


def compiled(program: Program, names: list[str], single: bool, dtype: str,
             fallback: Callable[[], Callable[..., Any]]) -> JaxCompiled:
    """``lambdify``'s callable (``registry.Device``): float64, or float32 for float32 arrays;
    nothing stands in for JAX, so ``fallback`` is never used."""
    return JaxCompiled(program, names, single)
