"""Editing arrays functionally: delete, insert, place, put, put_along_axis, fill_diagonal,
choose, resize, trim_zeros, diag, diagflat, mask_indices (as ``jax.numpy``'s).

JAX arrays are immutable, so the numpy functions that modify their argument in place
(``place``, ``put``, ``put_along_axis``, ``fill_diagonal``) need ``inplace=False`` and
return the updated array, as in JAX.

>>> import functrax.numpy as fnp
>>> fnp.insert(fnp.array([1, 2, 3]), 1, 9)
Array([1, 9, 2, 3], dtype=int32)
"""
from __future__ import annotations

import math
import operator

import numpy as np

from functrax import core, lax
from functrax.numpy import index_tricks, reductions, selection, shape_ops, sorting, ufuncs
from functrax.numpy.creation import asarray, eye, ones, zeros_like
from functrax.numpy.indexing import concrete_or_error
from functrax.numpy.promotion import canonicalize_axis, check_arraylike

__all__ = ["delete", "insert", "place", "put", "put_along_axis", "fill_diagonal", "choose",
           "resize", "trim_zeros", "diag", "diagflat", "mask_indices"]


def _aval(x):
    return core.get_aval(x)


def _along(axis, idx):
    """The index tuple selecting ``idx`` along ``axis``."""
    return (slice(None),) * axis + (idx,)


def _immutable(fun_name, how="return an updated array"):
    return ValueError(f"functrax.numpy.{fun_name} cannot modify arrays in-place, because "
                      f"functrax arrays are immutable. Pass inplace=False to instead {how}.")


