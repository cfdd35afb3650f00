"""``functrax.scipy.stats.logistic``: the logistic distribution, as
``jax.scipy.stats.logistic``.

``logpdf`` is ``-|y| - 2 log1p(exp(-|y|))`` (no overflow), ``ppf``/``isf`` an accurate
logit (also near ``q = 1/2``). ``scale <= 0`` gives NaN.
"""
from __future__ import annotations

from functrax import lax
from functrax.scipy.special import expit
from functrax.scipy.stats._util import (
    bad_scale, logit, nan_where, promote, standardize,
)

__all__ = ["logpdf", "pdf", "cdf", "sf", "ppf", "isf"]


def logpdf(x, loc=0, scale=1):
    """Log of the logistic density ``exp(-y) / (scale (1 + exp(-y))**2)``.

    Args:
      x: where to evaluate; ``loc``, ``scale``: location and scale (broadcast together).

    >>> round(float(logpdf(0.0)), 6)
    -1.386294
    """
    x, loc, scale = promote("logistic.logpdf", x, loc, scale)
    a = lax.abs(standardize(x, loc, scale))
    out = -a - 2 * lax.log1p(lax.exp(-a)) - lax.log(scale)
    return nan_where(bad_scale(scale), out)


def pdf(x, loc=0, scale=1):
    """The logistic density.

    >>> round(float(pdf(0.0)), 6)
    0.25
    """
    return lax.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """The logistic cdf ``expit(y)``.

    >>> round(float(cdf(1.0)), 6)
    0.731059
    """
    x, loc, scale = promote("logistic.cdf", x, loc, scale)
    return nan_where(bad_scale(scale), expit(standardize(x, loc, scale)))


def sf(x, loc=0, scale=1):
    """The logistic survival function ``expit(-y)``.

    >>> round(float(sf(1.0)), 6)
    0.268941
    """
    x, loc, scale = promote("logistic.sf", x, loc, scale)
    return nan_where(bad_scale(scale), expit(-standardize(x, loc, scale)))


def ppf(q, loc=0, scale=1):
    """The logistic quantile function ``loc + scale logit(q)``.

    >>> round(float(ppf(0.75)), 6)
    1.098612
    """
    q, loc, scale = promote("logistic.ppf", q, loc, scale)
    return nan_where(bad_scale(scale), loc + scale * logit(q))


def isf(q, loc=0, scale=1):
    """The logistic inverse survival function ``loc - scale logit(q)``.

    >>> round(float(isf(0.25)), 6)
    1.098612
    """
    q, loc, scale = promote("logistic.isf", q, loc, scale)
    return nan_where(bad_scale(scale), loc - scale * logit(q))
