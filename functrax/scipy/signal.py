"""``functrax.scipy.signal``: direct N-d convolutions and correlations (as
``jax.scipy.signal``), lowered to one ``lax.conv_general_dilated`` each (``method="fft"``:
:func:`fftconvolve`); the spectral functions (``fftconvolve``, ``detrend``, ``stft``,
``istft``, ``csd``, ``welch``) live in :mod:`functrax.scipy.signal_spectral` and are
re-exported here.

Inputs are promoted to an inexact dtype (integers convolve as floats, unlike scipy).

>>> import functrax.numpy as fnp
>>> from functrax.scipy import signal
>>> signal.convolve(fnp.array([1, 2, 3, 2, 1]), fnp.array([1, 1, 1]), mode="same")
Array([3., 6., 7., 6., 3.], dtype=float32)
"""
from __future__ import annotations

import numpy as np

from functrax import core, lax
from functrax import numpy as fnp
from functrax.numpy.promotion import (
    asarray_operand, check_arraylike, promote_dtypes_inexact, shape_of,
)

from functrax.scipy.signal_spectral import (  # noqa: F401  (re-exported)
    csd, detrend, fftconvolve, istft, stft, welch,
)

__all__ = ["convolve", "convolve2d", "correlate", "correlate2d", "csd", "detrend",
           "fftconvolve", "istft", "stft", "welch"]

_MODES = ("full", "same", "valid")


def _shape(x):
    return core.get_aval(x).shape


def _operands(fun_name, in1, in2):
    check_arraylike(fun_name, in1, in2)
    in1, in2 = asarray_operand(in1), asarray_operand(in2)
    s1, s2 = _shape(in1), _shape(in2)
    if len(s1) != len(s2):
        raise ValueError(f"{fun_name}: in1 and in2 must have the same number of dimensions, "
                         f"got shapes {s1} and {s2}.")
    if 0 in s1 or 0 in s2:
        raise ValueError(f"{fun_name}: zero-size arrays not supported in convolutions, got "
                         f"shapes {s1} and {s2}.")
    return promote_dtypes_inexact(in1, in2)


def _check_mode(fun_name, mode):
    if mode not in _MODES:
        raise ValueError(f"{fun_name}: mode must be one of {list(_MODES)}, got {mode!r}")


def _flip(x):
    return lax.rev(x, tuple(range(len(_shape(x)))))


def _conj(x):
    return lax.conj(x) if core.get_aval(x).dtype.kind == "c" else x


def _correlate_valid(signal, kernel, pads, precision):
    """``out[n] = sum_k signal[n + k - lo] kernel[k]`` (zero outside ``signal``), with
    ``pads = [(lo, hi), ...]``: a correlation of ``signal`` with ``kernel``."""
    out = lax.conv_general_dilated(lax.expand_dims(signal, (0, 1)),
                                   lax.expand_dims(kernel, (0, 1)), (1,) * len(pads), pads,
                                   precision=precision)
    return lax.squeeze(out, (0, 1))


def _swap_for_valid(fun_name, s1, s2):
    """scipy's rule: in 'valid' mode one input must be at least as large as the other in
    every dimension; True when the inputs must be swapped (``in2`` is the larger one)."""
    ok1 = all(a >= b for a, b in zip(s1, s2))
    ok2 = all(b >= a for a, b in zip(s1, s2))
    if not (ok1 or ok2):
        raise ValueError(f"{fun_name}: for 'valid' mode, one input must be at least as large "
                         f"as the other in every dimension, got shapes {s1} and {s2}.")
    return not ok1


