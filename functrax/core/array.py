"""``Array``: an eager, immutable array (a numpy buffer on the host)."""
from __future__ import annotations

import numpy as np

from functrax import dtypes
from functrax.core.avals import ShapedArray
from functrax.core.device import Device


IMMUTABLE_MSG = ("'{}' object does not support item assignment. functrax arrays are immutable. "
                  "Instead of ``x[idx] = y``, use ``x = x.at[idx].set(y)`` or another .at[] "
                  "method (add, multiply, min, max).")


class _ArrayMeta(type):
    """``isinstance(x, Array)`` also holds for the tracers standing in for arrays (registered
    by the trace module), as ``isinstance(tracer, jax.Array)`` does in JAX. Code that needs a
    concrete array tests ``is_concrete_array``."""

    _virtual: tuple = ()

    def __instancecheck__(cls, x):
        return type.__instancecheck__(cls, x) or (
            cls is Array and isinstance(x, _ArrayMeta._virtual))

    def register_virtual(cls, subclass):
        _ArrayMeta._virtual = (*_ArrayMeta._virtual, subclass)
        return subclass


def is_concrete_array(x) -> bool:
    """Whether ``x`` is an eager ``Array`` (holding a value), not a tracer."""
    return type.__instancecheck__(Array, x)


class Array(metaclass=_ArrayMeta):
    """An eager, immutable array (a numpy buffer on CPU).

    >>> import functrax.numpy as fnp
    >>> fnp.array([1.0, 2.0])
    Array([1., 2.], dtype=float32)
    """

    __slots__ = ("_value", "aval", "__weakref__")
    __array_priority__ = 100

    def __init__(self, value, dtype=None, weak_type=False):
        value = np.asarray(value, dtype=dtype)
        value = np.asarray(value, dtypes.canonicalize_dtype(value.dtype))
        self._value = value
        self.aval = ShapedArray(value.shape, value.dtype, weak_type)

    @staticmethod
    def _make(value: np.ndarray, aval: ShapedArray) -> Array:
        a = object.__new__(Array)
        a._value = value
        a.aval = aval
        return a

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    ndim = property(lambda self: len(self.aval.shape))
    size = property(lambda self: self._value.size)
    weak_type = property(lambda self: self.aval.weak_type)
    nbytes = property(lambda self: self._value.nbytes)

    def __array__(self, dtype=None, copy=None):
        v = self._value
        if type(v) is not np.ndarray:  # a numpy scalar (rules may return one): as 0-d
            v = np.asarray(v)
        if copy:
            return np.array(v, dtype=dtype, copy=True)
        if dtype is not None and np.dtype(dtype) != v.dtype:
            return v.astype(dtype)
        view = v.view()
        view.flags.writeable = False
        return view

    def __bool__(self):
        if self._value.size != 1:
            raise ValueError("The truth value of an array with more than one element is "
                             "ambiguous. Use a.any() or a.all()")
        return bool(self._value)

    def __int__(self):
        return int(self._value)

    def __float__(self):
        return float(self._value)

    def __complex__(self):
        return complex(self._value)

    def __index__(self):
        if self._value.ndim or self._value.dtype.kind not in "iub":
            raise TypeError("only integer scalar arrays can be converted to a scalar index")
        return int(self._value)

    def __len__(self):
        if not self._value.ndim:
            raise TypeError("len() of unsized object")
        return self._value.shape[0]

    def __iter__(self):
        if not self._value.ndim:
            raise TypeError("iteration over a 0-d array")
        row = self.aval.update(shape=self.aval.shape[1:])
        if self._value.ndim == 1:  # numpy would yield scalars: 0-d views instead
            v = self._value
            return (Array._make(v[i:i + 1].reshape(()), row) for i in range(v.shape[0]))
        return (Array._make(v, row) for v in self._value)

    def __setitem__(self, idx, value):
        raise TypeError(IMMUTABLE_MSG.format("Array"))

    def __hash__(self):
        raise TypeError("unhashable type: 'Array'")

    def __format__(self, spec):
        return format(self._value.item(), spec) if self._value.ndim == 0 else format(
            self._value, spec)

    def item(self, *args):
        return self._value.item(*args)

    def tolist(self):
        return self._value.tolist()

    def block_until_ready(self):
        return self

    @property
    def device(self):
        """The device holding the buffer (``CpuDevice(id=0)`` for a host array)."""
        return Device(0)

    def devices(self) -> set:
        """The set of devices holding the buffer."""
        return {self.device}

    def __reduce__(self):
        return (Array, (self._value, None, self.aval.weak_type))

    def __repr__(self):
        v = self._value
        weak = ", weak_type=True" if self.aval.weak_type else ""
        name = self.dtype.name
        if v.size == 0 and v.shape != (0,):
            body = f"[], shape={v.shape}"
        else:
            body = np.array2string(v, separator=", ", prefix="Array(")  # numpy printoptions
        return f"Array({body}, dtype={name}{weak})"

    def __str__(self):
        return str(self._value)


def to_numpy_value(x, aval: ShapedArray) -> np.ndarray:
    """A numpy array for an eager argument (Array, numpy value or Python scalar)."""
    if type(x) is Array:
        return x._value
    return np.asarray(x, aval.dtype)
