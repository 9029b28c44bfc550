"""``lambdify``: straight-line NumPy code for the nodes some outputs need, like ``sympy.lambdify``.

The generated function has one statement per node and no per-node dispatch at call time.

>>> import numpy as np
>>> from subgraph_ad import Tape, lambdify, sin
>>> tape = Tape(); x = tape.var("x"); y = tape.var("y")
>>> f = lambdify([x, y], x * y + sin(x))
>>> round(f(0.5, 4.2), 6)
2.579426
>>> f(np.array([0.0, 1.0]), 2.0)
array([0.        , 2.84147098])
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from .tape import Tape, Term, dependencies

_INFIX = {"add": "+", "sub": "-", "mul": "*", "div": "/"}


def _as_list(items: Any, what: str) -> tuple[list[Term], bool]:
    if isinstance(items, Term):
        return [items], True
    if isinstance(items, (list, tuple)) and items and all(isinstance(t, Term) for t in items):
        return list(items), False
    raise TypeError(f"lambdify {what} must be a Term or a non-empty list of Terms, got {items!r}")


def _const(value: float) -> str:
    if value != value:
        return "_nan"
    if value in (float("inf"), float("-inf")):
        return "_inf" if value > 0 else "(-_inf)"
    return repr(value)


def generate_source(tape: Tape, inputs: Sequence[Term], outputs: Sequence[Term]) -> tuple[str, dict[str, Any]]:
    """Python source of ``_f(*inputs)`` and the namespace it needs (the UnaryFn value functions)."""
    input_index = {v.index: f"v{k}" for k, v in enumerate(inputs)}
    namespace: dict[str, Any] = {"_np": np, "_nan": np.nan, "_inf": np.inf}
    lines = [f"def _f({', '.join(input_index.values())}):"]
    names: dict[int, str] = {}
    for i in dependencies(tape, [t.index for t in outputs]):
        node = tape.nodes[i]
        if node.op == "var":
            if i not in input_index:
                raise ValueError(
                    f"an output depends on var {node.payload!r}, which is not among the inputs "
                    f"{[tape.nodes[v].payload for v in input_index]}"
                )
            names[i] = input_index[i]
            continue
        if node.op == "const":
            names[i] = _const(node.payload)
            continue
        names[i] = f"t{i}"
        a = [names[k] for k in node.args]
        if node.op == "fn":
            fname = f"_fn{i}"
            namespace[fname] = node.payload.f
            expr = f"{fname}({a[0]})"
        elif node.op == "neg":
            expr = f"-{a[0]}"
        elif node.op == "pow":
            expr = f"_np.power({a[0]}, {a[1]})"
        else:
            expr = f"{a[0]} {_INFIX[node.op]} {a[1]}"
        lines.append(f"    t{i} = {expr}")
    lines.append(f"    return ({', '.join(names[t.index] for t in outputs)},)")
    return "\n".join(lines) + "\n", namespace


def lambdify(inputs: Term | Sequence[Term], outputs: Term | Sequence[Term]) -> Callable[..., Any]:
    """Compile ``outputs`` as a function of the vars ``inputs``.

    Returns a value for one output and a tuple for a list; works elementwise on arrays, with
    every output broadcast to the inputs' common shape. IEEE semantics: never raises on values.
    """
    ins, _ = _as_list(inputs, "inputs")
    outs, single = _as_list(outputs, "outputs")
    tape = ins[0].tape
    for v in ins:
        tape.check_var(v, "lambdify input")
    if len({v.index for v in ins}) != len(ins):
        raise ValueError(f"lambdify inputs repeat a var: {[v.name for v in ins]}")
    for t in outs:
        ins[0]._lift(t)  # same tape, or a clear ValueError
    source, namespace = generate_source(tape, ins, outs)
    exec(compile(source, "<subgraph_ad.lambdify>", "exec"), namespace)  # our own generated code
    kernel = namespace["_f"]

    def compiled(*args: Any) -> Any:
        if len(args) != len(ins):
            raise TypeError(f"expected {len(ins)} arguments ({', '.join(v.name for v in ins)}), got {len(args)}")
        arrays = [np.asarray(a, dtype=float) for a in args]
        shape = np.broadcast_shapes(*(a.shape for a in arrays))
        with np.errstate(all="ignore"):
            results = kernel(*(a if a.ndim else np.float64(a) for a in arrays))
        results = tuple(float(r) if not shape else np.broadcast_to(r, shape).copy() if np.shape(r) != shape else r
                        for r in results)
        return results[0] if single else results

    compiled.source = source  # type: ignore[attr-defined]
    return compiled
