"""Samplers built on matrix decompositions: ``multivariate_normal`` (Cholesky, eigh or SVD
factor of the covariance) and ``orthogonal`` (Haar-distributed orthogonal/unitary matrices
from the QR decomposition of a Gaussian matrix, Mezzadri's sign correction), as JAX.
"""
from __future__ import annotations

import operator

import numpy as np

import functrax.numpy as fnp
from functrax import core, dtypes
from functrax.core import Tracer
from functrax.numpy.promotion import check_arraylike, promote_dtypes_inexact
from functrax.random.distributions import normal
from functrax.random.keys import check_key
from functrax.random.prng import canonicalize_shape
from functrax.random.sampler_args import check_shape, dtype_arg, float_dtype

__all__ = ["multivariate_normal", "orthogonal"]

_METHODS = ("svd", "eigh", "cholesky")


def multivariate_normal(key, mean, cov, shape=None, dtype=None, method="cholesky"):
    """Multivariate normal samples ``mean + factor @ z`` with ``factor @ factor.T == cov``.

    Args:
      key: a PRNG key.
      mean: the mean, shape ``(..., n)``.
      cov: the covariance, shape ``(..., n, n)`` (symmetric positive (semi)definite).
      shape: the batch shape of the result (``shape + (n,)``); must broadcast with
        ``mean.shape[:-1]`` and ``cov.shape[:-2]``; default: their broadcast shape.
      dtype: a float dtype (default: the promoted dtype of ``mean`` and ``cov``).
      method: the factorization: ``'cholesky'`` (default, positive definite ``cov``),
        ``'eigh'`` or ``'svd'`` (also positive semidefinite).
    Returns:
      An array of shape ``shape + (n,)``.

    >>> import functrax.numpy as fnp
    >>> from functrax.random import PRNGKey
    >>> multivariate_normal(PRNGKey(0), fnp.zeros(2), fnp.eye(2), (3,)).shape
    (3, 2)
    """
    key = check_key("multivariate_normal", key)
    check_arraylike("multivariate_normal", mean, cov)
    mean, cov = promote_dtypes_inexact(fnp.asarray(mean), fnp.asarray(cov))
    if method not in _METHODS:
        raise ValueError(f"multivariate_normal: method must be one of {{'svd', 'eigh', "
                         f"'cholesky'}}, got {method!r}")
    dtype = core.get_aval(mean).dtype if dtype is None else float_dtype(
        "multivariate_normal", dtype)
    if not dtypes.is_float(dtype):
        raise ValueError(f"dtype argument to `multivariate_normal` must be a float dtype, "
                         f"got {dtype.name}")
    mshape, cshape = core.get_aval(mean).shape, core.get_aval(cov).shape
    if len(mshape) < 1:
        raise ValueError(f"multivariate_normal requires mean.ndim >= 1, got mean.ndim == "
                         f"{len(mshape)}")
    if len(cshape) < 2:
        raise ValueError(f"multivariate_normal requires cov.ndim >= 2, got cov.ndim == "
                         f"{len(cshape)}")
    n = mshape[-1]
    if cshape[-2:] != (n, n):
        raise ValueError(f"multivariate_normal requires cov.shape == (..., n, n) for n={n}, "
                         f"but got cov.shape == {cshape}.")
    if shape is None:
        shape = tuple(np.broadcast_shapes(mshape[:-1], cshape[:-2]))
    else:
        shape = canonicalize_shape("multivariate_normal", shape)
        check_shape("multivariate_normal", shape, mshape[:-1], cshape[:-2])
    linalg = fnp.linalg
    if method == "svd":
        u, s, _ = linalg.svd(cov)
        factor = u * fnp.sqrt(s[..., None, :])
    elif method == "eigh":
        w, v = linalg.eigh(cov)
        factor = v * fnp.sqrt(w[..., None, :])
    else:
        factor = linalg.cholesky(cov)
    z = normal(key, shape + (n,), dtype)
    return mean + fnp.einsum("...ij,...j->...i", factor, z)


def _concrete_index(name, what, v):
    if isinstance(v, Tracer):
        raise TypeError(f"{name}: {what} must be a concrete integer, got a traced value")
    try:
        v = operator.index(v)
    except TypeError:
        raise TypeError(f"{name}: {what} must be an integer, got {v!r}") from None
    if v < 0:
        raise ValueError(f"{name}: {what} must be non-negative, got {v}")
    return v


def orthogonal(key, n, shape=(), dtype=float, m=None):
    """Matrices uniform (Haar) on the orthogonal group O(n) (unitary U(n) for complex
    dtypes), or with orthonormal columns (rows) when ``m`` differs from ``n``.

    Args:
      key: a PRNG key.
      n: the number of rows (a concrete integer).
      shape: the batch shape.
      dtype: a float or complex dtype.
      m: the number of columns (default ``n``).
    Returns:
      An array of shape ``(*shape, n, m)``.

    >>> import functrax.numpy as fnp
    >>> from functrax.random import PRNGKey
    >>> q = orthogonal(PRNGKey(0), 3)
    >>> bool(fnp.allclose(q @ q.T, fnp.eye(3), atol=1e-5))
    True
    """
    key = check_key("orthogonal", key)
    shape = canonicalize_shape("orthogonal", shape)
    dtype = dtype_arg("orthogonal", dtype, "fcV", "a float or complex dtype")
    n = _concrete_index("orthogonal", "n", n)
    m = n if m is None else _concrete_index("orthogonal", "m", m)
    z = normal(key, (*shape, max(n, m), min(n, m)), dtype)
    q, r = fnp.linalg.qr(z)
    d = fnp.diagonal(r, 0, -2, -1)
    # divide each column by the sign (phase) of R's diagonal: Haar measure (Mezzadri 2007)
    x = q * fnp.expand_dims(d / fnp.abs(d).astype(d.dtype), -2)
    return fnp.swapaxes(x, -1, -2) if n < m else x

