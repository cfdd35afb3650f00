"""Sorting, searching, order statistics and differences of ``functrax.numpy``.

Everything is built on the multi-operand ``sort`` primitive (``lax.sort``): ``argsort`` sorts
an iota alongside the keys, ``unique`` compacts with a second sort, and a permutation is
applied or inverted by sorting by it, so no gather/scatter is needed. NaNs sort last.

>>> import functrax.numpy as fnp
>>> fnp.argsort(fnp.array([3.0, 1.0, 2.0]))
Array([1, 2, 0], dtype=int32)
"""
from __future__ import annotations

import builtins
import operator

import numpy as np

from functrax import core, dtypes, lax
from functrax.errors import ConcretizationTypeError
from functrax.numpy.promotion import (
    asarray_operand, broadcast_to_shape, check_arraylike, promote_dtypes,
    promote_dtypes_inexact,
)
from functrax.numpy.reductions import canonicalize_axis, reduction_axes, any as _any, sum
from functrax.numpy.shape_ops import concatenate, moveaxis, transpose
from functrax.numpy.ufuncs import isnan, logical_not
from functrax.numpy.selection import where as _where

__all__ = [
    "sort", "argsort", "sort_complex", "lexsort", "partition", "argpartition", "searchsorted",
    "unique",
    "quantile", "nanquantile", "percentile", "nanpercentile", "median", "nanmedian",
    "diff", "ediff1d", "bincount",
]

_SCALARS = (bool, int, float, complex)


def _aval(x):
    return core.get_aval(x)


def _int_dtype():
    return dtypes.default_int_dtype()


def _static_int(name, argname, x):
    try:
        return operator.index(x)
    except TypeError:
        raise TypeError(f"{name}: '{argname}' must be a static integer, got {x!r}") from None


# --- the sort primitive, with complex keys ordered lexicographically ---


def _sort(keys, values=(), dimension=-1, is_stable=True):
    """Sort ``keys`` (lexicographically, first key most significant) carrying ``values``.

    Complex keys compare by (real, imag), as numpy. Returns (sorted keys, sorted values).
    """
    flat, complex_pos = [], []
    for i, k in enumerate(keys):
        if _aval(k).dtype.kind == "c":
            flat += [lax.real(k), lax.imag(k)]
            complex_pos.append(i)
        else:
            flat.append(k)
    carried = [keys[i] for i in complex_pos] + list(values)
    out = lax.sort(tuple(flat) + tuple(carried), dimension=dimension, is_stable=is_stable,
                   num_keys=len(flat))
    out = list(out)
    sorted_flat, sorted_carried = out[:len(flat)], out[len(flat):]
    sorted_keys, j, c = [], 0, 0
    for i, k in enumerate(keys):
        if i in complex_pos:
            sorted_keys.append(sorted_carried[c])
            c += 1
            j += 2
        else:
            sorted_keys.append(sorted_flat[j])
            j += 1
    return sorted_keys, sorted_carried[len(complex_pos):]


def _prepare_axis(name, a, axis):
    check_arraylike(name, a)
    a = asarray_operand(a)
    if axis is None:
        a = lax.reshape(a, (_aval(a).size,))
        axis = 0
    return a, canonicalize_axis(name, axis, _aval(a).ndim)


def sort(a, axis=-1, *, kind=None, order=None, stable=True, descending=False):
    """Sorted copy of ``a`` along ``axis`` (None: flattened). NaNs sort to the end.

    ``descending=True`` reverses the ascending order (so NaNs come first), as JAX.

    >>> import functrax.numpy as fnp
    >>> fnp.sort(fnp.array([[3, 1, 2], [0, 5, 4]]))
    Array([[1, 2, 3],
           [0, 4, 5]], dtype=int32)
    """
    if order is not None:
        raise ValueError("sort: the 'order' argument is not supported (no structured dtypes)")
    a, dim = _prepare_axis("sort", a, axis)
    (out,), _ = _sort([a], (), dim, stable)
    return lax.rev(out, (dim,)) if descending else out


