"""A call's arguments read natively (``llvm_args``): each float64 vector's address and stride and
each number's value, straight from the objects' fields.

The oracle is what NumPy and Python report of the same objects (``__array_interface__``,
``strides``, ``float``), over random argument lists of every kind a caller passes — floats,
NumPy scalars, ints, bools, contiguous vectors, strided views, columns, reversed views, other
dtypes, big-endian, misaligned, read-only, broadcast, 0-d, 2-D, subclasses, lengths that disagree, and
what is no number at all — against a rule written out here: the reader takes exactly what it
should and hands everything else to the general path (None), and a compiled program gives the
same numbers either way.
"""

import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import subgraph_ad as sad
from subgraph_ad.compile import feed
from subgraph_ad.compile.backends import llvm_args
from subgraph_ad.compile.backends import numba as numba_backend
from subgraph_ad.compile.lambdify import BackendWarning
from conftest import Softplus, examples

pytest.importorskip("llvmlite")  # numba is in the dev extra: always present in make test


class Sub(np.ndarray):
    """An ndarray subclass: not read natively (its fields are another type's)."""


def _misaligned(n: int) -> np.ndarray:
    raw = np.zeros(8 * n + 1, dtype=np.uint8)
    return np.frombuffer(raw.data, dtype=np.float64, count=n, offset=1)


def _read_only(n: int) -> np.ndarray:
    a = np.linspace(0.5, 1.5, n)
    a.flags.writeable = False
    return a


#: Taken with one point (or none), where a vector's stride does not matter.
ONE = "with one point"
# name -> (makes the argument for a length n, whether the reader takes it)
KINDS = {
    "float": (lambda n: 0.25, True), "np.float64": (lambda n: np.float64(-1.5), True),
    "int": (lambda n: 3, False), "bool": (lambda n: True, False), "np.int64": (lambda n: np.int64(2), False),
    "np.float32 scalar": (lambda n: np.float32(0.5), False),
    "vector": (lambda n: np.linspace(-1.0, 1.0, n), True),
    "every other": (lambda n: np.linspace(0.0, 2.0, 2 * n)[::2], True),
    "column": (lambda n: np.arange(3.0 * n).reshape(n, 3)[:, 1], True),
    "row of a grid": (lambda n: np.arange(4.0 * n).reshape(4, n)[2], True),
    "read-only": (_read_only, True),
    "reversed": (lambda n: np.linspace(0.0, 1.0, n)[::-1], ONE),
    "broadcast": (lambda n: np.broadcast_to(np.float64(1.5), (n,)), ONE),  # (its points 0 bytes apart)
    "float32": (lambda n: np.linspace(0.0, 1.0, n, dtype=np.float32), False),
    "int vector": (lambda n: np.arange(n), False),
    "big-endian": (lambda n: np.linspace(0.0, 1.0, n).astype(">f8"), False),
    "misaligned": (_misaligned, False),
    "0-d": (lambda n: np.array(0.5), False), "2-D": (lambda n: np.zeros((n, 2)), False),
    "subclass": (lambda n: np.linspace(0.0, 1.0, n).view(Sub), False),
    "list": (lambda n: [0.0] * n, False), "None": (lambda n: None, False), "text": (lambda n: "1.0", False),
    "one longer": (lambda n: np.zeros(n + 1), None),  # taken alone; not beside vectors of n
}


def test_the_layout_is_found_here():
    """On CPython with NumPy (this suite's platform) the reader exists: the fast path is on."""
    assert llvm_args.layout() is not None and numba_backend.reader() is not None


def test_no_layout_is_probed_off_cpython(monkeypatch):
    """Elsewhere ``id`` is no address: nothing is read at it, and Python reads the arguments."""
    monkeypatch.setattr(sys.implementation, "name", "pypy")
    assert llvm_args.layout.__wrapped__() is None


@settings(max_examples=examples(150))
@given(kinds=st.lists(st.sampled_from(sorted(KINDS)), min_size=1, max_size=12), n=st.integers(0, 9))
def test_the_reader_takes_what_it_should_and_reads_what_numpy_reports(kinds, n):
    args = [KINDS[k][0](n) for k in kinds]
    taken = all(KINDS[k][1] is not False and (KINDS[k][1] != ONE or n <= 1) for k in kinds)
    lengths = {len(a) for a in args if isinstance(a, np.ndarray) and a.ndim == 1}
    taken = taken and len(lengths) == 1  # at least one vector, and one length
    read = numba_backend.reader()(args)
    if not taken:
        assert read is None, kinds
        return
    assert read is not None, kinds
    count = len(args)
    assert read.size == lengths.pop() and read.held is args
    for k, a in enumerate(args):
        if isinstance(a, np.ndarray):
            assert read.numbers[k] == 0
            assert read.table[k] == a.__array_interface__["data"][0]
            assert read.table[count + k] * 8 == a.strides[0] if n > 1 else read.table[count + k] == 1
        else:
            assert read.numbers[k] == 1 and read.values[k] == float(a) and read.table[count + k] == 0
            assert read.table[k] == read.values.__array_interface__["data"][0] + 8 * k


