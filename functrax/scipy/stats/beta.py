"""``functrax.scipy.stats.beta``: the beta distribution, as ``jax.scipy.stats.beta``.

The density is ``y**(a-1) (1-y)**(b-1) / B(a, b)`` on ``0 <= y = (x - loc) / scale <= 1``
(``xlogy``/``xlog1py``, so ``a = 1`` or ``b = 1`` are exact at the ends); the cdf and sf bind
``betainc`` (the sf as ``I_{1-y}(b, a)``, accurate near ``y = 1``, or ``1 - cdf`` where
``1 - y`` would round); ``logcdf``/``logsf`` switch to ``log1p`` of the other tail near 0.
``a <= 0``, ``b <= 0`` or ``scale <= 0`` give NaN.
"""
from __future__ import annotations

from functrax import lax
from functrax import numpy as fnp
from functrax.scipy.special import betainc, betaln, xlog1py, xlogy
from functrax.scipy.stats._util import (
    bad_scale, guard, log_of_probability, nan_where, promote, standardize,
)

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


def _bad(a, b, scale):
    return ~(a > 0) | ~(b > 0) | bad_scale(scale)


def logpdf(x, a, b, loc=0, scale=1):
    """Log of the beta density; ``-inf`` outside ``[loc, loc + scale]``.

    Args:
      x: where to evaluate; ``a``, ``b``: the shape parameters (> 0); ``loc``, ``scale``:
        the support is ``[loc, loc + scale]`` (all broadcast together).

    >>> round(float(logpdf(0.5, 2.0, 3.0)), 6)
    0.405465
    """
    x, a, b, loc, scale = promote("beta.logpdf", x, a, b, loc, scale)
    y = standardize(x, loc, scale)
    inside = (y >= 0) & (y <= 1)
    ys = guard(inside, y, 0.5)
    out = xlogy(a - 1, ys) + xlog1py(b - 1, -ys) - betaln(a, b) - lax.log(scale)
    return nan_where(_bad(a, b, scale), fnp.where(inside, out, -fnp.inf))


def pdf(x, a, b, loc=0, scale=1):
    """The beta density.

    >>> round(float(pdf(0.5, 2.0, 3.0)), 6)
    1.5
    """
    return lax.exp(logpdf(x, a, b, loc, scale))


def _clipped(name, x, a, b, loc, scale):
    x, a, b, loc, scale = promote(name, x, a, b, loc, scale)
    return fnp.clip(standardize(x, loc, scale), 0, 1), a, b, scale


def _tails(name, x, a, b, loc, scale):
    """``(cdf, sf)``: ``sf = I_{1-y}(b, a)``, except where ``1 - y`` rounds (``y < 1/2``) and
    ``cdf < 1/2``, where ``1 - cdf`` is the accurate one."""
    y, a, b, scale = _clipped(name, x, a, b, loc, scale)
    bad = _bad(a, b, scale)
    lower = betainc(a, b, y)
    upper = fnp.where((y < 0.5) & (lower < 0.5), 1 - lower, betainc(b, a, 1 - y))
    return nan_where(bad, lower), nan_where(bad, upper)


def cdf(x, a, b, loc=0, scale=1):
    """The beta cdf, the regularized incomplete beta function ``I_y(a, b)``.

    >>> round(float(cdf(0.5, 2.0, 3.0)), 6)
    0.6875
    """
    y, a, b, scale = _clipped("beta.cdf", x, a, b, loc, scale)
    return nan_where(_bad(a, b, scale), betainc(a, b, y))


def logcdf(x, a, b, loc=0, scale=1):
    """Log of the beta cdf (``log1p(-sf)`` where the cdf is near 1).

    >>> round(float(logcdf(0.5, 2.0, 3.0)), 6)
    -0.374693
    """
    return log_of_probability(*_tails("beta.logcdf", x, a, b, loc, scale))


def sf(x, a, b, loc=0, scale=1):
    """The beta survival function ``1 - I_y(a, b) = I_{1-y}(b, a)``.

    >>> round(float(sf(0.5, 2.0, 3.0)), 6)
    0.3125
    """
    return _tails("beta.sf", x, a, b, loc, scale)[1]


def logsf(x, a, b, loc=0, scale=1):
    """Log of the beta survival function (``log1p(-cdf)`` where the sf is near 1).

    >>> round(float(logsf(0.5, 2.0, 3.0)), 6)
    -1.163151
    """
    lower, upper = _tails("beta.logsf", x, a, b, loc, scale)
    return log_of_probability(upper, lower)
