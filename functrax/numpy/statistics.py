"""Covariance and correlation matrices: cov, corrcoef (as ``jax.numpy``'s; differentiable).

>>> import functrax.numpy as fnp
>>> fnp.cov(fnp.array([[0., 1., 2.], [2., 1., 0.]]))
Array([[ 1., -1.],
       [-1.,  1.]], dtype=float32)
"""
from __future__ import annotations

import numpy as np

from functrax import core, lax
from functrax.numpy import reductions, selection, shape_ops, ufuncs
from functrax.numpy.creation import asarray
from functrax.numpy.promotion import check_arraylike, promote_dtypes_inexact

__all__ = ["cov", "corrcoef"]


def _aval(x):
    return core.get_aval(x)


def _rows(x, rowvar):
    """``x`` as a 2-D array with one variable per row."""
    X = shape_ops.atleast_2d(x)
    if not rowvar and _aval(X).shape[0] != 1:
        X = shape_ops.transpose(X)
    return X


def _weights(fun_name, w, n, name, integer):
    check_arraylike(fun_name, w)
    w = asarray(w)
    if _aval(w).ndim > 1:
        raise RuntimeError(f"{fun_name}: cannot handle multidimensional {name}")
    if _aval(w).shape[0] != n:
        raise RuntimeError(f"{fun_name}: incompatible numbers of samples ({n}) and {name} "
                           f"({_aval(w).shape[0]})")
    if integer and _aval(w).dtype.kind not in "iu":
        raise TypeError(f"{fun_name}: fweights must be integer, got {_aval(w).dtype}.")
    return ufuncs.abs(w)  # numpy raises on negative weights; JAX takes |w|


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None):
    """The covariance matrix of the variables in the rows of ``m`` (and ``y``).

    Args:
      m: 1-D or 2-D observations (one variable per row, unless ``rowvar=False``).
      y: more variables, stacked after those of ``m``.
      rowvar: variables are rows (True) or columns.
      bias: normalize by ``N`` instead of ``N - 1``.
      ddof: overrides ``bias``: normalize by ``N - ddof``.
      fweights: integer frequency weights, one per observation.
      aweights: observation weights.

    Returns:
      The ``(K, K)`` covariance matrix (squeezed: a scalar for a single variable).

    >>> import functrax.numpy as fnp
    >>> fnp.cov(fnp.array([1., 2., 4.]))
    Array(2.3333335, dtype=float32)
    """
    check_arraylike("cov", m, *(() if y is None else (y,)))
    if y is not None:
        m, y = promote_dtypes_inexact(asarray(m), asarray(y))
        if _aval(y).ndim > 2:
            raise ValueError(f"cov: y has more than 2 dimensions (shape {_aval(y).shape})")
    else:
        m, = promote_dtypes_inexact(asarray(m))
    if _aval(m).ndim > 2:
        raise ValueError(f"cov: m has more than 2 dimensions (shape {_aval(m).shape})")
    X = _rows(m, rowvar)
    if _aval(X).shape[0] == 0:
        return lax.full((0, 0), 0, _aval(X).dtype)
    if y is not None:
        X = shape_ops.concatenate([X, _rows(y, rowvar)], axis=0)
    if ddof is None:
        ddof = 1 if not bias else 0
    n = _aval(X).shape[1]
    w = None
    if fweights is not None:
        w = _weights("cov", fweights, n, "fweights", True)
    if aweights is not None:
        aweights = _weights("cov", aweights, n, "aweights", False)
        w = aweights if w is None else ufuncs.multiply(w, aweights)
    avg, w_sum = reductions.average(X, axis=1, weights=w, returned=True)
    w_sum = w_sum[0]
    if w is None:
        f = n - ddof
    elif ddof == 0:
        f = w_sum
    elif aweights is None:
        f = ufuncs.subtract(w_sum, ddof)
    else:
        f = ufuncs.subtract(w_sum, ufuncs.true_divide(
            ufuncs.multiply(ddof, reductions.sum(ufuncs.multiply(w, aweights))), w_sum))
    X = ufuncs.subtract(X, avg[:, None])
    XT = shape_ops.transpose(X if w is None else ufuncs.multiply(X, w[None, :]))
    from functrax.numpy.linalg_ops import dot
    c = ufuncs.true_divide(dot(X, ufuncs.conjugate(XT)), f)
    return shape_ops.squeeze(c)


def corrcoef(x, y=None, rowvar=True):
    """The Pearson correlation coefficients ``cov / outer(std, std)``, clipped to
    ``[-1, 1]`` (real and imaginary parts separately for complex input).

    >>> import functrax.numpy as fnp
    >>> fnp.corrcoef(fnp.array([[0., 1., 2.], [2., 1., 0.]]))
    Array([[ 1., -1.],
           [-1.,  1.]], dtype=float32)
    """
    check_arraylike("corrcoef", x)
    c = cov(x, y, rowvar)
    if _aval(c).ndim == 0:
        return ufuncs.true_divide(c, c)  # nan for 0/0, inf/inf, nan; else 1
    from functrax.numpy.linalg_ops import diagonal
    d = diagonal(c)
    std = lax.convert_element_type(ufuncs.sqrt(ufuncs.real(d)), _aval(c).dtype)
    c = ufuncs.true_divide(ufuncs.true_divide(c, std[:, None]), std[None, :])
    re = selection.clip(ufuncs.real(c), -1, 1)
    if np.dtype(_aval(c).dtype).kind == "c":
        im = selection.clip(ufuncs.imag(c), -1, 1)
        return ufuncs.add(lax.convert_element_type(re, _aval(c).dtype),
                          ufuncs.multiply(lax.convert_element_type(im, _aval(c).dtype), 1j))
    return re
