"""``functrax.scipy.stats.t``: Student's t distribution, as ``jax.scipy.stats.t``.

The normalization is ``-betaln(df / 2, 1 / 2) - log(df) / 2`` (accurate for large ``df``,
where ``lgamma(df / 2) - lgamma((df + 1) / 2)`` cancels); ``df = inf`` is the normal
distribution. ``df <= 0`` or ``scale <= 0`` give NaN.
"""
from __future__ import annotations

import numpy as np

from functrax import lax
from functrax import numpy as fnp
from functrax.scipy.special import betaln
from functrax.scipy.stats._util import (
    LOG_2PI, bad_scale, guard, nan_where, promote, standardize,
)

__all__ = ["logpdf", "pdf"]


def logpdf(x, df, loc=0, scale=1):
    """Log of Student's t density with ``df`` degrees of freedom.

    Args:
      x: where to evaluate; ``df``: degrees of freedom (> 0, ``inf`` allowed); ``loc``,
        ``scale``: location and scale (all broadcast together).

    >>> round(float(logpdf(0.0, 3.0)), 6)
    -1.000889
    """
    x, df, loc, scale = promote("t.logpdf", x, df, loc, scale)
    y = standardize(x, loc, scale)
    finite = df < np.inf
    d = guard(finite, df, 1.0)
    body = (-betaln(0.5 * d, 0.5) - 0.5 * lax.log(d)
            - 0.5 * (d + 1) * lax.log1p(lax.square(y) / d))
    gauss = -0.5 * lax.square(y) - 0.5 * LOG_2PI
    out = fnp.where(finite, body, gauss) - lax.log(scale)
    return nan_where(bad_scale(scale) | ~(df > 0), out)


def pdf(x, df, loc=0, scale=1):
    """Student's t density.

    >>> round(float(pdf(0.0, 3.0)), 6)
    0.367553
    """
    return lax.exp(logpdf(x, df, loc, scale))
