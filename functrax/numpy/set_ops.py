"""Set operations of ``functrax.numpy``: isin, intersect1d, setdiff1d, setxor1d, union1d and
the array-API ``unique_*`` functions (as ``jax.numpy``'s).

Their output sizes depend on the values, so (except ``isin``) they need concrete inputs,
or a static ``size=`` (results truncated or padded with ``fill_value``) to trace, as in
JAX. Every result is gathered from the inputs, so derivatives flow to the selected values.

>>> import functrax.numpy as fnp
>>> fnp.intersect1d(fnp.array([1, 3, 4, 3]), fnp.array([3, 1, 2, 1]))
Array([1, 3], dtype=int32)
"""
from __future__ import annotations

import operator
from typing import NamedTuple

import numpy as np

from functrax import core, lax
from functrax.core import Array
from functrax.numpy import reductions, selection, shape_ops, sorting, ufuncs
from functrax.numpy.creation import asarray
from functrax.numpy.indexing import concrete_or_error, concrete_value
from functrax.numpy.promotion import check_arraylike, promote_dtypes

__all__ = ["isin", "intersect1d", "setdiff1d", "setxor1d", "union1d", "unique_all",
           "unique_counts", "unique_inverse", "unique_values"]

_INDEX = np.dtype(np.int32)


def _aval(x):
    return core.get_aval(x)


def _size_arg(size, fun_name):
    if size is None:
        return None
    size = operator.index(concrete_or_error(size, f"The error arose in {fun_name}(). "))
    if size < 0:
        raise ValueError(f"{fun_name}: size must be non-negative, got {size}")
    return size


def _concrete_inputs(fun_name, *xs):
    """The numpy values of ``xs``, or JAX's ConcretizationTypeError for a traced one."""
    hint = (f"The error arose in functrax.numpy.{fun_name}(): its output size depends on "
            "the values of its inputs. To use it under jit, vmap or other transformations, "
            "pass a static size= argument (and optionally fill_value=). ")
    return [np.asarray(concrete_or_error(x, hint)) for x in xs]


def _flat_pair(fun_name, ar1, ar2):
    check_arraylike(fun_name, ar1, ar2)
    a1, a2 = promote_dtypes(asarray(ar1), asarray(ar2))
    return shape_ops.ravel(a1), shape_ops.ravel(a2)


# --- membership ---


def _member(a, b, method="auto"):
    """Whether each entry of the 1-D ``a`` is in the 1-D ``b`` (same dtype)."""
    na, nb = _aval(a).shape[0], _aval(b).shape[0]
    if na == 0 or nb == 0:
        return lax.full((na,), False, np.bool_)
    if method in ("auto", "compare_all"):
        return reductions.any(ufuncs.equal(a[:, None], b[None, :]), axis=-1)
    if method in ("binary_search", "sort"):
        bs = sorting.sort(b)
        ind = selection.clip(sorting.searchsorted(bs, a), 0, nb - 1)
        return ufuncs.equal(a, bs[ind])
    raise ValueError(f"isin: method={method!r} is not implemented; options are "
                     "'compare_all', 'binary_search', 'sort', and 'auto'")


def isin(element, test_elements, assume_unique=False, invert=False, *, method="auto"):
    """Whether each entry of ``element`` appears in ``test_elements`` (shape of
    ``element``; traceable).

    Args:
      element: the values to look up.
      test_elements: the values to look in (any shape).
      assume_unique: accepted for numpy compatibility (the result does not depend on it).
      invert: return the complement (``not in``).
      method: ``"auto"``/``"compare_all"`` (all pairs) or ``"binary_search"``/``"sort"``
        (sort ``test_elements`` and search it).

    >>> import functrax.numpy as fnp
    >>> fnp.isin(fnp.array([1, 2, 3, 4]), fnp.array([[1, 5, 6, 3, 7, 1]]))
    Array([ True, False,  True, False], dtype=bool)
    """
    del assume_unique
    check_arraylike("isin", element, test_elements)
    shape = np.shape(element) if not isinstance(element, (Array, core.Tracer)) else \
        _aval(element).shape
    a, b = _flat_pair("isin", element, test_elements)
    found = _member(a, b, method)
    found = ufuncs.logical_not(found) if invert else found
    return shape_ops.reshape(found, shape)


