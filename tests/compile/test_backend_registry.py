"""A new backend is one module and one entry in ``registry.BACKENDS``: ``lambdify(backend=name)``,
its default (``config``), its errors and every compiling entry (``sad.grad``) find it there, on
the host (``kernel`` and ``worker``, run over NumPy arrays by ``Compiled``) or on a device
(``compiled``, its own callable). The toys here wrap the NumPy backend and count their calls;
their values are checked against NumPy's own arithmetic."""

import types

import numpy as np
import pytest

import subgraph_ad as sad
from subgraph_ad import Tape, lambdify
from subgraph_ad.compile import config, registry
from subgraph_ad.compile.backends import numpy as numpy_backend
from subgraph_ad.compile.devices import DeviceCompiled


def _host_toy() -> types.ModuleType:
    """A host backend: the NumPy backend's kernels, counted, under another name."""
    toy = types.ModuleType("toy")
    toy.NAME = "Toy"
    toy.LOWERING = numpy_backend.LOWERING
    toy.built = []

    def kernel(program, scalars):
        toy.built.append(scalars)
        return numpy_backend.kernel(program, scalars)

    toy.kernel, toy.worker = kernel, numpy_backend.worker
    return toy


def _device_toy() -> types.ModuleType:
    """A device backend: its own callable, the NumPy backend's one-point code on every point."""
    toy = types.ModuleType("toy_device")
    toy.NAME = "Toy device"
    toy.LOWERING = numpy_backend.LOWERING

    class ToyCompiled(DeviceCompiled):
        backend = "toy_device"

        def _run(self, *args):
            source, names, _ = numpy_backend.scalar_source(self.program)
            exec(source, names)
            point = np.vectorize(lambda *v: names["_f"](*map(np.float64, v)), otypes=[float] * len(self.program.outputs))
            return self._shaped(tuple(np.atleast_1d(r) for r in np.broadcast_arrays(*point(*args))))

    toy.compiled = lambda program, names, single, dtype, fallback: ToyCompiled(program, names, single)
    return toy


def _function():
    tape = Tape()
    x, y = tape.var("x"), tape.var("y")
    return x, y, x ** 3 * y + sad.sin(x) / y


def _expected(xs, ys):
    return xs ** 3 * ys + np.sin(xs) / ys


POINTS = np.linspace(-2.0, 2.0, 41), np.linspace(0.5, 3.0, 41)


def test_a_host_backend_is_one_module_and_one_registry_entry(monkeypatch):
    toy = _host_toy()
    monkeypatch.setitem(registry.BACKENDS, "toy", toy)
    x, y, z = _function()
    f = lambdify([x, y], z, backend="toy")
    assert f.backend == "toy" and "backend toy" in repr(f) and toy.built == []
    assert np.allclose(f(*POINTS), _expected(*POINTS), rtol=1e-14, atol=0)
    assert np.allclose(f(POINTS[0], 2.0), _expected(POINTS[0], 2.0), rtol=1e-14, atol=0)
    assert toy.built == [(False, False), (False, True)]  # one kernel per pattern of arrays and numbers
    assert f.built[-2:] == ("toy (array, array)", "toy (array, number)")


def test_a_registered_backend_is_everyones_by_name(monkeypatch):
    """The default backend, the errors that list the names, and a compiling entry (``sad.derivative``)."""
    toy = _host_toy()
    monkeypatch.setitem(registry.BACKENDS, "toy", toy)
    monkeypatch.setattr(config, "backend", "toy")
    x, y, z = _function()
    assert lambdify([x, y], z).backend == "toy"
    toy.built.clear()
    derivative = sad.derivative(lambda a: a ** 3 * 2.0)
    assert np.allclose(derivative(POINTS[0]), 6 * POINTS[0] ** 2, rtol=1e-14, atol=0)
    assert toy.built == [(False,)]  # the derivative ran through it
    monkeypatch.setattr(config, "backend", None)
    with pytest.raises(ValueError, match="backend must be 'numpy' or 'numba' or 'jax' or 'cuda' or 'toy', got 'gpu'"):
        lambdify([x, y], z, backend="gpu")


def test_a_device_backend_is_one_module_and_one_registry_entry(monkeypatch):
    monkeypatch.setitem(registry.BACKENDS, "toy_device", _device_toy())
    x, y, z = _function()
    f = lambdify([x, y], [z, x], backend="toy_device")
    assert isinstance(f, DeviceCompiled) and "backend toy_device" in repr(f)
    value, first = f(*POINTS)
    assert np.allclose(value, _expected(*POINTS), rtol=1e-14, atol=0) and np.array_equal(first, POINTS[0])
    with pytest.raises(TypeError, match=r"expected 2 arguments \(x, y\), got 1"):
        f(1.0)


def test_a_registry_entry_may_be_an_import_path_and_is_checked_for_its_kind(monkeypatch):
    monkeypatch.setitem(registry.BACKENDS, "again", "subgraph_ad.compile.backends.numpy")
    x, y, z = _function()
    f = lambdify([x, y], z, backend="again")
    assert np.allclose(f(*POINTS), _expected(*POINTS), rtol=1e-14, atol=0)
    monkeypatch.setitem(registry.BACKENDS, "nothing", types.ModuleType("nothing"))
    with pytest.raises(ValueError, match="'nothing' has neither kernel and worker .* nor compiled"):
        lambdify([x, y], z, backend="nothing")