def argsort(a, axis=-1, *, kind=None, order=None, stable=True, descending=False):
    """Indices that sort ``a`` along ``axis`` (stable by default; NaNs last).

    Sorts a ``broadcasted_iota`` alongside ``a`` with the multi-operand sort primitive.

    >>> import functrax.numpy as fnp
    >>> fnp.argsort(fnp.array([2, 1, 2, 0]), descending=True)
    Array([0, 2, 1, 3], dtype=int32)
    """
    if order is not None:
        raise ValueError("argsort: the 'order' argument is not supported (no structured "
                         "dtypes)")
    a, dim = _prepare_axis("argsort", a, axis)
    iota = lax.broadcasted_iota(_int_dtype(), _aval(a).shape, dim)
    if descending and stable:  # keep equal elements in their original order after reversal
        a, iota = lax.rev(a, (dim,)), lax.rev(iota, (dim,))
    _, (idx,) = _sort([a], [iota], dim, stable)
    return lax.rev(idx, (dim,)) if descending else idx


def sort_complex(a):
    """``a`` sorted along its last axis, real parts first, then imaginary parts; always
    complex (real input is upcast).

    >>> import functrax.numpy as fnp
    >>> fnp.sort_complex(fnp.array([1 + 2j, 2 - 1j, 1 - 1j]))
    Array([1.-1.j, 1.+2.j, 2.-1.j], dtype=complex64)
    """
    check_arraylike("sort_complex", a)
    a = asarray_operand(a)
    dt = _aval(a).dtype
    if dt.kind != "c":  # complex128 for 64-bit inputs (x64), else complex64
        dt = dtypes.canonicalize_dtype(np.complex128 if dt.itemsize == 8 else np.complex64)
    a = lax.convert_element_type(a, dt)
    return sort(a, axis=-1) if _aval(a).ndim else a


def lexsort(keys, axis=-1):
    """Indirect stable sort by several keys; the *last* key is the primary one (as numpy).

    >>> import functrax.numpy as fnp
    >>> fnp.lexsort((fnp.array([1, 0, 1]), fnp.array([0, 0, 1])))
    Array([1, 0, 2], dtype=int32)
    """
    if isinstance(keys, (core.Array, core.Tracer, np.ndarray)):  # rows of a 2-D array
        keys = asarray_operand(keys)
        if _aval(keys).ndim == 0:
            raise TypeError("lexsort: keys must be a sequence of arrays or an array of rank "
                            ">= 1, got a 0-d array")
        keys = [lax.index_in_dim(keys, i, 0, keepdims=False) for i in range(len(keys))]
    keys = tuple(keys)
    if not keys:
        raise TypeError("lexsort: need sequence of keys with len > 0")
    check_arraylike("lexsort", *keys)
    keys = [asarray_operand(k) for k in keys]
    shapes = [_aval(k).shape for k in keys]
    if len(set(shapes)) > 1:
        raise ValueError(f"lexsort: all keys need to be the same shape, got {shapes}")
    if not shapes[0]:
        return core.Array(np.asarray(0, _int_dtype()))
    dim = canonicalize_axis("lexsort", axis, len(shapes[0]))
    iota = lax.broadcasted_iota(_int_dtype(), shapes[0], dim)
    _, (idx,) = _sort(keys[::-1], [iota], dim, True)
    return idx


def _check_kth(name, kth, n, axis):
    kths = kth if isinstance(kth, (tuple, list)) else (kth,)
    for k in kths:
        k = _static_int(name, "kth", k)
        if not -n <= k < n:
            raise ValueError(f"{name}: kth {k} is out of bounds for axis {axis} of size {n}")


def partition(a, kth, axis=-1):
    """Partially sorted copy: element ``kth`` is in its sorted place, smaller ones before it,
    larger ones after. (Implemented with a full sort, which is a valid partition.)"""
    a, dim = _prepare_axis("partition", a, axis)
    _check_kth("partition", kth, _aval(a).shape[dim], axis)
    return sort(a, dim)


