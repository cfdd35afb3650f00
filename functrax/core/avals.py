"""Abstract values: ``ShapedArray`` (shape, dtype, weak type) and ``get_aval``.

The dtype of an aval is a numpy dtype or an *extended* dtype (``dtypes.ExtendedDType``, e.g.
the PRNG key dtype ``key<fry>``); :func:`physical_aval` gives the aval of the buffer behind an
array of an extended dtype (its element's physical shape trailing the array's shape).

>>> get_aval(1.0)
ShapedArray(float32[], weak_type=True)
"""
from __future__ import annotations

import math

import numpy as np

from functrax import dtypes


class ShapedArray:
    """The abstract value of an array: shape, dtype, and whether its type is weak.

    >>> ShapedArray((3,), np.float32)
    ShapedArray(float32[3])
    """

    __slots__ = ("shape", "dtype", "weak_type", "_hash", "vma")
    array_abstraction_level = 1

    def __init__(self, shape, dtype, weak_type=False, vma=frozenset()):
        self.shape = tuple(shape)
        self.dtype = dtype if isinstance(dtype, dtypes.ExtendedDType) else np.dtype(dtype)
        self.weak_type = bool(weak_type)
        # the manual mesh axes the value varies over inside a shard_map body with
        # check_vma (JAX's "vma"); empty everywhere else. An annotation: not part of equality
        self.vma = vma
        self._hash = hash((self.shape, self.dtype, self.weak_type))

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: math.prod(self.shape))

    def __eq__(self, other):
        return (type(other) is ShapedArray and self.shape == other.shape
                and self.dtype == other.dtype and self.weak_type == other.weak_type)

    def __hash__(self):
        return self._hash

    def update(self, shape=None, dtype=None, weak_type=None, vma=None) -> ShapedArray:
        return ShapedArray(self.shape if shape is None else shape,
                           self.dtype if dtype is None else dtype,
                           self.weak_type if weak_type is None else weak_type,
                           self.vma if vma is None else vma)

    def strip_weak_type(self) -> ShapedArray:
        return self.update(weak_type=False) if self.weak_type else self

    def str_short(self, short_dtypes=True) -> str:
        name = dtypes.short_name(self.dtype) if short_dtypes else self.dtype.name
        return f"{name}[{','.join(str(d) for d in self.shape)}]"

    def __repr__(self):
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapedArray({self.str_short(short_dtypes=False)}{weak})"

    def __str__(self):  # as JAX: print(functrax.typeof(x)) shows float32[3]
        return self.str_short(short_dtypes=False)


_SCALAR_AVALS: dict = {}


def scalar_aval(dtype, weak):
    """Rank-0 avals are interned: scalars are the most common constants in eager code."""
    key = (dtype, weak, dtypes.x64_enabled())
    aval = _SCALAR_AVALS.get(key)
    if aval is None:
        aval = _SCALAR_AVALS[key] = ShapedArray((), dtypes.canonicalize_dtype(dtype), weak)
    return aval


def typematch(a: ShapedArray, b: ShapedArray) -> bool:
    """Equal up to weak type (JAX's notion of type compatibility)."""
    return a.shape == b.shape and a.dtype == b.dtype


def raise_to_shaped(aval):
    return aval


def physical_aval(aval: ShapedArray) -> ShapedArray:
    """The aval of the buffer behind an array of ``aval`` (``aval`` itself unless its dtype
    is extended: ``key<fry>[3]`` is stored as ``u32[3,2]``).

    >>> physical_aval(ShapedArray((3,), dtypes.key_dtype()))
    ShapedArray(uint32[3,2])
    """
    dt = aval.dtype
    if not isinstance(dt, dtypes.ExtendedDType):
        return aval
    return ShapedArray(aval.shape + dt.physical_shape, dt.physical_dtype)


def is_extended_aval(aval) -> bool:
    """Whether ``aval`` has an extended dtype (its buffer is physical, not of its dtype)."""
    return isinstance(aval.dtype, dtypes.ExtendedDType)


def get_aval(x) -> ShapedArray:
    """The abstract value of an Array, a tracer, a numpy value or a Python scalar.

    Raises:
      TypeError: for values that are not arrays (strings, lists, arbitrary objects).
    """
    aval = getattr(x, "aval", None)
    if type(aval) is ShapedArray:
        return aval
    if isinstance(x, np.generic):
        return scalar_aval(x.dtype, False)
    if isinstance(x, np.ndarray):
        return ShapedArray(x.shape, dtypes.canonicalize_dtype(x.dtype), False)
    if type(x) in (bool, int, float, complex):
        return scalar_aval(dtypes.python_scalar_dtype(x), type(x) is not bool)
    raise TypeError(f"Value {x!r} of type {type(x).__name__} is not a valid functrax type: "
                    "pass arrays (functrax.numpy.asarray(...)), numpy arrays or Python scalars.")
