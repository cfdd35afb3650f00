"""Dtypes: canonicalization (x64 on/off), JAX's type-promotion lattice, weak types.

>>> from functrax import dtypes
>>> dtypes.promote_types("int8", "uint8")
dtype('int16')
"""
from __future__ import annotations

import functools

import numpy as np

from functrax.config import config

try:  # optional extra: bfloat16
    import ml_dtypes as _ml_dtypes

    bfloat16 = np.dtype(_ml_dtypes.bfloat16).type
except ImportError:  # pragma: no cover - depends on environment
    _ml_dtypes = None
    bfloat16 = None

bool_ = np.bool_
int8, int16, int32, int64 = np.int8, np.int16, np.int32, np.int64
uint8, uint16, uint32, uint64 = np.uint8, np.uint16, np.uint32, np.uint64
float16, float32, float64 = np.float16, np.float32, np.float64
complex64, complex128 = np.complex64, np.complex128

_SHORT = {
    "bool": "bool", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64",
    "complex64": "c64", "complex128": "c128", "float0": "float0",
}

# float0: the dtype of tangents of integer/boolean values (as in JAX).
float0 = np.dtype([("float0", np.void, 0)])

_SUPPORTED = [np.dtype(t) for t in (bool_, int8, int16, int32, int64, uint8, uint16, uint32,
                                     uint64, float16, float32, float64, complex64, complex128)]
if bfloat16 is not None:
    _SUPPORTED.append(np.dtype(bfloat16))
_SUPPORTED_SET = frozenset(_SUPPORTED)

_X64_TO_X32 = {np.dtype(int64): np.dtype(int32), np.dtype(uint64): np.dtype(uint32),
               np.dtype(float64): np.dtype(float32), np.dtype(complex128): np.dtype(complex64)}


def short_name(dtype) -> str:
    """``float32 -> 'f32'`` as printed in jaxprs."""
    dtype = np.dtype(dtype)
    if dtype == float0:
        return "float0"
    return _SHORT.get(dtype.name, dtype.name)


def is_supported(dtype) -> bool:
    return np.dtype(dtype) in _SUPPORTED_SET


def x64_enabled() -> bool:
    return config.enable_x64


@functools.lru_cache(maxsize=None)
def _canonicalize(dtype: np.dtype, x64: bool) -> np.dtype:
    if dtype == float0:
        return dtype
    if dtype not in _SUPPORTED_SET:
        raise TypeError(f"functrax does not support the dtype {dtype}; supported dtypes: "
                        f"{', '.join(sorted(d.name for d in _SUPPORTED))}")
    return dtype if x64 else _X64_TO_X32.get(dtype, dtype)


def canonicalize_dtype(dtype) -> np.dtype:
    """The dtype actually used for ``dtype``: 64-bit types map to 32-bit unless x64 is on.

    Raises:
      TypeError: for dtypes functrax does not support (e.g. strings, objects).
    """
    if type(dtype) is not np.dtype:
        dtype = np.dtype(dtype)
    return _canonicalize(dtype, config.enable_x64)


def default_int_dtype() -> np.dtype:
    return canonicalize_dtype(int64)


def default_float_dtype() -> np.dtype:
    return canonicalize_dtype(float64)


def default_complex_dtype() -> np.dtype:
    return canonicalize_dtype(complex128)


# --- jax.dtypes.itemsize_bits / scalar_type_of ---

def itemsize_bits(dtype) -> int:
    """The number of bits of one element of ``dtype`` (a bool takes 8, as it is stored).

    Raises:
      ValueError: for ``dtype=None``.

    >>> itemsize_bits(np.float32), itemsize_bits("bfloat16"), itemsize_bits(bool)
    (32, 16, 8)
    """
    if dtype is None:
        raise ValueError("dtype cannot be None.")
    itemsize = getattr(dtype, "itemsize", None)  # extended dtypes (PRNG keys) know theirs
    if itemsize is None or isinstance(dtype, type):
        itemsize = np.dtype(dtype).itemsize
    return 8 * int(itemsize)