def argpartition(a, kth, axis=-1):
    """Indices that partition ``a`` around ``kth`` (implemented with a stable argsort)."""
    a, dim = _prepare_axis("argpartition", a, axis)
    _check_kth("argpartition", kth, _aval(a).shape[dim], axis)
    return argsort(a, dim)


# --- searching ---


def _lt_total(x, y):
    """``x < y`` in the sort order: NaNs are largest; complex compares (real, imag)."""
    dt = _aval(x).dtype
    if dt.kind == "c":
        xr, yr = lax.real(x), lax.real(y)
        return lax.bitwise_or(_lt_total(xr, yr), lax.bitwise_and(
            lax.eq(xr, yr), _lt_total(lax.imag(x), lax.imag(y))))
    lt = lax.lt(x, y)
    if dtypes.is_float(dt):
        lt = lax.bitwise_or(lt, lax.bitwise_and(lax.ne(y, y), lax.eq(x, x)))
    return lt


_SEARCH_METHODS = ("scan", "scan_unrolled", "sort", "compare_all")


def searchsorted(a, v, side="left", sorter=None, *, method="scan"):
    """Indices where ``v`` would be inserted into the sorted 1-D ``a`` to keep it sorted.

    ``a`` may be traced. Every ``method`` is computed by comparing all pairs and counting
    (``left``: elements ``< v``; ``right``: elements ``<= v``), with NaNs sorting last.

    >>> import functrax.numpy as fnp
    >>> fnp.searchsorted(fnp.array([1, 2, 2, 3]), fnp.array([2, 5]), side="right")
    Array([3, 4], dtype=int32)
    """
    check_arraylike("searchsorted", a, v)
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: {side!r} is an invalid value for keyword 'side'. "
                         "Expected one of ['left', 'right'].")
    if method not in _SEARCH_METHODS:
        raise ValueError(f"searchsorted: {method!r} is an invalid value for keyword 'method'. "
                         f"Expected one of {list(_SEARCH_METHODS)}.")
    a, v = asarray_operand(a), asarray_operand(v)
    if _aval(a).ndim != 1:
        raise ValueError(f"searchsorted: a should be 1-dimensional, got shape {_aval(a).shape}")
    if sorter is not None:
        a = _apply_sorter(a, sorter)
    a, v = (asarray_operand(x) for x in promote_dtypes(a, v))
    n, vshape = _aval(a).shape[0], _aval(v).shape
    if n == 0:
        return lax.full(vshape, 0, _int_dtype())
    full = (n,) + vshape
    a_b = lax.broadcast_in_dim(a, full, (0,))
    v_b = lax.broadcast_in_dim(v, full, tuple(range(1, len(full))))
    below = _lt_total(a_b, v_b) if side == "left" else logical_not(_lt_total(v_b, a_b))
    return sum(below, axis=0, dtype=_int_dtype())


def _apply_sorter(a, sorter):
    """``a[sorter]`` for a permutation ``sorter``: sort ``a`` by the inverse permutation."""
    check_arraylike("searchsorted", sorter)
    sorter = asarray_operand(sorter)
    if _aval(sorter).shape != _aval(a).shape or _aval(sorter).dtype.kind not in "iu":
        raise ValueError(f"searchsorted: sorter must be an integer permutation of the shape of "
                         f"a {_aval(a).shape}, got {_aval(sorter).dtype.name}"
                         f"{list(_aval(sorter).shape)}")
    inverse = argsort(sorter)
    _, (out,) = _sort([inverse], [a], 0, True)
    return out


# --- unique ---

_UNIQUE_SIZE_HINT = ("To make functrax.numpy.unique() compatible with tracing (jit, vmap, "
                     "make_jaxpr), pass a static size= argument (and optionally fill_value=), "
                     "which fixes the output size. ")


def _concrete_or_error(x, context):
    if isinstance(x, core.Tracer) and x.to_concrete_value() is None:
        raise ConcretizationTypeError(x, context)


