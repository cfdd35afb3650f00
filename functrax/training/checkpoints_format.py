"""The checkpoint format's mapping between pytrees and manifest entries.

:func:`snapshot` turns a pytree into a :class:`Snapshot`: a JSON description of its structure
and one :class:`Leaf` per leaf, holding its manifest fields and host numpy data (copied when
asked, so an asynchronous save is not affected by later changes to the caller's arrays).
The other way, :func:`python_value`, :func:`to_functrax`, :func:`key_array` and
:func:`build_tree` turn verified manifest entries and data back into leaves and trees. The
files themselves are written and read by :mod:`functrax.training.checkpoints_io`; the public
API is :mod:`functrax.training.checkpoints`.
"""
from __future__ import annotations

import collections
import dataclasses
import functools
import json

import numpy as np

from functrax import dtypes, random, tree_util
from functrax.core import Array, is_concrete_array

try:  # bfloat16 and the other ml_dtypes (an install requirement of functrax)
    import ml_dtypes as _ml_dtypes
except ImportError:  # pragma: no cover - depends on environment
    _ml_dtypes = None

FORMAT_NAME = "functrax-checkpoint"
FORMAT_VERSION = 1
_PY_TYPES = {"bool": bool, "int": int, "float": float, "str": str}


class CheckpointError(ValueError):
    """A checkpoint is incomplete, corrupted, unsafe to read, or does not match the target.

    >>> issubclass(CheckpointError, ValueError)
    True
    """


def where(path) -> str:
    """A key path as ``keystr`` prints it (``<root>`` for the root itself)."""
    return tree_util.keystr(path) or "<root>"


# --- leaves: what each kind of leaf becomes on disk ---


@dataclasses.dataclass
class Leaf:
    """One leaf of a snapshot: its key path, its manifest fields and its host data (the
    array to write, already viewed as its stored dtype; None for a Python scalar)."""
    path: tuple
    info: dict
    data: np.ndarray | None


@dataclasses.dataclass
class Snapshot:
    """A pytree ready to be written: its structure (JSON) and its leaves."""
    structure: dict
    leaves: list


def _is_ml_dtype(dt: np.dtype) -> bool:
    return _ml_dtypes is not None and dt.type.__module__.split(".")[0] == "ml_dtypes"


def _storage_dtype(dt: np.dtype, path, fn: str) -> np.dtype:
    """The dtype a leaf of dtype ``dt`` is stored as: itself for numpy's numeric dtypes, the
    unsigned int of the same width for ml_dtypes (``.npy`` cannot describe them)."""
    if dt.isbuiltin == 1 and dt.kind in "biufc":
        return dt
    if _is_ml_dtype(dt):
        return np.dtype(f"uint{8 * dt.itemsize}")
    raise TypeError(f"{fn}: leaf {where(path)} has dtype {dt}, which a checkpoint cannot hold "
                    "(object, string and structured arrays would need pickle). Convert it to "
                    "a numeric array, or keep it out of the saved tree.")


def dtype_from_name(name, *, what: str) -> np.dtype:
    """The numeric dtype named ``name`` (a numpy builtin or an ml_dtypes type).

    Raises:
      CheckpointError: for any other name (object dtypes included), naming ``what``.
    """
    dt = None
    if isinstance(name, str) and _ml_dtypes is not None and not name.startswith("_"):
        try:
            dt = np.dtype(getattr(_ml_dtypes, name))
        except (AttributeError, TypeError):
            dt = None
    if dt is None and isinstance(name, str):
        try:
            dt = np.dtype(name)
        except TypeError:
            dt = None
    if dt is None or dt.name != name or not (
            (dt.isbuiltin == 1 and dt.kind in "biufc") or _is_ml_dtype(dt)):
        raise CheckpointError(f"{what}: unsupported dtype {name!r} in the manifest (only "
                              "numeric dtypes are restored; this checkpoint was not written "
                              "by functrax or was edited)")
    return dt


def _array_leaf(path, value: np.ndarray, info: dict, fn: str) -> Leaf:
    if not value.dtype.isnative:
        value = value.astype(value.dtype.newbyteorder("="))
    stored = _storage_dtype(value.dtype, path, fn)
    info.update(shape=list(value.shape), dtype=value.dtype.name, stored_dtype=stored.name)
    return Leaf(path, info, value if stored == value.dtype else value.view(stored))


def _python_json(x):
    """A Python scalar as JSON, exactly: floats as ``float.hex`` (nan, inf and -0.0 too)."""
    return x.hex() if type(x) is float else x


