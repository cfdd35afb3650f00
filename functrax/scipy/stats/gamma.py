"""``functrax.scipy.stats.gamma``: the gamma distribution, as ``jax.scipy.stats.gamma``.

The density is ``y**(a-1) exp(-y) / Gamma(a)`` for ``y = (x - loc) / scale >= 0``; the cdf
and sf bind ``igamma``/``igammac`` (each accurate in its own tail); ``logcdf``/``logsf`` take
``log1p`` of the other tail where theirs is near 1. ``a <= 0`` or
``scale <= 0`` give NaN.
"""
from __future__ import annotations

from functrax import lax
from functrax import numpy as fnp
from functrax.scipy.special import gammainc, gammaincc, gammaln, xlogy
from functrax.scipy.stats._util import (
    bad_scale, guard, log_of_probability, nan_where, promote, standardize,
)

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


def _bad(a, scale):
    return ~(a > 0) | bad_scale(scale)


def logpdf(x, a, loc=0, scale=1):
    """Log of the gamma density with shape ``a``; ``-inf`` below ``loc``.

    Args:
      x: where to evaluate; ``a``: the shape (> 0); ``loc``, ``scale``: location and scale
        (all broadcast together).

    >>> round(float(logpdf(2.0, 3.0)), 6)
    -1.306853
    """
    x, a, loc, scale = promote("gamma.logpdf", x, a, loc, scale)
    y = standardize(x, loc, scale)
    inside = y >= 0
    ys = guard(inside, y, 1.0)
    out = xlogy(a - 1, ys) - ys - gammaln(a) - lax.log(scale)
    return nan_where(_bad(a, scale), fnp.where(inside, out, -fnp.inf))


def pdf(x, a, loc=0, scale=1):
    """The gamma density.

    >>> round(float(pdf(2.0, 3.0)), 6)
    0.270671
    """
    return lax.exp(logpdf(x, a, loc, scale))


def _clipped(name, x, a, loc, scale):
    x, a, loc, scale = promote(name, x, a, loc, scale)
    return fnp.maximum(standardize(x, loc, scale), 0), a, scale


def cdf(x, a, loc=0, scale=1):
    """The gamma cdf, the regularized lower incomplete gamma function ``P(a, y)``.

    >>> round(float(cdf(2.0, 3.0)), 6)
    0.323324
    """
    y, a, scale = _clipped("gamma.cdf", x, a, loc, scale)
    return nan_where(_bad(a, scale), gammainc(a, y))


def logcdf(x, a, loc=0, scale=1):
    """Log of the gamma cdf (``log1p(-sf)`` where the cdf is near 1).

    >>> round(float(logcdf(2.0, 3.0)), 6)
    -1.129102
    """
    return log_of_probability(*_tails("gamma.logcdf", x, a, loc, scale))


def sf(x, a, loc=0, scale=1):
    """The gamma survival function ``Q(a, y)``.

    >>> round(float(sf(2.0, 3.0)), 6)
    0.676676
    """
    y, a, scale = _clipped("gamma.sf", x, a, loc, scale)
    return nan_where(_bad(a, scale), gammaincc(a, y))


def logsf(x, a, loc=0, scale=1):
    """Log of the gamma survival function (``log1p(-cdf)`` where the sf is near 1).

    >>> round(float(logsf(2.0, 3.0)), 6)
    -0.390562
    """
    lower, upper = _tails("gamma.logsf", x, a, loc, scale)
    return log_of_probability(upper, lower)


def _tails(name, x, a, loc, scale):
    y, a, scale = _clipped(name, x, a, loc, scale)
    bad = _bad(a, scale)
    return nan_where(bad, gammainc(a, y)), nan_where(bad, gammaincc(a, y))