def _neq_rows(cols, equal_nan):
    """Whether each sorted row differs from the previous one (first row: True)."""
    n = _aval(cols[0]).shape[0] if cols else 0
    diff = None
    for c in cols:
        x, y = lax.slice_in_dim(c, 1, n), lax.slice_in_dim(c, 0, n - 1)
        d = lax.ne(x, y)
        if equal_nan and dtypes.is_inexact(_aval(c).dtype):
            d = lax.bitwise_and(d, logical_not(lax.bitwise_and(isnan(x), isnan(y))))
        diff = d if diff is None else lax.bitwise_or(diff, d)
    if diff is None:
        diff = lax.full((n - 1,), False, np.bool_)
    return lax.concatenate([lax.full((1,), True, np.bool_), diff], 0)


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *,
           equal_nan=True, size=None, fill_value=None, sorted=True):
    """Sorted unique elements (or unique slices along ``axis``) of ``ar``.

    The output size depends on the values, so under tracing pass ``size=``: the result is
    truncated or padded to ``size`` entries, padding with ``fill_value`` (default: the
    smallest unique value; padded counts are 0).

    >>> import functrax.numpy as fnp
    >>> fnp.unique(fnp.array([3, 1, 3, 2]))
    Array([1, 2, 3], dtype=int32)
    >>> fnp.unique(fnp.array([3, 1, 3]), size=4, fill_value=-1)
    Array([ 1,  3, -1, -1], dtype=int32)
    """
    check_arraylike("unique", ar)
    arr = asarray_operand(ar)
    if size is None:
        _concrete_or_error(arr, "The error arose for the input argument of "
                                f"functrax.numpy.unique(). {_UNIQUE_SIZE_HINT}")
    else:
        size = _static_int("unique", "size", size)
        if size < 0:
            raise ValueError(f"unique: size must be non-negative, got {size}")
    orig_shape = _aval(arr).shape
    if axis is None:
        arr, ax = lax.reshape(arr, (_aval(arr).size,)), 0
    else:
        ax = canonicalize_axis("unique", axis, _aval(arr).ndim)
    aux = moveaxis(arr, ax, 0)
    n, rest = _aval(aux).shape[0], _aval(aux).shape[1:]
    m = int(np.prod(rest, dtype=np.int64))
    if not rest:
        cols = [aux]
    else:
        aux2 = lax.reshape(aux, (n, m))
        cols = [lax.reshape(lax.slice_in_dim(aux2, j, j + 1, axis=1), (n,)) for j in range(m)]
    iota = lax.iota(_int_dtype(), n)
    if n == 0:
        return _unique_empty(aux, rest, ax, size, fill_value, return_index, return_inverse,
                             return_counts, orig_shape if axis is None else (0,))
    cols, (perm,) = _sort(cols, [iota], 0, True) if cols else (cols, (iota,))
    mask = _neq_rows(cols, equal_nan)
    count = sum(mask, dtype=_int_dtype())
    if size is None:
        size = int(count)
    not_start = lax.convert_element_type(logical_not(mask), _int_dtype())
    _, packed = _sort([not_start], cols + [perm, iota], 0, True)
    valid = lax.lt(lax.iota(_int_dtype(), size), count)
    rows = [_fit(c, size, valid, fill_value) for c in packed[:m]]
    result = _assemble(rows, size, rest, _aval(aux).dtype, fill_value)
    ret = [moveaxis(result, 0, ax)]
    if return_index:
        ret.append(_fit(packed[m], size, valid, None))
    if return_inverse:
        imask = lax.sub(lax.cumsum(lax.convert_element_type(mask, _int_dtype()), 0), 1)
        _, (inv,) = _sort([perm], [imask], 0, True)
        ret.append(lax.reshape(inv, orig_shape) if axis is None else inv)
    if return_counts:
        valid1 = lax.lt(lax.iota(_int_dtype(), size + 1), count)
        starts = _fit(packed[m + 1], size + 1, valid1, n)  # one more: where the last one ends
        ret.append(lax.sub(lax.slice_in_dim(starts, 1, size + 1),
                           lax.slice_in_dim(starts, 0, size)))
    return ret[0] if len(ret) == 1 else tuple(ret)


