"""Index helpers of ``functrax.numpy``: nonzero, argwhere, compress, select, ix_, indices, ...

Functions whose result shape depends on values (nonzero, argwhere, compress, extract) need
concrete inputs, or a static ``size=`` (with ``fill_value=``) for traced ones, as in JAX.
"""
from __future__ import annotations

import operator

import numpy as np

from functrax import core, lax
from functrax.core import Array, Tracer
from functrax.errors import ConcretizationTypeError
from functrax.numpy import selection, shape_ops, ufuncs
from functrax.numpy.promotion import (
    asarray_operand, broadcast_shapes_named, broadcast_to_shape, canonicalize_axis,
    check_arraylike, promote_dtypes,
)
from functrax.numpy.indexing import INDEX_DTYPE, concrete_value, concrete_or_error, int_operand
from functrax.primitives.gather_scatter import ScatterDimensionNumbers

__all__ = [
    "nonzero", "argwhere", "flatnonzero", "compress", "extract", "select", "diag_indices",
    "diag_indices_from", "tril_indices", "triu_indices", "tril_indices_from",
    "triu_indices_from", "indices", "ix_", "unravel_index", "ravel_multi_index",
]


# --- nonzero and friends ---


def nonzero(a, *, size=None, fill_value=None):
    """The indices of the nonzero elements of ``a``, one int32 array per dimension.

    The result shape depends on the values, so a traced ``a`` needs a static ``size``: the
    result is truncated or padded (with ``fill_value``, default 0) to that length.

    >>> import functrax.numpy as fnp
    >>> fnp.nonzero(fnp.array([0, 3, 0, 5]))
    (Array([1, 3], dtype=int32),)
    >>> fnp.nonzero(fnp.array([0, 3, 0, 5]), size=3, fill_value=-1)
    (Array([ 1,  3, -1], dtype=int32),)
    """
    check_arraylike("nonzero", a)
    a = asarray_operand(a)
    shape = core.get_aval(a).shape
    if not shape:
        raise ValueError("Calling nonzero on 0d arrays is not allowed. Use "
                         "functrax.numpy.atleast_1d(scalar).nonzero() instead.")
    if fill_value is not None:
        fills = fill_value if isinstance(fill_value, tuple) else (fill_value,) * len(shape)
        if len(fills) != len(shape) or any(np.ndim(f) != 0 for f in fills):
            raise ValueError(f"fill_value must be a scalar or a tuple of length {len(shape)}; "
                             f"got {fill_value}")
    else:
        fills = (0,) * len(shape)
    value = concrete_value(a)
    if size is None:
        if value is None:
            raise ConcretizationTypeError(
                a, "The size argument of functrax.numpy.nonzero must be statically specified "
                   "to use nonzero within transformations. ")
        return tuple(Array(i.astype(INDEX_DTYPE)) for i in np.nonzero(value))
    size = operator.index(size)
    if value is not None and not any(isinstance(f, Tracer) for f in fills):
        out = []
        for i, f in zip(np.nonzero(value), fills):
            i = i[:size].astype(INDEX_DTYPE)
            pad = np.full(size - i.shape[0], np.asarray(concrete_value(f)), INDEX_DTYPE)
            out.append(Array(np.concatenate([i, pad])))
        return tuple(out)
    return _nonzero_traced(a, shape, size, fills)


def _nonzero_traced(a, shape, size, fills):
    """nonzero with a static size: scatter the flat positions of True to their ranks."""
    total = int(np.prod(shape))
    if total == 0 or size == 0:
        return tuple(lax.full((size,), 0, INDEX_DTYPE) for _ in shape)
    flat = lax.reshape(a, (total,))
    mask = flat if core.get_aval(flat).dtype.kind == "b" else ufuncs.not_equal(flat, 0)
    rank = lax.sub(lax.cumsum(lax.convert_element_type(mask, INDEX_DTYPE), 0), np.int32(1))
    target = lax.select(mask, rank, lax.full((total,), size, INDEX_DTYPE))
    positions = lax.scatter(lax.full((size,), 0, INDEX_DTYPE), lax.expand_dims(target, (1,)),
                            lax.iota(INDEX_DTYPE, total),
                            ScatterDimensionNumbers((), (0,), (0,)), mode="drop")
    count = lax.reduce_sum(lax.convert_element_type(mask, INDEX_DTYPE), (0,))
    padding = lax.ge(lax.iota(INDEX_DTYPE, size), count)
    out, stride = [], total
    for n, f in zip(shape, fills):
        stride //= n
        i = lax.rem(lax.div(positions, np.int32(stride)), np.int32(n))
        out.append(selection.where(padding, f, i).astype(INDEX_DTYPE))
    return tuple(out)


