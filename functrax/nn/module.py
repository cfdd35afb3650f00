"""``Module``: neural-network layers as immutable pytrees (the design of Equinox).

A subclass declares its fields with class annotations; it becomes a dataclass (a custom
``__init__`` may assign each field once, ``self.weight = ...``) that is frozen after
``__init__`` and registered with :mod:`functrax.tree_util` with keys (paths read ``.weight``).
A field is a *child* (its arrays are leaves) when it holds arrays, tracers or sub-modules
(possibly in lists/tuples/dicts); it is *static* (aux data of the treedef, so part of a jit
cache key) when declared with ``field(static=True)`` or when its value holds no array and no
module (ints, strings, None, activation functions, tuples of ints). The split is decided once,
when the module is built, and kept by every tree transform, so ``jit``, ``grad``, ``vmap``
and ``pmap`` take a model directly.

>>> import functrax.numpy as fnp
>>> class Scale(Module):
...     factor: object
...     name: str = "scale"
...     def __call__(self, x):
...         return self.factor * x
>>> s = Scale(fnp.array(2.0))
>>> s
Scale(factor=f32[], name='scale')
>>> s(fnp.ones(2))
Array([2., 2.], dtype=float32)
"""
from __future__ import annotations

import dataclasses

import numpy as np

from functrax import core, dtypes, tree_util
from functrax import numpy as fnp

__all__ = ["Module", "cast", "combine", "count_params", "field", "is_array", "is_inexact_array",
           "partition"]

_INIT = "_ftx_initialising"   # present in an instance's __dict__ while its __init__ runs
_STATIC = "_ftx_static"       # per instance: the names of its static fields (a tuple)


def field(*, static: bool = False, **kwargs):
    """A Module field (``dataclasses.field``); ``static=True`` makes it treedef aux data.

    Args:
      static: keep the value in the treedef (hashable; never traced, never differentiated).
      **kwargs: passed to ``dataclasses.field`` (``default``, ``default_factory``, ...).

    Returns:
      a ``dataclasses.Field``.

    >>> class Tagged(Module):
    ...     tag: str = field(static=True, default="t")
    >>> Tagged().tag
    't'
    """
    metadata = dict(kwargs.pop("metadata", None) or {})
    metadata["static"] = static
    return dataclasses.field(metadata=metadata, **kwargs)


def is_array(x) -> bool:
    """Whether ``x`` is an array leaf: a functrax Array, a tracer, a numpy array or scalar.

    >>> is_array(fnp.ones(2)), is_array(1.0)
    (True, False)
    """
    return isinstance(x, (core.Array, np.ndarray, np.generic))


def is_inexact_array(x) -> bool:
    """Whether ``x`` is an array of a floating or complex dtype (a trainable parameter).

    >>> is_inexact_array(fnp.ones(2)), is_inexact_array(fnp.arange(2))
    (True, False)
    """
    return is_array(x) and dtypes.is_inexact(core.get_aval(x).dtype)


def _is_module(x) -> bool:
    return isinstance(x, Module)


def _is_dynamic(value) -> bool:
    """Whether a field value holds an array or a module somewhere (then it is a child)."""
    return any(is_array(v) or _is_module(v)
               for v in tree_util.tree_leaves(value, is_leaf=_is_module))


class _ModuleMeta(type):
    """Runs ``__init__`` with assignment allowed, then freezes the instance and decides
    which of its fields are static."""

    def __call__(cls, *args, **kwargs):
        self = cls.__new__(cls)
        object.__setattr__(self, _INIT, True)
        try:
            cls.__init__(self, *args, **kwargs)
        finally:
            object.__delattr__(self, _INIT)
        _finish(self)
        return self