def _fit(x, size, valid, fill_value):
    """The first ``size`` entries of ``x`` (padded as needed), invalid ones replaced."""
    n = _aval(x).shape[0]
    if size < n:
        x = lax.slice_in_dim(x, 0, size)
    elif size > n:
        x = lax.pad(x, np.zeros((), _aval(x).dtype)[()], [(0, size - n, 0)])
    if size == 0:
        return x
    fill = lax.slice_in_dim(x, 0, 1) if fill_value is None else None
    if fill is None:
        return _where(valid, x, _fill_scalar(fill_value, _aval(x).dtype))
    return _where(valid, x, lax.reshape(fill, ()))


def _fill_scalar(fill_value, dt):
    check_arraylike("unique", fill_value)
    if isinstance(fill_value, (core.Array, core.Tracer)):
        if _aval(fill_value).shape != ():
            raise ValueError(f"unique: fill_value must be a scalar, got shape "
                             f"{_aval(fill_value).shape}")
        return lax.convert_element_type(fill_value, dt)
    if np.ndim(fill_value) != 0:
        raise ValueError(f"unique: fill_value must be a scalar, got shape "
                         f"{np.shape(fill_value)}")
    return core.Array(np.asarray(fill_value).astype(dt))


def _assemble(rows, size, rest, dt, fill_value):
    if not rows:  # zero-size slices: every row is the same (empty) row
        return lax.full((size,) + rest, 0, dt)
    if len(rows) == 1:
        return lax.reshape(rows[0], (size,) + rest)
    cols = [lax.reshape(r, (size, 1)) for r in rows]
    return lax.reshape(lax.concatenate(cols, 1), (size,) + rest)


def _unique_empty(aux, rest, ax, size, fill_value, return_index, return_inverse,
                  return_counts, inv_shape):
    dt = _aval(aux).dtype
    k = size or 0
    fill = 0 if fill_value is None else fill_value
    result = lax.full((k,) + rest, np.asarray(fill).astype(dt)[()] if not isinstance(
        fill, (core.Array, core.Tracer)) else lax.convert_element_type(fill, dt), dt)
    ret = [moveaxis(result, 0, ax)]
    if return_index:
        ret.append(lax.full((k,), 0, _int_dtype()))
    if return_inverse:
        ret.append(lax.full(inv_shape, 0, _int_dtype()))
    if return_counts:
        ret.append(lax.full((k,), 0, _int_dtype()))
    return ret[0] if len(ret) == 1 else tuple(ret)


# --- order statistics ---

_QUANTILE_METHODS = ("linear", "lower", "higher", "midpoint", "nearest")


def _check_q_range(name, q, hi):
    """A helpful error for concrete out-of-range ``q`` (traced ``q`` cannot be checked)."""
    if isinstance(q, core.Tracer):
        return
    qv = np.asarray(q)
    if qv.size and not (np.all(qv >= 0) and np.all(qv <= hi)):
        what = "Quantiles" if hi == 1 else "Percentiles"
        raise ValueError(f"{name}: {what} must be in the range [0, {hi}], got q={qv.tolist()}")


def _quantile(name, a, q, axis, method, keepdims, squash_nans):
    if method not in _QUANTILE_METHODS:
        raise ValueError(f"{name}: method can only be 'linear', 'lower', 'higher', 'midpoint', "
                         f"or 'nearest', got {method!r}")
    check_arraylike(name, a, q)
    a, = promote_dtypes_inexact(asarray_operand(a))
    a = asarray_operand(a)
    if _aval(a).dtype.kind == "c":
        raise ValueError(f"{name} does not support complex input, as the operation is poorly "
                         "defined.")
    q = asarray_operand(q)
    if _aval(q).ndim > 1:
        raise ValueError(f"{name}: q must have rank <= 1, got shape {_aval(q).shape}")
    a, keep_shape = _move_reduced_last(name, a, axis)
    out_dt = _aval(a).dtype
    qdt = dtypes.promote_types(_aval(q).dtype if dtypes.is_inexact(_aval(q).dtype)
                               else out_dt, np.float32)
    q = lax.convert_element_type(q, qdt)
    batch, n = _aval(a).shape[:-1], _aval(a).shape[-1]
    qshape = _aval(q).shape
    out_shape = qshape + batch
    if n == 0:
        res = lax.full(out_shape, np.nan, out_dt)
    else:
        res = _quantile_sorted(a, q, batch, n, out_shape, qdt, method, squash_nans)
    res = lax.convert_element_type(res, out_dt)
    return lax.reshape(res, qshape + keep_shape) if keepdims else res


