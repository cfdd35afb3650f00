"""``functrax.scipy.stats.multivariate_normal``: the multivariate normal distribution, as
``jax.scipy.stats.multivariate_normal``.

``mean`` has shape ``(..., n)`` (or is a scalar: a one-dimensional normal), ``cov`` shape
``(..., n, n)`` or is a scalar (a multiple of the identity); the density uses the Cholesky
factor ``L`` of ``cov`` (a triangular solve for ``L^-1 (x - mean)`` and ``sum(log diag L)``
for half the log-determinant), broadcast over the batch dimensions.
"""
from __future__ import annotations

import numpy as np

from functrax import lax
from functrax import numpy as fnp
from functrax.lax import linalg as lax_linalg
from functrax.numpy.promotion import promote_dtypes_inexact
from functrax.scipy.stats._util import LOG_2PI

__all__ = ["logpdf", "pdf"]


def _check(x, mean, cov, n):
    if cov.ndim < 2 or cov.shape[-2:] != (n, n):
        raise ValueError(
            "multivariate_normal.logpdf got incompatible shapes: cov must be a scalar or "
            f"have shape (..., {n}, {n}) to match mean.shape={mean.shape} (n={n}); got "
            f"cov.shape={cov.shape}. Pass a covariance matrix of matching size.")
    if x.ndim == 0 or x.shape[-1] != n:
        raise ValueError(
            "multivariate_normal.logpdf got incompatible shapes: x must have shape (..., "
            f"{n}) to match mean.shape={mean.shape}; got x.shape={x.shape}.")


def _scalar_mean(x, mean, cov):
    return -0.5 * lax.square(x - mean) / cov - 0.5 * (LOG_2PI + lax.log(cov))


def _isotropic(x, mean, cov, n):
    y = x - mean
    return -0.5 * fnp.sum(y * y, axis=-1) / cov - 0.5 * n * (LOG_2PI + lax.log(cov))


def _general(x, mean, cov, n):
    chol = lax_linalg.cholesky(cov)
    y = x - mean
    batch = np.broadcast_shapes(y.shape[:-1], cov.shape[:-2])
    chol = fnp.broadcast_to(chol, batch + (n, n))
    y = fnp.broadcast_to(y, batch + (n,))[..., None]
    z = lax_linalg.triangular_solve(chol, y, left_side=True, lower=True)[..., 0]
    half_logdet = fnp.sum(lax.log(fnp.diagonal(chol, axis1=-2, axis2=-1)), axis=-1)
    return -0.5 * fnp.sum(z * z, axis=-1) - 0.5 * n * LOG_2PI - half_logdet


def logpdf(x, mean, cov, allow_singular=None):
    """Log of the multivariate normal density.

    Args:
      x: points, shape ``(..., n)``; mean: shape ``(..., n)`` or a scalar; cov: shape
        ``(..., n, n)`` (symmetric positive definite) or a scalar; all batch dimensions
        broadcast. allow_singular: not supported (must be None), as JAX.

    Raises:
      ValueError: if the shapes of ``x``, ``mean`` and ``cov`` do not match.
      NotImplementedError: if ``allow_singular`` is given.

    >>> round(float(logpdf(fnp.zeros(2), fnp.zeros(2), fnp.eye(2))), 6)
    -1.837877
    """
    if allow_singular is not None:
        raise NotImplementedError("allow_singular argument of multivariate_normal.logpdf")
    x, mean, cov = (fnp.asarray(a) for a in promote_dtypes_inexact(
        fnp.asarray(x), fnp.asarray(mean), fnp.asarray(cov)))
    if not mean.shape:
        return _scalar_mean(x, mean, cov)
    n = mean.shape[-1]
    if not cov.shape:
        if x.ndim == 0 or x.shape[-1] != n:
            _check(x, mean, fnp.zeros((n, n)), n)
        return _isotropic(x, mean, cov, n)
    _check(x, mean, cov, n)
    return _general(x, mean, cov, n)


def pdf(x, mean, cov):
    """The multivariate normal density.

    >>> round(float(pdf(fnp.zeros(2), fnp.zeros(2), fnp.eye(2))), 6)
    0.159155
    """
    return lax.exp(logpdf(x, mean, cov))
