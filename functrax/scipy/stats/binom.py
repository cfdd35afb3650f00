"""``functrax.scipy.stats.binom``: the binomial distribution, as ``jax.scipy.stats.binom``.

The binomial coefficient is ``-log1p(n) - betaln(n - k + 1, k + 1)`` (accurate for large
``n``, where ``lgamma(n + 1) - lgamma(k + 1) - lgamma(n - k + 1)`` cancels). ``logpmf`` is
``-inf`` unless ``k - loc`` is an integer in ``[0, n]``; ``n`` not a non-negative integer
or ``p`` outside ``[0, 1]`` give NaN.
"""
from __future__ import annotations

from functrax import lax
from functrax import numpy as fnp
from functrax.scipy.special import betaln, xlog1py, xlogy
from functrax.scipy.stats._util import guard, is_integer, nan_where, promote

__all__ = ["logpmf", "pmf"]


def logpmf(k, n, p, loc=0):
    """Log of the binomial probability mass function ``C(n, k) p**k (1 - p)**(n - k)``.

    Args:
      k: where to evaluate; ``n``: the number of trials; ``p``: the success probability;
        ``loc``: a shift (all broadcast together).

    >>> round(float(logpmf(3, 10, 0.4)), 6)
    -1.53716
    """
    k, n, p, loc = promote("binom.logpmf", k, n, p, loc)
    y = k - loc
    ok = (y >= 0) & (y <= n) & is_integer(y)
    ys = guard(ok, y, 0.0)
    comb = -lax.log1p(n) - betaln(n - ys + 1, ys + 1)
    out = comb + xlogy(ys, p) + xlog1py(n - ys, -p)
    bad = ~((p >= 0) & (p <= 1)) | ~((n >= 0) & is_integer(n))
    return nan_where(bad, fnp.where(ok, out, -fnp.inf))


def pmf(k, n, p, loc=0):
    """The binomial probability mass function.

    >>> round(float(pmf(3, 10, 0.4)), 6)
    0.214991
    """
    return lax.exp(logpmf(k, n, p, loc))