def _move_reduced_last(name, a, axis):
    """Move the reduced axes last and merge them; also return the keepdims shape."""
    shape = _aval(a).shape
    axes = reduction_axes(name, axis, len(shape))
    keep_shape = tuple(1 if i in axes else d for i, d in enumerate(shape))
    kept = [i for i in range(len(shape)) if i not in axes]
    a = transpose(a, kept + sorted(axes))
    n = int(np.prod([shape[i] for i in axes], dtype=np.int64))
    return lax.reshape(a, tuple(shape[i] for i in kept) + (n,)), keep_shape


def _quantile_sorted(a, q, batch, n, out_shape, qdt, method, squash_nans):
    nb, qn = len(batch), _aval(q).ndim
    nan_row = isnan(a) if squash_nans else _any(isnan(a), axis=-1, keepdims=True)
    a = _where(nan_row, np.nan, a)
    (a,), _ = _sort([a], (), nb, True)
    q_b = lax.broadcast_in_dim(q, out_shape, tuple(range(qn)))
    if squash_nans:
        counts = sum(logical_not(isnan(a)), axis=-1, dtype=qdt)
        last = lax.sub(lax.broadcast_in_dim(counts, out_shape, tuple(range(qn, qn + nb))), 1)
    else:
        last = lax.full(out_shape, n - 1, qdt)
    pos = lax.mul(q_b, last)
    low, high = lax.floor(pos), lax.ceil(pos)
    high_w = lax.sub(pos, low)
    low_w = lax.sub(np.asarray(1, qdt)[()], high_w)
    zero = lax.full(out_shape, 0, qdt)
    low = lax.max(zero, lax.min(low, last))
    high = lax.max(zero, lax.min(high, last))
    low_v = _take_last(a, lax.convert_element_type(low, _int_dtype()), out_shape, qn)
    high_v = _take_last(a, lax.convert_element_type(high, _int_dtype()), out_shape, qn)
    if method == "linear":
        return lax.add(lax.mul(lax.convert_element_type(low_v, qdt), low_w),
                       lax.mul(lax.convert_element_type(high_v, qdt), high_w))
    if method == "lower":
        return low_v
    if method == "higher":
        return high_v
    if method == "nearest":
        return _where(lax.le(high_w, np.asarray(0.5, qdt)[()]), low_v, high_v)
    return lax.mul(lax.add(low_v, high_v), np.asarray(0.5, _aval(low_v).dtype)[()])


def _take_last(a, idx, out_shape, qn):
    """``a[..., idx]`` along the last axis by a one-hot max (no gather needed)."""
    n = _aval(a).shape[-1]
    full = out_shape + (n,)
    a_b = lax.broadcast_in_dim(a, full, tuple(range(qn, len(full))))
    hot = lax.eq(lax.broadcasted_iota(_int_dtype(), full, len(full) - 1),
                 lax.broadcast_in_dim(idx, full, tuple(range(len(out_shape)))))
    neg = lax.full(full, -np.inf, _aval(a).dtype)
    return lax.reduce_max(lax.select(hot, a_b, neg), (len(full) - 1,))


def _no_out_overwrite(name, out, overwrite_input):
    if out is not None or overwrite_input:
        raise ValueError(f"functrax.numpy.{name} does not support overwrite_input=True or "
                         "out != None")


