"""``functrax.scipy.stats.multinomial``: the multinomial distribution, as
``jax.scipy.stats.multinomial``.

``x`` (counts along its last axis) and ``n`` must have integer dtypes (as JAX); the result
is ``-inf`` where the counts do not sum to ``n``.
"""
from __future__ import annotations

from functrax import dtypes, lax
from functrax import numpy as fnp
from functrax.numpy.promotion import promote_args_numeric
from functrax.scipy.special import gammaln, xlogy
from functrax.scipy.stats._util import promote

__all__ = ["logpmf", "pmf"]


def logpmf(x, n, p):
    """Log of the multinomial probability mass function ``n! prod_i p_i**x_i / x_i!``.

    Args:
      x: integer counts, the categories along the last axis; ``n``: the integer number of
        trials; ``p``: the category probabilities (last axis), broadcast with ``x``.

    Raises:
      ValueError: if ``x`` or ``n`` is not of an integer dtype.

    >>> round(float(logpmf(fnp.array([1, 3, 4]), 8, fnp.array([0.3, 0.2, 0.5]))), 6)
    -3.170086
    """
    (p,) = promote("multinomial.logpmf", p)
    x, n = (fnp.asarray(a) for a in promote_args_numeric("multinomial.logpmf", x, n))
    if not dtypes.issubdtype(x.dtype, fnp.integer):
        raise ValueError("multinomial.logpmf: x and n must be of integer type; got "
                         f"x.dtype={x.dtype}, n.dtype={n.dtype}. Pass integer counts "
                         "(e.g. x.astype(int)).")
    total = fnp.sum(x, axis=-1)
    x, n = x.astype(p.dtype), n.astype(p.dtype)
    out = gammaln(n + 1) + fnp.sum(xlogy(x, p) - gammaln(x + 1), axis=-1)
    return fnp.where(total == n, out, -fnp.inf)


def pmf(x, n, p):
    """The multinomial probability mass function.

    >>> round(float(pmf(fnp.array([1, 3, 4]), 8, fnp.array([0.3, 0.2, 0.5]))), 6)
    0.042
    """
    return lax.exp(logpmf(x, n, p))
