"""``functrax.scipy.stats.chi2``: the chi-squared distribution, as
``jax.scipy.stats.chi2`` (a gamma distribution with shape ``df / 2`` and scale ``2``).

``df <= 0`` or ``scale <= 0`` give NaN.
"""
from __future__ import annotations

import numpy as np

from functrax import lax
from functrax import numpy as fnp
from functrax.scipy.special import gammainc, gammaincc, gammaln, xlogy
from functrax.scipy.stats._util import (
    bad_scale, guard, log_of_probability, nan_where, promote, standardize,
)

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]

_LOG2 = float(np.log(2.0))


def _bad(df, scale):
    return ~(df > 0) | bad_scale(scale)


def logpdf(x, df, loc=0, scale=1):
    """Log of the chi-squared density with ``df`` degrees of freedom; ``-inf`` below
    ``loc``.

    Args:
      x: where to evaluate; ``df``: degrees of freedom (> 0); ``loc``, ``scale``: location
        and scale (all broadcast together).

    >>> round(float(logpdf(2.0, 3.0)), 6)
    -1.572365
    """
    x, df, loc, scale = promote("chi2.logpdf", x, df, loc, scale)
    y = standardize(x, loc, scale)
    inside = y >= 0
    half = 0.5 * guard(inside, y, 1.0)
    k = 0.5 * df
    out = xlogy(k - 1, half) - half - gammaln(k) - _LOG2 - lax.log(scale)
    return nan_where(_bad(df, scale), fnp.where(inside, out, -fnp.inf))


def pdf(x, df, loc=0, scale=1):
    """The chi-squared density.

    >>> round(float(pdf(2.0, 3.0)), 6)
    0.207554
    """
    return lax.exp(logpdf(x, df, loc, scale))


def _half(name, x, df, loc, scale):
    x, df, loc, scale = promote(name, x, df, loc, scale)
    return 0.5 * df, 0.5 * fnp.maximum(standardize(x, loc, scale), 0), _bad(df, scale)


def cdf(x, df, loc=0, scale=1):
    """The chi-squared cdf ``P(df / 2, y / 2)``.

    >>> round(float(cdf(2.0, 3.0)), 6)
    0.427593
    """
    k, half, bad = _half("chi2.cdf", x, df, loc, scale)
    return nan_where(bad, gammainc(k, half))


def logcdf(x, df, loc=0, scale=1):
    """Log of the chi-squared cdf (``log1p(-sf)`` where the cdf is near 1).

    >>> round(float(logcdf(2.0, 3.0)), 6)
    -0.849583
    """
    return log_of_probability(*_tails("chi2.logcdf", x, df, loc, scale))


def sf(x, df, loc=0, scale=1):
    """The chi-squared survival function ``Q(df / 2, y / 2)``.

    >>> round(float(sf(2.0, 3.0)), 6)
    0.572407
    """
    k, half, bad = _half("chi2.sf", x, df, loc, scale)
    return nan_where(bad, gammaincc(k, half))


def logsf(x, df, loc=0, scale=1):
    """Log of the chi-squared survival function (``log1p(-cdf)`` where the sf is near 1).

    >>> round(float(logsf(2.0, 3.0)), 4)
    -0.5579
    """
    lower, upper = _tails("chi2.logsf", x, df, loc, scale)
    return log_of_probability(upper, lower)


def _tails(name, x, df, loc, scale):
    k, half, bad = _half(name, x, df, loc, scale)
    return nan_where(bad, gammainc(k, half)), nan_where(bad, gammaincc(k, half))
