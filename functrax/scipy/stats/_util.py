"""Helpers shared by the ``functrax.scipy.stats`` distributions.

Every distribution promotes its arguments with :func:`promote` (JAX's
``promote_args_inexact``: integers and booleans become the default float type, Python
scalars stay weak), standardizes ``(x - loc) / scale`` and returns NaN where a parameter is
invalid (``scale <= 0``, a shape parameter out of its range), as ``scipy.stats``.

Branches that a ``where`` discards are evaluated at a safe point (:func:`guard`), so that no
NaN or infinite derivative of a discarded branch leaks into a gradient (``0 * nan``).
"""
from __future__ import annotations

import numpy as np

from functrax import core, lax
from functrax import numpy as fnp
from functrax.numpy.promotion import promote_args_inexact

LOG_2PI = float(np.log(2 * np.pi))
LOG_PI = float(np.log(np.pi))


def promote(name, *args):
    """``args`` promoted to one inexact dtype and broadcast (Python scalars stay weak)."""
    return [fnp.asarray(a) for a in promote_args_inexact(name, *args)]


def const(x, value):
    """``value`` as a scalar of ``x``'s dtype."""
    return np.asarray(value, core.get_aval(x).dtype)[()]


def guard(ok, x, safe):
    """``x`` where ``ok``, else the constant ``safe`` (evaluate a branch at a safe point)."""
    return fnp.where(ok, x, const(x, safe))


def nan_where(bad, value):
    """``value`` with NaN where ``bad`` (an invalid parameter)."""
    return fnp.where(bad, np.nan, value)


def bad_scale(scale):
    """Where a scale parameter is invalid (``scale <= 0``)."""
    return ~(scale > 0)


def standardize(x, loc, scale):
    """``(x - loc) / scale``."""
    return lax.div(lax.sub(x, loc), scale)


def is_integer(k):
    """Where ``k`` is a (finite) integer value."""
    return fnp.isfinite(k) & (fnp.floor(k) == k)


def log_of_probability(cdf, sf):
    """``log(cdf)`` accurate at both ends: ``log1p(-sf)`` where ``cdf`` is near 1."""
    lower = cdf < 0.5
    return fnp.where(lower, lax.log(guard(lower, cdf, 0.25)),
                     lax.log1p(-guard(~lower, sf, 0.25)))


def logit(q):
    """``log(q / (1 - q))`` to full relative accuracy, also near ``q = 1/2`` (where it is
    ``log1p(z) - log1p(-z)`` with the exact ``z = 2 q - 1``)."""
    small = q < 0.25
    qs = guard(small, q, 0.125)
    z = 2 * guard(~small, q, 0.5) - 1
    return fnp.where(small, lax.log(qs) - lax.log1p(-qs), lax.log1p(z) - lax.log1p(-z))