def scalar_type_of(x) -> type:
    """The Python scalar type (bool, int, float or complex) of the elements of ``x`` (a
    value, an array or a tracer).

    Raises:
      TypeError: for values whose dtype is none of these kinds.

    >>> scalar_type_of(np.float16(1)), scalar_type_of(np.arange(3)), scalar_type_of(True)
    (<class 'float'>, <class 'int'>, <class 'bool'>)
    """
    dt = getattr(x, "dtype", None)
    dt = dtype_and_weak(x)[0] if dt is None else dt
    kind = getattr(dt, "kind", None) if not isinstance(dt, type) else np.dtype(dt).kind
    if bfloat16 is not None and dt == np.dtype(bfloat16):
        return float
    typ = {"b": bool, "i": int, "u": int, "f": float, "c": complex}.get(kind)
    if typ is None:
        raise TypeError(f"Invalid scalar value {x}")
    return typ


def python_scalar_dtype(x) -> np.dtype:
    """Canonical dtype of a Python scalar (bool, int, float, complex)."""
    t = type(x)
    if t is bool:
        return np.dtype(bool_)
    if t is int:
        return default_int_dtype()
    if t is float:
        return default_float_dtype()
    if t is complex:
        return default_complex_dtype()
    raise TypeError(f"{x!r} of type {t.__name__} is not a Python scalar")


_PY_SCALAR_TYPES = (bool, int, float, complex)


def is_python_scalar(x) -> bool:
    return type(x) in _PY_SCALAR_TYPES


class TypePromotionError(ValueError):
    """No implicit promotion path between the dtypes (``numpy_dtype_promotion('strict')``)."""


# --- the promotion lattice (JAX's, "jnp.promote_types") ---
# Nodes are numpy dtypes plus the weak categories "i*", "f*", "c*".
_I, _F, _C = "i*", "f*", "c*"


def _lattice():
    d = np.dtype
    edges = {
        d(bool_): [_I],
        _I: [d(uint8), d(int8)],
        d(uint8): [d(int16), d(uint16)], d(uint16): [d(int32), d(uint32)],
        d(uint32): [d(int64), d(uint64)], d(uint64): [_F],
        d(int8): [d(int16)], d(int16): [d(int32)], d(int32): [d(int64)], d(int64): [_F],
        _F: [_C, d(float16)] + ([d(bfloat16)] if bfloat16 is not None else []),
        d(float16): [d(float32)], d(float32): [d(float64), d(complex64)],
        d(float64): [d(complex128)],
        _C: [d(complex64)], d(complex64): [d(complex128)], d(complex128): [],
    }
    if bfloat16 is not None:
        edges[d(bfloat16)] = [d(float32)]
    upper = {}

    def ub(node):
        if node not in upper:
            s = {node}
            for n in edges[node]:
                s |= ub(n)
            upper[node] = frozenset(s)
        return upper[node]

    for node in edges:
        ub(node)
    return upper


_UPPER = _lattice()


def _strict_lattice():
    """JAX's lattice under ``jax_numpy_dtype_promotion='strict'``: a (strong) dtype promotes
    to nothing else; weakly typed Python scalars take the dtype of their own kind or above
    (an int to any int, float or complex; a float to any float or complex)."""
    nodes = [n for n in _UPPER if not isinstance(n, str)]
    ints = [n for n in nodes if n.kind in "iu"]
    floats = [n for n in nodes if n.kind == "f" or n == np.dtype(bfloat16 or float32)]
    cplx = [n for n in nodes if n.kind == "c"]
    upper = {n: frozenset({n}) for n in nodes}
    upper[_C] = frozenset([_C, *cplx])
    upper[_F] = frozenset([_F, *floats]) | upper[_C]
    upper[_I] = frozenset([_I, *ints]) | upper[_F]
    return upper


_STRICT_UPPER = _strict_lattice()


def _node_str(n) -> str:
    return {_I: "<class 'int'>", _F: "<class 'float'>", _C: "<class 'complex'>"}.get(n, str(n))


def _node(dtype: np.dtype, weak: bool):
    if not weak:
        return dtype
    kind = dtype.kind
    if kind in "iu":
        return _I
    if kind == "f" or dtype == np.dtype(bfloat16 or float32):
        return _F
    if kind == "c":
        return _C
    return dtype  # weak bool behaves as bool


