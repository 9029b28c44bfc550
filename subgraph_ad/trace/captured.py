"""What a traced function reads from outside its arguments, recorded with its compiled program
and compared before every run of it: the transforms never freeze a closure.

A trace calls f once and compiles the Terms it built; whatever f read besides its arguments —
closure cells, globals (of f, of the code nested in it, of the Python functions it calls),
default arguments, attributes, elements of lists, tuples and dicts — went into the program as
constants. ``Captured(f)`` walks that state once, right after the trace, and keeps where each
value was read from (a cell, a dict entry, an attribute, an item) and what it was;
``changed()`` reads those places again — no walk, one comparison each — and says where the
state differs, so the caller traces again. Arrays are compared by their bytes (a copy is
kept), numbers and strings by value, anything else by identity. The walk is iterative and
bounded (``DEPTH`` levels, ``BUDGET`` values); past the budget the trace warns that the rest is
not checked. Library code (NumPy, the standard library, this package) is
taken by identity, not walked: it is not the user's data. JAX freezes closures under ``jit``
and says so; here a closed-over array is read at every call.

>>> import numpy as np
>>> data = np.array([1.0, 2.0])
>>> seen = Captured(lambda w: w * data)
>>> seen.changed()
>>> data[0] = 5.0
>>> seen.changed()
'data'
"""

from __future__ import annotations

import dis
import functools
import math
import os
import site
import sys
import sysconfig
import types
import warnings
from typing import Any, Callable

import numpy as np

#: How deep the walk goes from f (a value deeper than this is compared by identity) and how
#: many values it compares in all (a per-call cost: each is one comparison).
DEPTH = 12
BUDGET = 4096

_ABSENT = object()  # a global name f reads that is not bound (an attribute name, or a builtin)
_SCALARS = (int, float, complex, str, bytes, bool, type(None), np.generic)
_OWN = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # the package (this is trace/captured.py)
_PACKAGE = __name__.split(".")[0]


@functools.lru_cache(maxsize=None)
def _roots() -> tuple[str, ...]:
    """The folders of library code: the standard library's, the installed packages', this package's."""
    paths = sysconfig.get_paths()
    found = {paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths}
    found |= {*site.getsitepackages(), site.getusersitepackages()}
    return tuple(sorted(os.path.abspath(p) + os.sep for p in found)) + (_OWN,)


@functools.lru_cache(maxsize=4096)
def _library_file(filename: str) -> bool:
    """Whether code from this file is a library's (installed, the standard library, or this
    package's own), whose state is not the user's data."""
    return not filename.startswith("<") and os.path.abspath(filename).startswith(_roots())  # "<stdin>": the user's


@functools.lru_cache(maxsize=4096)
def _library_module(name: str) -> bool:
    """Whether a module is a library's: the user's is ``__main__``, one not imported (a doctest's,
    ``exec``'d code) or one from a file outside the libraries' folders."""
    module = sys.modules.get(name)
    if module is None or name == "__main__":
        return False
    filename = getattr(module, "__file__", None)
    return filename is None or _library_file(filename)  # no file: built into Python


_GLOBAL_OPS = frozenset(("LOAD_GLOBAL", "LOAD_NAME", "STORE_GLOBAL", "DELETE_GLOBAL"))