# --- sorted unique values with their count (static sizes) ---


class _Uniq(NamedTuple):
    values: object   # sorted unique values, padded (with the first one) to the input size
    index: object    # where each first appears in the input
    valid: object    # which entries are real (the first `count`)
    count: object    # how many unique values


def _uniq(x, assume_unique=False):
    n = _aval(x).shape[0]
    iota = lax.iota(_INDEX, n)
    if assume_unique or n == 0:
        return _Uniq(x, iota, lax.full((n,), True, np.bool_), lax.full((), n, _INDEX))
    vals, idx = sorting.unique(x, return_index=True, size=n)
    srt = sorting.sort(x)
    new = ufuncs.not_equal(srt[1:], srt[:-1])
    count = ufuncs.add(reductions.sum(new, dtype=_INDEX), 1)
    return _Uniq(vals, idx, ufuncs.less(iota, count), count)


def _compact(values, keep, size, fill_value, default_fill):
    """The entries of ``values`` where ``keep`` (in order), truncated / padded to ``size``:
    ``(result, positions, count)``."""
    n = _aval(values).shape[0]
    pos = selection.where(keep, size=size, fill_value=n)[0]
    count = reductions.sum(keep, dtype=_INDEX)
    valid = ufuncs.less(lax.iota(_INDEX, size), count)
    if n == 0:
        got = lax.full((size,), 0, _aval(values).dtype)
    else:
        got = values.at[pos].get(mode="fill", fill_value=0)
    if size == 0:
        return got, pos, count
    if fill_value is None:
        fill = got[0] if default_fill == "first" else lax.full((), 0, _aval(values).dtype)
    else:
        fill = lax.convert_element_type(asarray(fill_value), _aval(values).dtype)
    return selection.where(valid, got, fill), pos, count


# --- the set operations ---


def union1d(ar1, ar2, *, size=None, fill_value=None):
    """The sorted unique values found in ``ar1`` or ``ar2`` (flattened).

    Args:
      ar1, ar2: the arrays.
      size: a static output length for tracing (truncate or pad).
      fill_value: the padding (default: the smallest value).

    >>> import functrax.numpy as fnp
    >>> fnp.union1d(fnp.array([1, 2, 3]), fnp.array([3, 4]))
    Array([1, 2, 3, 4], dtype=int32)
    """
    a1, a2 = _flat_pair("union1d", ar1, ar2)
    size = _size_arg(size, "union1d")
    if size is None:
        _concrete_inputs("union1d", a1, a2)
    return sorting.unique(shape_ops.concatenate([a1, a2]), size=size, fill_value=fill_value)


def setdiff1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
    """The sorted unique values of ``ar1`` that are not in ``ar2`` (in ``ar1``'s order with
    ``assume_unique=True``).

    Args:
      ar1, ar2: the arrays (flattened).
      assume_unique: promise that ``ar1`` has no duplicates (skips the unique step).
      size: a static output length for tracing.
      fill_value: the padding (default 0, as JAX).

    >>> import functrax.numpy as fnp
    >>> fnp.setdiff1d(fnp.array([1, 2, 3, 4]), fnp.array([3, 4, 5, 6]))
    Array([1, 2], dtype=int32)
    """
    a1, a2 = _flat_pair("setdiff1d", ar1, ar2)
    size = _size_arg(size, "setdiff1d")
    if size is None:
        v1, v2 = _concrete_inputs("setdiff1d", a1, a2)
        size = np.setdiff1d(v1, v2, assume_unique=assume_unique).shape[0]
    u = _uniq(a1, assume_unique)
    keep = ufuncs.logical_and(u.valid, ufuncs.logical_not(_member(u.values, a2)))
    return _compact(u.values, keep, size, fill_value, "zero")[0]