def test_vectors_of_no_points_are_read_as_such():
    """(NumPy gives some of them no stride: ``np.arange(0.0)[::2].strides == (0,)``.)"""
    read = numba_backend.reader()([np.zeros(0), 1.0, np.arange(0.0)[::2]])
    assert read is not None and read.size == 0 and list(read.numbers) == [0, 1, 0]


@settings(max_examples=examples(40))
@given(kinds=st.lists(st.sampled_from(["float", "np.float64", "int", "vector", "every other", "column",
                                       "read-only", "reversed", "broadcast", "float32", "big-endian",
                                       "misaligned"]),
                      min_size=3, max_size=3).filter(lambda ks: any(k not in ("float", "np.float64", "int") for k in ks)),
       n=st.integers(1, 300))
def test_a_program_gives_numpys_numbers_whichever_way_its_arguments_are_read(kinds, n):
    """Read natively, by ``feed.fed`` or by the general path, the Numba kernel's outputs are
    what it gives on contiguous float64 copies of the arguments, bit for bit, and the NumPy
    backend's (which reads every argument with ``np.asarray``) to a few units in the last place
    of the largest output (the two backends' ``sin`` and ``exp`` differ by up to a few ulp)."""
    tape = sad.Tape()
    x, y, z = (tape.var(name) for name in "xyz")
    f = sad.sin(x * y) + sad.exp(z - x) * y - z * z
    outputs = [f, *f.grad_graph([x, y, z])]
    args = [KINDS[k][0](n) for k in kinds]
    compiled = sad.lambdify([x, y, z], outputs, backend="numba", cache=False)
    got = compiled(*args)
    plain = compiled(*(np.array(a, dtype=float) if isinstance(a, np.ndarray) else float(a) for a in args))
    want = sad.lambdify([x, y, z], outputs, backend="numpy")(*args)
    for a, b, c in zip(got, plain, want):
        assert np.array_equal(a, b, equal_nan=True)
        scale = max(1.0, float(np.max(np.abs(c[np.isfinite(c)]), initial=0.0)))
        assert np.allclose(a, c, rtol=1e-14, atol=1e-14 * scale, equal_nan=True)


def test_a_call_of_vectors_and_floats_never_reads_them_in_python(monkeypatch):
    """The common batch takes the native path: the Python readers are not called."""
    tape = sad.Tape()
    xs = [tape.var(f"x{k}") for k in range(5)]
    z = sum(a * b for a, b in zip(xs, xs[1:]))
    compiled = sad.lambdify(xs, list(z.grad_graph(xs)), backend="numba", cache=False)
    args = [np.linspace(0.0, 1.0, 700), 2.0, np.float64(0.5), np.arange(1400.0)[::2], np.ones((700, 3))[:, 1]]
    want = sad.lambdify(xs, list(z.grad_graph(xs)), backend="numpy")(*args)

    def refuse(*_: object) -> None:
        raise AssertionError("read in Python")

    monkeypatch.setattr(feed, "fed", refuse)
    monkeypatch.setattr(numba_backend, "read", refuse)
    for a, b in zip(compiled(*args), want):
        assert np.array_equal(a, b)
    assert np.array_equal(compiled.stacked(*args), np.stack(np.broadcast_arrays(*want), axis=-1))


class Opaque(Softplus):
    name = "opaque_read"

    def f(self, v):  # the identity, through a Python object in the loop: Numba cannot compile this
        return np.asarray([complex(w, 0).real for w in np.atleast_1d(v)]).reshape(np.shape(v))


def test_arguments_read_for_numba_reach_numpy_when_it_falls_back():
    """Read natively, then handed to the NumPy backend that the call falls back to: a vector of
    one point whose stride is -8 (read natively; ``feed.fed`` refuses it) and a number."""
    tape = sad.Tape()
    x, y = tape.var("x"), tape.var("y")
    compiled = sad.lambdify([x, y], Opaque()(x) * y, backend="numba", cache=False)
    with pytest.warns(BackendWarning, match="could not compile"):
        got = compiled(np.array([0.0, 0.25])[::-1][:1], 2.0)
    assert compiled.backend == "numpy" and got.shape == (1,)
    assert got[0] == 0.25 * 2.0