def _tile_to_size(x, n):
    """``x`` (1-D) repeated or truncated to length ``n``."""
    m = _aval(x).shape[0]
    if m == n:
        return x
    return shape_ops.tile(x, -(-n // m))[:n] if m else x


# --- delete / insert ---


def delete(arr, obj, axis=None, *, assume_unique_indices=False):
    """``arr`` without the entries ``obj`` along ``axis`` (the flattened array if None).

    Args:
      arr: the array.
      obj: an int, a slice, an int array or a boolean mask of length ``arr.shape[axis]``.
        Int arrays must be concrete (their count fixes the output shape) unless
        ``assume_unique_indices=True``.
      axis: the axis to delete along.
      assume_unique_indices: promise that int indices are unique (traceable then).

    >>> import functrax.numpy as fnp
    >>> fnp.delete(fnp.arange(5), fnp.array([0, 2]))
    Array([1, 3, 4], dtype=int32)
    """
    check_arraylike("delete", arr)
    a = asarray(arr)
    if axis is None:
        a, axis = shape_ops.ravel(a), 0
    axis = canonicalize_axis(axis, _aval(a).ndim, "delete")
    n = _aval(a).shape[axis]
    if isinstance(obj, (int, np.integer)) and not isinstance(obj, (bool, np.bool_)):
        i = canonicalize_axis(obj, n, "delete: obj")
        return shape_ops.concatenate([a[_along(axis, slice(0, i))],
                                      a[_along(axis, slice(i + 1, None))]], axis=axis)
    if isinstance(obj, slice):
        obj, assume_unique_indices = np.arange(n)[obj], True
    check_arraylike("delete", a, obj)
    if assume_unique_indices and _dtype_of(obj).kind in "iu":
        return a[_along(axis, _kept_indices(obj, n))]
    ov = np.asarray(concrete_or_error(obj, "The error arose for the 'obj' array argument of "
                                           "functrax.numpy.delete(); pass "
                                           "assume_unique_indices=True to trace it. "))
    if ov.dtype.kind in "iu":
        mask = np.ones(n, dtype=bool)
        mask[ov] = False
    elif ov.dtype == bool:
        if ov.shape != (n,):
            raise ValueError("delete(arr, obj): for boolean indices, obj must be "
                             f"one-dimensional with length matching specified axis ({n}); "
                             f"got shape {ov.shape}.")
        mask = ~ov
    else:
        raise ValueError(f"delete(arr, obj): got obj.dtype={ov.dtype}; must be integer or "
                         "bool.")
    return a[_along(axis, np.nonzero(mask)[0].astype(np.int32))]


def _dtype_of(x):
    return _aval(x).dtype if isinstance(x, (core.Array, core.Tracer)) else np.asarray(x).dtype


def _kept_indices(obj, n):
    """The indices of ``range(n)`` not in the unique ints ``obj`` (traceable)."""
    o = shape_ops.ravel(asarray(obj))
    o = selection.clip(selection.where(ufuncs.less(o, 0), ufuncs.add(o, n), o), 0, n)
    o = sorting.sort(o)
    k = _aval(o).shape[0]
    o = ufuncs.subtract(o, lax.iota(_aval(o).dtype, k))
    i = lax.iota(_aval(o).dtype, n - k)
    ge = ufuncs.greater_equal(i[None, :], o[:, None])
    return ufuncs.add(i, reductions.sum(ge, axis=0, dtype=_aval(o).dtype))


def insert(arr, obj, values, axis=None):
    """``arr`` with ``values`` inserted before the indices ``obj`` along ``axis``.

    ``obj`` (an int, a slice or a 1-D int array, traceable) gives the positions in the
    original array; ``values`` broadcast to the inserted block.

    >>> import functrax.numpy as fnp
    >>> fnp.insert(fnp.array([[1, 1], [2, 2]]), 1, 5, axis=1)
    Array([[1, 5, 1],
           [2, 5, 2]], dtype=int32)
    """
    check_arraylike("insert", arr, 0 if isinstance(obj, slice) else obj, values)
    a = asarray(arr)
    if axis is None:
        a, axis = shape_ops.ravel(a), 0
    axis = canonicalize_axis(axis, _aval(a).ndim, "insert")
    n = _aval(a).shape[axis]
    idx = asarray(np.arange(*obj.indices(n), dtype=np.int32) if isinstance(obj, slice) else obj)
    if _aval(idx).ndim > 1:
        raise ValueError(f"insert(): obj must be a slice, a one-dimensional array, or a "
                         f"scalar; got {obj}")
    if _aval(idx).dtype.kind not in "iu":
        if _aval(idx).size == 0 and not isinstance(obj, (core.Array, core.Tracer)):
            idx = lax.convert_element_type(idx, np.int32)
        else:
            raise ValueError(f"insert(): index array must be integer typed; got {obj}")
    vals = _values_block(values, a, axis, idx)
    n_ins = _aval(vals).shape[axis]
    if _aval(idx).size == 1:
        idx = lax.broadcast_in_dim(lax.reshape(idx, ()), (n_ins,), ())
    n_ins = np.broadcast_shapes(_aval(idx).shape, (n_ins,))[0]
    idx = selection.clip(selection.where(ufuncs.less(idx, 0), ufuncs.add(idx, n), idx), 0, n)
    order = sorting.argsort(idx)
    values_ind = idx.at[order].add(lax.iota(_aval(idx).dtype, n_ins))
    keep = ones(n + n_ins, dtype=bool).at[values_ind].set(False)
    arr_ind = selection.where(keep, size=n)[0]
    out_shape = list(_aval(a).shape)
    out_shape[axis] += n_ins
    out = zeros_like(a, shape=tuple(out_shape))
    out = out.at[_along(axis, values_ind)].set(vals)
    return out.at[_along(axis, arr_ind)].set(a)


def _values_block(values, a, axis, idx):
    """``values`` as an array of ``a``'s rank and dtype (moved to ``axis`` for scalar obj)."""
    v = asarray(values, dtype=_aval(a).dtype)
    nd = _aval(a).ndim
    if _aval(v).ndim < nd:
        v = lax.reshape(v, (1,) * (nd - _aval(v).ndim) + _aval(v).shape)
    if _aval(idx).ndim == 0:
        v = shape_ops.moveaxis(v, 0, axis)
    return v


# --- in-place numpy functions, functional here ---


def place(arr, mask, vals, *, inplace=True):
    """``arr`` with the positions where ``mask`` is True set to ``vals`` (cycled in order).

    Requires ``inplace=False`` (arrays are immutable).

    >>> import functrax.numpy as fnp
    >>> fnp.place(fnp.zeros(4), fnp.array([1, 0, 1, 1]), fnp.array([5., 6.]), inplace=False)
    Array([5., 0., 6., 5.], dtype=float32)
    """
    check_arraylike("place", arr, mask, vals)
    data, m, v = asarray(arr), asarray(mask), shape_ops.ravel(asarray(vals))
    if inplace:
        raise _immutable("place")
    if _aval(data).size != _aval(m).size:
        raise ValueError(f"place: arr and mask must be the same size, got shapes "
                         f"{_aval(data).shape} and {_aval(m).shape}")
    if not _aval(v).size:
        raise ValueError("place: cannot place values from an empty array")
    if not _aval(data).size:
        return data
    size = _aval(m).size
    idx = selection.where(shape_ops.ravel(m), size=size, fill_value=size)[0]
    v = lax.convert_element_type(_tile_to_size(v, size), _aval(data).dtype)
    return shape_ops.reshape(shape_ops.ravel(data).at[idx].set(v, mode="drop"),
                             _aval(data).shape)


def put(a, ind, v, mode=None, *, inplace=True):
    """``a`` with the flat positions ``ind`` set to ``v`` (cycled); ``mode``: None (drop
    out-of-bound indices), ``"clip"`` or ``"wrap"``. Requires ``inplace=False``.

    >>> import functrax.numpy as fnp
    >>> fnp.put(fnp.zeros((2, 2)), fnp.array([0, 3]), 1.0, inplace=False)
    Array([[1., 0.],
           [0., 1.]], dtype=float32)
    """
    if inplace:
        raise _immutable("put")
    check_arraylike("put", a, ind, v)
    arr, ind, v = asarray(a), shape_ops.ravel(asarray(ind)), shape_ops.ravel(asarray(v))
    if not _aval(arr).size or not _aval(ind).size or not _aval(v).size:
        return arr
    v = _tile_to_size(v, _aval(ind).shape[0])
    size = _aval(arr).size
    if mode is None:
        scatter_mode = "drop"
    elif mode == "clip":
        ind, scatter_mode = selection.clip(ind, 0, size - 1), "promise_in_bounds"
    elif mode == "wrap":
        ind, scatter_mode = ufuncs.remainder(ind, size), "promise_in_bounds"
    elif mode == "raise":
        raise NotImplementedError("The 'raise' mode to functrax.numpy.put is not supported.")
    else:
        raise ValueError(f"put: mode should be one of 'wrap' or 'clip'; got mode={mode!r}")
    flat = shape_ops.ravel(arr).at[ind].set(v, mode=scatter_mode)
    return shape_ops.reshape(flat, _aval(arr).shape)


def put_along_axis(arr, indices, values, axis, inplace=True, *, mode=None):
    """``arr`` with ``values`` put at ``indices`` along ``axis`` (the inverse of
    ``take_along_axis``). Requires ``inplace=False``.

    >>> import functrax.numpy as fnp
    >>> fnp.put_along_axis(fnp.zeros((2, 3)), fnp.array([[1], [2]]), 7.0, axis=1,
    ...                    inplace=False)
    Array([[0., 7., 0.],
           [0., 0., 7.]], dtype=float32)
    """
    if inplace:
        raise ValueError("functrax.numpy.put_along_axis cannot modify arrays in-place, "
                         "because functrax arrays are immutable. Pass inplace=False to "
                         "instead return an updated array.")
    check_arraylike("put_along_axis", arr, indices, values)
    arr, indices, values = asarray(arr), asarray(indices), asarray(values)
    shape0 = _aval(arr).shape
    if axis is None:
        arr, axis = shape_ops.ravel(arr), 0
    if _aval(arr).ndim != _aval(indices).ndim:
        raise ValueError("put_along_axis arguments 'arr' and 'indices' must have same ndim. "
                         f"Got arr.ndim={_aval(arr).ndim} and indices.ndim="
                         f"{_aval(indices).ndim}.")
    axis = canonicalize_axis(axis, _aval(arr).ndim, "put_along_axis")
    try:
        values = shape_ops.broadcast_to(values, _aval(indices).shape)
    except ValueError:
        raise ValueError("put_along_axis argument 'values' must be broadcastable to "
                         f"'indices'. Got values.shape={_aval(values).shape} and "
                         f"indices.shape={_aval(indices).shape}.") from None
    idx = _along_axis_index(_aval(arr).shape, indices, axis)
    return shape_ops.reshape(arr.at[idx].set(values, mode=mode), shape0)


def _along_axis_index(shape, indices, axis):
    """Sparse iotas for every axis but ``axis``, which gets ``indices``."""
    nd = len(shape)
    out = []
    for i, n in enumerate(shape):
        if i == axis:
            out.append(indices)
        else:
            sh = [1] * nd
            sh[i] = n
            out.append(lax.broadcasted_iota(np.int32, tuple(sh), i))
    return tuple(out)


def fill_diagonal(a, val, wrap=False, *, inplace=True):
    """``a`` with its main diagonal set to ``val`` (a scalar or values cycled along it).

    Requires ``inplace=False``; ``wrap=True`` is not implemented (as in JAX).

    >>> import functrax.numpy as fnp
    >>> fnp.fill_diagonal(fnp.zeros((2, 3)), 4.0, inplace=False)
    Array([[4., 0., 0.],
           [0., 4., 0.]], dtype=float32)
    """
    if inplace:
        raise NotImplementedError("functrax arrays are immutable: fill_diagonal needs "
                                  "inplace=False (it returns the updated array)")
    if wrap:
        raise NotImplementedError("fill_diagonal: wrap=True is not implemented, must use "
                                  "wrap=False")
    check_arraylike("fill_diagonal", a, val)
    a, val = asarray(a), asarray(val)
    shape = _aval(a).shape
    if len(shape) < 2:
        raise ValueError(f"fill_diagonal: array must be at least 2-d, got shape {shape}")
    if len(shape) > 2 and not all(n == shape[0] for n in shape[1:]):
        raise ValueError(f"fill_diagonal: all dimensions of input must be of equal length, "
                         f"got shape {shape}")
    n = min(shape)
    idx = index_tricks.diag_indices(n, len(shape))
    v = val if _aval(val).ndim == 0 else _tile_to_size(shape_ops.ravel(val), n)
    return a.at[idx].set(v)


# --- choose / resize / trim_zeros ---


def choose(a, choices, out=None, mode="raise"):
    """Build an array from ``choices`` by the index array ``a``: ``out[i] = choices[a[i]][i]``
    (everything broadcast together).

    Args:
      a: int indices into ``choices``.
      choices: a sequence of arrays.
      mode: ``"raise"`` (needs a concrete ``a``; raises for out-of-range entries),
        ``"wrap"`` or ``"clip"``.

    >>> import functrax.numpy as fnp
    >>> fnp.choose(fnp.array([0, 1, 0]), [fnp.array([1, 2, 3]), fnp.array([7, 8, 9])])
    Array([1, 8, 3], dtype=int32)
    """
    if out is not None:
        raise NotImplementedError("The 'out' argument to functrax.numpy.choose is not "
                                  "supported.")
    check_arraylike("choose", a, *choices)
    arr = asarray(a)
    if _aval(arr).dtype.kind not in "iu":
        raise ValueError(f"choose: `a` array must be integer typed, got {_aval(arr).dtype}")
    N = len(choices)
    if mode == "raise":
        v = np.asarray(concrete_or_error(arr, "The error occurred because "
                                              "functrax.numpy.choose was traced with "
                                              "mode='raise'. Use mode='wrap' or mode='clip' "
                                              "instead. "))
        if np.any((v < 0) | (v >= N)):
            raise ValueError("choose: invalid entry in choice array")
    elif mode == "wrap":
        arr = ufuncs.remainder(arr, N)
    elif mode == "clip":
        arr = selection.clip(arr, 0, N - 1)
    else:
        raise ValueError(f"choose: mode={mode!r} not understood. Must be 'raise', 'wrap', or "
                         "'clip'")
    arr, *choices = shape_ops.broadcast_arrays(arr, *choices)
    stacked = shape_ops.stack(choices)
    return stacked[(arr,) + index_tricks.indices(_aval(arr).shape, sparse=True)]


def resize(a, new_shape):
    """``a`` flattened, cycled and reshaped to ``new_shape`` (numpy's ``resize``).

    >>> import functrax.numpy as fnp
    >>> fnp.resize(fnp.array([1, 2, 3]), (2, 2))
    Array([[1, 2],
           [3, 1]], dtype=int32)
    """
    check_arraylike("resize", a)
    new_shape = (new_shape,) if isinstance(new_shape, (int, np.integer)) else tuple(new_shape)
    new_shape = tuple(operator.index(d) for d in new_shape)
    if any(d < 0 for d in new_shape):
        raise ValueError(f"resize: all elements of `new_shape` must be non-negative, got "
                         f"{new_shape}")
    arr = shape_ops.ravel(asarray(a))
    size = math.prod(new_shape)
    if _aval(arr).size == 0 or size == 0:
        return zeros_like(arr, shape=new_shape)
    return shape_ops.reshape(_tile_to_size(arr, size), new_shape)


def trim_zeros(filt, trim="fb"):
    """``filt`` (1-D) without its leading (``"f"``) and/or trailing (``"b"``) zeros.

    The output size depends on the values, so ``filt`` must be concrete.

    Raises:
      ConcretizationTypeError: ``filt`` is traced.

    >>> import functrax.numpy as fnp
    >>> fnp.trim_zeros(fnp.array([0, 0, 1, 2, 0]))
    Array([1, 2], dtype=int32)
    """
    check_arraylike("trim_zeros", filt)
    v = np.asarray(concrete_or_error(filt, "Error arose in the `filt` argument of "
                                           "functrax.numpy.trim_zeros(), whose output size "
                                           "depends on its values. "))
    f = asarray(filt)
    if v.ndim != 1:
        raise TypeError(f"trim_zeros: 'filt' must be 1-D array, but received {v.ndim}-D "
                        "array.")
    nz = np.nonzero(v != 0)[0]
    if nz.size == 0:
        return lax.full((0,), 0, _aval(f).dtype)
    start = int(nz[0]) if "f" in trim.lower() else 0
    stop = int(nz[-1]) + 1 if "b" in trim.lower() else v.shape[0]
    return f[start:stop]


# --- diagonals ---


def diag(v, k=0):
    """The ``k``-th diagonal of a 2-D ``v``, or a 2-D array with the 1-D ``v`` on its
    ``k``-th diagonal.

    >>> import functrax.numpy as fnp
    >>> fnp.diag(fnp.array([1, 2]))
    Array([[1, 0],
           [0, 2]], dtype=int32)
    """
    from functrax.numpy.linalg_ops import diagonal
    check_arraylike("diag", v)
    k = operator.index(k)
    v = asarray(v)
    nd = _aval(v).ndim
    if nd == 1:
        n = _aval(v).shape[0] + abs(k)
        zero = np.zeros((), _aval(v).dtype)[()]
        v = lax.pad(v, zero, [(max(0, k), max(0, -k), 0)])
        return selection.where(eye(n, k=k, dtype=bool), v, zeros_like(v))
    if nd == 2:
        return diagonal(v, offset=k)
    raise ValueError(f"diag: input must be 1d or 2d, got shape {_aval(v).shape}")


def diagflat(v, k=0):
    """A 2-D array with the flattened ``v`` on its ``k``-th diagonal.

    >>> import functrax.numpy as fnp
    >>> fnp.diagflat(fnp.array([[1, 2]]), k=1)
    Array([[0, 1, 0],
           [0, 0, 2],
           [0, 0, 0]], dtype=int32)
    """
    check_arraylike("diagflat", v)
    return diag(shape_ops.ravel(asarray(v)), operator.index(k))


def mask_indices(n, mask_func, k=0, *, size=None):
    """The indices ``(rows, cols)`` where ``mask_func(ones((n, n)), k)`` is nonzero (e.g.
    ``triu``); ``size`` as in :func:`nonzero` for tracing.

    >>> import functrax.numpy as fnp
    >>> fnp.mask_indices(2, fnp.triu)
    (Array([0, 0, 1], dtype=int32), Array([0, 1, 1], dtype=int32))
    """
    i, j = index_tricks.nonzero(mask_func(ones((n, n)), k), size=size)
    return i, j