def setxor1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
    """The sorted unique values found in exactly one of ``ar1`` and ``ar2``.

    Args:
      ar1, ar2: the arrays (flattened).
      assume_unique: promise that each input has no duplicates.
      size: a static output length for tracing.
      fill_value: the padding (default: the smallest value of the result).

    >>> import functrax.numpy as fnp
    >>> fnp.setxor1d(fnp.array([1, 2, 3, 4]), fnp.array([3, 4, 5, 6]))
    Array([1, 2, 5, 6], dtype=int32)
    """
    a1, a2 = _flat_pair("setxor1d", ar1, ar2)
    size = _size_arg(size, "setxor1d")
    if size is None:
        v1, v2 = _concrete_inputs("setxor1d", a1, a2)
        size = np.setxor1d(v1, v2, assume_unique=assume_unique).shape[0]
    u1, u2 = _uniq(a1, assume_unique), _uniq(a2, assume_unique)
    only1 = ufuncs.logical_and(u1.valid, ufuncs.logical_not(_member_valid(u1.values, u2)))
    only2 = ufuncs.logical_and(u2.valid, ufuncs.logical_not(_member_valid(u2.values, u1)))
    vals = shape_ops.concatenate([u1.values, u2.values])
    keep = shape_ops.concatenate([only1, only2])
    if _aval(vals).shape[0] == 0:
        return _compact(vals, keep, size, fill_value, "first")[0]
    # sort the kept values first, in increasing order
    _, vals = lax.sort((lax.convert_element_type(ufuncs.logical_not(keep), _INDEX), vals),
                       num_keys=2)
    keep = sorting.sort(keep, descending=True)
    return _compact(vals, keep, size, fill_value, "first")[0]


def _member_valid(x, u):
    """``x in u.values[:u.count]``."""
    if _aval(x).shape[0] == 0 or _aval(u.values).shape[0] == 0:
        return lax.full(_aval(x).shape, False, np.bool_)
    eq = ufuncs.logical_and(ufuncs.equal(x[:, None], u.values[None, :]), u.valid[None, :])
    return reductions.any(eq, axis=-1)


def intersect1d(ar1, ar2, assume_unique=False, return_indices=False, *, size=None,
                fill_value=None):
    """The sorted unique values found in both ``ar1`` and ``ar2`` (flattened).

    Args:
      ar1, ar2: the arrays.
      assume_unique: promise that each input has no duplicates.
      return_indices: also return where each value first appears in ``ar1`` and ``ar2``.
      size: a static output length for tracing; padded indices are out of bounds
        (``ar1.size`` / ``ar2.size``).
      fill_value: the padding (default: the smallest value of the intersection).

    Returns:
      The intersection, or ``(intersection, ar1_indices, ar2_indices)``.

    >>> import functrax.numpy as fnp
    >>> fnp.intersect1d(fnp.array([1, 2, 3, 4]), fnp.array([3, 4, 5, 6]), return_indices=True)
    (Array([3, 4], dtype=int32), Array([2, 3], dtype=int32), Array([0, 1], dtype=int32))
    """
    a1, a2 = _flat_pair("intersect1d", ar1, ar2)
    size = _size_arg(size, "intersect1d")
    if size is None:
        v1, v2 = _concrete_inputs("intersect1d", a1, a2)
        size = np.intersect1d(v1, v2, assume_unique=assume_unique).shape[0]
    u1, u2 = _uniq(a1, assume_unique), _uniq(a2, assume_unique)
    if assume_unique:  # sorted order for the output
        order1 = sorting.argsort(a1)
        u1 = _Uniq(a1[order1], order1, u1.valid, u1.count)
    keep = ufuncs.logical_and(u1.valid, _member_valid(u1.values, u2))
    vals, pos, count = _compact(u1.values, keep, size, fill_value, "first")
    if not return_indices:
        return vals
    n1, n2 = _aval(a1).shape[0], _aval(a2).shape[0]
    valid = ufuncs.less(lax.iota(_INDEX, size), count)
    i1 = u1.index.at[pos].get(mode="fill", fill_value=n1) if n1 else pos
    i2 = _first_match(vals, u2, n2, size)
    return (vals, selection.where(valid, i1, n1).astype(_INDEX),
            selection.where(valid, i2, n2).astype(_INDEX))