def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
             keepdims=False):
    """The ``q``-th quantile(s) (``q`` in [0, 1], scalar or 1-D) along ``axis``.

    Methods: linear (default), lower, higher, midpoint, nearest. A NaN in a slice gives NaN.

    >>> import functrax.numpy as fnp
    >>> fnp.quantile(fnp.arange(10), fnp.array([0.25, 0.5]))
    Array([2.25, 4.5 ], dtype=float32)
    """
    _no_out_overwrite("quantile", out, overwrite_input)
    _check_q_range("quantile", q, 1)
    return _quantile("quantile", a, q, axis, method, keepdims, False)


def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                keepdims=False):
    """``quantile`` ignoring NaNs (an all-NaN slice gives NaN)."""
    _no_out_overwrite("nanquantile", out, overwrite_input)
    _check_q_range("nanquantile", q, 1)
    return _quantile("nanquantile", a, q, axis, method, keepdims, True)


def _percent(name, q):
    check_arraylike(name, q)
    _check_q_range(name, q, 100)
    q, = promote_dtypes_inexact(asarray_operand(q))
    return lax.div(q, np.asarray(100, _aval(q).dtype)[()])


def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False):
    """The ``q``-th percentile(s) (``q`` in [0, 100]) along ``axis``."""
    _no_out_overwrite("percentile", out, overwrite_input)
    return _quantile("percentile", a, _percent("percentile", q), axis, method, keepdims, False)


def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                  keepdims=False):
    """``percentile`` ignoring NaNs."""
    _no_out_overwrite("nanpercentile", out, overwrite_input)
    return _quantile("nanpercentile", a, _percent("nanpercentile", q), axis, method, keepdims,
                     True)


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """Median along ``axis`` (the mean of the two middle values for even lengths).

    >>> import functrax.numpy as fnp
    >>> fnp.median(fnp.array([[1, 3, 2, 4]]), axis=1)
    Array([2.5], dtype=float32)
    """
    _no_out_overwrite("median", out, overwrite_input)
    return _quantile("median", a, 0.5, axis, "midpoint", keepdims, False)


def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """``median`` ignoring NaNs."""
    _no_out_overwrite("nanmedian", out, overwrite_input)
    return _quantile("nanmedian", a, 0.5, axis, "midpoint", keepdims, True)


# --- differences and counting ---


def _edge(arr, x, axis, name):
    check_arraylike(name, x)
    if type(x) in _SCALARS:
        shape = list(_aval(arr).shape)
        shape[axis] = 1
        return lax.full(shape, x, dtypes.result_type(arr, x))
    x = asarray_operand(x)
    if _aval(x).ndim == 0:
        shape = list(_aval(arr).shape)
        shape[axis] = 1
        return broadcast_to_shape(x, tuple(shape))
    return x


def diff(a, n=1, axis=-1, prepend=None, append=None):
    """The ``n``-th discrete difference along ``axis`` (booleans: ``!=``).

    >>> import functrax.numpy as fnp
    >>> fnp.diff(fnp.array([1, 4, 9, 16]), n=2)
    Array([2, 2], dtype=int32)
    """
    check_arraylike("diff", a)
    arr = asarray_operand(a)
    n = _static_int("diff", "n", n)
    if n == 0:
        return arr
    if n < 0:
        raise ValueError(f"diff: order must be non-negative but got {n}")
    if _aval(arr).ndim == 0:
        raise ValueError("diff requires input that is at least one dimensional; got a 0-d "
                         "array")
    axis = canonicalize_axis("diff", _static_int("diff", "axis", axis), _aval(arr).ndim)
    parts = ([_edge(arr, prepend, axis, "diff")] if prepend is not None else []) + [arr] + (
        [_edge(arr, append, axis, "diff")] if append is not None else [])
    if len(parts) > 1:
        arr = concatenate(parts, axis)
    for _ in range(n):
        length = _aval(arr).shape[axis]
        hi = lax.slice_in_dim(arr, builtins.min(1, length), length, axis=axis)
        lo = lax.slice_in_dim(arr, 0, builtins.max(length - 1, 0), axis=axis)
        arr = lax.ne(hi, lo) if _aval(arr).dtype == np.bool_ else lax.sub(hi, lo)
    return arr


