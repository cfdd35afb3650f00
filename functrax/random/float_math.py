"""Floating-point kernels that reproduce what JAX computes on CPU, bit for bit.

JAX samplers are jitted, and XLA:CPU (1) contracts a multiply feeding an add into one fused
multiply-add and (2) computes float32 ``log`` with a Cephes polynomial rather than the
correctly rounded value. The samplers use these helpers where the difference is visible in
the results (a uniform on ``[minval, maxval)`` whose span is not a power of two, Gumbel
noise): built from lax operations, they trace, batch and differentiate like any other code.
(``erf_inv`` is a primitive whose float32 lowering is XLA's ErfInv32, fused steps included:
``functrax/lowering/numpy/special_functions.py``.)
"""
from __future__ import annotations

import numpy as np

from functrax import core, lax
from functrax.lax import bitcast_convert_type

# Veltkamp splitting constants 2**ceil(p/2) + 1 for p-bit significands
_SPLITTER = {np.dtype(np.float32): 4097.0, np.dtype(np.float64): 134217729.0}


def _dtype(x):
    return core.get_aval(x).dtype


def _split(x, splitter):
    """x = hi + lo exactly, each half fitting in half the significand (Veltkamp)."""
    c = lax.mul(x, splitter)
    hi = lax.sub(c, lax.sub(c, x))
    return hi, lax.sub(x, hi)


def _fma_emulated(a, b, c, splitter):
    """round(a*b + c) in working-precision arithmetic: Dekker's exact product and Knuth's
    two-sum, with the error terms added before the final rounding."""
    p = lax.mul(a, b)
    ah, al = _split(a, splitter)
    bh, bl = _split(b, splitter)
    err = lax.add(lax.add(lax.add(lax.sub(lax.mul(ah, bh), p), lax.mul(ah, bl)),
                          lax.mul(al, bh)), lax.mul(al, bl))
    s = lax.add(p, c)
    bb = lax.sub(s, p)
    t = lax.add(lax.sub(p, lax.sub(s, bb)), lax.sub(c, bb))
    return lax.add(s, lax.add(t, err))


def fma(a, b, c):
    """``a * b + c`` rounded once, as XLA:CPU computes a contracted multiply-add.

    Operands share one floating dtype (rank-0 operands may stand beside arrays). The value is
    the fused result; derivatives are those of ``a * b + c``. Where the emulation cannot be
    exact (overflow in the splitting, non-finite values) the plain result is kept.
    """
    plain = lax.add(lax.mul(a, b), c)
    splitter = _SPLITTER.get(_dtype(plain))
    if splitter is None:
        return plain
    a, b, c = (lax.stop_gradient(v) for v in (a, b, c))
    diff = lax.sub(_fma_emulated(a, b, c, splitter), lax.stop_gradient(plain))
    diff = lax.select(lax.is_finite(diff), diff, lax.full_like(diff, 0))
    return lax.add(plain, lax.stop_gradient(diff))


# --- log: XLA:CPU's vectorized float32 logarithm (Cephes, as Eigen's plog) ---

_LOG_P = (7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1,
          1.4249322787e-1, -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1,
          3.3333331174e-1)
_LOG_Q1, _LOG_Q2 = -2.12194440e-4, 0.693359375


def _frexp_f32(x):
    """Mantissa in [0.5, 1) and exponent (as float32) of positive normal float32 ``x``."""
    bits = bitcast_convert_type(x, np.uint32)
    e = lax.convert_element_type(lax.shift_right_logical(bits, np.uint32(23)), np.int32)
    e = lax.convert_element_type(lax.sub(e, np.int32(126)), np.float32)
    m_bits = lax.bitwise_or(lax.bitwise_and(bits, np.uint32(0x807FFFFF)),
                            np.uint32(0x3F000000))
    return bitcast_convert_type(m_bits, np.float32), e


def _log_f32(x):
    m, e = _frexp_f32(lax.max(x, float(np.finfo(np.float32).tiny)))
    # shift m from [0.5, 1) to [sqrt(1/2) - 1, sqrt(2) - 1)
    small = lax.lt(m, 0.707106781186547524)
    zero = lax.full_like(m, 0.0)
    tmp = lax.select(small, m, zero)
    m = lax.sub(m, 1.0)
    e = lax.sub(e, lax.select(small, lax.full_like(m, 1.0), zero))
    m = lax.add(m, tmp)
    x2 = lax.mul(m, m)
    x3 = lax.mul(x2, m)
    p = _LOG_P
    y = lax.add(lax.mul(m, p[0]), p[1])
    y1 = lax.add(lax.mul(m, p[3]), p[4])
    y2 = lax.add(lax.mul(m, p[6]), p[7])
    y = lax.add(lax.mul(y, m), p[2])
    y1 = lax.add(lax.mul(y1, m), p[5])
    y2 = lax.add(lax.mul(y2, m), p[8])
    y = lax.add(lax.mul(y, x3), y1)
    y = lax.add(lax.mul(y, x3), y2)
    y = lax.mul(y, x3)
    y = lax.add(y, lax.mul(e, _LOG_Q1))
    m = lax.sub(m, lax.mul(x2, 0.5))
    m = lax.add(m, y)
    m = lax.add(m, lax.mul(e, _LOG_Q2))
    # log(x < 0 or nan) = nan, log(0) = -inf, log(inf) = inf
    m = lax.select(lax.eq(x, np.inf), lax.full_like(m, np.inf), m)
    m = lax.select(lax.eq(x, 0.0), lax.full_like(m, -np.inf), m)
    bad = lax.bitwise_not(lax.ge(x, 0.0))
    return lax.select(bad, lax.full_like(m, np.nan), m)


def log(x):
    """Natural logarithm as JAX computes it on CPU (a Cephes polynomial for float32)."""
    if _dtype(x) == np.float32:
        return _log_f32(x)
    return lax.log(x)

