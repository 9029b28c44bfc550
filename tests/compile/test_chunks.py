"""Programs compiled in chunks (``program.chunks``): values read across a chunk boundary pass
through scratch columns, and a chunked program gives the values of ``eval`` (itself checked
against SymPy elsewhere) at chunk sizes 1, 7 and 100, on every op and every built-in function,
with several outputs and inputs read by many chunks; the NumPy backend's chunks change no bit."""

import dataclasses
import warnings

import numpy as np
import pytest

import subgraph_ad as sad
from subgraph_ad import Tape, lambdify
from subgraph_ad.compile.lambdify import BackendWarning
from subgraph_ad.compile.program import build_program, chunks
from subgraph_ad.functions import xlogy

from conftest import Softplus  # a user function with no spelling: f compiled by Numba

#: The unary built-ins in the every-op program, which tests chunking, not the functions: the
#: kinked and special ones are checked on NumPy and Numba in their own tests (and on C and JAX in
#: test_c_body.py and test_jax_backend.py); some would not fit this one chain (Numba compiles no
#: SciPy-valued f such as digamma's, and ψ's pole at z = 0 would make the running total nan).
CHUNKED_FUNCTIONS = ("abs acos acosh asin asinh atan atanh cbrt cos cosh cot csc erf erfc exp expm1 log log10 "
                     "log1p log2 sec sigmoid sign sin sinh sqrt tan tanh").split()


@pytest.fixture(autouse=True)
def _no_persistent_cache(monkeypatch):
    monkeypatch.setenv("SUBGRAPH_AD_CACHE", "off")


