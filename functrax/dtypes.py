"""Dtypes: canonicalization (x64 on/off), JAX's type-promotion lattice, weak types, and the
extended dtypes (typed PRNG keys: ``key<fry>``).

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
    """``float32 -> 'f32'`` as printed in jaxprs (an extended dtype prints its name)."""
    if isinstance(dtype, ExtendedDType):
        return dtype.name
    dtype = np.dtype(dtype)
    if dtype == float0:
        return "float0"
    return _SHORT.get(dtype.name, dtype.name)


def is_supported(dtype) -> bool:
    """Whether ``dtype`` is one of the numeric dtypes (extended dtypes are not)."""
    if isinstance(dtype, ExtendedDType):
        return False
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
        if isinstance(dtype, ExtendedDType):
            return dtype
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
    if any(isinstance(dt, ExtendedDType) for dt, _ in pairs):
        return _extended_result(pairs)
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
    if isinstance(x, (np.dtype, type, str, ExtendedDType)):
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
    """JAX's ``issubdtype``: numpy's, plus bfloat16 and the extended dtypes.

    >>> issubdtype(key_dtype(), prng_key), issubdtype(key_dtype(), np.integer)
    (True, False)
    """
    try:
        return _SUBDTYPE[a, b]
    except (KeyError, TypeError):  # not seen yet, or unhashable
        pass
    r = _issubdtype(a, b)
    if len(_SUBDTYPE) < 4096:
        try:
            _SUBDTYPE[a, b] = r
        except TypeError:
            pass
    return r


_SUBDTYPE: dict = {}  # (a, b) -> issubdtype(a, b): numpy's takes microseconds per call


def _issubdtype(a, b) -> bool:
    if _involves_extended(a) or _involves_extended(b):
        return _issubdtype_extended(a, b)
    if bfloat16 is not None:
        if _is_bfloat16(a):
            return b in (np.floating, np.inexact, np.number, np.generic) or _is_bfloat16(b)
    return np.issubdtype(a, b)


def _is_bfloat16(x) -> bool:
    """``x`` names bfloat16: the ml_dtypes class, its dtype, or a class with that ``dtype``
    (``functrax.numpy.bfloat16``); numpy's abstract classes (``np.floating``) do not."""
    if x is bfloat16:
        return True
    if isinstance(x, type) and issubclass(x, np.generic):
        return False
    try:
        return np.dtype(x) == np.dtype(bfloat16)
    except TypeError:
        return False


def is_float(dtype) -> bool:
    return issubdtype(dtype, np.floating)


def is_inexact(dtype) -> bool:
    return issubdtype(dtype, np.inexact)


def is_int(dtype) -> bool:
    return not isinstance(dtype, ExtendedDType) and np.dtype(dtype).kind in "iu"


def finfo(dtype):
    if bfloat16 is not None and np.dtype(dtype) == np.dtype(bfloat16):
        return _ml_dtypes.finfo(bfloat16)
    return np.finfo(dtype)


def iinfo(dtype):
    return np.iinfo(dtype)


# --- extended dtypes: element types that are not numpy dtypes (typed PRNG keys) ---


class extended(np.generic):
    """Scalar class of the extended dtypes, for ``issubdtype`` (never instantiated).

    >>> from functrax import random
    >>> issubdtype(random.key(0).dtype, extended)
    True
    """


class prng_key(extended):
    """Scalar class of the PRNG key dtypes, for ``issubdtype`` (never instantiated).

    >>> from functrax import random
    >>> issubdtype(random.key(0).dtype, prng_key)
    True
    """


class ExtendedDType:
    """An element type whose elements are arrays of a numpy dtype: each element of an array
    of this dtype is stored as ``physical_shape`` values of ``physical_dtype`` (its
    *physical* representation, trailing the array's own shape).

    Subclasses set ``type`` (the scalar class, a subclass of :class:`extended`), ``name``,
    ``physical_shape`` and ``physical_dtype``. Avals carry the extended dtype; the buffers
    behind arrays, and everything below the lowering boundary, are physical.
    """

    type = extended
    kind = "V"  # opaque (as numpy's void): never one of the numeric kinds "biufc"
    name = "extended"
    physical_shape: tuple = ()
    physical_dtype = np.dtype(np.uint8)

    @property
    def itemsize(self) -> int:
        size = 1
        for d in self.physical_shape:
            size *= d
        return size * self.physical_dtype.itemsize

    def __repr__(self):
        return self.name

    __str__ = __repr__


