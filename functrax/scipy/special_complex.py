"""The principal branch of ``log Gamma`` for complex arguments (``loggamma`` of complex
input), after Hare (1997) as scipy's ``loggamma``:

- Stirling's series for ``Re z > 7`` or ``|Im z| > 7``;
- the recurrence ``log Gamma(z) = log Gamma(z + n) - log(z (z+1) ... (z+n-1))`` up to
  ``Re > 7`` otherwise, with ``2 pi i`` added back for every crossing of the product's
  argument over the negative real axis (so the branch stays the principal one);
- the reflection ``log pi - log sin(pi z) - log Gamma(1 - z)`` (plus ``2 pi i
  floor(Re z / 2 + 1/4)`` with the sign of ``Im z``) for ``Re z < 0.1`` and ``|Im z| <= 7``.

Poles (non-positive integers) give NaN + NaN i, as scipy.
"""
from __future__ import annotations

import numpy as np

from functrax import core
from functrax import numpy as fnp

__all__ = ["complex_loggamma"]

# B_2k / (2k (2k - 1)), k = 1..8
_STIRLING = (1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188, -691 / 360360, 1 / 156,
             -3617 / 122400)
_HALF_LOG_2PI = 0.5 * np.log(2 * np.pi)


def _real_dtype(z):
    return np.float64 if core.get_aval(z).dtype == np.complex128 else np.float32


def _stirling(z):
    inv = 1 / z
    inv2 = inv * inv
    s = fnp.full_like(z, _STIRLING[-1])
    for c in reversed(_STIRLING[:-1]):
        s = c + inv2 * s
    return (z - 0.5) * fnp.log(z) - z + _HALF_LOG_2PI + s * inv


def _recurrence(z):
    """``log Gamma(z)`` for ``Im z >= 0``, ``Re z >= 0.1`` (up to 8 shifts)."""
    shift_prod = z
    flips = fnp.zeros(core.get_aval(z).shape, _real_dtype(z))
    sign_bit = fnp.zeros(core.get_aval(z).shape, bool)
    w = z + 1
    for _ in range(8):
        going = fnp.real(w) <= 7
        new_prod = shift_prod * w
        new_bit = fnp.signbit(fnp.imag(new_prod))
        flips = fnp.where(going & new_bit & ~sign_bit, flips + 1, flips)
        sign_bit = fnp.where(going, new_bit, sign_bit)
        shift_prod = fnp.where(going, new_prod, shift_prod)
        w = fnp.where(going, w + 1, w)
    return _stirling(w) - fnp.log(shift_prod) - flips * (2j * np.pi)


def _sinpi(z):
    """``sin(pi z)`` with the real part reduced (exact periodicity)."""
    x, y = fnp.real(z), fnp.imag(z)
    r = x - 2 * fnp.round(x / 2)
    s = fnp.sin(np.pi * r) * fnp.cosh(np.pi * y)
    c = fnp.cos(np.pi * r) * fnp.sinh(np.pi * y)
    return s + 1j * c


def _upper(z):
    """The principal log Gamma for ``Im z >= 0`` and ``Re z >= 0.1``."""
    big = (fnp.real(z) > 7) | (fnp.abs(fnp.imag(z)) > 7)
    safe_big = fnp.where(big, z, 8.0 + 0j)
    safe_small = fnp.where(big, 1.0 + 0j, z)
    return fnp.where(big, _stirling(safe_big), _recurrence(safe_small))


def _right(z):
    """``Re z >= 0.1``: the upper half plane directly, the lower one by conjugation."""
    lower = fnp.signbit(fnp.imag(z))
    zu = fnp.where(lower, fnp.conj(z), z)
    val = _upper(zu)
    return fnp.where(lower, fnp.conj(val), val)


def complex_loggamma(z):
    """The principal branch of log Gamma of a complex array (see the module docstring)."""
    x, y = fnp.real(z), fnp.imag(z)
    left = (x < 0.1) & (fnp.abs(y) <= 7)  # Stirling's series first for |Im z| > 7, as scipy
    z_right = fnp.where(left, 1 - z, z)  # the reflection's log Gamma(1 - z) has Re > 0.9
    lg = _right(z_right)
    tmp = fnp.where(fnp.signbit(y), -2 * np.pi, 2 * np.pi) * fnp.floor(0.5 * x + 0.25)
    reflected = (np.log(np.pi) + 1j * tmp) - fnp.log(_sinpi(z)) - lg
    out = fnp.where(left, reflected, lg)
    pole = (x <= 0) & (x == fnp.floor(x)) & (y == 0)
    nan = np.asarray(np.nan + 1j * np.nan, core.get_aval(out).dtype)
    return fnp.where(pole, nan, out)