def flatnonzero(a, *, size=None, fill_value=None):
    """Indices of the nonzero elements of ``ravel(a)`` (``size`` as in :func:`nonzero`)."""
    check_arraylike("flatnonzero", a)
    return nonzero(shape_ops.ravel(asarray_operand(a)), size=size, fill_value=fill_value)[0]


def argwhere(a, *, size=None, fill_value=None):
    """Indices of the nonzero elements of ``a``, one row per element: shape ``(k, a.ndim)``.

    >>> import functrax.numpy as fnp
    >>> fnp.argwhere(fnp.array([[0, 1], [1, 0]]))
    Array([[0, 1],
           [1, 0]], dtype=int32)
    """
    check_arraylike("argwhere", a)
    a = asarray_operand(a)
    nd = core.get_aval(a).ndim
    result = nonzero(shape_ops.atleast_1d(a), size=size, fill_value=fill_value)
    if nd == 0:
        return lax.full((core.get_aval(result[0]).shape[0], 0), 0, INDEX_DTYPE)
    return shape_ops.stack(result, axis=1)


def compress(condition, a, axis=None, *, size=None, fill_value=0):
    """The slices of ``a`` along ``axis`` where ``condition`` (1-D) is True.

    A traced ``condition`` needs a static ``size`` (padded with ``fill_value``).

    >>> import functrax.numpy as fnp
    >>> fnp.compress(fnp.array([True, False, True]), fnp.array([1, 2, 3]))
    Array([1, 3], dtype=int32)
    """
    check_arraylike("compress", condition, a)
    cond = asarray_operand(condition)
    if core.get_aval(cond).dtype.kind != "b":
        cond = lax.convert_element_type(ufuncs.not_equal(cond, 0), np.bool_)
    if core.get_aval(cond).ndim != 1:
        raise ValueError(f"compress: condition must be a 1D array, got shape "
                         f"{core.get_aval(cond).shape}")
    a = asarray_operand(a)
    if axis is None:
        arr, axis = shape_ops.ravel(a), 0
    else:
        axis = canonicalize_axis(axis, core.get_aval(a).ndim, "compress")
        arr = shape_ops.moveaxis(a, axis, 0)
    n = core.get_aval(arr).shape[0]
    m = core.get_aval(cond).shape[0]
    if m > n:
        extra = concrete_or_error(cond[n:], "compress: a condition longer than the axis must "
                                             "be concrete (its extra entries must be False). ")
        if extra.any():
            raise ValueError("compress: condition contains entries that are out of bounds "
                             f"(condition has length {m}, the axis has size {n})")
        cond = cond[:n]
    elif m < n:
        arr = arr[:m]
    idx = nonzero(cond, size=size, fill_value=m)[0]
    result = arr.at[idx].get(mode="fill", fill_value=fill_value)
    return shape_ops.moveaxis(result, 0, axis) if core.get_aval(result).ndim else result


def extract(condition, arr, *, size=None, fill_value=0):
    """The elements of ``ravel(arr)`` where ``ravel(condition)`` is nonzero."""
    check_arraylike("extract", condition, arr)
    return compress(shape_ops.ravel(asarray_operand(condition)),
                    shape_ops.ravel(asarray_operand(arr)), size=size, fill_value=fill_value)


def select(condlist, choicelist, default=0):
    """Elementwise, the choice of the first True condition (``default`` when none is).

    >>> import functrax.numpy as fnp
    >>> x = fnp.arange(5)
    >>> fnp.select([x < 2, x > 3], [x, x * 10], -1)
    Array([ 0,  1, -1, -1, 40], dtype=int32)
    """
    if len(condlist) != len(choicelist):
        raise ValueError(f"select: condlist must have length equal to choicelist "
                         f"({len(condlist)} vs {len(choicelist)})")
    if len(condlist) == 0:
        raise ValueError("select: condlist must be non-empty")
    check_arraylike("select", *condlist, *choicelist, default)
    default, *choices = promote_dtypes(default, *choicelist)
    out = default
    for cond, choice in reversed(list(zip(condlist, choices))):
        cond = asarray_operand(cond)
        if core.get_aval(cond).dtype.kind != "b":
            cond = ufuncs.not_equal(cond, 0)
        out = selection.where(cond, choice, out)
    shape = broadcast_shapes_named("select", *[np.shape(x) if not isinstance(
        x, (Array, Tracer)) else core.get_aval(x).shape for x in (*condlist, *choices, default)])
    return broadcast_to_shape(asarray_operand(out), shape)


