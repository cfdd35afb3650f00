"""``functrax.scipy.stats.norm``: the normal distribution, as ``jax.scipy.stats.norm``.

The tails are accurate: ``logcdf``/``logsf`` use ``log_ndtr`` (10 terms of its asymptotic
series below -20), ``sf``/``isf`` are computed by reflection (``ndtr(-y)``, ``-ndtri(q)``)
rather than as ``1 - cdf`` and ``ppf(1 - q)``. ``scale <= 0`` gives NaN.
"""
from __future__ import annotations

from functrax import lax
from functrax.scipy.special import log_ndtr, ndtr, ndtri
from functrax.scipy.stats._util import LOG_2PI, bad_scale, nan_where, promote, standardize

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf"]

# terms of log_ndtr's asymptotic series below -20 (JAX's default 3 leaves ~2e-11 there)
_SERIES = 10


def logpdf(x, loc=0, scale=1):
    """Log of the normal density ``exp(-y**2 / 2) / (sqrt(2 pi) scale)``, ``y = (x - loc) /
    scale``.

    Args:
      x: where to evaluate; ``loc``, ``scale``: the mean and standard deviation (all
        broadcast together; integers promote to the default float type).

    >>> round(float(logpdf(0.0)), 6)
    -0.918939
    """
    x, loc, scale = promote("norm.logpdf", x, loc, scale)
    y = standardize(x, loc, scale)
    out = -0.5 * lax.square(y) - lax.log(scale) - 0.5 * LOG_2PI
    return nan_where(bad_scale(scale), out)


def pdf(x, loc=0, scale=1):
    """The normal density.

    >>> round(float(pdf(0.0)), 6)
    0.398942
    """
    return lax.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """The normal cumulative distribution function ``ndtr((x - loc) / scale)``.

    >>> round(float(cdf(1.0)), 6)
    0.841345
    """
    x, loc, scale = promote("norm.cdf", x, loc, scale)
    return nan_where(bad_scale(scale), ndtr(standardize(x, loc, scale)))


def logcdf(x, loc=0, scale=1):
    """Log of the normal cdf (``log_ndtr`` with 10 terms of its asymptotic series:
    accurate far in the lower tail).

    >>> round(float(logcdf(-40.0)), 2)
    -804.61
    """
    x, loc, scale = promote("norm.logcdf", x, loc, scale)
    return nan_where(bad_scale(scale), log_ndtr(standardize(x, loc, scale), _SERIES))


def sf(x, loc=0, scale=1):
    """The survival function ``1 - cdf``, computed as ``ndtr(-y)``.

    >>> round(float(sf(1.0)), 6)
    0.158655
    """
    x, loc, scale = promote("norm.sf", x, loc, scale)
    return nan_where(bad_scale(scale), ndtr(-standardize(x, loc, scale)))


def logsf(x, loc=0, scale=1):
    """Log of the survival function, ``log_ndtr(-y)``.

    >>> round(float(logsf(40.0)), 2)
    -804.61
    """
    x, loc, scale = promote("norm.logsf", x, loc, scale)
    return nan_where(bad_scale(scale), log_ndtr(-standardize(x, loc, scale), _SERIES))


def ppf(q, loc=0, scale=1):
    """The quantile function (inverse of :func:`cdf`): ``loc + scale * ndtri(q)``; NaN
    outside ``[0, 1]``.

    >>> round(float(ppf(0.975)), 6)
    1.959964
    """
    q, loc, scale = promote("norm.ppf", q, loc, scale)
    return nan_where(bad_scale(scale), ndtri(q) * scale + loc)


def isf(q, loc=0, scale=1):
    """The inverse survival function: ``loc - scale * ndtri(q)`` (accurate for small ``q``).

    >>> round(float(isf(0.025)), 6)
    1.959964
    """
    q, loc, scale = promote("norm.isf", q, loc, scale)
    return nan_where(bad_scale(scale), loc - ndtri(q) * scale)
