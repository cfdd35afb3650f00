"""Type annotations for functrax code, as ``jax.typing``.

``ArrayLike`` is what functrax's functions accept as an array argument (a functrax
``Array``, a numpy array or scalar, a Python scalar); ``DTypeLike`` what they accept as a
dtype (a name, a scalar type, a ``numpy.dtype``, or anything with a ``dtype`` attribute).
They are meant for annotations, not for ``isinstance`` checks (use
``isinstance(x, functrax.Array)`` for that), exactly as in JAX.

>>> import numpy as np
>>> import functrax.numpy as fnp
>>> from functrax.typing import ArrayLike, DTypeLike
>>> def scale(x: ArrayLike, dtype: DTypeLike = np.float32) -> functrax.Array:
...     return fnp.asarray(x, dtype) * 2
>>> scale(3)
Array(6., dtype=float32)
"""
from __future__ import annotations

import typing
from typing import Any, Protocol, Union

import numpy as np

from functrax.core import Array

__all__ = ["ArrayLike", "DTypeLike", "DType", "Shape", "SupportsDType"]

DType = np.dtype
Shape = typing.Sequence[int]


@typing.runtime_checkable
class SupportsDType(Protocol):
    """Anything with a ``dtype`` attribute (an array, a ``ShapeDtypeStruct``)."""

    @property
    def dtype(self) -> DType: ...


# what a dtype argument may be: 'float32', np.float32, np.dtype('float32'), x (x.dtype)
DTypeLike = Union[str, type[Any], np.dtype, SupportsDType]

# what an array argument may be (not tracers' own types: they stand in for an Array)
ArrayLike = Union[Array, np.ndarray, np.bool_, np.number, bool, int, float, complex]