def encode_leaf(x, path, *, copy: bool, fn: str) -> Leaf:
    """The :class:`Leaf` of one pytree leaf; ``copy`` copies array data to fresh host memory.

    Raises:
      TypeError: for a traced value or a leaf of an unsupported type or dtype.
    """
    t = type(x)
    if t in (bool, int, float, str):
        info = {"kind": "python", "python_type": t.__name__, "value": _python_json(x)}
        return Leaf(path, info, None)
    if isinstance(x, Array):
        if not is_concrete_array(x):
            raise TypeError(f"{fn}: leaf {where(path)} is a traced value ({t.__name__}): a "
                            "checkpoint holds concrete arrays. Save outside jit/grad/vmap, "
                            "e.g. from the training loop on the values a jitted step returns.")
        if dtypes.issubdtype(x.dtype, dtypes.prng_key):
            info = {"kind": "prng_key", "impl": x.dtype.impl.name, "key_shape": list(x.shape)}
            return _array_leaf(path, np.array(random.key_data(x), copy=True), info, fn)
        info = {"kind": "array", "array_type": "functrax", "weak_type": bool(x.weak_type)}
        return _array_leaf(path, np.array(x, copy=True) if copy else np.asarray(x), info, fn)
    if isinstance(x, np.ndarray):
        info = {"kind": "array", "array_type": "numpy"}
        return _array_leaf(path, np.array(x, copy=True) if copy else x, info, fn)
    if isinstance(x, np.generic):
        return _array_leaf(path, np.asarray(x), {"kind": "numpy_scalar"}, fn)
    raise TypeError(f"{fn}: leaf {where(path)} has type {t.__module__}.{t.__qualname__}, "
                    "which a checkpoint cannot hold. Leaves must be arrays (functrax or "
                    "numpy), numpy scalars, typed PRNG keys or Python bool/int/float/str, in "
                    "dicts, lists, tuples, NamedTuples, None or registered pytree nodes: "
                    "convert the value, or register its type as a pytree node.")


def check_step(step, fn, optional=False):
    """``step`` as a non-negative Python int (None allowed when ``optional``).

    Raises:
      TypeError: for anything else.
    """
    if step is None and optional:
        return None
    if isinstance(step, (np.integer, Array)) and np.ndim(step) == 0:
        step = int(step)
    if type(step) is not int or step < 0:
        raise TypeError(f"{fn}: step must be a non-negative int, got {step!r}")
    return step


# --- structure: the pytree's nodes as JSON ---


def key_json(k, path, fn):
    """A key-path entry as JSON ``[kind, value]``."""
    if isinstance(k, tree_util.DictKey):
        if type(k.key) not in (str, int):
            raise TypeError(f"{fn}: dict key {k.key!r} under {where(path)} has type "
                            f"{type(k.key).__name__}; checkpoints hold dicts with str (or int) "
                            "keys. Convert the keys to strings.")
        return ["dict", k.key]
    if isinstance(k, tree_util.SequenceKey):
        return ["index", k.idx]
    if isinstance(k, tree_util.GetAttrKey):
        return ["attr", k.name]
    if isinstance(k, tree_util.FlattenedIndexKey):
        return ["flat_index", k.key]
    return ["other", str(k)]


def _describe(x, path, leaves, copy, fn):
    """The JSON node of ``x``, appending its leaves (in ``tree_flatten`` order) to ``leaves``."""
    if not tree_util.is_tree_node(x):
        leaves.append(encode_leaf(x, path, copy=copy, fn=fn))
        return {"leaf": len(leaves) - 1}
    if x is None:
        return {"node": "none"}
    pairs, _ = tree_util.flatten_one_level_with_keys(x)
    keys = [key_json(k, path, fn) for k, _ in pairs]
    kids = [_describe(c, path + (k,), leaves, copy, fn) for k, c in pairs]
    t = type(x)
    if t is dict:
        return {"node": "dict", "keys": [k[1] for k in keys], "children": kids}
    if t is list or t is tuple:
        return {"node": t.__name__, "children": kids}
    node = {"node": "namedtuple" if isinstance(x, tuple) and hasattr(x, "_fields") else "custom",
            "type": f"{t.__module__}.{t.__qualname__}", "keys": keys, "children": kids}
    return node


def snapshot(tree, *, copy: bool, fn: str) -> Snapshot:
    """The structure and host data of ``tree`` (data copied when ``copy``).

    Raises:
      TypeError: for unsupported leaves, dict keys or dtypes (naming the leaf's key path).
      ValueError: when two leaves have the same key path string (custom keys).
    """
    leaves: list = []
    structure = _describe(tree, (), leaves, copy, fn)
    seen: dict = {}
    for leaf in leaves:
        p = where(leaf.path)
        if p in seen:
            raise ValueError(f"{fn}: two leaves have the key path {p}; a checkpoint names "
                             "leaves by key path, so give the custom pytree node distinct keys.")
        seen[p] = leaf
    return Snapshot(structure, leaves)


def _json_default(x):
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, np.ndarray) or is_concrete_array(x):
        return np.asarray(x).tolist()
    raise TypeError(f"{type(x).__name__} is not JSON-serializable")