@functools.lru_cache(maxsize=4096)
def _names(code: types.CodeType) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The global names a code object reads (by ``LOAD_GLOBAL``), and every name it reads (the
    attributes too: of a module, those are its globals), with those of the code nested in it
    (lambdas, comprehensions, inner functions)."""
    found: dict[str, None] = {}
    names: dict[str, None] = {}
    todo = [code]
    while todo:
        c = todo.pop()
        names.update(dict.fromkeys(c.co_names))
        found.update(dict.fromkeys(i.argval for i in dis.get_instructions(c) if i.opname in _GLOBAL_OPS))
        todo.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    return tuple(found), tuple(names)


#: How a value is read again from what holds it: a closure cell's contents, a dict's entry
#: (globals, a module's or a class's namespace), an attribute, a list's or tuple's item, a
#: container's length, an instance's attribute in its ``__dict__``, or its number of them.
CELL, GET, ATTR, ITEM, LEN, VARS, VARSLEN = range(7)


def _item(holder: Any, key: int) -> Any:
    return holder[key] if key < len(holder) else _ABSENT


def _var(holder: Any, key: Any) -> Any:
    space = getattr(holder, "__dict__", None)
    if not isinstance(space, dict):
        return _ABSENT
    return space.get(key, _ABSENT) if key is not None else len(space)


def _contents(cell: Any) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # a cell not bound yet
        return _ABSENT


def _reader(holder: Any, how: int, key: Any) -> Callable[[], Any]:
    """A call that reads the value again (a partial of a builtin where it can: the check runs at
    every call of a transform)."""
    if how == GET:
        return functools.partial(holder.get, key, _ABSENT)
    if how == CELL:
        return functools.partial(_contents, holder)
    if how == ATTR:
        return functools.partial(getattr, holder, key, _ABSENT)
    if how == ITEM:
        return functools.partial(_item, holder, key)
    if how == LEN:
        return functools.partial(len, holder)
    return functools.partial(_var, holder, key if how == VARS else None)


def _kind(value: Any) -> tuple[str, Any]:
    """How ``value`` is compared at the next call, and what is kept of it for that: arrays of
    numbers by their bytes, numbers and strings by value, sets by their elements, arrays of
    objects by the identity of each, anything else by identity."""
    if isinstance(value, np.ndarray):
        if value.dtype.kind == "O":
            return "objects", (value.shape, list(value.ravel()))
        return "array", (value.dtype, value.shape, value.tobytes())
    if isinstance(value, _SCALARS):
        return "value", value
    if isinstance(value, (set, frozenset)):
        return "set", frozenset(value)
    return "id", value


def _same(kind: str, now: Any, then: Any) -> bool:
    if kind == "id":
        return now is then
    if kind == "array":
        return (isinstance(now, np.ndarray) and now.dtype == then[0] and now.shape == then[1]
                and now.tobytes() == then[2])
    if kind == "objects":
        return (isinstance(now, np.ndarray) and now.shape == then[0]
                and all(a is b for a, b in zip(now.ravel(), then[1])))
    if kind == "set":
        return isinstance(now, (set, frozenset)) and frozenset(now) == then
    if type(now) is not type(then):  # a number or a string: by value, its sign and nan included
        return False
    if isinstance(now, np.generic):
        return now.tobytes() == then.tobytes()  # type: ignore[no-any-return]
    if isinstance(now, float):
        return now == then and math.copysign(1.0, now) == math.copysign(1.0, then) or now != now and then != then
    if isinstance(now, complex):
        return _same("value", now.real, then.real) and _same("value", now.imag, then.imag)
    return now == then  # type: ignore[no-any-return]


@functools.lru_cache(maxsize=4096)
def _code(code: types.CodeType) -> tuple[bool, tuple[str, ...], tuple[str, ...]]:
    """Whether a code object is a library's, and the names it reads (``_names``)."""
    return (_library_file(code.co_filename), *_names(code))


#: Where a value is read from: (what holds it, how, the key), as ``_reader`` takes them; and
#: a label for messages.
Probe = tuple[Any, int, Any, str]


def _user_type(cls: type) -> bool:
    """Whether instances of ``cls`` hold the user's data (walked), not a library's (identity)."""
    return cls is types.SimpleNamespace or not _library_module(cls.__module__)


