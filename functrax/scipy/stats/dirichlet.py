"""``functrax.scipy.stats.dirichlet``: the Dirichlet distribution, as
``jax.scipy.stats.dirichlet``.

``x`` holds the components along its first axis (``alpha.shape[0]`` of them, or one fewer:
the last is then ``1 - sum``); ``logpdf`` is ``-inf`` off the open simplex (a component
``<= 0``, or a sum farther than 1e-6 from 1, as JAX).
"""
from __future__ import annotations

from functrax import lax
from functrax import numpy as fnp
from functrax.scipy.special import gammaln, xlogy
from functrax.scipy.stats._util import guard
from functrax.numpy.promotion import promote_dtypes_inexact

__all__ = ["logpdf", "pdf"]


def _check(x, alpha):
    if alpha.ndim != 1:
        raise ValueError("dirichlet.logpdf: `alpha` must be one-dimensional; got "
                         f"alpha.shape={alpha.shape}")
    k = alpha.shape[0]
    if x.ndim == 0 or x.shape[0] not in (k, k - 1):
        raise ValueError("dirichlet.logpdf: `x` must have either the same number of entries "
                         "as `alpha` or one entry fewer along its first axis; got "
                         f"x.shape={x.shape}, alpha.shape={alpha.shape}")


def logpdf(x, alpha):
    """Log of the Dirichlet density ``prod_i x_i**(alpha_i - 1) / B(alpha)``.

    Args:
      x: points of the simplex, the components along axis 0 (``K`` or ``K - 1`` of them);
      alpha: the ``K`` concentration parameters (one-dimensional).

    Raises:
      ValueError: if ``alpha`` is not one-dimensional or ``x.shape[0]`` is neither ``K``
        nor ``K - 1``.

    >>> round(float(logpdf(fnp.array([0.2, 0.3, 0.5]), fnp.array([1.0, 2.0, 3.0]))), 6)
    1.504077
    """
    x, alpha = (fnp.asarray(a) for a in promote_dtypes_inexact(fnp.asarray(x),
                                                               fnp.asarray(alpha)))
    _check(x, alpha)
    if x.shape[0] != alpha.shape[0]:
        x = fnp.concatenate([x, 1 - fnp.sum(x, axis=0, keepdims=True)], axis=0)
    a = lax.broadcast_in_dim(alpha, alpha.shape + (1,) * (x.ndim - 1), (0,))
    simplex = fnp.all(x > 0, axis=0) & (lax.abs(fnp.sum(x, axis=0) - 1) < 1e-6)
    xs = guard(simplex, x, 0.5)
    norm = fnp.sum(gammaln(alpha)) - gammaln(fnp.sum(alpha))
    out = fnp.sum(xlogy(a - 1, xs), axis=0) - norm
    return fnp.where(simplex, out, -fnp.inf)


def pdf(x, alpha):
    """The Dirichlet density.

    >>> round(float(pdf(fnp.array([0.2, 0.3, 0.5]), fnp.array([1.0, 2.0, 3.0]))), 6)
    4.5
    """
    return lax.exp(logpdf(x, alpha))
