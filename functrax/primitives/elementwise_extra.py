"""More elementwise primitives of ``jax.lax``: ``clz`` (count leading zeros), ``complex``
(a complex number from its real and imaginary parts) and ``reduce_precision`` (rounding to a
narrower floating-point format), and the lax compositions ``reciprocal`` and ``mulhi``.

>>> import functrax.numpy as fnp
>>> clz(fnp.array([1, 256, 0], "int32"))
Array([31, 23, 32], dtype=int32)
"""
from __future__ import annotations

import enum

from functrax import core
from functrax.primitives.define import (
    FLOATING, INTEGRAL, Family, ShapedArray, check_dtype, new_primitive, np,
)
from functrax.primitives import elementwise as _ew

class RoundingMethod(enum.IntEnum):
    """How ``lax.round`` rounds halfway values."""

    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1


clz_p = _ew.unop("clz", INTEGRAL)

complex_p = new_primitive("complex", family=Family.ELEMENTWISE)

_COMPLEX_OF = {np.dtype(np.float32): np.dtype(np.complex64),
               np.dtype(np.float64): np.dtype(np.complex128)}


@complex_p.def_abstract_eval
def _complex_abstract(x, y):
    dt = _ew._same_dtype("complex", (x, y))
    if dt not in _COMPLEX_OF:
        raise TypeError(f"complex requires float32 or float64 operands (the real and "
                        f"imaginary parts), got {dt.name}; convert them first")
    shape = _ew._nary_shape("complex", (x, y))
    return ShapedArray(shape, _COMPLEX_OF[dt], x.weak_type and y.weak_type)


reduce_precision_p = new_primitive("reduce_precision", family=Family.ELEMENTWISE)


@reduce_precision_p.def_abstract_eval
def _reduce_precision_abstract(x, *, exponent_bits, mantissa_bits):
    check_dtype("reduce_precision", x.dtype, FLOATING)
    if not isinstance(exponent_bits, int) or exponent_bits < 1:
        raise ValueError(f"reduce_precision: exponent_bits must be a positive int, got "
                         f"{exponent_bits!r}")
    if not isinstance(mantissa_bits, int) or mantissa_bits < 0:
        raise ValueError(f"reduce_precision: mantissa_bits must be a non-negative int, got "
                         f"{mantissa_bits!r}")
    return x


# --- wrappers ---


def clz(x):
    """Count leading zeros of each integer (``bits`` for 0).

    >>> import functrax.numpy as fnp
    >>> clz(fnp.array([1, -1], "int32"))
    Array([31,  0], dtype=int32)
    """
    return clz_p.bind(_ew.as_operand(x))


def complex(x, y):
    """The complex number ``x + i y`` elementwise (float32 -> complex64, float64 ->
    complex128).

    >>> complex(1.0, 2.0)
    Array(1.+2.j, dtype=complex64, weak_type=True)
    """
    return complex_p.bind(_ew.as_operand(x, y), _ew.as_operand(y, x))


def reduce_precision(operand, exponent_bits, mantissa_bits):
    """Round ``operand`` to the floating-point format with ``exponent_bits`` and
    ``mantissa_bits`` (to nearest even; out-of-range values become inf or zero), keeping its
    dtype, as XLA's ReducePrecision.

    >>> reduce_precision(1.0009765625, exponent_bits=5, mantissa_bits=10)
    Array(1.0009766, dtype=float32, weak_type=True)
    """
    return reduce_precision_p.bind(_ew.as_operand(operand), exponent_bits=int(exponent_bits),
                                   mantissa_bits=int(mantissa_bits))


def reciprocal(x):
    """``1 / x`` elementwise (``integer_pow(x, -1)``, as JAX)."""
    return _ew.integer_pow(x, -1)


def mulhi(x, y):
    """The high half of the double-width product of two integers of one dtype, as
    ``(x * y) >> bits`` computed without a wider type (signed or unsigned).

    >>> import functrax.numpy as fnp
    >>> mulhi(fnp.array(2 ** 31 - 1, "uint32"), fnp.array(4, "uint32"))
    Array(1, dtype=uint32)
    """
    x, y = _ew.as_operand(x, y), _ew.as_operand(y, x)
    dt = np.dtype(core.get_aval(x).dtype)
    if dt != core.get_aval(y).dtype or dt.kind not in "iu":
        raise TypeError(f"mulhi requires two integer operands of one dtype, got "
                        f"{dt.name} and {np.dtype(core.get_aval(y).dtype).name}")
    half = dt.itemsize * 4
    c = lambda v: np.asarray(v, dt)[()]  # noqa: E731
    low_mask = c((1 << half) - 1)
    # Hacker's Delight mulhu/mulhs: split into halves, shifts of the signed halves are
    # arithmetic (for signed operands), those of the low halves' products logical
    shr = _ew.shift_right_arithmetic if dt.kind == "i" else _ew.shift_right_logical
    x0, x1 = _ew.bitwise_and(x, low_mask), shr(x, c(half))
    y0, y1 = _ew.bitwise_and(y, low_mask), shr(y, c(half))
    w0 = _ew.mul(x0, y0)
    t = _ew.add(_ew.mul(x1, y0), _ew.shift_right_logical(w0, c(half)))
    w1 = _ew.add(_ew.mul(x0, y1), _ew.bitwise_and(t, low_mask))
    w2 = shr(t, c(half))
    return _ew.add(_ew.add(_ew.mul(x1, y1), w2), shr(w1, c(half)))


__all__ = ["RoundingMethod", "clz_p", "complex_p", "reduce_precision_p", "clz", "complex",
           "reduce_precision", "reciprocal", "mulhi"]