def _finish(self):
    cls = type(self)
    for f in dataclasses.fields(cls):
        if f.name in self.__dict__:
            continue
        if f.default is not dataclasses.MISSING:
            object.__setattr__(self, f.name, f.default)
        elif f.default_factory is not dataclasses.MISSING:
            object.__setattr__(self, f.name, f.default_factory())
        else:
            raise ValueError(f"{cls.__name__}.__init__ did not set the field {f.name!r}; "
                             f"assign self.{f.name} = ... in __init__ or give it a default.")
    static = []
    for f in dataclasses.fields(cls):
        value = self.__dict__[f.name]
        if f.metadata.get("static", False):
            if _is_dynamic(value):
                raise TypeError(f"{cls.__name__}.{f.name} is declared field(static=True) but "
                                f"holds an array or a module ({_short(value)}); arrays must "
                                "be children: drop static=True.")
            static.append(f.name)
        elif not _is_dynamic(value):
            static.append(f.name)
    object.__setattr__(self, _STATIC, tuple(static))


def _flatten(m):
    static = m.__dict__[_STATIC]
    d = m.__dict__
    names = tuple(n for n in type(m)._ftx_fields if n not in static)
    return [d[n] for n in names], (names, tuple((n, d[n]) for n in static))


def _flatten_with_keys(m):
    kids, aux = _flatten(m)
    return [(tree_util.GetAttrKey(n), c) for n, c in zip(aux[0], kids)], aux


def _rebuild(cls, values: dict, static: tuple):
    """A ``cls`` instance with these field values, built without running ``__init__``."""
    self = object.__new__(cls)
    for n, v in values.items():
        object.__setattr__(self, n, v)
    object.__setattr__(self, _STATIC, static)
    return self


def _short(x) -> str:
    if is_array(x):
        return core.get_aval(x).str_short()
    if _is_module(x):
        return repr(x)
    if isinstance(x, (list, tuple)) and not hasattr(x, "_fields"):
        items = [_short(v) for v in x]
        open_, close = "[]" if isinstance(x, list) else "()"
        inner = ", ".join(items)
        if len(inner) > 88 or "\n" in inner:  # one item a line
            return open_ + "\n  " + "".join(_indent(i) + ",\n  " for i in items)[:-2] + close
        return f"({inner},)" if len(x) == 1 and close == ")" else f"{open_}{inner}{close}"
    if isinstance(x, dict):
        return "{" + ", ".join(f"{k!r}: {_short(v)}" for k, v in x.items()) + "}"
    if callable(x) and hasattr(x, "__name__") and not isinstance(x, type):
        return x.__name__
    return repr(x)


def _indent(s: str) -> str:
    return s.replace("\n", "\n  ")


class Module(metaclass=_ModuleMeta):
    """Base class of layers: a frozen dataclass registered as a pytree (see the module doc).

    Subclasses declare fields with annotations and may define ``__init__`` (assigning every
    field once) and ``__call__``. Instances are immutable: build modified copies with
    :func:`tree_at` or ``functrax.tree_util.tree_map``.

    Raises:
      dataclasses.FrozenInstanceError: on assignment after ``__init__``.
      AttributeError: when ``__init__`` assigns a name that is not a declared field.
      ValueError: when ``__init__`` leaves a field without a value or default.

    >>> import functrax.numpy as fnp
    >>> class Affine(Module):
    ...     w: object
    ...     b: object
    ...     def __init__(self, n):
    ...         self.w, self.b = fnp.ones(n), fnp.zeros(n)
    ...     def __call__(self, x):
    ...         return self.w * x + self.b
    >>> Affine(2)
    Affine(w=f32[2], b=f32[2])
    """

    _ftx_fields = ()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        custom = "__init__" in cls.__dict__ or any(
            b.__dict__.get("_ftx_custom_init", False) for b in cls.__mro__[1:])
        dataclasses.dataclass(cls, init=not custom, repr=False, eq=False)
        cls._ftx_custom_init = custom
        cls._ftx_fields = tuple(f.name for f in dataclasses.fields(cls))
        tree_util.register_pytree_with_keys(
            cls, _flatten_with_keys,
            lambda aux, kids: _rebuild(cls, {**dict(zip(aux[0], kids)), **dict(aux[1])},
                                       tuple(n for n, _ in aux[1])),
            _flatten)

    def __setattr__(self, name, value):
        if _INIT not in self.__dict__:
            raise dataclasses.FrozenInstanceError(
                f"cannot assign {type(self).__name__}.{name}: modules are immutable after "
                f"__init__. Build a modified copy, e.g. functrax.nn.tree_at(lambda m: "
                f"m.{name}, module, new_value).")
        if name not in type(self)._ftx_fields:
            raise AttributeError(f"{type(self).__name__}.__init__ assigns {name!r}, which is "
                                 f"not a field; declare it with a class annotation "
                                 f"(`{name}: ...`) on {type(self).__name__}.")
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        raise dataclasses.FrozenInstanceError(
            f"cannot delete {type(self).__name__}.{name}: modules are immutable.")

    def __repr__(self):
        parts = [f"{n}={_short(self.__dict__.get(n))}" for n in type(self)._ftx_fields]
        one_line = f"{type(self).__name__}({', '.join(parts)})"
        if len(one_line) <= 100 and "\n" not in one_line:
            return one_line
        body = ",\n  ".join(_indent(p) for p in parts)
        return f"{type(self).__name__}(\n  {body}\n)"


