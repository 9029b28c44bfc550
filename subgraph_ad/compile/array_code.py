"""The code of an array program: straight-line Python, one NumPy (or ``jax.numpy``) expression
per node, written out as a user would write it (``a @ b``, ``_np.tanh(a)``, ``a + b``,
``_np.sum(a, axis=(-1,))``) rather than as a call of the node's generic value function, which
pays a Python call, a list and an alignment check per node: most of a small program's time.

Every value carries its batch axes in front of its node's shape (``core.arrays``). The code is
written in one of three flavours:

- ``"point"``: every input without batch axes (one point), so every value has exactly its
  node's shape and NumPy's own broadcasting and ``@`` are the node's meaning;
- ``"batch"``: inputs may carry batch axes. A node that reads no input has none (a table, a
  constant); a matrix product of a batch by such a node is ONE matrix product with the batch
  folded in (``batched_times``/``times_batched``); an operand of fewer axes than an
  elementwise node's gets size-1 axes behind its batch (``aligned``);
- ``"jax"``: as ``"batch"``, in ``jax.numpy`` for ``jax.jit``, the outputs broadcast to the
  batch inside the compiled function.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from ..core import OPS, Tape, Term, dependencies
from ..core.arrays import ARRAY_OPS, Shape, as_index, batched_times, shape_of, times_batched
from ..functions.base import Function
from ..functions.elementary import steps
from ..tables import rule_table
from . import array_kernels, array_loops, blas
from .array_fusion import fusions
from .array_loops import Loop
from .array_reuse import Reuse, into
from .array_runtime import aligned, ones, placed, reshaped
from .program import callee

#: The arithmetic ops as expressions over operand texts (both flavours: NumPy's and JAX's
#: operators are the same; a power is the module's ``power``: real powers, nan not complex).
#: The most numbers a sum adds into one result for it to be written as ``einsum`` (``_summed``),
#: which adds them in turn; longer sums keep ``np.sum``, whose pairwise adding rounds less.
SMALL_SUM = 256
#: The most entries of the constant that a product of a scaled constant by a constant is
#: written with (``array_fusion``): 2²⁰ (8 MB).
SMALL_CONSTANT = 1 << 20

#: Each with its ufunc, for the form that writes into an operand (``array_reuse``).
ARITHMETIC = rule_table("array code ARITHMETIC", {
    "add": ("({0} + {1})", np.add), "sub": ("({0} - {1})", np.subtract), "mul": ("({0} * {1})", np.multiply),
    "div": ("({0} / {1})", np.divide), "neg": ("(-{0})", np.negative), "pow": ("{xp}.power({0}, {1})", np.power)},
    without=("fn",))  # a function is written by its own spelling (fn_text)


def elements(tape: Tape) -> dict[int, tuple[int, tuple[int, ...]]]:
    """Element var (node) -> its array var (node) and its position in that array."""
    out: dict[int, tuple[int, tuple[int, ...]]] = {}
    for name, names in tape.elements.items():
        shape = tape.var_shapes[name]
        for flat, element in enumerate(names):
            out[tape._vars[element]] = (tape._vars[name], tuple(int(k) for k in np.unravel_index(flat, shape)))
    return out


def source(tape: Tape, inputs: Sequence[Term], outputs: Sequence[Term], flavour: str, loops: bool = True
           ) -> tuple[str, dict[str, Any], int]:
    """``_f(i0, …)`` returning the outputs' tuple, its globals, and the multiply-adds per point
    of its largest matrix product that BLAS may share out over threads (``_product``: what
    decides how many threads BLAS may use; 0 for none). Code for one point runs its chains of
    elementwise arithmetic as native loops (``array_loops``) unless ``loops`` is false."""
    xp = "_jnp" if flavour == "jax" else "_np"
    names: dict[str, Any] = {"_np": np, "_al": aligned, "_rs": reshaped, "_bt": batched_times, "_tb": times_batched,
                             "_pl": placed, "_into": into}
    if flavour == "jax":
        import jax.numpy as jnp

        from . import array_jax

        names.update({"_jnp": jnp, "_jx": array_jax})
    given = {v.index: f"i{k}" for k, v in enumerate(inputs)}
    parts = elements(tape) if tape.elements else {}
    ref: dict[int, str] = {}
    lines = [f"def _f({', '.join(given[v.index] for v in inputs)}):"]
    nodes = tape.nodes
    work = 0
    order = dependencies(tape, [t.index for t in outputs])
    batched: dict[int, bool] = {}  # whether a value carries batch axes: what reads an input does
    for i in order:
        batched[i] = flavour != "point" and (nodes[i].op == "var" or any(batched[a] for a in nodes[i].args))
        if nodes[i].op == "const":  # named first: a group (``_group``) may read one made after it runs
            names[f"_k{i}"], ref[i] = np.float64(nodes[i].payload), f"_k{i}"  # a NumPy number: 1/0 is inf
        elif nodes[i].op == "table":
            names[f"_t{i}"], ref[i] = nodes[i].payload[1].array, f"_t{i}"
    fused = fusions(tape, order, [t.index for t in outputs], SMALL_SUM if flavour != "jax" else 0, SMALL_CONSTANT,
                    placed=flavour == "point")
    kernels: dict[int, array_kernels.Group | Loop] = dict(_groups(tape, order, [t.index for t in outputs], fused,
                                                                  batched, flavour))
    fused = {**fused, **{i: g.fused() for i, g in kernels.items()}}
    if flavour == "point" and loops:
        chains = array_loops.loops(tape, order, [t.index for t in outputs], fused)
        kernels.update(chains)
        fused.update({i: g.fused() for i, g in chains.items()})
    reuse = Reuse(tape, order, [t.index for t in outputs], ufunc_chain, fused) if flavour != "jax" else None
    absorbed = {a for f in fused.values() for a in f.absorbed}
    copied = _right_transposes(tape, order, fused, absorbed) if flavour != "jax" else set()
    temps: set[int] = set()
    for i in order:
        node = nodes[i]
        if i in absorbed or node.op in ("const", "table"):  # written inside the node that fuses it, or named
            continue
        if node.op == "var":
            if i in given:
                ref[i] = given[i]
            elif i in parts and parts[i][0] in given:
                parent, where = parts[i]
                ref[i] = f"{given[parent]}[..., {', '.join(map(str, where))}]"
            else:
                raise ValueError(f"an output depends on var {node.payload!r}, which is not among the inputs "
                                 f"{[v.name for v in inputs]}")
            continue
        if i in kernels:  # a group of elementwise nodes: one kernel, or the members' own code
            kernel = kernels[i]
            buffers = (reuse.buffers(i, kernel.shape, len(kernel.outputs), temps)
                       if isinstance(kernel, Loop) and reuse is not None else [])
            _group(kernel, tape, ref, batched, names, xp, flavour, lines, [ref[a] for a in buffers])
            temps.update(kernels[i].outputs)
            if reuse is not None and (dead := reuse.dead(i, temps)):
                lines.append(f"    del {', '.join(f't{a}' for a in dead)}")
                temps.difference_update(dead)
            continue
        shapes = [shape_of(tape, a) for a in node.args]
        operands = [ref.get(a, "") for a in node.args]  # (an absorbed product has none)
        if node.op == "matmul" and i not in fused:
            a, b = shapes
            work = max(work, _product(math.prod(a[:-1]), a[-1], b[-1] if len(b) > 1 else 1, flavour))
        found = reuse.target(i, temps, batched, flavour) if reuse is not None else None
        out = None if found is None else (node.args.index(found[0]), found[1])
        expression: str | None
        if i in fused and fused[i].tiled:  # slices end to end
            expression = f"_np.concatenate(({''.join(ref[v] + ', ' for v, _ in fused[i].places)}), axis=-1)"
        elif i in fused and fused[i].places:  # zeros, each summand added in (at its place)
            lines.append(f"    t{i} = _np.zeros({shape_of(tape, i)!r})")
            for value, at in fused[i].places:
                names[f"_ix{at}"] = (Ellipsis,) + as_index(nodes[at].payload[1], len(shape_of(tape, at)))
                lines.append(f"    t{i}[_ix{at}] += {ref[value]}")
            rest = [ref[a] for a in fused[i].reads[len(fused[i].places):]]
            expression = f"_np.add(t{i}, {' + '.join(rest)}, out=t{i})" if rest else None
        elif node.op == "matmul" and i in fused:  # (v ⊙ T) @ W as v @ C
            names[f"_C{i}"] = fused[i].constant
            expression = _reshape(f"({ref[fused[i].reads[0]]} @ _C{i})", 1, fused[i].shape, flavour)
            k, n = fused[i].constant.shape
            work = max(work, _product(math.prod(shape_of(tape, fused[i].reads[0])[:-1]), k, n, flavour))
        elif node.op == "sum" and flavour != "jax" and node.payload[1] and math.prod(shapes[0][k] for k in node.payload[1]) <= SMALL_SUM:
            factors = fused[i].reads if i in fused else node.args
            expression, by_ones = _summed(len(shapes[0]), node.payload[1], [ref[a] for a in factors],
                                          flavour == "point" and i not in fused, names)
            if by_ones:
                work = max(work, _product(1, math.prod(shapes[0]), 1, flavour))
        else:
            expression = _expression(node, i, operands, shapes, [batched[a] for a in node.args], names, xp, flavour, out)
            if i in copied and not batched[i]:  # read on the right of matrix products: BLAS's fast (NN) kernel
                expression = f"_np.ascontiguousarray({expression})"
        if expression is not None:
            lines.append(f"    t{i} = {expression}")
        ref[i] = f"t{i}"
        temps.add(i)
        if reuse is not None and (dead := reuse.dead(i, temps)):  # dropped after their last reader
            lines.append(f"    del {', '.join(f't{a}' for a in dead)}")
            temps.difference_update(dead)
    results = [ref[t.index] for t in outputs]
    if flavour != "jax":
        results = _owned(tape, outputs, results)
    if flavour == "jax":
        points = [len(v.shape) for v in inputs]
        names["_points"] = points
        names["_out_shapes"] = [t.shape for t in outputs]
        results = [f"_jx.full({r}, _batch + _out_shapes[{k}])" for k, r in enumerate(results)]
        lines.append(f"    _batch = _jx.batch([{', '.join(given[v.index] for v in inputs)}], _points)")
    lines.append(f"    return ({''.join(r + ', ' for r in results)})")
    return "\n".join(lines) + "\n", names, work


#: Array ops whose value may be a view of their operand's memory.
_VIEWS = frozenset({"reshape", "transpose", "index", "broadcast"})


def _owned(tape: Tape, outputs: Sequence[Term], results: list[str]) -> list[str]:
    """The results' texts, each array a value of its own: an output that is an input, a table
    or a number broadcast (or a view of one), or an output given before it, copied — a caller may write into
    what it gets, as into any NumPy result, without changing its arguments, the program or
    another output."""
    nodes = tape.nodes
    seen: set[str] = set()
    found = []
    for term, text in zip(outputs, results):
        i = term.index
        while nodes[i].op in _VIEWS:
            i = nodes[i].args[0]
        copied = shape_of(tape, term.index) and (nodes[i].op in ("var", "table", "const") or text in seen)
        seen.add(text)
        found.append(f"_np.array({text})" if copied else text)
    return found


def _expression(node: Any, i: int, a: list[str], shapes: list[Shape], batched: list[bool], names: dict[str, Any],
                xp: str, flavour: str, out: tuple[int, bool] | None = None) -> str:
    """Node i as an expression over its operands' texts ``a``; an elementwise node given ``out``
    (an operand's position, and whether to check shapes as it runs: ``array_reuse``) writes
    into that operand."""
    op = node.op
    if op in OPS:
        return _arithmetic(op, a, xp, _into(a, out))
    if op == "fn":
        return _function(node.payload, a, names, f"_f{i}", flavour, _into(a, out))
    shape: Shape = node.payload[0] if op in ARRAY_OPS else ()
    if op == "map":
        ready = [f"_al({t}, {s!r}, {len(shape)})" if b and len(s) < len(shape) else t
                 for t, s, b in zip(a, shapes, batched)]
        p = node.payload[1]
        into = _into(ready, out)
        return _arithmetic(p, ready, xp, into) if isinstance(p, str) else _function(p, ready, names, f"_f{i}", flavour, into)
    if op == "matmul":
        (sa, sb), (ba, bb) = shapes, batched
        if not ba and not bb:
            if len(sa) == len(sb) == 2 and sa[1] == 1:  # an outer product: ``dot``, 2× broadcasting's and 4× ``@``'s speed
                return f"{xp}.dot({a[0]}, {a[1]})"
            return f"({a[0]} @ {a[1]})"
        if flavour == "jax":
            return f"{xp}.einsum({_subscripts(sa, sb, ba, bb)!r}, {a[0]}, {a[1]})"
        if not bb:
            return f"_bt({a[0]}, {sa!r}, {a[1]})"
        if not ba:
            return f"_tb({a[0]}, {a[1]}, {sb!r})"
    if op == "sum":
        return f"{xp}.sum({a[0]}, axis={tuple(axis - len(shapes[0]) for axis in node.payload[1])!r})"
    if op == "transpose":
        n, perm = len(shapes[0]), tuple(node.payload[1])
        if flavour == "point":
            return f"{a[0]}.transpose({perm!r})"
        if perm == tuple(range(n - 2)) + (n - 1, n - 2):  # a matrix transposed: the last two axes swapped
            return f"{xp}.swapaxes({a[0]}, -1, -2)"
        return f"{xp}.moveaxis({a[0]}, {[p - n for p in perm]!r}, {list(range(-n, 0))!r})"
    if op == "place" and flavour != "jax":
        names[f"_ix{i}"] = (Ellipsis,) + as_index(node.payload[1], len(shape))
        return f"_pl({a[0]}, {len(shapes[0])}, {shape!r}, _ix{i})"
    if op == "index":
        names[f"_ix{i}"] = (Ellipsis,) + as_index(node.payload[1], len(shapes[0]))
        return f"{a[0]}[_ix{i}]"
    if op == "reshape":
        return _reshape(a[0], len(shapes[0]), shape, flavour)
    # the rest (and a product of two batches): the op's own value, in NumPy or JAX
    names[f"_n{i}"], names[f"_s{i}"] = node, shapes
    if flavour == "jax":
        return f"_jx.value(_n{i}, [{', '.join(a)}], _s{i})"
    names[f"_a_{op}"] = ARRAY_OPS[op].value
    return f"_a_{op}(_n{i}, [{', '.join(a)}], _s{i})"


def _groups(tape: Tape, order: Sequence[int], outputs: Sequence[int], fused: dict[int, Any],
            batched: dict[int, bool], flavour: str) -> dict[int, array_kernels.Group]:
    """The elementwise groups of a NumPy program (``array_kernels``), where Numba can compile
    (asked only of a program that has some: loading LLVM costs a first call ~0.1 s)."""
    if flavour == "jax":
        return {}
    from .backends.llvm_ir import native

    found = array_kernels.groups(tape, order, outputs, fused, batched, native, ufunc_chain, flavour == "point")
    return found if found and array_kernels.available() else {}


def _group(group: array_kernels.Group | Loop, tape: Tape, ref: dict[int, str], batched: dict[int, bool],
           names: dict[str, Any], xp: str, flavour: str, lines: list[str], buffers: Sequence[str] = ()) -> None:
    """A group's code: its kernel where its inputs fit one (``Group.fits``), or a loop's: its
    outputs made (the first in the operands ``buffers``, which die at it), then the loop run
    (``MISS`` where it does not take its operands); else each member's NumPy expression in turn
    (its values the members' own; those only the group reads dropped after it)."""
    inputs = ", ".join(ref[a] for a in group.inputs)
    if isinstance(group, Loop):
        names["_miss"] = array_loops.MISS
        group.bind(names, f"_L{group.anchor}")
        made = [*buffers, *[f"_np.empty({group.shape!r})"] * (len(group.outputs) - len(buffers))]
        lines.extend(f"    t{o} = {buffer}" for o, buffer in zip(group.outputs, made))
        lines.append(f"    if _L{group.anchor}({''.join(f't{o}, ' for o in group.outputs)}{inputs}, _miss) is _miss:")
    else:
        names[f"_g{group.anchor}"] = group
        lines.append(f"    if _g{group.anchor}.fits({inputs}):")
        lines.append(f"        {''.join(f't{o}, ' for o in group.outputs)}= _g{group.anchor}({inputs})")
        lines.append("    else:")
    for j in group.members:
        node = tape.nodes[j]
        shapes = [shape_of(tape, a) for a in node.args]
        expression = _expression(node, j, [ref[a] for a in node.args], shapes, [batched[a] for a in node.args], names,
                                 xp, flavour)
        lines.append(f"        t{j} = {expression}")
        ref[j] = f"t{j}"
    inner = [j for j in group.members if j not in group.outputs]
    if inner:
        lines.append(f"        del {', '.join(f't{j}' for j in inner)}")


def _right_transposes(tape: Tape, order: Sequence[int], fused: dict[int, Any], absorbed: set[int]) -> set[int]:
    """The transposed matrices that only matrix products read (as written: not fused into
    another node), each as its right operand with a matrix on the left: written as a contiguous
    copy, since OpenBLAS multiplies by a transposed right operand ~40 % slower (128 × 64 by
    64 × 64: 21.5 µs, 15.2 µs by its copy, which costs 1.7 µs and serves every such reader)."""
    nodes = tape.nodes
    candidates = {i for i in order if nodes[i].op == "transpose" and len(shape_of(tape, i)) == 2}
    for i in order:
        node = nodes[i]
        for k, a in enumerate(node.args):
            if a in candidates and (node.op != "matmul" or k != 1 or i in fused or i in absorbed
                                    or len(shape_of(tape, node.args[0])) != 2 or shape_of(tape, node.args[0])[0] < 16):
                candidates.discard(a)
    return candidates


def _subscripts(sa: Shape, sb: Shape, ba: bool, bb: bool) -> str:
    """``einsum``'s subscripts of a matrix product of operands of these shapes, each with batch
    axes in front where it may have them."""
    left = {1: "k", 2: "ik"}[len(sa)]
    right = {1: "k", 2: "kj"}[len(sb)]
    out = left[:-1] + right[1:]
    return f"{'...' * ba}{left},{'...' * bb}{right}->...{out}"


def _summed(ndim: int, axes: Sequence[int], factors: list[str], point: bool = False,
            names: dict[str, Any] | None = None) -> tuple[str, bool]:
    """A sum over ``axes`` of a node's ``ndim`` own axes, of one value or of the product of two,
    as ``einsum`` (batch axes as ``...``): one pass where ``sum`` of a product makes the product
    first, and a reduction across a middle axis runs 2–4× faster than ``np.sum``'s. At one point,
    a matrix summed along one axis is a product by ones (BLAS: twice ``einsum``'s speed). With
    the text, whether it is such a product (a matrix-vector product, for BLAS's threads)."""
    if point and names is not None and ndim == 2 and len(axes) == 1 and len(factors) == 1:
        names["_ones"] = ones
        text = f"(_ones({factors[0]}.shape[0]) @ {factors[0]})" if axes[0] == 0 else f"({factors[0]} @ _ones({factors[0]}.shape[1]))"
        return text, True
    letters = "abcdefghij"[:ndim]
    kept = "".join(c for k, c in enumerate(letters) if k not in axes)
    terms = ",".join(f"...{letters}" for _ in factors)
    return f"_np.einsum('{terms}->...{kept}', {', '.join(factors)})", False


def _into(a: list[str], out: tuple[int, bool] | None) -> str | None:
    """The ``out=`` text of an elementwise expression over ``a``."""
    if out is None:
        return None
    k, check = out
    return f"_into({a[k]}, {', '.join(t for j, t in enumerate(a) if j != k)})" if check else a[k]


def _arithmetic(op: str, a: list[str], xp: str, out: str | None) -> str:
    expression, ufunc = ARITHMETIC[op]
    return expression.format(*a, xp=xp) if out is None else f"{xp}.{ufunc.__name__}({', '.join(a)}, out={out})"


def ufunc_chain(fn: Any) -> tuple[np.ufunc, ...] | None:
    """The ufuncs a function is, in turn (its elementaries' NumPy functions), where its ``f`` is
    that chain; else None."""
    chain = steps(fn.spelling)
    ufuncs = tuple(u for e in chain for u in e.numpy if isinstance(u, np.ufunc))  # sech² = 1/cosh², squared: three
    if type(fn).f is not Function.f or not chain or len(ufuncs) != sum(len(e.numpy) for e in chain):
        return None
    return ufuncs


def _product(m: int, k: int, n: int, flavour: str) -> int:
    """The multiply-adds a point of an (m × k)·(k × n) product, as ``work`` counts them: at one
    point, 0 for a product that OpenBLAS runs on one thread anyway (``blas.threaded``)."""
    return m * k * n if flavour != "point" or blas.threaded(m, k, n) else 0


def _reshape(value: str, own: int, shape: Shape, flavour: str) -> str:
    """A value of ``own`` axes reshaped to ``shape``: at one point (no batch axes), the method."""
    return f"{value}.reshape({shape!r})" if flavour == "point" else f"_rs({value}, {own}, {shape!r})"


def _function(fn: Any, a: list[str], names: dict[str, Any], key: str, flavour: str, out: str | None = None) -> str:
    """A function of the operands: in JAX its JAX spelling; in NumPy its ufuncs by name
    (``_np.tanh(``), each step writing into ``out`` where given, else its ``f``."""
    if flavour == "jax":
        from .backends.jax import fn_text

        return fn_text(names, fn, a, key)
    chain = ufunc_chain(fn)
    if chain is None:
        names[key] = fn.f
        return f"{key}({', '.join(a)})"
    text = ", ".join(a)
    into = "" if out is None else f", out={out}"
    for k, ufunc in enumerate(chain):
        text = callee(ufunc, names, f"{key}_{k}") + f"{text}{into})"
    return text


__all__ = ["elements", "source"]
