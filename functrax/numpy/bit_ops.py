"""Bit-level functions: packbits / unpackbits (bytes <-> bits) and the float decompositions
frexp / spacing (as ``jax.numpy``'s).

>>> import functrax.numpy as fnp
>>> fnp.packbits(fnp.array([1, 0, 1]))
Array([160], dtype=uint8)
"""
from __future__ import annotations

import numpy as np

from functrax import core, dtypes, lax
from functrax.numpy import reductions, selection, shape_ops, ufuncs
from functrax.numpy.creation import asarray
from functrax.numpy.promotion import canonicalize_axis, check_arraylike, promote_dtypes_inexact

__all__ = ["packbits", "unpackbits", "frexp", "spacing"]

_U8 = np.dtype(np.uint8)


def _aval(x):
    return core.get_aval(x)


def _bitorder(bitorder):
    if bitorder not in ("little", "big"):
        raise ValueError(f"'order' must be either 'little' or 'big', got {bitorder!r}")
    return bitorder


def _weights(bitorder):
    """The value of each of the 8 bit positions in a byte."""
    w = (1 << np.arange(8)).astype(np.uint8)
    return w[::-1].copy() if bitorder == "big" else w


def packbits(a, axis=None, bitorder="big"):
    """Pack the truthiness of ``a``'s entries into the bits of uint8 bytes along ``axis``
    (the flattened array if None), padding with zero bits to a multiple of 8.

    >>> import functrax.numpy as fnp
    >>> fnp.packbits(fnp.array([[1, 1, 0], [0, 0, 1]]), axis=1, bitorder="little")
    Array([[3],
           [4]], dtype=uint8)
    """
    check_arraylike("packbits", a)
    arr = asarray(a)
    if _aval(arr).dtype.kind not in "biu":
        raise TypeError(f"packbits: expected an input array of integer or boolean data type, "
                        f"got {_aval(arr).dtype}")
    w = _weights(_bitorder(bitorder))
    bits = lax.convert_element_type(ufuncs.not_equal(arr, 0), _U8)
    if axis is None:
        bits, axis = shape_ops.ravel(bits), 0
    axis = canonicalize_axis(axis, _aval(bits).ndim, "packbits")
    bits = shape_ops.moveaxis(bits, axis, -1)
    n = _aval(bits).shape[-1]
    if n % 8:
        pad = [(0, 0, 0)] * (_aval(bits).ndim - 1) + [(0, 8 - n % 8, 0)]
        bits = lax.pad(bits, np.uint8(0), pad)
    shape = _aval(bits).shape
    bits = shape_ops.reshape(bits, shape[:-1] + (shape[-1] // 8, 8))
    packed = reductions.sum(ufuncs.multiply(bits, w), axis=-1, dtype=_U8)
    return shape_ops.moveaxis(packed, -1, axis)


def unpackbits(a, axis=None, count=None, bitorder="big"):
    """Unpack the bits of the uint8 array ``a`` along ``axis`` (flattened if None) into a
    uint8 array of 0s and 1s; ``count`` keeps that many bits (padding with 0 if larger).

    >>> import functrax.numpy as fnp
    >>> fnp.unpackbits(fnp.array([160], dtype=fnp.uint8))
    Array([1, 0, 1, 0, 0, 0, 0, 0], dtype=uint8)
    """
    check_arraylike("unpackbits", a)
    arr = asarray(a)
    if _aval(arr).dtype != _U8:
        raise TypeError(f"unpackbits: expected an input array of unsigned byte data type "
                        f"(uint8), got {_aval(arr).dtype}")
    w = _weights(_bitorder(bitorder))
    if axis is None:
        arr, axis = shape_ops.ravel(arr), 0
    axis = canonicalize_axis(axis, _aval(arr).ndim, "unpackbits")
    arr = shape_ops.moveaxis(arr, axis, -1)
    bits = ufuncs.bitwise_and(lax.expand_dims(arr, (_aval(arr).ndim,)), w)
    bits = lax.convert_element_type(ufuncs.greater(bits, 0), _U8)
    shape = _aval(bits).shape
    bits = shape_ops.reshape(bits, shape[:-2] + (shape[-2] * 8,))
    if count is not None:
        n = _aval(bits).shape[-1]
        if count > n:
            pad = [(0, 0, 0)] * (_aval(bits).ndim - 1) + [(0, count - n, 0)]
            bits = lax.pad(bits, np.uint8(0), pad)
        else:
            bits = bits[..., :count]
    return shape_ops.moveaxis(bits, -1, axis)


# --- float decompositions ---

_INT_OF = {2: np.int16, 4: np.int32, 8: np.int64}


def frexp(x, /):
    """Split ``x`` into a mantissa in ``[0.5, 1)`` (with ``x``'s sign) and an int32 exponent:
    ``x == m * 2**e``; zero, inf and nan give ``(x, 0)``.

    Exact (bit manipulation), subnormals included; the mantissa is differentiable
    (``dm/dx = 2**-e``).

    >>> import functrax.numpy as fnp
    >>> fnp.frexp(fnp.array([8., -3.]))
    (Array([ 0.5 , -0.75], dtype=float32), Array([4, 2], dtype=int32))
    """
    check_arraylike("frexp", x)
    x, = promote_dtypes_inexact(asarray(x))
    dt = np.dtype(_aval(x).dtype)
    if dt.kind == "c":
        raise TypeError("frexp does not support complex-valued inputs")
    info = dtypes.finfo(dt)
    nmant, nexp = int(info.nmant), int(info.nexp)
    bias = (1 << (nexp - 1)) - 1
    idt = np.dtype(_INT_OF[dt.itemsize])
    tiny = ufuncs.less(ufuncs.abs(x), float(info.smallest_normal))
    scaled = selection.where(tiny, ufuncs.multiply(x, float(2.0 ** (nmant + 1))), x)
    bits = lax.bitcast_convert_type(lax.stop_gradient(scaled), idt)
    field = ufuncs.bitwise_and(ufuncs.right_shift(bits, idt.type(nmant)),
                               idt.type((1 << nexp) - 1))
    e = ufuncs.subtract(field, idt.type(bias - 1))
    e = selection.where(tiny, ufuncs.subtract(e, idt.type(nmant + 1)), e)
    special = ufuncs.logical_or(ufuncs.logical_not(ufuncs.isfinite(x)), ufuncs.equal(x, 0))
    e = lax.convert_element_type(selection.where(special, idt.type(0), e), np.int32)
    m = selection.where(special, x, ufuncs.ldexp(x, ufuncs.negative(e)))
    return m, e


def spacing(x, /):
    """The distance from ``x`` to the next representable value away from zero (negative
    for negative ``x``): ``nextafter(x, ±inf) - x``.

    >>> import functrax.numpy as fnp
    >>> fnp.spacing(fnp.array([1.0, -1.0]))
    Array([ 1.1920929e-07, -1.1920929e-07], dtype=float32)
    """
    check_arraylike("spacing", x)
    x, = promote_dtypes_inexact(asarray(x))
    if np.dtype(_aval(x).dtype).kind == "c":
        raise ValueError("spacing is not well-defined for complex inputs.")
    x = lax.stop_gradient(x)  # piecewise constant: a zero derivative
    up = ufuncs.subtract(ufuncs.nextafter(x, np.inf), x)
    down = ufuncs.subtract(ufuncs.nextafter(x, -np.inf), x)
    return selection.where(ufuncs.less(x, 0), down, up)
