"""Special functions on numpy arrays (erf, erfc, erf_inv, lgamma, digamma) without scipy,
and the float64 building blocks the other special-function modules share.

Every function computes in float64 and rounds once to the input dtype (float16/bfloat16 via
float32, as the Triton backend rounds them).
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["erf", "erfc", "lgamma", "digamma", "erf_inv", "erf_inv32", "erf_inv64", "fma32",
          "ERFINV32_W_LT_5", "ERFINV32_W_GE_5", "as_f64", "finish", "lgamma64",
           "digamma64", "log1pmx", "stirling_correction", "lbeta64", "EPS64",
           "weideman_coefficients", "erfc64"]

EPS64 = float(np.finfo(np.float64).eps)


def as_f64(*args):
    """The operands broadcast to one shape, as float64 arrays, and the result dtype."""
    dt = np.asarray(args[0]).dtype
    arrays = np.broadcast_arrays(*[np.asarray(a, np.float64) for a in args])
    return [np.array(a, np.float64) for a in arrays], dt


def finish(out, dtype):
    """Round a float64 result once to ``dtype`` (16-bit floats through float32)."""
    out = np.asarray(out, np.float64)
    if np.dtype(dtype).itemsize <= 2:
        return out.astype(np.float32).astype(dtype)
    return out.astype(dtype)


def _lgamma_scalar(v):
    try:
        return math.lgamma(v)
    except ValueError:  # poles at 0, -1, -2, ...
        return math.inf


_erf_u = np.frompyfunc(math.erf, 1, 1)
_lgamma_u = np.frompyfunc(_lgamma_scalar, 1, 1)


def _apply(ufunc, x):
    return finish(np.asarray(ufunc(np.asarray(x, np.float64)), np.float64), x.dtype)


def erf(x):
    return _apply(_erf_u, x)


def erfc(x):
    return finish(erfc64(x), x.dtype)


def erfc64(x):
    """erfc in float64: ``1 - erf(x)`` for ``|x| < 0.5``; beyond, ``exp(-x**2) erfcx(|x|)``
    with ``erfcx`` from Weideman's formula on the imaginary axis and ``exp(-x**2)`` split
    as ``x = m + f`` (``m`` a multiple of 1/128, Cephes' ``expx2``), so the tail keeps its
    relative accuracy (about 1e-15) down to the subnormals; ``2 - erfc(-x)`` below -0.5.
    The Triton template (``rules_special_functions._erfc``) computes the same formula."""
    v = np.asarray(x, np.float64)
    length, coeffs = _WEIDEMAN
    with np.errstate(all="ignore"):
        ax = np.abs(v)
        d = length + ax
        p = np.polyval(coeffs, (length - ax) / d)
        ecx = 2.0 * p / (d * d) + _INV_SQRT_PI / d
        m = np.floor(128.0 * ax + 0.5) * 0.0078125
        f = ax - m
        tail = np.exp(-(m * m)) * np.exp(-(2.0 * m * f + f * f)) * ecx
        tail = np.where(ax == np.inf, 0.0, tail)
        small = 1.0 - np.asarray(_erf_u(v), np.float64)
    return np.where(v >= 0.5, tail, np.where(v <= -0.5, 2.0 - tail, small))


def lgamma(x):
    return _apply(_lgamma_u, x)


def lgamma64(x):
    """``log|Gamma(x)|`` of a float64 array (``inf`` at the poles)."""
    return np.asarray(_lgamma_u(np.asarray(x, np.float64)), np.float64)


# B_2k / (2k) for the asymptotic series of digamma, k = 1..7
_DIGAMMA_SERIES = (1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132, -691 / 32760, 1 / 12)


def digamma64(x):
    """psi(x) in float64: reflection below 0.5 (``pi / tan(pi x)`` on the argument reduced
    to [-1/2, 1/2]), the recurrence up to ``x >= 10``, then the asymptotic series through
    ``B_14`` (truncation error below 1e-17)."""
    v = np.asarray(x, np.float64)
    with np.errstate(all="ignore"):
        refl = v < 0.5
        w = np.where(refl, 1.0 - v, v)
        acc = np.zeros_like(w)
        for _ in range(10):
            small = w < 10
            acc = np.where(small, acc - 1.0 / w, acc)
            w = np.where(small, w + 1.0, w)
        inv2 = 1.0 / (w * w)
        tail = np.full_like(w, _DIGAMMA_SERIES[-1])
        for c in reversed(_DIGAMMA_SERIES[:-1]):
            tail = c + inv2 * tail
        res = acc + np.log(w) - 0.5 / w - inv2 * tail
        r = v - np.round(v)
        res = np.where(refl, res - np.pi / np.tan(np.pi * r), res)
        res = np.where((v <= 0) & (v == np.floor(v)), np.nan, res)
        res = np.where(v == np.inf, np.inf, res)
    return res


def digamma(x):
    return finish(digamma64(x), x.dtype)


def log1pmx(t):
    """``log(1 + t) - t`` in float64, accurate for small ``|t|`` (its power series)."""
    t = np.asarray(t, np.float64)
    with np.errstate(all="ignore"):
        direct = np.log1p(t) - t
        small = np.abs(t) < 0.5
        ts = np.where(small, t, 0.0)
        term = -ts * ts / 2
        total = term
        power = ts * ts
        for k in range(3, 60):
            power = power * ts
            total = total + (power / k if k % 2 else -power / k)
    return np.where(small, total, direct)


# B_2k / (2k (2k - 1)) for Stirling's series of lgamma, k = 1..8
_STIRLING = (1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188, -691 / 360360, 1 / 156,
             -3617 / 122400)


def stirling_correction(a):
    """``lgamma(a) - ((a - 1/2) log a - a + log(2 pi) / 2)`` for ``a >= 10`` (float64)."""
    a = np.asarray(a, np.float64)
    with np.errstate(all="ignore"):
        inv2 = 1.0 / (a * a)
        s = np.full_like(a, _STIRLING[-1])
        for c in reversed(_STIRLING[:-1]):
            s = c + inv2 * s
        return s / a


def lbeta64(a, b):
    """``log B(a, b)`` for ``a, b > 0`` in float64, without the cancellation of
    ``lgamma(a) + lgamma(b) - lgamma(a + b)`` when an argument is large."""
    a, b = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(b, np.float64))
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    with np.errstate(all="ignore"):
        direct = lgamma64(lo) + lgamma64(hi) - lgamma64(lo + hi)
        big_hi = (hi >= 10) & (lo > 0)
        hs = np.where(big_hi, hi, 10.0)
        corr_hi = stirling_correction(hs) - stirling_correction(hs + lo)
        # lgamma(hi) - lgamma(hi + lo), by Stirling's formula
        lg_diff = -(hs + lo - 0.5) * np.log1p(lo / hs) - lo * np.log(hs) + lo + corr_hi
        one_big = lgamma64(lo) + lg_diff
        ls = np.where(lo >= 10, lo, 10.0)
        both = (0.5 * np.log(2 * np.pi) + (ls - 0.5) * np.log(ls / (ls + hs))
                + hs * np.log1p(-ls / (ls + hs)) - 0.5 * np.log(hs)
                + stirling_correction(ls) + stirling_correction(hs)
                - stirling_correction(ls + hs))
    out = np.where(big_hi, np.where(lo >= 10, both, one_big), direct)
    return out


def weideman_coefficients(n):
    """Weideman's (1994) rational approximation of the Faddeeva function,
    ``w(z) ~ 2 p(Z) / (L - iz)**2 + 1 / (sqrt(pi) (L - iz))`` with ``Z = (L + iz) / (L - iz)``
    for ``Im z >= 0``: returns ``(L, coefficients of p, highest degree first)``. With
    ``n = 40`` the relative error is about 1e-14 for ``|z| < 6`` and 1e-15 on the imaginary
    axis (where everything is real: ``erfcx``)."""
    m = 2 * n
    k = np.arange(-m + 1, m)
    length = math.sqrt(n / math.sqrt(2))
    t = length * np.tan(k * np.pi / (2 * m))
    f = np.concatenate([[0.0], np.exp(-t ** 2) * (length ** 2 + t ** 2)])
    a = np.real(np.fft.fft(np.fft.fftshift(f))) / (2 * m)
    return float(length), tuple(float(c) for c in np.flipud(a[1:n + 1]))


_WEIDEMAN = weideman_coefficients(40)
_INV_SQRT_PI = 0.5641895835477563


def erf_inv(x):
    """Inverse error function as JAX computes it: XLA's single-precision ErfInv32 for
    float32 (float16/bfloat16 through float32), an accurate float64 one for float64."""
    if np.dtype(x.dtype) == np.float64:
        return erf_inv64(x)
    return erf_inv32(np.asarray(x, np.float32)).astype(x.dtype)


def erf_inv64(x):
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
    return finish(y, x.dtype)


# XLA's ErfInv32 (Giles, "Approximating the erfinv function"): w = -log1p(-x^2) and one
# polynomial in w - 2.5 (w < 5) or sqrt(w) - 3, each Horner step a fused multiply-add
ERFINV32_W_LT_5 = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                   0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
ERFINV32_W_GE_5 = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
                   0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def fma32(a, b, c):
    """``a * b + c`` of float32 arrays, rounded once to float32 (a fused multiply-add).

    The product is exact in float64; the float64 sum is rounded to odd (its TwoSum error
    says which neighbour the exact value lies towards), so the final rounding to float32 is
    the correctly rounded fused result (Boldo & Melquiond's round-to-odd).

    >>> a = np.float32(1 + 2 ** -12)
    >>> float(fma32(a, a, np.float32(-1))) == 2 ** -11 + 2 ** -24
    True
    """
    ab = np.asarray(a, np.float64) * np.asarray(b, np.float64)
    c = np.asarray(c, np.float64)
    with np.errstate(all="ignore"):
        s = ab + c
        bb = s - ab
        err = (ab - (s - bb)) + (c - bb)
        bits = np.asarray(s).view(np.int64)
        fix = (err != 0) & ((bits & 1) == 0) & np.isfinite(s)
        step = np.where((err > 0) == (s > 0), 1, -1).astype(np.int64)
        odd = np.where(fix, bits + step, bits).view(np.float64)
        return odd.astype(np.float32)


def erf_inv32(x):
    """XLA's ErfInv32 on float32 ``x``, bit for bit (log1p rounded once, as the numpy
    backend's ``log1p``; every Horner step fused, as XLA:CPU contracts them)."""
    f32 = np.float32
    with np.errstate(all="ignore"):
        w = -np.log1p((x * -x).astype(np.float64)).astype(f32)
        lt = w < f32(5.0)
        w = np.where(lt, w - f32(2.5), np.sqrt(w) - f32(3.0)).astype(f32)
        coeffs = [np.where(lt, f32(a), f32(b)) for a, b in zip(ERFINV32_W_LT_5, ERFINV32_W_GE_5)]
        p = coeffs[0]
        for c in coeffs[1:]:
            p = fma32(p, w, c)
        return np.where(np.abs(x) == f32(1.0), x * f32(np.inf), p * x).astype(f32)
