"""Functional updates of module trees: ``tree_at`` (Equinox's) and ``inference_mode``.

>>> tree_at(lambda t: t[0], (1, 2), 7)
(7, 2)
"""
from __future__ import annotations

from functrax.nn.module import _STATIC, _is_dynamic, _is_module, _rebuild, _short

__all__ = ["inference_mode", "tree_at"]


class _Leaf:
    """A stand-in for one leaf (or static value) while ``tree_at`` locates its targets."""
    __slots__ = ()

    def __repr__(self):
        return "<leaf>"


def _label(x, path, table):
    """A copy of ``x`` whose every node is a fresh object, recorded in ``table`` by id."""
    if _is_module(x):
        kids = {n: _label(x.__dict__[n], path + (n,), table) for n in type(x)._ftx_fields}
        new = _rebuild(type(x), kids, x.__dict__[_STATIC])
    elif type(x) in (list, tuple):
        new = type(x)(_label(v, path + (i,), table) for i, v in enumerate(x))
    elif type(x) is dict:
        new = {k: _label(v, path + (k,), table) for k, v in x.items()}
    else:
        new = _Leaf()
    table[id(new)] = (path, new)
    return new


def _get(x, path):
    for p in path:
        x = x.__dict__[p] if _is_module(x) else x[p]
    return x


def _set(x, path, value):
    if not path:
        return value
    head, rest = path[0], path[1:]
    if _is_module(x):
        d = dict(x.__dict__)
        d.pop(_STATIC)
        d[head] = _set(d[head], rest, value)
        static = x.__dict__[_STATIC]
        declared = type(x).__dataclass_fields__[head].metadata.get("static", False)
        if head in static and not declared and _is_dynamic(d[head]):
            static = tuple(n for n in static if n != head)
        return _rebuild(type(x), d, static)
    if isinstance(x, dict):
        return {**x, head: _set(x[head], rest, value)}
    items = list(x)
    items[head] = _set(items[head], rest, value)
    return type(x)(items)


_NOTHING = object()


def tree_at(where, tree, replace=_NOTHING, *, replace_fn=None):
    """A copy of ``tree`` with the node(s) ``where`` selects replaced (Equinox's ``tree_at``).

    Args:
      where: ``tree -> node`` or ``tree -> tuple of nodes``, selecting by attribute and index
        only (e.g. ``lambda m: m.layers[0].weight``); fields, leaves and whole subtrees can
        be selected, static fields included.
      tree: a pytree of modules, lists, tuples and dicts.
      replace: the new node, or a sequence of them when ``where`` selects several.
      replace_fn: instead of ``replace``, ``old node -> new node``.

    Returns:
      the updated copy (``tree`` is left unchanged).

    Raises:
      TypeError: if neither or both of ``replace``/``replace_fn`` are given.
      ValueError: if ``where`` returns something that is not a node of ``tree``, or the
        number of replacements differs from the number of nodes selected.

    >>> t = tree_at(lambda t: t[1]["b"], (1, {"b": 2}), 5)
    >>> t
    (1, {'b': 5})
    """
    if (replace is _NOTHING) == (replace_fn is None):
        raise TypeError("tree_at: pass exactly one of replace=... and replace_fn=....")
    table: dict = {}
    picked = where(_label(tree, (), table))
    single = id(picked) in table
    nodes = [picked] if single else (list(picked) if isinstance(picked, (list, tuple))
                                     else [picked])
    if any(id(n) not in table for n in nodes):
        raise ValueError("tree_at: `where` must return nodes of the tree (or a tuple of "
                         "them), selected by attribute and index only; got "
                         f"{_short(picked)}.")
    paths = [table[id(n)][0] for n in nodes]
    if replace_fn is not None:
        values = [replace_fn(_get(tree, p)) for p in paths]
    elif single:
        values = [replace]
    else:
        values = list(replace)
        if len(values) != len(paths):
            raise ValueError(f"tree_at: `where` selected {len(paths)} nodes but `replace` "
                             f"has {len(values)} values.")
    for p, v in zip(paths, values):
        tree = _set(tree, p, v)
    return tree


def inference_mode(tree, value: bool = True):
    """``tree`` with every module's ``inference`` field set to ``value`` (turns
    :class:`~functrax.nn.Dropout` off, or back on with ``value=False``).

    Args:
      tree: a pytree of modules (a model).
      value: the new ``inference`` flag.

    Returns:
      the updated copy (modules without an ``inference`` field are kept as they are).

    >>> from functrax.nn import Dropout
    >>> inference_mode([Dropout(0.5)])[0].inference
    True
    """
    table: dict = {}
    _label(tree, (), table)
    paths = [p for p, node in table.values()
             if _is_module(node) and "inference" in type(node)._ftx_fields]
    for p in paths:
        tree = _set(tree, p + ("inference",), bool(value))
    return tree
