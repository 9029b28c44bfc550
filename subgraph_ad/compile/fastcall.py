"""Native code as a Python builtin: LLVM IR of a ``METH_FASTCALL`` function, compiled for this
CPU (its object code kept in the cache), wrapped as a builtin function object whose call costs
what a call of ``len`` costs (~0.05 µs on a 2-core VM, where a ctypes call costs ~2.5 µs).

The IR defines ``ptr @<name>(ptr %self, ptr %args, i64 %nargs)``, returning a new reference
(``new_reference``) or NULL with an exception set. Its ``self`` is an array of uint64 whose
first words are ``known()`` — the addresses of ``ndarray``, float64's dtype, ``float`` and
``np.float64``, for the checks of its arguments — then its ``PyMethodDef`` and its name: the
builtin holds its ``self``, so both live as long as it. Its machine code must outlive it too:
``builtin`` returns the two together.
"""

from __future__ import annotations

import ctypes
import functools
import threading
import weakref
from typing import Any, Callable

import numpy as np

from .cache import cache_key, cache_load, cache_store
from .feed import FLOAT64

#: ``PyMethodDef.ml_flags``: the builtin takes (self, args, nargs).
FASTCALL = 0x80


class Code:
    """Machine code, loaded into its own engine (which owns it), and its entry's address."""

    def __init__(self, engine: Any, address: int) -> None:
        self.engine, self.address = engine, address


#: Machine code alive in this process, by the hash of its IR: builtins of the same IR share it.
_LIVE: weakref.WeakValueDictionary[str, Code] = weakref.WeakValueDictionary()
_LIVE_LOCK = threading.Lock()


def builtin(ir: str, name: str) -> tuple[Callable[..., Any], Code]:
    """The function ``@name`` of ``ir`` (a name of at most 7 bytes) as a builtin, and its
    machine code; LLVM's error where it refuses the IR, ImportError without llvmlite."""
    code = machine_code(ir, name)
    # self: the four addresses, then PyMethodDef {name, meth, flags, doc}, then the name's bytes
    self = np.zeros(9, dtype=np.uint64)
    self[:4] = known()
    self[4:8] = [self.ctypes.data + 64, code.address, FASTCALL, 0]
    self[8] = int.from_bytes(name.encode().ljust(8, b"\0")[:7] + b"\0", "little")
    made: Callable[..., Any] = _new()(self.ctypes.data + 32, self, None)  # (a new reference, which ctypes owns)
    return made, code


def known() -> list[int]:
    """The addresses of ``ndarray``, float64's dtype, ``float`` and ``np.float64``."""
    return [id(np.ndarray), id(FLOAT64), id(float), id(np.float64)]


def new_reference(obj: str, name: str) -> list[str]:
    """IR: one more reference to ``obj`` (its count, the object's first word, plus one: a mortal
    object of CPython with the GIL, where the caller checked the layout)."""
    return [f"  %{name}.rc = load i64, ptr {obj}, align 8", f"  %{name}.rc1 = add i64 %{name}.rc, 1",
            f"  store i64 %{name}.rc1, ptr {obj}, align 8"]


@functools.cache
def _new() -> Any:
    """``PyCFunction_NewEx(def, self, module)``, a prototype of our own (``ctypes.pythonapi``'s
    attributes are shared with every other user in the process)."""
    return ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.py_object, ctypes.c_void_p)(
        ("PyCFunction_NewEx", ctypes.pythonapi))


def machine_code(ir: str, name: str) -> Code:
    """The machine code of ``ir``: alive in this process, from the cache (only entries it signed
    itself), or compiled (vectorised by LLVM's passes at -O2: ``numba._compile``) and stored there."""
    from .backends import numba as backend

    target = backend._target()
    digest = cache_key("fastcall", target.identity, ir)
    with _LIVE_LOCK:
        code = _LIVE.get(digest)
        if code is None:
            data = cache_load("fastcall", digest)
            if data is None:
                data = backend._compile(target, ir, vectorise=True)
                cache_store("fastcall", digest, data)
            code = _LIVE[digest] = Code(*backend._load(target.llvm, target, data, name))
    return code


__all__ = ["FASTCALL", "Code", "builtin", "known", "machine_code", "new_reference"]
