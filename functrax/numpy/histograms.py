"""Binning: digitize, histogram_bin_edges, histogram, histogram2d, histogramdd (as JAX's).

With an integer number of bins the edges come from the data's min and max (traced values
are fine: only the number of bins is static); counts are floats (the weights' dtype), as in
JAX. String bin rules (``"auto"``, ...) are not supported (JAX's NotImplementedError).

>>> import functrax.numpy as fnp
>>> counts, edges = fnp.histogram(fnp.array([0., 1., 1., 3.]), bins=3)
>>> counts
Array([1., 2., 1.], dtype=float32)
"""
from __future__ import annotations

import builtins
import math
import operator

import numpy as np

from functrax import core, dtypes, lax
from functrax.numpy import reductions, selection, shape_ops, sorting, ufuncs
from functrax.numpy.creation import asarray, linspace, ones_like, zeros, zeros_like
from functrax.numpy.index_tricks import ravel_multi_index
from functrax.numpy.indexing import concrete_or_error
from functrax.numpy.promotion import check_arraylike, promote_dtypes_inexact

__all__ = ["digitize", "histogram_bin_edges", "histogram", "histogram2d", "histogramdd"]


def _aval(x):
    return core.get_aval(x)


def _inexact(dt):
    dt = np.dtype(dt)
    return dt if dtypes.is_inexact(dt) else dtypes.default_float_dtype()


def digitize(x, bins, right=False, *, method=None):
    """The index of the bin each ``x`` falls in (``bins`` increasing or decreasing, 1-D).

    Args:
      x: the values.
      bins: monotonic bin edges.
      right: bins include their right edge instead of their left one.
      method: the ``searchsorted`` method (``"scan"``, ``"sort"``, ...).

    Returns:
      int32 indices in ``[0, len(bins)]``, as numpy's.

    >>> import functrax.numpy as fnp
    >>> fnp.digitize(fnp.array([0.5, 1.5, 3.0]), fnp.array([0., 1., 2.]))
    Array([1, 2, 3], dtype=int32)
    """
    check_arraylike("digitize", x, bins)
    right = bool(concrete_or_error(right, "The error arose for the right argument of "
                                          "functrax.numpy.digitize(). "))
    b = asarray(bins)
    if _aval(b).ndim != 1:
        raise ValueError(f"digitize: bins must be a 1-dimensional array; got bins of shape "
                         f"{_aval(b).shape}")
    x = asarray(x)
    if _aval(b).shape[0] == 0:
        return zeros_like(x, dtype=np.int32)
    side = "left" if right else "right"
    kw = {} if method is None else {"method": method}
    n = _aval(b).shape[0]
    up = sorting.searchsorted(b, x, side=side, **kw)
    down = ufuncs.subtract(n, sorting.searchsorted(shape_ops.flip(b), x, side=side, **kw))
    return selection.where(ufuncs.greater_equal(b[-1], b[0]), up, down).astype(np.int32)


def histogram_bin_edges(a, bins=10, range=None, weights=None):
    """The bin edges :func:`histogram` uses: ``bins`` itself if it is 1-D, else ``bins + 1``
    evenly spaced edges over ``range`` (default: ``[a.min(), a.max()]``; widened by 0.5 on
    each side when empty).

    >>> import functrax.numpy as fnp
    >>> fnp.histogram_bin_edges(fnp.array([0., 4.]), bins=4)
    Array([0., 1., 2., 3., 4.], dtype=float32)
    """
    del weights  # only string bin rules would use them
    if isinstance(bins, str):
        raise NotImplementedError("histogram_bin_edges: string values for `bins` not "
                                  "implemented.")
    check_arraylike("histogram_bin_edges", a, bins)
    arr = asarray(a)
    dt = _inexact(_aval(arr).dtype)
    if np.ndim(bins) == 1:
        return asarray(bins, dtype=dt)
    nbins = operator.index(concrete_or_error(
        bins, "The error arose for the bins argument of histogram_bin_edges, an integer "
              "(the number of bins) that fixes the output shape. "))
    if range is None:
        lo, hi = reductions.min(arr), reductions.max(arr)
    else:
        r = asarray(range, dtype=dt) if not isinstance(range, (list, tuple)) else \
            shape_ops.stack([asarray(v, dtype=dt) for v in range])
        if _aval(r).shape != (2,):
            raise ValueError(f"histogram_bin_edges: `range` must be either None or a sequence "
                             f"of two scalars, got {range}")
        lo, hi = r[0], r[1]
    lo, hi = lax.convert_element_type(lo, dt), lax.convert_element_type(hi, dt)
    flat = ufuncs.equal(lo, hi)
    lo = selection.where(flat, ufuncs.subtract(lo, 0.5), lo)
    hi = selection.where(flat, ufuncs.add(hi, 0.5), hi)
    return linspace(lo, hi, nbins + 1, dtype=dt)