# --- index helpers ---


def _static_int(x, what):
    try:
        return operator.index(x)
    except TypeError:
        raise TypeError(f"{what} must be a static integer, got {x!r}") from None


def diag_indices(n, ndim=2):
    """Indices of the main diagonal of an ``n x ... x n`` array of rank ``ndim``."""
    n, ndim = _static_int(n, "diag_indices: n"), _static_int(ndim, "diag_indices: ndim")
    if n < 0:
        raise ValueError(f"n argument to diag_indices must be nonnegative, got {n}")
    if ndim < 0:
        raise ValueError(f"ndim argument to diag_indices must be nonnegative, got {ndim}")
    return (lax.iota(INDEX_DTYPE, n),) * ndim


def diag_indices_from(arr):
    """:func:`diag_indices` for the shape of ``arr`` (all dimensions equal, rank >= 2)."""
    check_arraylike("diag_indices_from", arr)
    shape = np.shape(arr) if not isinstance(arr, (Array, Tracer)) else core.get_aval(arr).shape
    if len(shape) < 2:
        raise ValueError(f"diag_indices_from: input array must be at least 2-d, got shape "
                         f"{shape}")
    if len(set(shape)) != 1:
        raise ValueError(f"diag_indices_from: all dimensions of input must be of equal length, "
                         f"got shape {shape}")
    return diag_indices(shape[0], len(shape))


def _tri_indices(fn, name, n, k, m):
    n = _static_int(n, f"{name}: n")
    k = _static_int(k, f"{name}: k")
    m = n if m is None else _static_int(m, f"{name}: m")
    return tuple(Array(i.astype(INDEX_DTYPE)) for i in fn(n, k, m))


def tril_indices(n, k=0, m=None):
    """Row and column indices of the lower triangle (diagonal offset ``k``) of an n x m array.

    >>> import functrax.numpy as fnp
    >>> fnp.tril_indices(2)
    (Array([0, 1, 1], dtype=int32), Array([0, 0, 1], dtype=int32))
    """
    return _tri_indices(np.tril_indices, "tril_indices", n, k, m)


def triu_indices(n, k=0, m=None):
    """Row and column indices of the upper triangle (diagonal offset ``k``) of an n x m array."""
    return _tri_indices(np.triu_indices, "triu_indices", n, k, m)


def _tri_from(fn, name, arr, k):
    check_arraylike(name, arr)
    shape = np.shape(arr) if not isinstance(arr, (Array, Tracer)) else core.get_aval(arr).shape
    if len(shape) != 2:
        raise ValueError(f"{name}: input array must be 2-d, got shape {shape}")
    return fn(shape[0], k=k, m=shape[1])


def tril_indices_from(arr, k=0):
    """:func:`tril_indices` for the shape of the 2-D ``arr``."""
    return _tri_from(tril_indices, "tril_indices_from", arr, k)


def triu_indices_from(arr, k=0):
    """:func:`triu_indices` for the shape of the 2-D ``arr``."""
    return _tri_from(triu_indices, "triu_indices_from", arr, k)


def indices(dimensions, dtype=None, sparse=False):
    """An array of the index grids of shape ``(len(dimensions), *dimensions)``.

    >>> import functrax.numpy as fnp
    >>> fnp.indices((2, 3))[1]
    Array([[0, 1, 2],
           [0, 1, 2]], dtype=int32)
    """
    from functrax import dtypes
    dtype = INDEX_DTYPE if dtype is None else dtypes.canonicalize_dtype(dtype)
    dims = tuple(_static_int(d, "indices: dimensions") for d in dimensions)
    nd = len(dims)
    if sparse:
        return tuple(lax.broadcasted_iota(dtype, (1,) * i + (d,) + (1,) * (nd - i - 1), i)
                     for i, d in enumerate(dims))
    if not dims:
        return Array(np.zeros((0,), dtype))
    return shape_ops.stack([lax.broadcasted_iota(dtype, dims, i) for i in range(nd)], 0)