def _first_match(vals, u, n, size):
    """Where each of ``vals`` first appears in the input behind ``u``."""
    if n == 0 or size == 0:
        return lax.full((size,), n, _INDEX)
    eq = ufuncs.logical_and(ufuncs.equal(vals[:, None], u.values[None, :]), u.valid[None, :])
    j = reductions.argmax(eq, axis=-1)
    return u.index[j]


# --- the array-API unique functions ---


class UniqueAllResult(NamedTuple):
    """``unique_all``'s result."""
    values: Array
    indices: Array
    inverse_indices: Array
    counts: Array


class UniqueCountsResult(NamedTuple):
    """``unique_counts``'s result."""
    values: Array
    counts: Array


class UniqueInverseResult(NamedTuple):
    """``unique_inverse``'s result."""
    values: Array
    inverse_indices: Array


def _unique(fun_name, x, size, fill_value, **kw):
    check_arraylike(fun_name, x)
    x = asarray(x)
    if size is None and concrete_value(x) is None:
        _concrete_inputs(fun_name, x)
    return sorting.unique(x, equal_nan=False, size=_size_arg(size, fun_name),
                          fill_value=fill_value, **kw)


def unique_all(x, /, *, size=None, fill_value=None):
    """Unique values of ``x`` with their first indices, the inverse indices (shape of
    ``x``) and counts; NaNs are all distinct (``equal_nan=False``), as the array API.

    ``size`` / ``fill_value`` as in :func:`functrax.numpy.unique` (needed under tracing).

    >>> import functrax.numpy as fnp
    >>> fnp.unique_all(fnp.array([3, 4, 1, 3, 1])).counts
    Array([2, 2, 1], dtype=int32)
    """
    return UniqueAllResult(*_unique("unique_all", x, size, fill_value, return_index=True,
                                    return_inverse=True, return_counts=True))


def unique_counts(x, /, *, size=None, fill_value=None):
    """Unique values of ``x`` and their counts (``equal_nan=False``).

    >>> import functrax.numpy as fnp
    >>> fnp.unique_counts(fnp.array([3, 4, 1, 3, 1]))
    UniqueCountsResult(values=Array([1, 3, 4], dtype=int32), counts=Array([2, 2, 1], dtype=int32))
    """
    return UniqueCountsResult(*_unique("unique_counts", x, size, fill_value,
                                       return_counts=True))


def unique_inverse(x, /, *, size=None, fill_value=None):
    """Unique values of ``x`` and the indices (shape of ``x``) rebuilding ``x`` from them.

    >>> import functrax.numpy as fnp
    >>> fnp.unique_inverse(fnp.array([3, 4, 1, 3, 1])).inverse_indices
    Array([1, 2, 0, 1, 0], dtype=int32)
    """
    return UniqueInverseResult(*_unique("unique_inverse", x, size, fill_value,
                                        return_inverse=True))


def unique_values(x, /, *, size=None, fill_value=None):
    """The sorted unique values of ``x`` (``equal_nan=False``).

    >>> import functrax.numpy as fnp
    >>> fnp.unique_values(fnp.array([3, 4, 1, 3, 1]))
    Array([1, 3, 4], dtype=int32)
    """
    return _unique("unique_values", x, size, fill_value)