def _probes(value: Any, names: tuple[str, ...], where: str) -> tuple[tuple[str, ...], list[Probe]]:
    """Where the state inside ``value`` is read from, and the names read by the code that
    reaches it (a function's: the globals and attributes its code reads)."""
    if isinstance(value, types.FunctionType):
        code = value.__code__
        library, globals_, names = _code(code)
        if library:  # not walked, but what it wraps (``functools.wraps``) may be the user's
            return names, [(value, ATTR, "__wrapped__", where)] if hasattr(value, "__wrapped__") else []
        # defaults only where there are some: set on a function without, they would change nothing
        found: list[Probe] = [(value, ATTR, k, where) for k in ("__defaults__", "__kwdefaults__")
                              if getattr(value, k) is not None]
        found += [(cell, CELL, None, name) for name, cell in zip(code.co_freevars, value.__closure__ or ())]
        found += [(value.__globals__, GET, name, name) for name in globals_]
        return names, found
    if isinstance(value, (list, tuple)):
        items: list[Probe] = [(value, ITEM, k, f"{where}[{k}]") for k in range(len(value))]
        return names, ([(value, LEN, None, where)] if isinstance(value, list) else []) + items
    if isinstance(value, dict):
        return names, [(value, LEN, None, where)] + [(value, GET, k, f"{where}[{k!r:.40}]") for k in list(value)]
    if isinstance(value, types.MethodType):
        return names, [(value, ATTR, "__self__", where), (value, ATTR, "__func__", where)]
    if isinstance(value, functools.partial):
        return names, [(value, ATTR, k, where) for k in ("func", "args", "keywords")]
    if isinstance(value, types.ModuleType):
        if _library_module(value.__name__):
            return names, []
        return names, [(vars(value), GET, name, f"{where}.{name}") for name in names]
    if isinstance(value, type):
        if not _user_type(value):
            return names, []
        return names, [(vars(value), GET, name, f"{where}.{name}") for name in list(vars(value))
                       if not name.startswith("__") or name == "__call__"]
    cls = type(value)
    if cls.__module__.split(".")[0] == _PACKAGE:  # a transform: the function it traces
        return names, [(value, ATTR, "__wrapped__", where)] if hasattr(value, "__wrapped__") else []
    if not _user_type(cls) or isinstance(value, (set, frozenset, np.ndarray)):
        return names, []
    found = [(value, ATTR, "__class__", where)]
    space = getattr(value, "__dict__", None)
    if isinstance(space, dict):
        found += [(value, VARSLEN, None, where)] + [(value, VARS, k, f"{where}.{k}") for k in list(space)]
    found += [(value, ATTR, k, f"{where}.{k}") for base in cls.__mro__ for k in getattr(base, "__slots__", ())
              if k not in ("__dict__", "__weakref__") and hasattr(value, k)]
    return names, found


class Captured:
    """The state ``f`` reaches beyond its arguments, as it was when recorded: where each value
    was read from (each object's insides once, depth first, ``DEPTH`` levels at most) and what
    it was."""

    def __init__(self, f: Callable[..., Any], what: str = "the transform") -> None:
        self.probes: list[tuple[Callable[[], Any], str, Any]] = []
        self.labels: list[str] = []
        seen: set[int] = set()
        todo: list[tuple[Any, tuple[str, ...], int, str]] = [(f, (), 0, "")]
        while todo:
            value, names, depth, where = todo.pop()
            if id(value) in seen or depth >= DEPTH:
                continue
            seen.add(id(value))
            read, found = _probes(value, names, where)
            inner = []
            for holder, how, key, label in found:
                if len(self.probes) == BUDGET:
                    warnings.warn(f"{what}: {getattr(f, '__name__', f)!r} reaches more than {BUDGET} values outside "
                                  "its arguments; only the first are checked for changes at each call — pass the "
                                  "data that changes as an argument", RuntimeWarning, stacklevel=4)
                    return
                read_again = _reader(holder, how, key)
                item = read_again()
                kind, then = _kind(item)
                self.probes.append((read_again, kind, then))
                self.labels.append(label or "the function")
                if kind == "id" and item is not _ABSENT:
                    inner.append((item, read, depth + 1, label or where))
            todo += reversed(inner)

    def changed(self) -> str | None:
        """Where the state first differs from the recorded one (a name and a path), or None."""
        for k, (read, kind, then) in enumerate(self.probes):
            now = read()
            if now is not then and not _same(kind, now, then):
                return self.labels[k]
        return None
