"""``functrax.scipy.stats.poisson``: the Poisson distribution, as
``jax.scipy.stats.poisson``.

``logpmf`` is ``k log(mu) - lgamma(k + 1) - mu`` on the non-negative integers (``-inf``
elsewhere, also at non-integer ``k``), the cdf ``Q(floor(k) + 1, mu)`` (``igammac``).
``entropy`` sums ``-p log p`` over a window of ``_WINDOW`` integers around ``mu`` for
``mu < 100`` (12 in float32; the mass outside the window is below 1e-17) and uses the
asymptotic series of ``H(mu) - log(2 pi e mu) / 2`` in ``1 / mu`` (to ``mu**-7``) above.
``mu < 0`` gives NaN.
"""
from __future__ import annotations

import numpy as np

from functrax import lax
from functrax import numpy as fnp
from functrax.scipy.special import gammaincc, gammaln, xlogy
from functrax.scipy.stats._util import guard, is_integer, nan_where, promote

__all__ = ["logpmf", "pmf", "cdf", "entropy"]

# where the series takes over: its error is below 1e-14 from 100 on, below float32's
# rounding from 12 on (where the float32 sum's cancellation in log p would be larger)
_BIG = {np.dtype(np.float64): 100.0, np.dtype(np.float32): 12.0}
_WINDOW = 224
# H(mu) = log(2 pi e mu) / 2 + sum_j c_j mu**-j: j = 1..3 exact (-1/12, -1/24, -19/360),
# j = 4, 5 (-9/80, -863/2520) and 6, 7 fitted to high-precision sums (error < 1e-14 at 100)
_SERIES = (-1 / 12, -1 / 24, -19 / 360, -9 / 80, -863 / 2520, -1.3640863, -6.738)
_HALF_LOG_2PIE = float(0.5 * np.log(2 * np.pi * np.e))


def logpmf(k, mu, loc=0):
    """Log of the Poisson probability mass function.

    Args:
      k: where to evaluate (``-inf`` unless ``k - loc`` is a non-negative integer);
        ``mu``: the mean (>= 0); ``loc``: a shift (all broadcast together).

    >>> round(float(logpmf(2, 3.0)), 5)
    -1.49592
    """
    k, mu, loc = promote("poisson.logpmf", k, mu, loc)
    x = k - loc
    ok = (x >= 0) & is_integer(x)
    xs = guard(ok, x, 0.0)
    out = xlogy(xs, mu) - gammaln(xs + 1) - mu
    return nan_where(~(mu >= 0), fnp.where(ok, out, -fnp.inf))


def pmf(k, mu, loc=0):
    """The Poisson probability mass function.

    >>> round(float(pmf(2, 3.0)), 6)
    0.224042
    """
    return lax.exp(logpmf(k, mu, loc))


def cdf(k, mu, loc=0):
    """The Poisson cdf ``P(K <= k) = Q(floor(k - loc) + 1, mu)``.

    >>> round(float(cdf(2, 3.0)), 6)
    0.42319
    """
    k, mu, loc = promote("poisson.cdf", k, mu, loc)
    x = k - loc
    ok = x >= 0
    p = gammaincc(fnp.floor(guard(ok, x, 0.0)) + 1, mu)
    return nan_where(~(mu >= 0), fnp.where(ok, p, 0))


def _entropy_sum(mu):
    start = fnp.maximum(fnp.floor(mu - 9 * lax.sqrt(mu) - 5), 0)
    k = start[..., None] + fnp.arange(_WINDOW, dtype=mu.dtype)
    m = mu[..., None]
    logp = xlogy(k, m) - gammaln(k + 1) - m
    some = logp > -fnp.inf  # (p = 0 at mu = 0: no 0 * -inf)
    logp = guard(some, logp, 0.0)
    return -fnp.sum(fnp.where(some, lax.exp(logp) * logp, 0), axis=-1)


def _entropy_series(mu):
    inv = 1 / mu
    s = fnp.full_like(mu, _SERIES[-1])
    for c in reversed(_SERIES[:-1]):
        s = c + inv * s
    return _HALF_LOG_2PIE + 0.5 * lax.log(mu) + inv * s


def entropy(mu, loc=0):
    """The Shannon entropy ``-sum_k p(k) log p(k)`` of the Poisson distribution.

    Args:
      mu: the mean (>= 0; NaN below 0, 0 at 0); loc: accepted for SciPy compatibility, it
        does not change the entropy (it only takes part in the broadcasting).

    >>> round(float(entropy(5.0)), 4)
    2.2044
    """
    mu, loc = promote("poisson.entropy", mu, loc)
    mu = mu + fnp.zeros_like(loc)
    threshold = _BIG.get(np.dtype(mu.dtype), 100.0)
    big = mu >= threshold
    out = fnp.where(big, _entropy_series(guard(big, mu, threshold)),
                    _entropy_sum(guard(~big, mu, 1.0)))
    return nan_where(~(mu >= 0), out)