@functools.lru_cache(maxsize=4096)
def _join(nodes: tuple, strict: bool = False):
    upper = _STRICT_UPPER if strict else _UPPER
    common = functools.reduce(frozenset.intersection, (upper[n] for n in nodes))
    # the least upper bound is the common bound whose own upper set contains all others
    for c in common:
        if upper[c] >= common:
            return c
    if strict:
        names = tuple(_node_str(n) for n in nodes)
        raise TypePromotionError(
            f"Input dtypes {names} have no available implicit dtype promotion path when "
            "jax_numpy_dtype_promotion=strict. Try explicitly casting inputs to the desired "
            "output type, or set jax_numpy_dtype_promotion=standard.")
    raise TypeError(f"no common type for {nodes}")  # pragma: no cover - lattice is complete


def _strict() -> bool:
    return config.read("numpy_dtype_promotion") == "strict"


def _node_to_dtype(node) -> tuple[np.dtype, bool]:
    if node == _I:
        return default_int_dtype(), True
    if node == _F:
        return default_float_dtype(), True
    if node == _C:
        return default_complex_dtype(), True
    return node, False


def promote_types(a, b) -> np.dtype:
    """JAX's ``promote_types``: the lattice join of two (strong) dtypes, not canonicalized.

    >>> promote_types("uint8", "int8")
    dtype('int16')
    """
    node = _join((np.dtype(a), np.dtype(b)), _strict())
    if node == _F:
        return np.dtype(float64)
    return node


def result_dtype_and_weak(*pairs: tuple) -> tuple[np.dtype, bool]:
    """Join ``(dtype, weak_type)`` pairs; returns the canonical result dtype and weakness."""
    return _result_cached(pairs, config.enable_x64, _strict())


@functools.lru_cache(maxsize=4096)
def _result_cached(pairs, x64, strict=False):
    nodes = tuple(_node(np.dtype(dt), w) for dt, w in pairs)
    node = nodes[0] if len(nodes) == 1 else _join(nodes, strict)
    dtype, weak = _node_to_dtype(node)
    return canonicalize_dtype(dtype), weak


def dtype_and_weak(x) -> tuple[np.dtype, bool]:
    """``(dtype, weak_type)`` of a Python scalar, numpy value, Array or tracer."""
    aval = getattr(x, "aval", None)
    if aval is not None:
        return aval.dtype, aval.weak_type
    if type(x) in _PY_SCALAR_TYPES:
        return python_scalar_dtype(x), type(x) is not bool
    if isinstance(x, (np.ndarray, np.generic)):
        return canonicalize_dtype(x.dtype), False
    if isinstance(x, (np.dtype, type, str)):
        return canonicalize_dtype(x), False
    raise TypeError(f"cannot determine the dtype of {type(x).__name__} value {x!r}")


def result_type(*args, return_weak_type_flag: bool = False):
    """JAX's ``result_type``: promote the dtypes of values and dtypes (weak scalars included).

    >>> import numpy as np
    >>> result_type(np.int8(1), 1)
    dtype('int8')
    """
    if not args:
        raise ValueError("at least one array or dtype is required")
    dtype, weak = result_dtype_and_weak(*(dtype_and_weak(a) for a in args))
    return (dtype, weak) if return_weak_type_flag else dtype


def issubdtype(a, b) -> bool:
    if bfloat16 is not None:
        if a is bfloat16 or (not isinstance(a, type) and np.dtype(a) == np.dtype(bfloat16)):
            return b in (np.floating, np.inexact, np.number, np.generic) or b is bfloat16 or (
                not isinstance(b, type) and np.dtype(b) == np.dtype(bfloat16))
    return np.issubdtype(a, b)


def is_float(dtype) -> bool:
    return issubdtype(dtype, np.floating)


def is_inexact(dtype) -> bool:
    return issubdtype(dtype, np.inexact)


def is_int(dtype) -> bool:
    return np.dtype(dtype).kind in "iu"


def finfo(dtype):
    if bfloat16 is not None and np.dtype(dtype) == np.dtype(bfloat16):
        return _ml_dtypes.finfo(bfloat16)
    return np.finfo(dtype)


def iinfo(dtype):
    return np.iinfo(dtype)
