"""``functrax.scipy.stats.cauchy``: the Cauchy distribution, as
``jax.scipy.stats.cauchy``.

The tails are accurate: ``cdf(y) = atan2(1, -y) / pi`` (no ``1/2 + atan(y) / pi``
cancellation for large negative ``y``), ``logcdf``/``logsf`` switch to ``log1p(-sf)`` near
1, and ``ppf``/``isf`` use ``-1 / tan(pi q)`` in the tails and ``tan(pi (q - 1/2))`` (exact
``q - 1/2``) in the middle. ``scale <= 0`` gives NaN.
"""
from __future__ import annotations

import numpy as np

from functrax import lax
from functrax import numpy as fnp
from functrax.scipy.stats._util import (
    LOG_PI, bad_scale, guard, log_of_probability, nan_where, promote, standardize,
)

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf"]

_INV_PI = float(1 / np.pi)


def logpdf(x, loc=0, scale=1):
    """Log of the Cauchy density ``1 / (pi scale (1 + y**2))``.

    Args:
      x: where to evaluate; ``loc``, ``scale``: location and scale (broadcast together).

    >>> round(float(logpdf(1.0)), 6)
    -1.837877
    """
    x, loc, scale = promote("cauchy.logpdf", x, loc, scale)
    y = standardize(x, loc, scale)
    out = -LOG_PI - lax.log(scale) - lax.log1p(lax.square(y))
    return nan_where(bad_scale(scale), out)


def pdf(x, loc=0, scale=1):
    """The Cauchy density.

    >>> round(float(pdf(1.0)), 6)
    0.159155
    """
    return lax.exp(logpdf(x, loc, scale))


def _tail(y):
    """``P(Y <= y)`` of the standard Cauchy distribution."""
    return lax.atan2(fnp.ones_like(y), -y) * _INV_PI


def _std(name, x, loc, scale):
    x, loc, scale = promote(name, x, loc, scale)
    return standardize(x, loc, scale), bad_scale(scale)


def cdf(x, loc=0, scale=1):
    """The Cauchy cdf ``1/2 + atan(y) / pi``.

    >>> round(float(cdf(1.0)), 6)
    0.75
    """
    y, bad = _std("cauchy.cdf", x, loc, scale)
    return nan_where(bad, _tail(y))


def sf(x, loc=0, scale=1):
    """The Cauchy survival function ``cdf(-y)``.

    >>> round(float(sf(1.0)), 6)
    0.25
    """
    y, bad = _std("cauchy.sf", x, loc, scale)
    return nan_where(bad, _tail(-y))


def logcdf(x, loc=0, scale=1):
    """Log of the Cauchy cdf.

    >>> round(float(logcdf(1.0)), 6)
    -0.287682
    """
    y, bad = _std("cauchy.logcdf", x, loc, scale)
    return nan_where(bad, log_of_probability(_tail(y), _tail(-y)))


def logsf(x, loc=0, scale=1):
    """Log of the Cauchy survival function.

    >>> round(float(logsf(1.0)), 6)
    -1.386294
    """
    y, bad = _std("cauchy.logsf", x, loc, scale)
    return nan_where(bad, log_of_probability(_tail(-y), _tail(y)))


def _quantile(q):
    """The standard Cauchy quantile ``tan(pi (q - 1/2))``; NaN outside ``[0, 1]``."""
    lo, hi = q < 0.25, q > 0.75
    mid = ~(lo | hi)
    t_lo = -1 / lax.tan(np.pi * guard(lo, q, 0.125))
    t_hi = 1 / lax.tan(np.pi * (1 - guard(hi, q, 0.875)))
    t_mid = lax.tan(np.pi * (guard(mid, q, 0.5) - 0.5))
    out = fnp.where(lo, t_lo, fnp.where(hi, t_hi, t_mid))
    return nan_where(~((q >= 0) & (q <= 1)), out)


def ppf(q, loc=0, scale=1):
    """The Cauchy quantile function ``loc + scale tan(pi (q - 1/2))``.

    >>> round(float(ppf(0.75)), 6)
    1.0
    """
    q, loc, scale = promote("cauchy.ppf", q, loc, scale)
    return nan_where(bad_scale(scale), loc + scale * _quantile(q))


def isf(q, loc=0, scale=1):
    """The Cauchy inverse survival function ``loc - scale tan(pi (q - 1/2))``.

    >>> round(float(isf(0.25)), 6)
    1.0
    """
    q, loc, scale = promote("cauchy.isf", q, loc, scale)
    return nan_where(bad_scale(scale), loc - scale * _quantile(q))