def to_json(value, *, what: str, fn: str):
    """``value`` as plain JSON data (numpy scalars and arrays converted), copied.

    Raises:
      TypeError: if it cannot be written as JSON, naming ``what``.
    """
    if value is None:
        return None
    try:
        return json.loads(json.dumps(value, default=_json_default))
    except (TypeError, ValueError) as e:
        raise TypeError(f"{fn}: {what} must be JSON-serializable (dicts with str keys, lists, "
                        f"str, numbers, bools, None): {e}") from None


def python_value(entry: dict, *, fn: str):
    """The Python scalar of a ``python`` leaf, of its saved type."""
    t, v = _PY_TYPES.get(entry.get("python_type")), entry.get("value")
    try:
        if t is float and type(v) is str:
            return float.fromhex(v)
        if t is not None and t is not float and type(v) is t:
            return v
    except ValueError:
        pass
    raise CheckpointError(f"{fn}: leaf {entry.get('path')}: malformed Python scalar "
                          f"{entry.get('python_type')!r} = {v!r} in the manifest")


# --- rebuilding leaves ---


def describe_entry(entry: dict) -> str:
    """What the checkpoint holds for a leaf, for messages: ``float32[3, 4] (numpy array)``."""
    kind = entry.get("kind")
    if kind == "python":
        return f"Python {entry.get('python_type')}"
    if kind == "prng_key":
        return f"PRNG key array{entry.get('key_shape')} ({entry.get('impl')})"
    what = {"numpy_scalar": "numpy scalar"}.get(kind, f"{entry.get('array_type')} array")
    return f"{entry.get('dtype')}{entry.get('shape')} ({what})"


def to_functrax(value: np.ndarray, weak_type: bool, where_: str, fn: str):
    """``value`` as a functrax Array of exactly its dtype.

    Raises:
      CheckpointError: if the dtype is not canonical now (64-bit with x64 disabled).
    """
    if dtypes.canonicalize_dtype(value.dtype) != value.dtype:
        raise CheckpointError(f"{fn}: {where_} holds {value.dtype} data but 64-bit types are "
                              "disabled: enable them (functrax.config.update('enable_x64', "
                              "True)) or restore into a numpy target.")
    if weak_type:
        return Array(value, weak_type=True)
    from functrax import numpy as fnp  # the public API layer, as this package
    return fnp.asarray(value)


def key_array(data: np.ndarray, entry: dict, fn: str):
    impl = entry.get("impl")
    if impl not in dtypes.PRNG_IMPLS:
        raise CheckpointError(f"{fn}: leaf {entry.get('path')} is a key array of the PRNG "
                              f"implementation {impl!r}, which this functrax does not have "
                              f"(it has {sorted(dtypes.PRNG_IMPLS)})")
    from functrax import numpy as fnp
    return random.wrap_key_data(fnp.asarray(data), impl=impl)


# --- rebuilding the structure (no target) ---


@functools.lru_cache(maxsize=None)
def _namedtuple_type(name: str, fields: tuple):
    """A namedtuple class standing in for a saved NamedTuple (one per name and fields)."""
    return collections.namedtuple(name, fields)


def _build(node, leaves):
    if "leaf" in node:
        return leaves[node["leaf"]]
    kind = node["node"]
    if kind == "none":
        return None
    kids = [_build(c, leaves) for c in node["children"]]
    if kind == "dict":
        return dict(zip(node["keys"], kids, strict=True))
    if kind == "list":
        return kids
    if kind == "tuple":
        return tuple(kids)
    keys = node["keys"]
    if kind == "namedtuple":
        name = node["type"].rpartition(".")[2]
        try:
            return _namedtuple_type(name, tuple(k[1] for k in keys))(*kids)
        except (ValueError, TypeError):  # names that are not identifiers
            return tuple(kids)
    if kind == "custom":  # a registered node: its keyed children as a dict, else a list
        if all(k[0] in ("dict", "attr") for k in keys):
            return dict(zip((k[1] for k in keys), kids, strict=True))
        return kids
    raise ValueError(f"unknown node kind {kind!r}")


def build_tree(structure: dict, leaves: list, *, where_: str, fn: str):
    """The tree of dicts/lists/tuples (and namedtuple look-alikes) described by ``structure``.

    Raises:
      CheckpointError: if the structure is malformed.
    """
    try:
        return _build(structure, leaves)
    except (KeyError, TypeError, IndexError, ValueError) as e:
        raise CheckpointError(f"{fn}: the manifest of {where_} has a malformed 'structure' "
                              f"({type(e).__name__}: {e})") from None


__all__ = ["CheckpointError", "FORMAT_NAME", "FORMAT_VERSION", "Leaf", "Snapshot",
           "build_tree", "check_step", "describe_entry", "dtype_from_name", "encode_leaf",
           "key_array", "key_json", "python_value", "snapshot", "to_functrax", "to_json",
           "where"]