def _every_op_and_function():
    """x in (0.1, 0.9), y in (1, 3), z in (-1.6, 1.6): every function gets arguments in its domain. The
    outputs read values from early and late in the program, an input and a constant."""
    tape = Tape()
    x, y, z = tape.var("x"), tape.var("y"), tape.var("z")
    unary = [f for name, f in sorted(sad.FUNCTIONS.items()) if not isinstance(f, sad.BinaryFn) and name in CHUNKED_FUNCTIONS]
    domain = {"acosh": y, "log": y, "log2": y, "log10": y, "sqrt": y, "asin": x, "acos": x, "atanh": x,
              "sec": x, "csc": x, "cot": x, "tan": x}
    terms = [f(domain.get(f.name, z * 0.5)) for f in unary]
    terms += [sad.atan2(z, y), sad.hypot(x, z), sad.pow(y, x), xlogy(x, y), xlogy(x - x, y), Softplus()(z)]
    terms += [x + y, x - z, x * z, y / x, -z, x**3, y**-2, y**0.5, y**1.5, y**x, 2.0**z, x**0]
    total = terms[0]
    for t in terms[1:]:
        total = total + t * 0.5 - total * x  # a long chain: the later chunks read the early values
    return (x, y, z), [total, terms[0], terms[len(terms) // 2], x, tape.const(2.5), total * terms[-1]]


def _values(inputs, outputs, xs, ys, zs):
    x, y, z = inputs
    with np.errstate(all="ignore"):
        return [np.broadcast_to(t.eval({x: xs, y: ys, z: zs}), np.broadcast(xs, ys, zs).shape) for t in outputs]


@pytest.mark.parametrize("backend", ["numpy", "numba"])
@pytest.mark.parametrize("chunk", [1, 7, 100])
def test_chunked_programs_match_eval_on_every_op_and_function(backend, chunk):
    inputs, outputs = _every_op_and_function()
    program = build_program(inputs[0].tape, list(inputs), outputs)
    cut = chunks(program, chunk)
    assert len(cut.bounds) == -(-len(program.steps) // chunk) and cut.columns > 0
    xs, ys, zs = np.linspace(0.1, 0.9, 601), np.linspace(1.0, 3.0, 601), np.linspace(-1.6, 1.6, 601)
    with warnings.catch_warnings():
        warnings.simplefilter("error", BackendWarning)  # Numba must compile it all, in chunks
        f = lambdify(list(inputs), outputs, backend=backend, chunk=chunk)
        for args in [(xs, ys, zs), (xs, 2.0, zs), (0.3, ys, zs)]:  # a number read by every chunk
            for value, want in zip(f(*args), _values(inputs, outputs, *args)):
                assert value.shape == want.shape and np.isfinite(want).all()
                assert np.allclose(value, want, rtol=1e-12, atol=1e-12)
    assert f.backend == backend


def test_numpy_chunks_change_no_bit():
    inputs, outputs = _every_op_and_function()
    xs, ys, zs = np.linspace(0.1, 0.9, 257), np.linspace(1.0, 3.0, 257), np.linspace(-1.6, 1.6, 257)
    whole = lambdify(list(inputs), outputs, chunk=10**6, block=64)(xs, ys, zs)
    for chunk in (1, 7, 100):
        for a, b in zip(lambdify(list(inputs), outputs, chunk=chunk, block=64)(xs, ys, zs), whole):
            assert np.array_equal(a, b)


def test_columns_hold_what_later_chunks_read_and_are_reused_only_when_dead():
    """An independent walk over the chunks: every value read across a boundary has a column,
    stored by the chunk that defines it, and no column holds two values whose lives (from the
    chunk storing it to the last chunk reading it) overlap. An output read by no later chunk
    has none (the kernel writes it where the output goes)."""
    inputs, outputs = _every_op_and_function()
    program = build_program(inputs[0].tape, list(inputs), outputs)
    for size in (1, 7, 100):
        cut = chunks(program, size)
        owner = {dest: k for k, (a, b) in enumerate(cut.bounds) for dest, _, _, _ in program.steps[a:b]}
        last = {}
        for k, (a, b) in enumerate(cut.bounds):
            for _, _, args, _ in program.steps[a:b]:
                for kind, v in args:
                    if kind == "t" and owner[v] != k:
                        last[v] = k
                        assert v in cut.reads[k] and v in cut.stores[owner[v]]
        assert set(cut.column) == set(last)
        assert any(kind == "t" and v not in cut.column for kind, v in program.outputs)
        lives = sorted((cut.column[v], owner[v], end) for v, end in last.items())
        for (c1, start1, end1), (c2, start2, end2) in zip(lives, lives[1:]):
            assert c1 != c2 or start2 > end1  # a reused column: the first value read for the last time before
        assert cut.columns == max(cut.column.values()) + 1
        assert cut.columns < len(last) or size == 100  # reuse happens where there are many boundaries


@pytest.mark.parametrize("width", [4, 8])
@pytest.mark.parametrize("vector_functions", [True, False])
def test_numba_at_every_vector_width_with_and_without_libmvec(monkeypatch, width, vector_functions):
    """The C library's functions lane by lane (no libmvec: other systems) and on whole vectors,
    at 4 doubles a vector (AVX2) and 8 (AVX-512; LLVM splits it where the CPU has less)."""
    pytest.importorskip("numba")
    from subgraph_ad.compile.backends import llvm_ir
    from subgraph_ad.compile.backends import numba as numba_backend

    host = dataclasses.replace(numba_backend._target(), width=width)
    monkeypatch.setattr(numba_backend, "_host", lambda: host)
    if not vector_functions:
        monkeypatch.setattr(llvm_ir, "_libmvec", lambda: None)
    inputs, outputs = _every_op_and_function()
    f = lambdify(list(inputs), outputs, backend="numba", chunk=7)
    source, tables = numba_backend.kernel_source(f.program, (), 7)
    assert f"<{width} x double>" in source
    kinds = {kind for kind, *_ in tables.helpers}
    assert ("mvec" in kinds) == bool(vector_functions and llvm_ir._libmvec()) and "fn" in kinds
    xs, ys, zs = np.linspace(0.1, 0.9, 37), np.linspace(1.0, 3.0, 37), np.linspace(-1.6, 1.6, 37)
    with warnings.catch_warnings():
        warnings.simplefilter("error", BackendWarning)
        for value, want in zip(f(xs, ys, zs), _values(inputs, outputs, xs, ys, zs)):
            assert np.allclose(value, want, rtol=1e-12, atol=1e-12)
