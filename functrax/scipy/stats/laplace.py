"""``functrax.scipy.stats.laplace``: the Laplace distribution, as
``jax.scipy.stats.laplace``. ``scale <= 0`` gives NaN.
"""
from __future__ import annotations

import numpy as np

from functrax import lax
from functrax import numpy as fnp
from functrax.scipy.stats._util import bad_scale, guard, nan_where, promote, standardize

__all__ = ["logpdf", "pdf", "cdf"]

_LOG2 = float(np.log(2.0))


def logpdf(x, loc=0, scale=1):
    """Log of the Laplace density ``exp(-|y|) / (2 scale)``.

    Args:
      x: where to evaluate; ``loc``, ``scale``: location and scale (broadcast together).

    >>> round(float(logpdf(1.0)), 6)
    -1.693147
    """
    x, loc, scale = promote("laplace.logpdf", x, loc, scale)
    y = standardize(x, loc, scale)
    return nan_where(bad_scale(scale), -lax.abs(y) - _LOG2 - lax.log(scale))


def pdf(x, loc=0, scale=1):
    """The Laplace density.

    >>> round(float(pdf(1.0)), 6)
    0.18394
    """
    return lax.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """The Laplace cdf: ``exp(y) / 2`` for ``y <= 0``, ``1 - exp(-y) / 2`` above.

    >>> round(float(cdf(1.0)), 6)
    0.81606
    """
    x, loc, scale = promote("laplace.cdf", x, loc, scale)
    y = standardize(x, loc, scale)
    neg = y <= 0
    out = fnp.where(neg, 0.5 * lax.exp(guard(neg, y, 0.0)),
                    1 - 0.5 * lax.exp(-guard(~neg, y, 0.0)))
    return nan_where(bad_scale(scale), out)
