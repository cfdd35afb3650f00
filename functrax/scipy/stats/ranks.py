"""``functrax.scipy.stats``: ``mode``, ``rankdata`` and ``sem`` (as ``jax.scipy.stats``).

``mode`` and ``rankdata`` work on sorted copies (``lax.sort``/``sort_key_val``) with
fixed-size outputs, so they jit and vmap; ``nan_policy`` other than ``"propagate"`` raises
NotImplementedError where JAX does.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from functrax import dtypes, lax
from functrax import numpy as fnp
from functrax.numpy.promotion import canonicalize_axis, check_arraylike, promote_args_inexact

__all__ = ["ModeResult", "mode", "rankdata", "sem"]

_NAN_POLICIES = ("propagate", "omit", "raise")


class ModeResult(NamedTuple):
    """The result of :func:`mode`: the modal values and their counts."""
    mode: Any = None
    count: Any = None


def _check_nan_policy(nan_policy, fun):
    if nan_policy not in _NAN_POLICIES:
        raise ValueError(f"Illegal nan_policy value {nan_policy!r}; expected one of "
                         "{'propagate', 'omit', 'raise'}")
    if nan_policy == "omit":
        raise NotImplementedError(f"Logic for `nan_policy` of {nan_policy} is not implemented")
    if nan_policy == "raise":
        raise NotImplementedError(
            f"In order to best JIT compile `{fun}`, we cannot know whether `x` contains nans. "
            f"Please check if nans exist in `x` outside of the `{fun}` function.")


def _mode_columns(x):
    """Mode and count of each column of the 2-D ``x`` (the smallest value among ties)."""
    xs = lax.sort(x, dimension=0)
    idx = lax.broadcasted_iota(np.int32, xs.shape, 0)
    starts = fnp.concatenate([fnp.ones((1,) + xs.shape[1:], bool), xs[1:] != xs[:-1]], 0)
    run_start = lax.cummax(fnp.where(starts, idx, 0), axis=0)
    run_len = idx - run_start + 1
    best = fnp.argmax(run_len, axis=0)
    vals = fnp.take_along_axis(xs, best[None], axis=0)[0]
    return vals, fnp.max(run_len, axis=0)


def mode(a, axis=0, nan_policy="propagate", keepdims=False):
    """The most common value along ``axis`` and how often it occurs (the smallest such value
    when several tie), as a :class:`ModeResult` ``(mode, count)``.

    Args:
      a: array-like.
      axis: the axis to reduce (default 0), or None for the flattened array.
      nan_policy: only ``"propagate"`` is supported (as JAX).
      keepdims: keep the reduced axis with length 1.

    Raises:
      ValueError: for an unknown ``nan_policy``; NotImplementedError for ``"omit"`` and
        ``"raise"``.

    >>> m = mode(fnp.array([1, 2, 2, 3, 3]))
    >>> int(m.mode), int(m.count)
    (2, 2)
    """
    check_arraylike("mode", a)
    _check_nan_policy(nan_policy, "mode")
    x = fnp.atleast_1d(fnp.asarray(a))
    shape = x.shape
    if axis is None:
        out_shape = (1,) * len(shape) if keepdims else ()
        x, axis = fnp.ravel(x), 0
    else:
        axis = canonicalize_axis(axis, x.ndim, "mode")
        out_shape = tuple(1 if i == axis else s for i, s in enumerate(shape) if keepdims
                          or i != axis)
    x = fnp.moveaxis(x, axis, 0)
    if x.shape[0] == 0:
        fdt = dtypes.default_float_dtype()
        return ModeResult(fnp.full(out_shape, np.nan, fdt), fnp.zeros(out_shape, fdt))
    x = fnp.reshape(x, (x.shape[0], int(np.prod(x.shape[1:], dtype=int))))
    vals, counts = _mode_columns(x)
    return ModeResult(fnp.reshape(vals, out_shape), fnp.reshape(counts, out_shape))


def _rank_1d(arr, method):
    n = arr.shape[0]
    arr, sorter = lax.sort_key_val(arr, fnp.arange(n, dtype=np.int32))
    inv = fnp.zeros(n, np.int32).at[sorter].set(fnp.arange(n, dtype=np.int32))
    if method == "ordinal":
        return inv + 1
    obs = fnp.concatenate([fnp.ones(1, bool), arr[1:] != arr[:-1]])
    dense = fnp.cumsum(obs.astype(np.int32))[inv]
    if method == "dense":
        return dense
    count = fnp.nonzero(obs, size=n + 1, fill_value=n)[0].astype(np.int32)
    if method == "max":
        return count[dense]
    if method == "min":
        return count[dense - 1] + 1
    return 0.5 * (count[dense] + count[dense - 1] + 1).astype(dtypes.default_float_dtype())


def rankdata(a, method="average", *, axis=None, nan_policy="propagate"):
    """Ranks of the data, from 1, with ties resolved by ``method``.

    Args:
      a: array-like.
      method: ``"average"`` (float ranks), ``"min"``, ``"max"``, ``"dense"`` or
        ``"ordinal"`` (integer ranks).
      axis: rank along this axis; None (default) ranks the flattened array.
      nan_policy: only ``"propagate"`` is supported (as JAX; NaNs rank last, each as its
        own value).

    Raises:
      ValueError: for an unknown ``method`` or ``nan_policy``.

    >>> rankdata(fnp.array([0, 2, 3, 2]))
    Array([1. , 2.5, 4. , 2.5], dtype=float32)
    """
    check_arraylike("rankdata", a)
    _check_nan_policy(nan_policy, "rankdata")
    if method not in ("average", "min", "max", "dense", "ordinal"):
        raise ValueError(f"unknown method '{method}'")
    a = fnp.asarray(a)
    if axis is not None:
        return fnp.apply_along_axis(rankdata, axis, a, method)
    return _rank_1d(fnp.ravel(a), method)


def sem(a, axis=0, ddof=1, nan_policy="propagate", *, keepdims=False):
    """The standard error of the mean, ``std(a, ddof=ddof) / sqrt(count)``.

    Args:
      a: array-like; axis: the axis (None: all elements); ddof: the delta degrees of
        freedom (default 1); nan_policy: ``"propagate"`` or ``"omit"`` (ignore NaNs);
        keepdims: keep the reduced axis.

    Raises:
      ValueError: for another ``nan_policy``.

    >>> round(float(sem(fnp.array([1.0, 2.0, 3.0, 4.0]))), 6)
    0.645497
    """
    (b,) = promote_args_inexact("sem", a)
    b = fnp.asarray(b)
    if nan_policy == "propagate":
        size = b.size if axis is None else b.shape[axis]
        return b.std(axis, ddof=ddof, keepdims=keepdims) / np.sqrt(size).astype(b.dtype)
    if nan_policy == "omit":
        count = fnp.sum(~fnp.isnan(b), axis, keepdims=keepdims)
        return (fnp.nanstd(b, axis, ddof=ddof, keepdims=keepdims)
                / fnp.sqrt(count).astype(b.dtype))
    raise ValueError(f"{nan_policy} is not supported")
