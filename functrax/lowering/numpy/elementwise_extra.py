"""numpy rules of ``clz``, ``complex`` and ``reduce_precision`` (bit-exact, as XLA)."""
from __future__ import annotations

import ml_dtypes
import numpy as np

from functrax import primitives as P
from functrax.lowering.numpy.rules import numpy_rules

_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _clz(x):
    """Leading zeros: smear the highest set bit to the right, count the ones, subtract."""
    bits = x.dtype.itemsize * 8
    u = np.ascontiguousarray(x).view(_UINT[x.dtype.itemsize]).copy()
    shift = 1
    while shift < bits:
        u |= u >> np.asarray(shift, u.dtype)
        shift *= 2
    return (bits - np.bitwise_count(u).astype(np.int64)).astype(x.dtype).reshape(np.shape(x))


def _complex(x, y):
    out = np.empty(np.broadcast_shapes(np.shape(x), np.shape(y)),
                   np.complex64 if np.asarray(x).dtype == np.float32 else np.complex128)
    out.real, out.imag = x, y
    return out


def _float_layout(dt):
    """(total bits, exponent bits, mantissa bits) of a floating dtype."""
    info = ml_dtypes.finfo(dt)
    return dt.itemsize * 8, int(info.nexp), int(info.nmant)


def _reduce_precision(x, *, exponent_bits, mantissa_bits):
    x = np.ascontiguousarray(x).reshape(np.shape(x))
    nbits, src_exp, src_mant = _float_layout(x.dtype)
    ut = _UINT[x.dtype.itemsize]
    u = x.view(ut).astype(np.uint64)
    one = np.uint64(1)
    if mantissa_bits < src_mant:
        # round to nearest, ties to even, on the bits (a carry into the exponent is right)
        drop = np.uint64(src_mant - mantissa_bits)
        last = one << drop
        bias = (last >> one) - one
        u = u + (((u & last) >> drop) + bias)
        u = u & ~(last - one)
    if exponent_bits < src_exp:
        sign = one << np.uint64(nbits - 1)
        exp_mask = ((one << np.uint64(src_exp)) - one) << np.uint64(src_mant)
        src_bias = (1 << (src_exp - 1)) - 1
        red_bias = (1 << (exponent_bits - 1)) - 1
        e = u & exp_mask
        over = e > np.uint64(src_bias + red_bias) << np.uint64(src_mant)
        under = e <= np.uint64(src_bias - red_bias) << np.uint64(src_mant)
        signed_zero = u & sign
        u = np.where(over, signed_zero | exp_mask, np.where(under, signed_zero, u))
    mask = np.uint64((1 << nbits) - 1)
    out = (u & mask).astype(ut).view(x.dtype)
    if mantissa_bits > 0:  # NaNs stay NaNs (their payload may have been rounded away)
        out = np.where(np.isnan(x), x, out)
    return out.reshape(x.shape)


numpy_rules[P.clz_p] = _clz
numpy_rules[P.complex_p] = _complex
numpy_rules[P.reduce_precision_p] = _reduce_precision
