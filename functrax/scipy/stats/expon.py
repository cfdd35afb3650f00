"""``functrax.scipy.stats.expon``: the exponential distribution, as
``jax.scipy.stats.expon``.

``cdf = -expm1(-y)``, ``logcdf = log(-expm1(-y))`` (``log1p(-exp(-y))`` for
``y > log 2``), ``logsf = -y`` and ``ppf =
-log1p(-q)`` keep full accuracy in both tails. ``scale <= 0`` gives NaN.
"""
from __future__ import annotations

import numpy as np

from functrax import lax
from functrax import numpy as fnp
from functrax.scipy.stats._util import bad_scale, guard, nan_where, promote, standardize

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"]

_LOG2 = float(np.log(2.0))


def _std(name, x, loc, scale):
    x, loc, scale = promote(name, x, loc, scale)
    y = standardize(x, loc, scale)
    inside = y >= 0
    return guard(inside, y, 1.0), inside, scale


def logpdf(x, loc=0, scale=1):
    """Log of the exponential density ``exp(-y) / scale``; ``-inf`` below ``loc``.

    Args:
      x: where to evaluate; ``loc``, ``scale``: location and scale (the mean is
        ``loc + scale``; all broadcast together).

    >>> round(float(logpdf(2.0, scale=2.0)), 6)
    -1.693147
    """
    y, inside, scale = _std("expon.logpdf", x, loc, scale)
    out = fnp.where(inside, -y - lax.log(scale), -fnp.inf)
    return nan_where(bad_scale(scale), out)


def pdf(x, loc=0, scale=1):
    """The exponential density.

    >>> round(float(pdf(1.0)), 6)
    0.367879
    """
    return lax.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """The exponential cdf ``1 - exp(-y)``.

    >>> round(float(cdf(1.0)), 6)
    0.632121
    """
    y, inside, scale = _std("expon.cdf", x, loc, scale)
    return nan_where(bad_scale(scale), fnp.where(inside, -lax.expm1(-y), 0))


def logcdf(x, loc=0, scale=1):
    """Log of the exponential cdf, ``log(-expm1(-y))`` (``log1p(-exp(-y))`` above
    ``log 2``).

    >>> round(float(logcdf(1.0)), 6)
    -0.458675
    """
    y, inside, scale = _std("expon.logcdf", x, loc, scale)
    big = y > _LOG2
    tail = fnp.where(big, lax.log1p(-lax.exp(-guard(big, y, 1.0))),
                     lax.log(-lax.expm1(-guard(~big, y, 0.5))))
    out = fnp.where(inside, tail, -fnp.inf)
    return nan_where(bad_scale(scale), out)


def sf(x, loc=0, scale=1):
    """The exponential survival function ``exp(-y)`` (1 below ``loc``).

    >>> round(float(sf(1.0)), 6)
    0.367879
    """
    y, inside, scale = _std("expon.sf", x, loc, scale)
    return nan_where(bad_scale(scale), fnp.where(inside, lax.exp(-y), 1))


def logsf(x, loc=0, scale=1):
    """Log of the exponential survival function, ``-y`` (0 below ``loc``).

    >>> float(logsf(3.0))
    -3.0
    """
    y, inside, scale = _std("expon.logsf", x, loc, scale)
    return nan_where(bad_scale(scale), fnp.where(inside, -y, 0))


def ppf(q, loc=0, scale=1):
    """The exponential quantile function ``loc - scale log1p(-q)``; NaN outside
    ``[0, 1]``.

    >>> round(float(ppf(0.5)), 6)
    0.693147
    """
    q, loc, scale = promote("expon.ppf", q, loc, scale)
    bad = ~((q >= 0) & (q <= 1)) | bad_scale(scale)
    return nan_where(bad, loc - scale * lax.log1p(-guard(q <= 1, q, 0.5)))
