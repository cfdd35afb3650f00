"""Assembling and splitting arrays: block, concat (the array API's concatenate) and unstack
(as ``jax.numpy``'s).

>>> import functrax.numpy as fnp
>>> fnp.block([[fnp.eye(2), fnp.zeros((2, 1))], [fnp.ones((1, 2)), fnp.ones((1, 1))]]).shape
(3, 3)
"""
from __future__ import annotations

from functrax import core, lax
from functrax.numpy import shape_ops
from functrax.numpy.creation import asarray
from functrax.numpy.promotion import canonicalize_axis, check_arraylike

__all__ = ["block", "concat", "unstack"]


def _at_least(x, nd):
    """``x`` with leading axes of size 1 up to rank ``nd``."""
    shape = core.get_aval(x).shape
    return x if len(shape) >= nd else lax.reshape(x, (1,) * (nd - len(shape)) + shape)


def _block(xs):
    """``(array, depth)``: nested lists concatenated innermost along the last axis."""
    if isinstance(xs, tuple):
        raise ValueError(f"functrax.numpy.block does not allow tuples, got {xs}")
    if isinstance(xs, list):
        if not xs:
            raise ValueError("functrax.numpy.block does not allow empty list arguments")
        parts, depths = zip(*[_block(x) for x in xs])
        if any(d != depths[0] for d in depths[1:]):
            raise ValueError("Mismatched list depths in functrax.numpy.block")
        rank = max(depths[0], max(core.get_aval(p).ndim for p in parts))
        parts = [_at_least(p, rank) for p in parts]
        return shape_ops.concatenate(parts, axis=-depths[0]), depths[0] + 1
    return asarray(xs), 1


def block(arrays):
    """Assemble an array from nested lists of blocks (numpy's ``block``): the innermost
    lists are joined along the last axis, the next ones along the one before, and so on.

    >>> import functrax.numpy as fnp
    >>> fnp.block([fnp.array([1, 2]), fnp.array([3])])
    Array([1, 2, 3], dtype=int32)
    """
    return _block(arrays)[0]


def concat(arrays, /, *, axis=0):
    """Join a sequence of arrays along ``axis`` (None: flatten first), the array API's name
    for :func:`concatenate`.

    >>> import functrax.numpy as fnp
    >>> fnp.concat([fnp.array([1, 2]), fnp.array([3])])
    Array([1, 2, 3], dtype=int32)
    """
    check_arraylike("concat", *arrays)
    return shape_ops.concatenate(arrays, axis=axis)


def unstack(x, /, *, axis=0):
    """The slices of ``x`` along ``axis``, as a tuple (the inverse of ``stack``).

    >>> import functrax.numpy as fnp
    >>> fnp.unstack(fnp.array([[1, 2], [3, 4]]))
    (Array([1, 2], dtype=int32), Array([3, 4], dtype=int32))
    """
    check_arraylike("unstack", x)
    x = asarray(x)
    nd = core.get_aval(x).ndim
    if nd == 0:
        raise ValueError("Unstack requires arrays with rank > 0, however a scalar array was "
                         "passed.")
    axis = canonicalize_axis(axis, nd, "unstack")
    return tuple(lax.index_in_dim(x, i, axis, keepdims=False)
                 for i in range(core.get_aval(x).shape[axis]))