# --- filtering and counting ---


def partition(tree, filter=is_array, *, is_leaf=None):
    """Split ``tree`` into two trees of the same structure: the leaves ``filter`` selects, and
    the others; the leaves not kept are ``None``. Undo with :func:`combine`.

    Args:
      tree: a pytree (a model).
      filter: a predicate on leaves (default :func:`is_array`).
      is_leaf: as ``tree_util.tree_map``.

    Returns:
      ``(selected, rest)``.

    >>> params, static = partition((fnp.ones(2), 3))
    >>> params[1] is None, static[0] is None
    (True, True)
    """
    if not callable(filter):
        raise TypeError(f"partition: filter must be a predicate on leaves, got {filter!r}.")
    sel = tree_util.tree_map(lambda x: x if filter(x) else None, tree, is_leaf=is_leaf)
    rest = tree_util.tree_map(lambda x: None if filter(x) else x, tree, is_leaf=is_leaf)
    return sel, rest


def _first_not_none(*xs):
    for x in xs:
        if x is not None:
            return x
    return None


def combine(*trees, is_leaf=None):
    """Merge trees of the same structure (as :func:`partition` returns): each leaf is the
    first non-``None`` one among ``trees``.

    Args:
      *trees: pytrees with the same structure (``None`` standing for a missing leaf).
      is_leaf: an extra leaf predicate (``None`` is always a leaf here).

    Returns:
      the merged pytree.

    Raises:
      ValueError: if the structures differ (from ``tree_util``).

    >>> combine(*partition((fnp.ones(2), 3)))[1]
    3
    """
    if not trees:
        raise TypeError("combine: pass at least one tree.")

    def leaf(x):
        return x is None or (is_leaf is not None and is_leaf(x))
    return tree_util.tree_map(_first_not_none, *trees, is_leaf=leaf)


def count_params(tree) -> int:
    """The number of elements of the floating/complex array leaves of ``tree``.

    >>> count_params({"w": fnp.ones((3, 4)), "b": fnp.zeros(4), "step": fnp.arange(2)})
    16
    """
    return sum(int(np.prod(core.get_aval(x).shape, dtype=np.int64))
               for x in tree_util.tree_leaves(tree) if is_inexact_array(x))


def cast(tree, dtype):
    """``tree`` with its real floating array leaves cast to ``dtype`` (integer, boolean,
    complex and PRNG key leaves are left alone).

    Args:
      tree: a pytree (a model).
      dtype: a floating dtype, e.g. ``functrax.numpy.bfloat16``.

    Returns:
      the cast pytree.

    Raises:
      TypeError: if ``dtype`` is not a floating dtype.

    >>> cast((fnp.ones(2), fnp.arange(2)), fnp.float16)[0].dtype
    dtype('float16')
    """
    if not dtypes.is_float(np.dtype(dtype)):
        raise TypeError(f"cast: dtype must be a floating dtype (e.g. functrax.numpy.bfloat16),"
                        f" got {dtype!r}.")

    def one(x):
        if is_array(x) and dtypes.is_float(core.get_aval(x).dtype):
            return fnp.asarray(x).astype(dtype)
        return x
    return tree_util.tree_map(one, tree)

