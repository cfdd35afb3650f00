"""``functrax.scipy.stats.uniform``: the uniform distribution on ``[loc, loc + scale]``,
as ``jax.scipy.stats.uniform``. ``scale <= 0`` gives NaN.
"""
from __future__ import annotations

from functrax import lax
from functrax import numpy as fnp
from functrax.scipy.stats._util import bad_scale, nan_where, promote, standardize

__all__ = ["logpdf", "pdf", "cdf", "ppf"]


def logpdf(x, loc=0, scale=1):
    """Log of the uniform density: ``-log(scale)`` on ``[loc, loc + scale]``, else ``-inf``.

    Args:
      x: where to evaluate; ``loc``, ``scale``: the support's start and length (broadcast
        together).

    >>> round(float(logpdf(0.5, 0.0, 2.0)), 6)
    -0.693147
    """
    x, loc, scale = promote("uniform.logpdf", x, loc, scale)
    inside = (x >= loc) & (x <= loc + scale)
    out = fnp.where(inside, -lax.log(scale), -fnp.inf)
    return nan_where(bad_scale(scale), out)


def pdf(x, loc=0, scale=1):
    """The uniform density.

    >>> float(pdf(0.5, 0.0, 2.0))
    0.5
    """
    return lax.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """The uniform cdf: ``(x - loc) / scale`` clipped to ``[0, 1]``.

    >>> float(cdf(0.5, 0.0, 2.0))
    0.25
    """
    x, loc, scale = promote("uniform.cdf", x, loc, scale)
    out = fnp.clip(standardize(x, loc, scale), 0, 1)
    return nan_where(bad_scale(scale), out)


def ppf(q, loc=0, scale=1):
    """The uniform quantile function ``loc + scale q``; NaN outside ``[0, 1]``.

    >>> float(ppf(0.25, 0.0, 2.0))
    0.5
    """
    q, loc, scale = promote("uniform.ppf", q, loc, scale)
    bad = ~((q >= 0) & (q <= 1)) | bad_scale(scale)
    return nan_where(bad, loc + scale * q)