def histogram(a, bins=10, range=None, weights=None, density=None):
    """Counts (or summed ``weights``) of ``a`` (flattened) in bins, and the bin edges.

    Args:
      a: the data.
      bins: a number of equal bins (static) or the edges (1-D, increasing).
      range: ``(lo, hi)`` for an integer ``bins`` (default: the data's min and max).
      weights: one weight per entry of ``a`` (default 1).
      density: normalize to a probability density (divide by the total and bin widths).

    Returns:
      ``(counts, edges)``: the counts are floats (the weights' dtype), as JAX's. Values
      outside the edges are not counted; the last bin includes its right edge.

    >>> import functrax.numpy as fnp
    >>> fnp.histogram(fnp.array([1., 2., 2.]), bins=fnp.array([0., 1.5, 3.]))[0]
    Array([1., 2.], dtype=float32)
    """
    if weights is None:
        check_arraylike("histogram", a, bins)
        a, = promote_dtypes_inexact(asarray(a))
        weights = ones_like(a)
    else:
        check_arraylike("histogram", a, bins, weights)
        if np.shape(a) != np.shape(weights):
            raise ValueError(f"histogram: weights should have the same shape as a, got "
                             f"{np.shape(weights)} and {np.shape(a)}.")
        a, weights = promote_dtypes_inexact(asarray(a), asarray(weights))
    edges = histogram_bin_edges(a, bins, range, weights)
    a, weights = shape_ops.ravel(a), shape_ops.ravel(weights)
    n = _aval(edges).shape[0]
    idx = sorting.searchsorted(edges, a, side="right")
    idx = selection.where(ufuncs.equal(a, edges[-1]), n - 1, idx)
    counts = zeros(n, _aval(weights).dtype).at[idx].add(weights)[1:]
    if density:
        widths = sorting.diff(edges)
        counts = ufuncs.true_divide(ufuncs.true_divide(counts, widths), reductions.sum(counts))
    return counts, edges


def histogram2d(x, y, bins=10, range=None, weights=None, density=None):
    """The 2-D histogram of the points ``(x[i], y[i])``: ``(counts, x_edges, y_edges)``.

    ``bins`` is a number, a pair of numbers, one edge array for both axes, or a pair of
    edge arrays (see :func:`histogramdd`).

    >>> import functrax.numpy as fnp
    >>> h, xe, ye = fnp.histogram2d(fnp.array([0., 1.]), fnp.array([0., 1.]), bins=2)
    >>> h
    Array([[1, 0],
           [0, 1]], dtype=int32)
    """
    check_arraylike("histogram2d", x, y)
    try:
        N = len(bins)
    except TypeError:
        N = 1
    if N not in (1, 2):
        edges = asarray(bins)
        bins = [edges, edges]
    sample = shape_ops.transpose(shape_ops.stack(promote_dtypes_inexact(asarray(x),
                                                                        asarray(y))))
    hist, edges = histogramdd(sample, bins, range, weights, density)
    return hist, edges[0], edges[1]


def histogramdd(sample, bins=10, range=None, weights=None, density=None):
    """The D-dimensional histogram of ``N`` points ``sample`` (shape ``(N, D)``).

    Args:
      sample: the points.
      bins: one number or edge array for every dimension, or a sequence of ``D`` of them.
      range: a sequence of ``D`` pairs (or Nones) for integer bins.
      weights: one weight per point.
      density: normalize to a probability density.

    Returns:
      ``(counts, [edges per dimension])``: int32 counts without weights (as JAX's), the
      weights' dtype with them, floats with ``density``.

    >>> import functrax.numpy as fnp
    >>> h, edges = fnp.histogramdd(fnp.array([[0., 0.], [1., 1.], [1., 0.]]), bins=2)
    >>> h
    Array([[1, 0],
           [1, 1]], dtype=int32)
    """
    check_arraylike("histogramdd", sample)
    sample, = promote_dtypes_inexact(asarray(sample))
    if _aval(sample).ndim != 2:
        raise ValueError(f"histogramdd: sample must have shape (N, D), got "
                         f"{_aval(sample).shape}")
    N, D = _aval(sample).shape
    if weights is not None and np.shape(weights) != (N,):
        raise ValueError(f"histogramdd: should have one weight for each sample; got weights "
                         f"of shape {np.shape(weights)} for {N} samples.")
    if range is not None and (len(range) != D or builtins.any(
            r is not None and np.shape(r)[0] != 2 for r in range)):
        raise ValueError(f"For sample.shape={(N, D)}, range must be a sequence of {D} pairs "
                         f"or Nones; got range={range}")
    per_dim = _bins_per_dim(bins, D)
    idx_by_dim, edges_by_dim = [], []
    for i in builtins.range(D):
        col = sample[:, i]
        edges = histogram_bin_edges(col, per_dim[i], None if range is None else range[i])
        idx = sorting.searchsorted(edges, col, side="right")
        idx = selection.where(ufuncs.equal(col, edges[-1]), ufuncs.subtract(idx, 1), idx)
        idx_by_dim.append(idx)
        edges_by_dim.append(edges)
    nbins = tuple(_aval(e).shape[0] + 1 for e in edges_by_dim)
    flat = ravel_multi_index(tuple(idx_by_dim), nbins, mode="clip")
    w = None if weights is None else asarray(weights)
    hist = sorting.bincount(flat, w, length=math.prod(nbins))  # int counts without weights
    hist = shape_ops.reshape(hist, nbins)[tuple(slice(1, -1) for _ in nbins)]
    if density:
        hist = lax.convert_element_type(hist, _aval(sample).dtype)
        hist = ufuncs.true_divide(hist, reductions.sum(hist))
        for d in builtins.range(D):
            shape = [1] * D
            shape[d] = nbins[d] - 2
            hist = ufuncs.true_divide(hist, shape_ops.reshape(sorting.diff(edges_by_dim[d]),
                                                              shape))
    return hist, edges_by_dim


def _bins_per_dim(bins, D):
    try:
        n = len(bins)
    except TypeError:
        return [bins] * D
    if n != D:
        raise ValueError(f"histogramdd: should be a bin for each dimension; got {n} bins "
                         f"for {D} dimensions.")
    return list(bins)