def _convolve_fill(fun_name, in1, in2, mode, precision):
    """Zero-padded ('fill') N-d convolution of ``in1`` and ``in2``, scipy's output window."""
    s1, s2 = _shape(in1), _shape(in2)
    if mode == "valid":
        if _swap_for_valid(fun_name, s1, s2):
            in1, in2, s1, s2 = in2, in1, s2, s1
        return _correlate_valid(in1, _flip(in2), [(0, 0)] * len(s1), precision)
    if mode == "full":
        pads = [(k - 1, k - 1) for k in s2]
    else:  # "same": the center of the full output, the size of in1
        pads = [(k - 1 - (k - 1) // 2, (k - 1) // 2) for k in s2]
    return _correlate_valid(in1, _flip(in2), pads, precision)


def _wrap_extend(x, kernel_shape, mode):
    """``x`` extended periodically so that a valid convolution with a kernel of
    ``kernel_shape`` gives the ``mode`` window of the circular-boundary convolution."""
    for ax, (n, k) in enumerate(zip(_shape(x), kernel_shape)):
        start, length = (0, n + k - 1) if mode == "full" else ((k - 1) // 2, n)
        idx = (np.arange(length + k - 1) + start - (k - 1)) % n
        x = fnp.take(x, idx, axis=ax)
    return x


def _convolve_nd(fun_name, in1, in2, mode, boundary, precision):
    _check_mode(fun_name, mode)
    in1, in2 = _operands(fun_name, in1, in2)
    if boundary == "fill" or mode == "valid":
        return _convolve_fill(fun_name, in1, in2, mode, precision)
    ext = _wrap_extend(in1, _shape(in2), mode)
    return _correlate_valid(ext, _flip(in2), [(0, 0)] * len(_shape(ext)), precision)


def _check_method(fun_name, method):
    if method not in ("auto", "direct", "fft"):
        raise ValueError(f"Got method={method!r}; expected 'auto', 'fft', or 'direct'.")


def _check_2d(fun_name, in1, in2, boundary, fillvalue):
    if boundary not in ("fill", "wrap"):
        raise NotImplementedError(f"{fun_name}() only supports boundary='fill' or 'wrap', "
                                  f"got {boundary!r}")
    if boundary == "fill" and fillvalue != 0:
        raise NotImplementedError(f"{fun_name}() only supports fillvalue=0 when "
                                  f"boundary='fill', got {fillvalue!r}")
    s1, s2 = tuple(shape_of(in1)), tuple(shape_of(in2))
    if len(s1) != 2 or len(s2) != 2:
        raise ValueError(f"{fun_name}() only supports 2-dimensional inputs, got shapes {s1} "
                         f"and {s2}.")


def convolve(in1, in2, mode="full", method="auto", precision=None):
    """Convolution of two N-dimensional arrays (``scipy.signal.convolve``).

    Args:
      in1: left-hand input.
      in2: right-hand input, with ``in2.ndim == in1.ndim``.
      mode: ``"full"`` (default: every overlap), ``"same"`` (centered, the shape of ``in1``)
        or ``"valid"`` (full overlaps only; one input must be at least as large as the other
        in every dimension).
      method: ``"auto"`` or ``"direct"`` (a ``lax.conv_general_dilated``), or ``"fft"``
        (:func:`fftconvolve`).
      precision: passed to ``lax.conv_general_dilated``.

    Returns:
      the convolution, in the inexact dtype of the inputs.

    Raises:
      ValueError: for a bad ``mode``/``method``, ranks that differ, empty inputs, or
        ``"valid"`` shapes where neither input contains the other.

    >>> import functrax.numpy as fnp
    >>> from functrax.scipy import signal
    >>> signal.convolve(fnp.array([1., 2., 3.]), fnp.array([1., 1.]))
    Array([1., 3., 5., 3.], dtype=float32)
    """
    _check_method("convolve", method)
    if method == "fft":
        return fftconvolve(in1, in2, mode=mode)
    return _convolve_nd("convolve", in1, in2, mode, "fill", precision)


def correlate(in1, in2, mode="full", method="auto", precision=None):
    """Cross-correlation of two N-dimensional arrays (``scipy.signal.correlate``):
    ``z[k] = sum_l in1[l] conj(in2[l - k])``.

    Args:
      in1, in2, mode, method, precision: as :func:`convolve`.

    Returns:
      the cross-correlation.

    >>> import functrax.numpy as fnp
    >>> from functrax.scipy import signal
    >>> signal.correlate(fnp.array([1., 2., 3.]), fnp.array([1., 0.]))
    Array([0., 1., 2., 3.], dtype=float32)
    """
    _check_method("correlate", method)
    check_arraylike("correlate", in1, in2)
    in2 = asarray_operand(in2)
    if method == "fft":
        return fftconvolve(in1, _flip(_conj(in2)), mode=mode)
    return _convolve_nd("correlate", in1, _flip(_conj(in2)), mode, "fill", precision)


def convolve2d(in1, in2, mode="full", boundary="fill", fillvalue=0, precision=None):
    """Convolution of two 2-dimensional arrays (``scipy.signal.convolve2d``).

    Args:
      in1, in2: 2-D inputs.
      mode: as :func:`convolve`.
      boundary: ``"fill"`` (zeros outside ``in1``) or ``"wrap"`` (``in1`` periodic).
      fillvalue: must be 0.
      precision: passed to ``lax.conv_general_dilated``.

    Returns:
      the 2-D convolution.

    Raises:
      NotImplementedError: for another boundary or a nonzero ``fillvalue``.
      ValueError: for inputs that are not 2-D (and as :func:`convolve`).

    >>> import functrax.numpy as fnp
    >>> from functrax.scipy import signal
    >>> signal.convolve2d(fnp.ones((2, 2)), fnp.ones((2, 1)), mode="valid")
    Array([[2., 2.]], dtype=float32)
    """
    _check_2d("convolve2d", in1, in2, boundary, fillvalue)
    return _convolve_nd("convolve2d", in1, in2, mode, boundary, precision)


def correlate2d(in1, in2, mode="full", boundary="fill", fillvalue=0, precision=None):
    """Cross-correlation of two 2-dimensional arrays (``scipy.signal.correlate2d``).

    In ``"valid"`` mode with ``in2`` the larger input, the result is scipy's: the
    correlation of ``in2`` with ``in1`` reversed in both axes.

    Args:
      in1, in2, mode, boundary, fillvalue, precision: as :func:`convolve2d`.

    Returns:
      the 2-D cross-correlation.

    >>> import functrax.numpy as fnp
    >>> from functrax.scipy import signal
    >>> signal.correlate2d(fnp.eye(2), fnp.ones((1, 2)), mode="valid")
    Array([[1.],
           [1.]], dtype=float32)
    """
    _check_2d("correlate2d", in1, in2, boundary, fillvalue)
    _check_mode("correlate2d", mode)
    in1, in2 = _operands("correlate2d", in1, in2)
    if mode == "same":  # scipy centers this window on the other side of an even kernel
        return _flip(_convolve_nd("correlate2d", _flip(in1), _conj(in2), mode, boundary,
                                  precision))
    swapped = mode == "valid" and _swap_for_valid("correlate2d", _shape(in1), _shape(in2))
    if swapped:
        in1, in2 = in2, in1
    out = _convolve_nd("correlate2d", in1, _flip(_conj(in2)), mode, boundary, precision)
    return _flip(out) if swapped else out
