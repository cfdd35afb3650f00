"""``Array``: an eager, immutable array (a numpy buffer on the host).

An array of an extended dtype (a typed PRNG key array, dtype ``key<fry>``) holds its
*physical* buffer (``uint32[..., 2]``) under its logical aval (``key<fry>[...]``): it prints
as JAX prints it (``Array((), dtype=key<fry>) overlaying:`` and the data on the next line)
and cannot be converted to numpy (``random.key_data`` gives the data).
"""
from __future__ import annotations

import numpy as np

from functrax import dtypes
from functrax.core.avals import ShapedArray
from functrax.core.device import Device


EXTENDED_TO_NUMPY_MSG = ("functrax array with PRNGKey dtype cannot be converted to a NumPy array. "
                         "Use functrax.random.key_data(arr) if you wish to extract the "
                         "underlying integer array.")

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
    size = property(lambda self: self.aval.size)
    weak_type = property(lambda self: self.aval.weak_type)
    nbytes = property(lambda self: self._value.nbytes)

    def _extended(self) -> bool:
        return isinstance(self.aval.dtype, dtypes.ExtendedDType)

    def _scalar_value(self):
        if isinstance(self.aval.dtype, dtypes.ExtendedDType):
            raise TypeError(EXTENDED_TO_NUMPY_MSG)
        return self._value

    def __array__(self, dtype=None, copy=None):
        v = self._scalar_value()
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
        v = self._scalar_value()
        if v.size != 1:
            raise ValueError("The truth value of an array with more than one element is "
                             "ambiguous. Use a.any() or a.all()")
        return bool(v)

    def __int__(self):
        return int(self._scalar_value())

    def __float__(self):
        return float(self._scalar_value())

    def __complex__(self):
        return complex(self._scalar_value())

    def __index__(self):
        v = self._scalar_value()
        if v.ndim or v.dtype.kind not in "iub":
            raise TypeError("only integer scalar arrays can be converted to a scalar index")
        return int(v)

    def __len__(self):
        if not self.aval.shape:
            raise TypeError("len() of unsized object")
        return self.aval.shape[0]

    def __iter__(self):
        if not self.aval.shape:
            kind = "key array" if self._extended() else "array"
            raise TypeError(f"iteration over a 0-d {kind}")
        row = self.aval.update(shape=self.aval.shape[1:])
        v = self._value
        if v.ndim == 1:  # numpy would yield scalars: 0-d views instead
            return (Array._make(v[i:i + 1].reshape(()), row) for i in range(v.shape[0]))
        return (Array._make(r, row) for r in v)

    def __setitem__(self, idx, value):
        raise TypeError(IMMUTABLE_MSG.format("Array"))

    def __hash__(self):
        raise TypeError("unhashable type: 'Array'")

    def __format__(self, spec):
        if self._extended():
            return format(repr(self), spec)
        return format(self._value.item(), spec) if self._value.ndim == 0 else format(
            self._value, spec)

    def item(self, *args):
        return self._scalar_value().item(*args)

    def tolist(self):
        return self._scalar_value().tolist()

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
        if self._extended():
            return (rebuild_array, (np.asarray(self._value), self.aval))
        return (Array, (self._value, None, self.aval.weak_type))

    def __repr__(self):
        if self._extended():  # as JAX prints a key array: its shape, then its data
            return (f"Array({self.aval.shape}, dtype={self.aval.dtype.name}) overlaying:\n"
                    f"{np.asarray(self._value)}")
        v = self._value
        weak = ", weak_type=True" if self.aval.weak_type else ""
        name = self.dtype.name
        if v.size == 0 and v.shape != (0,):
            body = f"[], shape={v.shape}"
        else:
            body = np.array2string(v, separator=", ", prefix="Array(")  # numpy printoptions
        return f"Array({body}, dtype={name}{weak})"

    def __str__(self):
        if self._extended():
            return repr(self)
        return str(self._value)


def rebuild_array(value: np.ndarray, aval: ShapedArray) -> Array:
    """An Array of ``aval`` over ``value`` (its physical buffer): unpickling."""
    return Array._make(value, aval)


def to_numpy_value(x, aval: ShapedArray) -> np.ndarray:
    """A numpy array for an eager argument (Array, numpy value or Python scalar)."""
    if type(x) is Array:
        return x._value
    return np.asarray(x, aval.dtype)
