"""The persistent cache of compiled code (``SUBGRAPH_AD_CACHE``): a program compiled once is
loaded, not compiled, by a later lambdify (in this process or a new one); a different program
misses; an entry that is corrupt, truncated or from another format is rebuilt, never trusted;
``cache=False`` and ``SUBGRAPH_AD_CACHE=off`` leave no file. Values are checked against the
recurrence run in NumPy; hits and misses on what was compiled (the compilers are spied on)."""

import builtins
import os
import subprocess
import sys
import textwrap
import weakref
from pathlib import Path

import numpy as np
import pytest

import subgraph_ad as sad
import subgraph_ad.compile.program as program_module
from subgraph_ad.compile import cache as cache_module
from subgraph_ad.compile.backends import numba as numba_backend

LINKS = 600  # 1,200 steps: above CACHE_MIN_STEPS, where compiled code is kept


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    """A fresh cache directory, and no kernel kept alive in memory from an earlier test; the
    argument reader (compiled once a process, never cached) built first, so that the compilers
    spied on count kernels only, whichever test a process runs first."""
    numba_backend.reader()
    monkeypatch.setenv("SUBGRAPH_AD_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(numba_backend, "_LIVE", weakref.WeakValueDictionary())
    return tmp_path / "cache"


def _chain(shift: float = 0.0):
    tape = sad.Tape()
    x = tape.var("x")
    z = x
    for k in range(LINKS):
        z = sad.sin(z) * 0.9 + (k + 1 + shift) / 1000
    return x, z


def _expected(points: np.ndarray, shift: float = 0.0) -> np.ndarray:
    z = points.copy()
    for k in range(LINKS):
        z = np.sin(z) * 0.9 + (k + 1 + shift) / 1000
    return z


POINTS = np.linspace(-2.0, 2.0, 1001)


def _spy(monkeypatch, module, name):
    """Count the calls of ``module.name`` (a compiler), still calling it."""
    calls = []
    real = getattr(module, name, getattr(builtins, name, None))  # ``compile``: the builtin, shadowed in the module

    def spy(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, spy, raising=False)
    return calls


def _entries(cache: Path, kind: str) -> list[Path]:
    return sorted(p for p in (cache / cache_module.FOLDER).glob(f"{kind}-*") if p.is_file())


def test_numba_machine_code_is_compiled_once_then_loaded(cache, monkeypatch):
    pytest.importorskip("numba")
    compiled = _spy(monkeypatch, numba_backend, "_compile")
    x, z = _chain()
    assert np.allclose(sad.lambdify([x], z, backend="numba")(POINTS), _expected(POINTS), rtol=1e-12, atol=1e-12)
    assert len(compiled) == 1 and len(_entries(cache, "numba")) == 1
    monkeypatch.setattr(numba_backend, "_LIVE", weakref.WeakValueDictionary())  # as a new process
    x, z = _chain()  # the same program on a new tape: a hit
    assert np.allclose(sad.lambdify([x], z, backend="numba")(POINTS), _expected(POINTS), rtol=1e-12, atol=1e-12)
    assert len(compiled) == 1
    x, z = _chain(shift=0.5)  # other constants, same shape: the same machine code with its own table
    assert np.allclose(sad.lambdify([x], z, backend="numba")(POINTS), _expected(POINTS, 0.5), rtol=1e-12, atol=1e-12)
    assert len(compiled) == 1
    x, z = _chain()
    w = sad.cos(z) + z  # another program: a miss, a second entry
    assert np.allclose(sad.lambdify([x], w, backend="numba")(POINTS), np.cos(_expected(POINTS)) + _expected(POINTS),
                       rtol=1e-12, atol=1e-12)
    assert len(compiled) == 2 and len(_entries(cache, "numba")) == 2


@pytest.mark.parametrize("damage", ["flip", "truncate", "format"])
def test_a_damaged_entry_is_rebuilt_and_the_values_stay_right(cache, monkeypatch, damage):
    pytest.importorskip("numba")
    x, z = _chain()
    sad.lambdify([x], z, backend="numba")(POINTS)
    (entry,) = _entries(cache, "numba")
    raw = bytearray(entry.read_bytes())
    if damage == "flip":  # a byte of the machine code itself
        raw[len(raw) // 2] ^= 0xFF
        entry.write_bytes(bytes(raw))
    elif damage == "truncate":
        entry.write_bytes(bytes(raw[: len(raw) // 3]))
    else:  # at this key, but written by another format of the cache
        entry.write_bytes(bytes(raw).replace(cache_module.CACHE_FORMAT, b"subgraph_ad cache 0", 1))
    monkeypatch.setattr(numba_backend, "_LIVE", weakref.WeakValueDictionary())
    compiled = _spy(monkeypatch, numba_backend, "_compile")
    x, z = _chain()
    values = sad.lambdify([x], z, backend="numba")(POINTS)
    assert len(compiled) == 1  # rebuilt, not loaded
    assert np.allclose(values, _expected(POINTS), rtol=1e-12, atol=1e-12)
    data = cache_module.cache_load("numba", entry.name.removeprefix("numba-"))
    assert data is not None and data == numba_backend._compile(numba_backend._target(), compiled[0][1])  # rewritten whole


def test_python_code_objects_are_cached_too(cache, monkeypatch):
    """The NumPy backend's block code and the one-point code are Python code objects: kept as
    ``marshal`` data, loaded instead of compiled; a corrupt one is compiled again."""
    compiled = _spy(monkeypatch, program_module, "compile")
    x, z = _chain()
    f = sad.lambdify([x], z)
    assert np.allclose(f(POINTS), _expected(POINTS), rtol=1e-12, atol=1e-12)
    assert f(0.3) == pytest.approx(float(_expected(np.array([0.3]))[0]), rel=1e-12)
    assert len(compiled) == 2 and len(_entries(cache, "python")) == 2  # the blocks, the point
    x, z = _chain()
    g = sad.lambdify([x], z)
    assert np.allclose(g(POINTS), _expected(POINTS), rtol=1e-12, atol=1e-12) and g(0.3) == f(0.3)
    assert len(compiled) == 2
    for entry in _entries(cache, "python"):
        entry.write_bytes(entry.read_bytes()[:-7] + b"garbage")
    x, z = _chain()
    h = sad.lambdify([x], z)
    assert np.allclose(h(POINTS), _expected(POINTS), rtol=1e-12, atol=1e-12) and h(0.3) == f(0.3)
    assert len(compiled) == 4


def test_cache_false_and_off_leave_no_file(cache, monkeypatch):
    x, z = _chain()
    for backend in ("numpy", "numba"):
        f = sad.lambdify([x], z, backend=backend, cache=False)
        assert np.allclose(f(POINTS), _expected(POINTS), rtol=1e-12, atol=1e-12)
    f(0.3)
    assert not cache.exists()
    monkeypatch.setenv("SUBGRAPH_AD_CACHE", "off")
    assert cache_module.cache_directory() is None
    g = sad.lambdify([x], z, backend="numba")
    assert np.allclose(g(POINTS), _expected(POINTS), rtol=1e-12, atol=1e-12)
    assert not cache.exists()


def test_a_new_process_loads_the_machine_code(cache, tmp_path):
    """The cached object code runs in another process, where the C library's functions and the
    constants are at other addresses (both are tables passed at run time)."""
    pytest.importorskip("numba")
    script = tmp_path / "run.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        import numpy as np
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from subgraph_ad.compile.backends import numba as numba_backend
        import test_cache
        if sys.argv[1] == "load":
            numba_backend.reader()  # (the argument reader: compiled once a process, never cached)
            def refuse(*args):
                raise AssertionError("compiled, not loaded")
            numba_backend._compile = refuse
        x, z = test_cache._chain()
        values = test_cache.sad.lambdify([x], z, backend="numba")(test_cache.POINTS)
        print(float(np.max(np.abs(values - test_cache._expected(test_cache.POINTS)))))
    """))
    root = Path(__file__).resolve().parents[2]
    for mode in ("store", "load"):
        done = subprocess.run([sys.executable, str(script), mode], capture_output=True, text=True, cwd=root,
                              env={**os.environ, "PYTHONPATH": str(root)}, timeout=600)
        assert done.returncode == 0, done.stderr
        assert float(done.stdout.split()[-1]) < 1e-12
    assert len(_entries(cache, "numba")) == 1
