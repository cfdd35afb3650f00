"""Window functions of ``functrax.numpy``: bartlett, blackman, hamming, hanning, kaiser (as
JAX's).

The length ``M`` is static (it fixes the output shape), so a window is a constant: computed
in float64 and rounded once to the default float dtype (float32 unless x64 is enabled).

>>> import functrax.numpy as fnp
>>> fnp.hanning(5)
Array([0. , 0.5, 1. , 0.5, 0. ], dtype=float32)
"""
from __future__ import annotations

import operator

import numpy as np

from functrax import core, dtypes, lax
from functrax.numpy.bessel import i0
from functrax.numpy.indexing import concrete_or_error

__all__ = ["bartlett", "blackman", "hamming", "hanning", "kaiser"]


def _length(M, fun_name):
    """The static window length (a concrete integer, as JAX's ``concrete_or_error(int, M)``)."""
    v = concrete_or_error(M, f"The error arose for the M argument of functrax.numpy.{fun_name}"
                             "(), which fixes the output shape. ")
    try:
        return operator.index(np.asarray(v).item() if np.ndim(v) == 0 else v)
    except TypeError:
        if isinstance(v, (float, np.floating)) and float(v).is_integer():
            return int(v)
        raise TypeError(f"{fun_name}: M must be an integer, got {M!r}") from None


def _constant(w):
    """A window computed in float64 (it depends only on the static length), rounded once."""
    return core.Array(np.asarray(w, np.float64).astype(dtypes.default_float_dtype()))


def _cosine_window(fun_name, M, coefs):
    """``sum_k (-1)**k coefs[k] cos(2 pi k n / (M - 1))`` (numpy's form)."""
    M = _length(M, fun_name)
    if M <= 1:
        return _constant(np.ones(max(M, 0)))
    n = np.arange(M)
    return _constant(sum(c * (-1) ** k * np.cos(2.0 * np.pi * k * n / (M - 1))
                         for k, c in enumerate(coefs)))


def hamming(M):
    """The Hamming window ``0.54 - 0.46 cos(2 pi n / (M - 1))`` of length ``M``.

    Args:
      M: the number of points (a static integer; ``M <= 1`` gives ``ones(M)``).

    Returns:
      A float array of shape ``(M,)``.

    >>> import functrax.numpy as fnp
    >>> fnp.hamming(3)
    Array([0.08, 1.  , 0.08], dtype=float32)
    """
    return _cosine_window("hamming", M, (0.54, 0.46))


def hanning(M):
    """The Hann window ``0.5 - 0.5 cos(2 pi n / (M - 1))`` of length ``M`` (static).

    >>> import functrax.numpy as fnp
    >>> fnp.hanning(3)
    Array([0., 1., 0.], dtype=float32)
    """
    return _cosine_window("hanning", M, (0.5, 0.5))


def blackman(M):
    """The Blackman window ``0.42 - 0.5 cos(2 pi n/(M-1)) + 0.08 cos(4 pi n/(M-1))``.

    >>> import functrax.numpy as fnp
    >>> fnp.blackman(3)
    Array([-1.3877788e-17,  1.0000000e+00, -1.3877788e-17], dtype=float32)
    """
    return _cosine_window("blackman", M, (0.42, 0.5, 0.08))


def bartlett(M):
    """The Bartlett (triangular) window ``1 - |2n - (M - 1)| / (M - 1)`` of length ``M``.

    >>> import functrax.numpy as fnp
    >>> fnp.bartlett(5)
    Array([0. , 0.5, 1. , 0.5, 0. ], dtype=float32)
    """
    M = _length(M, "bartlett")
    if M <= 1:
        return _constant(np.ones(max(M, 0)))
    n = np.arange(M)
    return _constant(1.0 - np.abs(2.0 * n - (M - 1)) / (M - 1))


def kaiser(M, beta):
    """The Kaiser window ``I0(beta sqrt(1 - ((n - a) / a)**2)) / I0(beta)``, ``a = (M - 1) / 2``.

    Args:
      M: the number of points (a static integer; ``M <= 1`` gives ``ones(M)``).
      beta: the shape parameter (may be traced: the window is differentiable in it).

    Returns:
      A float array of shape ``(M,)``.

    >>> import functrax.numpy as fnp
    >>> fnp.kaiser(3, 5.0)
    Array([0.03671089, 1.        , 0.03671089], dtype=float32)
    """
    M = _length(M, "kaiser")
    dt = dtypes.default_float_dtype()
    if M <= 1:
        return _constant(np.ones(max(M, 0)))
    n = lax.iota(dt, M)
    alpha = 0.5 * (M - 1)
    beta = lax.convert_element_type(beta, dt)
    r = lax.sqrt(lax.max(1 - ((n - alpha) / alpha) ** 2, lax.full((), 0, dt)))
    return i0(beta * r) / i0(beta)