def ix_(*args):
    """Open-mesh index arrays: the i-th 1-D argument reshaped to lie along axis i.

    >>> import functrax.numpy as fnp
    >>> [a.shape for a in fnp.ix_(fnp.array([0, 1]), fnp.array([2, 4, 5]))]
    [(2, 1), (1, 3)]
    """
    check_arraylike("ix_", *args)
    n, out = len(args), []
    for i, a in enumerate(args):
        a = asarray_operand(a)
        if core.get_aval(a).ndim != 1:
            raise ValueError(f"Arguments to functrax.numpy.ix_ must be 1-dimensional, got "
                             f"shape {core.get_aval(a).shape} at position {i}")
        if core.get_aval(a).dtype.kind == "b":
            a = nonzero(a)[0]
        shape = [1] * n
        shape[i] = core.get_aval(a).shape[0]
        if core.get_aval(a).size == 0:
            out.append(lax.full(shape, 0, INDEX_DTYPE))
        else:
            out.append(lax.broadcast_in_dim(a, shape, (i,)))
    return tuple(out)


def unravel_index(indices, shape):
    """Convert flat indices into a tuple of coordinate arrays for ``shape`` (C order).

    Out-of-bound indices are clipped (as JAX); -1 means the last element.

    >>> import functrax.numpy as fnp
    >>> fnp.unravel_index(fnp.array([5, 7]), (2, 4))
    (Array([1, 1], dtype=int32), Array([1, 3], dtype=int32))
    """
    check_arraylike("unravel_index", indices)
    idx = int_operand("unravel_index", indices, "indices")
    try:
        shape = list(shape)
    except TypeError:
        shape = [shape]
    if any(np.ndim(s) != 0 for s in shape):
        raise ValueError("unravel_index: shape should be a scalar or 1D sequence.")
    shape = [_static_int(s, "unravel_index: shape") for s in shape]
    out = [None] * len(shape)
    for i, s in reversed(list(enumerate(shape))):
        idx, out[i] = ufuncs.divmod(idx, s)
    oob_pos, oob_neg = ufuncs.greater(idx, 0), ufuncs.less(idx, -1)
    return tuple(selection.where(oob_pos, s - 1, selection.where(oob_neg, 0, i))
                 for s, i in zip(shape, out))


def ravel_multi_index(multi_index, dims, mode="raise", order="C"):
    """Convert a tuple of coordinate arrays into flat indices for the shape ``dims``.

    Args:
      mode: ``"raise"`` (needs concrete indices), ``"wrap"`` or ``"clip"``.
      order: ``"C"`` (row-major) or ``"F"``.

    >>> import functrax.numpy as fnp
    >>> fnp.ravel_multi_index((fnp.array([1, 1]), fnp.array([1, 3])), (2, 4))
    Array([5, 7], dtype=int32)
    """
    if len(multi_index) != len(dims):
        raise ValueError(f"ravel_multi_index: len(multi_index)={len(multi_index)} != "
                         f"len(dims)={len(dims)}")
    dims = tuple(_static_int(d, "ravel_multi_index: dims") for d in dims)
    check_arraylike("ravel_multi_index", *multi_index)
    arrs = [int_operand("ravel_multi_index", i, "multi_index") for i in multi_index]
    if mode == "raise":
        for i, d in zip(arrs, dims):
            v = concrete_or_error(i, "ravel_multi_index with mode='raise' needs concrete "
                                      "indices; use mode='wrap' or mode='clip' instead. ")
            if np.any((v < 0) | (v >= d)):
                raise ValueError("ravel_multi_index: invalid entry in coordinates array")
    elif mode == "clip":
        arrs = [selection.clip(i, 0, d - 1) for i, d in zip(arrs, dims)]
    elif mode == "wrap":
        arrs = [ufuncs.remainder(i, d) for i, d in zip(arrs, dims)]
    else:
        raise ValueError(f"invalid mode={mode!r}. Expected 'raise', 'wrap', or 'clip'")
    if order == "F":
        strides = np.cumprod((1,) + dims[:-1])
    elif order == "C":
        strides = np.cumprod((1,) + dims[1:][::-1])[::-1]
    else:
        raise ValueError(f"invalid order={order!r}. Expected 'C' or 'F'")
    result = Array(np.zeros((), core.get_aval(arrs[0]).dtype if arrs else INDEX_DTYPE))
    for i, s in zip(arrs, strides):
        result = ufuncs.add(result, ufuncs.multiply(i, int(s)))
    return result
