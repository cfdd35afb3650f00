"""Special functions on numpy arrays (erf, erfc, erf_inv, lgamma, digamma) without scipy.

Computed in float64 and cast back to the input dtype.
"""
from __future__ import annotations

import math

import numpy as np


def _lgamma_scalar(v):
    try:
        return math.lgamma(v)
    except ValueError:  # poles at 0, -1, -2, ...
        return math.inf


_erf_u = np.frompyfunc(math.erf, 1, 1)
_erfc_u = np.frompyfunc(math.erfc, 1, 1)
_lgamma_u = np.frompyfunc(_lgamma_scalar, 1, 1)


def _apply(ufunc, x):
    return np.asarray(ufunc(np.asarray(x, np.float64)), np.float64).astype(x.dtype)


def erf(x):
    return _apply(_erf_u, x)


def erfc(x):
    return _apply(_erfc_u, x)


def lgamma(x):
    return _apply(_lgamma_u, x)


def digamma(x):
    """psi(x) by reflection (x < 0.5), recurrence up to x >= 6, then the asymptotic series."""
    v = np.asarray(x, np.float64)
    out = np.empty_like(v)
    with np.errstate(all="ignore"):
        refl = v < 0.5
        w = np.where(refl, 1.0 - v, v)
        acc = np.zeros_like(w)
        for _ in range(6):
            small = w < 6
            acc = np.where(small, acc - 1.0 / w, acc)
            w = np.where(small, w + 1.0, w)
        inv = 1.0 / w
        inv2 = inv * inv
        series = (np.log(w) - 0.5 * inv - inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (
            1 / 252 - inv2 * (1 / 240 - inv2 / 132)))))
        res = acc + series
        res = np.where(refl, res - np.pi / np.tan(np.pi * v), res)
        res = np.where((v <= 0) & (v == np.floor(v)), np.nan, res)
    out[...] = res
    return out.astype(x.dtype)


def erf_inv(x):
    """Inverse error function: Giles' single-precision approximation, refined by Newton."""
    v = np.asarray(x, np.float64)
    with np.errstate(all="ignore"):
        w = -np.log((1.0 - v) * (1.0 + v))
        small = w < 5.0
        ws = w - 2.5
        p_s = 2.81022636e-08
        for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                  -0.00125372503, -0.00417768164, 0.246640727, 1.50140941):
            p_s = c + p_s * ws
        wl = np.sqrt(w) - 3.0
        p_l = -0.000200214257
        for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                  -0.0076224613, 0.00943887047, 1.00167406, 2.83297682):
            p_l = c + p_l * wl
        y = np.where(small, p_s, p_l) * v
        for _ in range(2):  # Newton steps on erf(y) - v
            err = np.asarray(_erf_u(y), np.float64) - v
            y = y - err / (2.0 / math.sqrt(math.pi) * np.exp(-y * y))
        y = np.where(np.abs(v) == 1.0, np.sign(v) * np.inf, y)
        y = np.where(np.abs(v) > 1.0, np.nan, y)
    return np.asarray(y).astype(x.dtype)
