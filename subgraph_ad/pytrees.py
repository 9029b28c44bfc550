"""Arguments and results as JAX's pytrees: tuples, lists, dicts (by sorted key), namedtuples and
None holding numbers and arrays, taken apart into leaves in JAX's order and put back together
(``flatten``, ``unflatten``), with the checks traced arguments get (``real_leaf``) and the cache
key of static keyword arguments (``static_key``).

>>> leaves, tree = flatten({"w": [1.0, 2.0], "b": (3.0, None)})
>>> leaves
[3.0, [1.0, 2.0]]
>>> unflatten(tree, [30.0, [10.0, 20.0]])
{'b': (30.0, None), 'w': [10.0, 20.0]}
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple, Sequence

import numpy as np


class Tree(NamedTuple):
    """The structure of an argument or a result: a leaf (``meta``: its shape), None, or a tuple,
    list, dict (``meta``: its sorted keys) or namedtuple (``meta``: its class) of subtrees."""

    kind: str
    meta: Any
    children: tuple[Tree, ...] = ()


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


def _container(value: Any) -> tuple[str, Any, list[Any]] | None:
    """A pytree node's kind, meta and items, or None for a leaf."""
    if isinstance(value, dict):
        keys = sorted(value)
        return "dict", tuple(keys), [value[k] for k in keys]
    if isinstance(value, tuple) and hasattr(type(value), "_fields"):
        return "namedtuple", type(value), list(value)
    if isinstance(value, tuple):
        return "tuple", None, list(value)
    if isinstance(value, list) and not (value and all(is_number(v) for v in value)):
        return "list", None, value  # a list of plain numbers is an array, as np.asarray reads it
    return None


#: The containers whose leaves ``unflatten`` and ``leaf_shapes`` take in one step when every
#: child is a leaf (a dict of parameters, a tuple of arrays: the common trees).
_FLAT = frozenset({"dict", "tuple", "list", "namedtuple"})


def _flat(tree: Tree) -> bool:
    return tree.kind in _FLAT and all(c.kind == "leaf" for c in tree.children)


def _build(tree: Tree, items: list[Any]) -> Any:
    if tree.kind == "dict":
        return dict(zip(tree.meta, items))
    if tree.kind == "namedtuple":
        return tree.meta(*items)
    return tuple(items) if tree.kind == "tuple" else list(items)


def flatten(value: Any, where: str = "argument",
            leaf: Callable[[Any, str], tuple[Any, tuple[int, ...]]] | None = None) -> tuple[list[Any], Tree]:
    """The leaves of a pytree in JAX's order and its structure; ``leaf(value, path)`` checks a
    leaf and gives (what to keep, its shape). Iterative, as every walk in the package."""
    leaves: list[Any] = []
    done: list[Tree] = []
    todo: list[tuple[bool, Any, str]] = [(False, value, where)]
    while todo:
        built, item, path = todo.pop()
        if built:
            kind, meta, n = item
            children = tuple(done[len(done) - n:])
            del done[len(done) - n:]
            done.append(Tree(kind, meta, children))
            continue
        if item is None:
            done.append(Tree("none", None))
            continue
        node = _container(item)
        if node is None:
            kept, shape = leaf(item, path) if leaf is not None else (item, np.shape(item))
            leaves.append(kept)
            done.append(Tree("leaf", tuple(shape)))
            continue
        kind, meta, items = node
        todo.append((True, (kind, meta, len(items)), path))
        labels = meta if kind == "dict" else range(len(items))
        todo.extend((False, v, f"{path}[{k!r}]") for k, v in reversed(list(zip(labels, items))))
    return leaves, done[0]


def unflatten(tree: Tree, leaves: Sequence[Any]) -> Any:
    """The pytree of ``tree``'s structure with these leaves, in order (iterative)."""
    if tree.kind == "leaf":  # one array (a gradient's): each one-point call of a transform
        return leaves[0]
    if _flat(tree):  # a flat container (parameters)
        return _build(tree, list(leaves))
    values = iter(leaves)
    done: list[Any] = []
    todo: list[tuple[Tree, bool]] = [(tree, False)]
    while todo:
        node, built = todo.pop()
        if node.kind == "leaf":
            done.append(next(values))
        elif node.kind == "none":
            done.append(None)
        elif not built:
            todo.append((node, True))
            todo.extend((c, False) for c in reversed(node.children))
        else:
            n = len(node.children)
            items = done[len(done) - n:]
            del done[len(done) - n:]
            done.append(_build(node, items))
    return done[0]


def leaf_shapes(tree: Tree) -> list[tuple[int, ...]]:
    """The shapes of a tree's leaves, in order."""
    if tree.kind == "leaf":
        return [tree.meta]
    if _flat(tree):
        return [c.meta for c in tree.children]
    shapes, todo = [], [tree]
    while todo:
        node = todo.pop()
        if node.kind == "leaf":
            shapes.append(node.meta)
        todo.extend(reversed(node.children))
    return shapes


def shown(value: Any) -> str:
    return f"{type(value).__name__} {value!r:.80}"


def real_leaf(what: str) -> Callable[[Any, str], tuple[Any, tuple[int, ...]]]:
    """The leaf check of traced arguments: a real number or an array of real numbers, refused
    before anything is traced or cast (NumPy's cast of a complex array to float drops the
    imaginary part with only a ComplexWarning: a real answer to a question not asked)."""

    def check(value: Any, path: str) -> tuple[Any, tuple[int, ...]]:
        if type(value) is np.ndarray and value.dtype.kind in "biuf":  # the common leaf, checked at once
            return value, value.shape
        dtype = getattr(value, "dtype", None)  # read, not converted: a Dask array stays lazy
        try:
            kind = np.dtype(dtype).kind if dtype is not None else np.asarray(value).dtype.kind
        except (TypeError, ValueError):
            kind = "?"
        if kind == "c" or (kind == "O" and any(isinstance(v, (complex, np.complexfloating))
                                               for v in np.asarray(value).ravel())):
            raise TypeError(f"{what}: {path} is complex ({shown(value)}); complex input is not supported; give a "
                            "real number or an array of real numbers (a complex function is two real ones: "
                            "pass the real and imaginary parts as separate arguments)")
        if kind not in "biufO" or (kind == "O" and not all(is_number(v) or isinstance(v, (bool, np.bool_))
                                                          for v in np.asarray(value).ravel())):
            raise TypeError(f"{what}: {path} must be a real number or an array of real numbers, got {shown(value)}; "
                            "tuples, lists, dicts and None holding them are taken apart (JAX's pytrees)")
        return value, tuple(np.shape(value))

    return check


def static_key(kwargs: dict[str, Any], what: str) -> tuple[Any, ...]:
    """The keyword arguments as part of the cache key: hashable values as they are, arrays by
    their bytes, containers by their items; anything else is refused."""
    parts = []
    for name in sorted(kwargs):
        leaves, tree = flatten(kwargs[name], f"keyword argument {name!r}")
        keys: list[Any] = []
        for v in leaves:
            if isinstance(v, np.ndarray):
                keys.append(("ndarray", v.shape, v.dtype.str, v.tobytes()))
                continue
            try:
                hash(v)
            except TypeError:
                raise TypeError(f"{what}: keyword argument {name!r} is static (part of the cache key, not "
                                f"differentiated), so it must be hashable or an array, got {shown(v)}") from None
            keys.append((type(v), v))
        parts.append((name, tree, tuple(keys)))
    return tuple(parts)
