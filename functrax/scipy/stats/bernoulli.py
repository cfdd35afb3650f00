"""``functrax.scipy.stats.bernoulli``: the Bernoulli distribution, as
``jax.scipy.stats.bernoulli``.

``logpmf`` is ``-inf`` unless ``k - loc`` is 0 or 1 (non-integer ``k`` included, as SciPy);
``p`` outside ``[0, 1]`` gives NaN.
"""
from __future__ import annotations

from functrax import lax
from functrax import numpy as fnp
from functrax.scipy.special import xlog1py, xlogy
from functrax.scipy.stats._util import guard, nan_where, promote

__all__ = ["logpmf", "pmf", "cdf", "ppf"]


def _bad_p(p):
    return ~((p >= 0) & (p <= 1))


def logpmf(k, p, loc=0):
    """Log of the Bernoulli probability mass function ``p**k (1 - p)**(1 - k)``.

    Args:
      k: where to evaluate; ``p``: the probability of 1; ``loc``: a shift (all broadcast
        together).

    >>> round(float(logpmf(1, 0.3)), 6)
    -1.203973
    """
    k, p, loc = promote("bernoulli.logpmf", k, p, loc)
    x = k - loc
    ok = (x == 0) | (x == 1)
    xs = guard(ok, x, 0.0)
    out = xlogy(xs, p) + xlog1py(1 - xs, -p)
    return nan_where(_bad_p(p), fnp.where(ok, out, -fnp.inf))


def pmf(k, p, loc=0):
    """The Bernoulli probability mass function.

    >>> round(float(pmf(1, 0.3)), 6)
    0.3
    """
    return lax.exp(logpmf(k, p, loc))


def cdf(k, p):
    """The Bernoulli cdf: 0 below 0, ``1 - p`` on ``[0, 1)``, 1 from 1 on.

    >>> round(float(cdf(0.5, 0.3)), 6)
    0.7
    """
    k, p = promote("bernoulli.cdf", k, p)
    bad = fnp.isnan(k) | _bad_p(p)
    return fnp.select([bad, k < 0, k < 1], [fnp.nan, 0, 1 - p], 1)


def ppf(q, p):
    """The Bernoulli quantile function: 0 for ``q <= 1 - p``, else 1; NaN outside
    ``[0, 1]``.

    >>> float(ppf(0.9, 0.3))
    1.0
    """
    q, p = promote("bernoulli.ppf", q, p)
    bad = ~((q >= 0) & (q <= 1)) | _bad_p(p)
    return nan_where(bad, fnp.where(q <= 1 - p, 0, 1).astype(q.dtype))