class PRNGImpl:
    """A PRNG implementation as key arrays know it: its name, its short tag (printed in the
    key dtype ``key<tag>`` and in jaxprs: ``random_wrap[impl=fry]``) and the shape of one
    key's uint32 data. The algorithm itself (seed, split, fold_in, random_bits) lives with
    the PRNG primitives (``functrax/primitives/prng_impl.py``)."""

    __slots__ = ("name", "tag", "key_shape")

    def __init__(self, name: str, tag: str, key_shape: tuple):
        self.name, self.tag, self.key_shape = name, tag, tuple(key_shape)

    def __eq__(self, other):
        return type(other) is PRNGImpl and other.name == self.name

    def __hash__(self):
        return hash(self.tag)

    def __str__(self):
        return self.tag

    def __repr__(self):
        return f"PRNGImpl({self.name!r}, tag={self.tag!r}, key_shape={self.key_shape})"


THREEFRY2X32 = PRNGImpl("threefry2x32", "fry", (2,))
# name -> implementation (JAX's ``prng.prngs``); functrax implements JAX's default only
PRNG_IMPLS = {THREEFRY2X32.name: THREEFRY2X32}


class KeyDType(ExtendedDType):
    """The dtype of typed PRNG key arrays of one implementation: ``key<fry>`` for
    threefry2x32, whose keys are physically ``uint32[2]``.

    >>> k = key_dtype()
    >>> k, k.itemsize, k.physical_shape
    (key<fry>, 8, (2,))
    """

    type = prng_key
    physical_dtype = np.dtype(np.uint32)
    __slots__ = ("impl", "name", "physical_shape")

    def __init__(self, impl: PRNGImpl):
        self.impl = impl
        self.name = f"key<{impl.tag}>"
        self.physical_shape = impl.key_shape

    def __eq__(self, other):
        return type(other) is KeyDType and other.impl == self.impl

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash((KeyDType, self.impl))

    def __reduce__(self):
        return (key_dtype, (self.impl,))


_KEY_DTYPES: dict = {}


def key_dtype(impl: PRNGImpl = THREEFRY2X32) -> KeyDType:
    """The key dtype of ``impl`` (one object per implementation)."""
    dt = _KEY_DTYPES.get(impl)
    if dt is None:
        dt = _KEY_DTYPES[impl] = KeyDType(impl)
    return dt


def is_extended(dtype) -> bool:
    """Whether ``dtype`` is an extended dtype (e.g. a PRNG key dtype)."""
    return isinstance(dtype, ExtendedDType)


def _involves_extended(x) -> bool:
    return isinstance(x, ExtendedDType) or (isinstance(x, type) and issubclass(x, extended))


def _issubdtype_extended(a, b) -> bool:
    """``issubdtype`` when an extended dtype or class is involved (as JAX's)."""
    if isinstance(b, type) and issubclass(b, extended):
        if isinstance(a, ExtendedDType):
            return issubclass(a.type, b)
        return isinstance(a, type) and issubclass(a, b)
    if isinstance(b, ExtendedDType):
        return isinstance(a, ExtendedDType) and a == b
    if isinstance(a, ExtendedDType):  # against a numpy class: its scalar class's ancestors
        return isinstance(b, type) and issubclass(a.type, b)
    return False  # an extended class (not a dtype) below a numpy dtype or class


def check_conversion(old, new) -> None:
    """``convert_element_type`` to or from an extended dtype: JAX's ValueError (keys do not
    convert; ``random.key_data`` / ``random.wrap_key_data`` do)."""
    if old != new and (isinstance(old, ExtendedDType) or isinstance(new, ExtendedDType)):
        name = lambda d: d.name if isinstance(d, ExtendedDType) else np.dtype(d).name  # noqa: E731
        raise ValueError(f"Cannot convert_element_type from {name(old)} to {name(new)}")


def check_for_prngkeys(fun_name: str, *args) -> None:
    """JAX's check of ``functrax.numpy`` arguments: arrays of differing dtypes where one is
    a PRNG key dtype (``key + 1``) raise TypeError (equal key dtypes are left to the
    primitive, whose abstract evaluation rejects them)."""
    dts = [dtype_and_weak(a)[0] for a in args]
    if len(set(dts)) > 1 and any(isinstance(d, KeyDType) for d in dts):
        raise TypeError(f"{fun_name} does not accept dtypes {', '.join(map(str, dts))}.")


def _extended_result(pairs):
    """Promotion with an extended dtype: only equal dtypes "promote" (to themselves)."""
    dts = {dt for dt, _ in pairs}
    if len(dts) == 1:
        dt = next(iter(dts))
        return dt, len(pairs) == 1 and pairs[0][1]
    bad = next(dt for dt in dts if isinstance(dt, ExtendedDType))
    raise ValueError(f"dtype={bad} is not a valid dtype for JAX type promotion.")
