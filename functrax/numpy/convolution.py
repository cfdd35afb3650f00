"""``functrax.numpy.convolve`` and ``correlate``: 1-D convolutions through
``lax.conv_general_dilated``.

>>> import functrax.numpy as fnp
>>> fnp.convolve(fnp.array([1., 2., 3.]), fnp.array([0., 1., 0.5]))
Array([0. , 1. , 2.5, 4. , 1.5], dtype=float32)
"""
from __future__ import annotations

from functrax import core, lax
from functrax.numpy.promotion import (
    asarray_operand, check_arraylike, promote_dtypes, promote_dtypes_inexact,
)

__all__ = ["convolve", "correlate"]

_MODES = ("full", "same", "valid")


def _conv_1d(op, a, v, mode, precision, preferred_element_type):
    check_arraylike(op, a, v)
    a, v = asarray_operand(a), asarray_operand(v)
    sa, sv = core.get_aval(a).shape, core.get_aval(v).shape
    if len(sa) != 1 or len(sv) != 1:
        raise ValueError(f"{op}() only support 1-dimensional inputs, got shapes {sa} and "
                         f"{sv}.")
    if preferred_element_type is None:  # as numpy: integers convolve as floats
        a, v = promote_dtypes_inexact(a, v)
    else:
        a, v = promote_dtypes(a, v)
    if sa[0] == 0 or sv[0] == 0:
        raise ValueError(f"{op}: inputs cannot be empty, got shapes {sa} and {sv}.")
    if mode not in _MODES:
        raise ValueError(f"mode must be one of {list(_MODES)}, got {mode!r}")
    reverse = False
    if op == "correlate":
        if core.get_aval(v).dtype.kind == "c":
            v = lax.conj(v)
        if sa[0] < sv[0]:
            a, v, reverse = v, a, True
    else:
        if sa[0] < sv[0]:
            a, v = v, a
        v = lax.rev(v, (0,))
    m = core.get_aval(v).shape[0]
    padding = {"valid": [(0, 0)], "same": [(m // 2, m - m // 2 - 1)],
               "full": [(m - 1, m - 1)]}[mode]
    out = lax.conv_general_dilated(lax.expand_dims(a, (0, 1)), lax.expand_dims(v, (0, 1)),
                                   (1,), padding, precision=precision,
                                   preferred_element_type=preferred_element_type)
    out = lax.squeeze(out, (0, 1))
    return lax.rev(out, (0,)) if reverse else out


def convolve(a, v, mode="full", *, precision=None, preferred_element_type=None):
    """Convolution of two one-dimensional arrays: ``c[k] = sum_j a[k - j] v[j]``.

    Args:
      a, v: 1-D arrays (integers and booleans are convolved as floats unless
        ``preferred_element_type`` is given).
      mode: ``"full"`` (default; length ``N + M - 1``), ``"same"`` (length ``max(N, M)``,
        centered) or ``"valid"`` (length ``max(N, M) - min(N, M) + 1``).
      precision: passed to ``lax.conv_general_dilated``.
      preferred_element_type: the accumulation and result dtype.

    Returns:
      the convolution.

    Raises:
      ValueError: for inputs that are not 1-D or are empty, or an unknown ``mode``.

    >>> import functrax.numpy as fnp
    >>> fnp.convolve(fnp.array([1, 2, 3, 2, 1]), fnp.array([4, 1, 2]), mode="same")
    Array([ 9., 16., 15., 12.,  5.], dtype=float32)
    """
    return _conv_1d("convolve", a, v, mode, precision, preferred_element_type)


def correlate(a, v, mode="valid", *, precision=None, preferred_element_type=None):
    """Cross-correlation of two one-dimensional arrays: ``c[k] = sum_n a[n + k] conj(v[n])``.

    Args:
      a, v: 1-D arrays.
      mode: ``"valid"`` (default), ``"same"`` or ``"full"`` (as :func:`convolve`).
      precision: passed to ``lax.conv_general_dilated``.
      preferred_element_type: the accumulation and result dtype.

    Returns:
      the cross-correlation.

    Raises:
      ValueError: for inputs that are not 1-D or are empty, or an unknown ``mode``.

    >>> import functrax.numpy as fnp
    >>> fnp.correlate(fnp.array([1., 2., 3.]), fnp.array([0., 1.]), mode="full")
    Array([1., 2., 3., 0.], dtype=float32)
    """
    return _conv_1d("correlate", a, v, mode, precision, preferred_element_type)