def ediff1d(ary, to_end=None, to_begin=None):
    """Differences of consecutive elements of the flattened ``ary``, with optional ends."""
    check_arraylike("ediff1d", ary)
    arr = asarray_operand(ary)
    arr = lax.reshape(arr, (_aval(arr).size,))
    if _aval(arr).dtype == np.bool_:
        raise TypeError("ediff1d: boolean subtract is not supported; cast first, e.g. "
                        "ary.astype(int)")
    length = _aval(arr).shape[0]
    result = lax.sub(lax.slice_in_dim(arr, builtins.min(1, length), length),
                     lax.slice_in_dim(arr, 0, builtins.max(length - 1, 0)))
    parts = [result]
    if to_begin is not None:
        check_arraylike("ediff1d", to_begin)
        parts.insert(0, _ravel(to_begin))
    if to_end is not None:
        check_arraylike("ediff1d", to_end)
        parts.append(_ravel(to_end))
    return concatenate(parts) if len(parts) > 1 else result


def _ravel(x):
    if type(x) in _SCALARS:
        return lax.full((1,), x, dtypes.python_scalar_dtype(x))
    x = asarray_operand(x)
    return lax.reshape(x, (_aval(x).size,))


def bincount(x, weights=None, minlength=0, *, length=None):
    """Count occurrences of each value in the non-negative int array ``x`` (optionally
    weighted). The output length is ``max(x) + 1`` (at least ``minlength``), which needs a
    concrete ``x``; under tracing pass a static ``length=``. As JAX, negative values count
    in bin 0 and values ``>= length`` are dropped.

    >>> import functrax.numpy as fnp
    >>> fnp.bincount(fnp.array([0, 1, 1, 3]))
    Array([1, 2, 0, 1], dtype=int32)
    """
    check_arraylike("bincount", x)
    x = asarray_operand(x)
    if _aval(x).dtype == np.bool_:
        x = lax.convert_element_type(x, _int_dtype())
    if _aval(x).dtype.kind not in "iu":
        raise TypeError(f"bincount: x argument must have an integer type; got "
                        f"{_aval(x).dtype.name}")
    if _aval(x).ndim != 1:
        raise ValueError(f"bincount: only 1-dimensional input supported, got shape "
                         f"{_aval(x).shape}")
    minlength = _static_int("bincount", "minlength", minlength)
    if minlength < 0:
        raise ValueError(f"bincount: minlength must be non-negative, got {minlength}")
    if length is None:
        _concrete_or_error(x, "The error occurred because of argument 'x' of "
                              "functrax.numpy.bincount. To avoid this error, pass a static "
                              "`length` argument. ")
        from functrax.numpy.reductions import max as _max
        length = builtins.max(minlength, int(_max(x)) + 1 if _aval(x).size else 0)
    else:
        length = _static_int("bincount", "length", length)
    if weights is None:
        w = lax.full(_aval(x).shape, 1, _int_dtype())
    else:
        check_arraylike("bincount", weights)
        w = asarray_operand(weights)
        if _aval(w).shape != _aval(x).shape:
            raise ValueError(f"bincount: shape of weights {_aval(w).shape} must match shape "
                             f"of x {_aval(x).shape}.")
        if _aval(w).dtype == np.bool_:
            w = lax.convert_element_type(w, _int_dtype())
    n = _aval(x).shape[0]
    full = (n, length)
    if _aval(x).dtype.itemsize < 4:
        x = lax.convert_element_type(x, _int_dtype())
    xc = lax.max(x, np.zeros((), _aval(x).dtype)[()])
    hot = lax.eq(lax.broadcast_in_dim(xc, full, (0,)),
                 lax.broadcasted_iota(_aval(x).dtype, full, 1))
    w_b = lax.broadcast_in_dim(w, full, (0,))
    return lax.reduce_sum(lax.select(hot, w_b, lax.full(full, 0, _aval(w).dtype)), (0,))
