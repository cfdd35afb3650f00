"""``functrax.numpy.fft``: discrete Fourier transforms with numpy's API (``jax.numpy.fft``).

Every transform binds the ``fft`` primitive (``functrax.lax.fft``) over the minor axes:
the requested ``axes`` are moved last, cropped or zero-padded to ``s``, transformed, scaled
for ``norm`` and moved back. As JAX: integer and boolean inputs become the default float
type, float32 gives complex64 and float64 complex128 (with x64); ``rfft*`` reject complex
input; repeated axes are an error; transforms over more than 3 axes are chained from
transforms of at most 3 (as XLA's limit makes JAX do).

``norm``: ``None`` / ``"backward"`` (the inverse scales by ``1/N``), ``"ortho"``
(both by ``1/sqrt(N)``) or ``"forward"`` (the forward transform scales by ``1/N``).

>>> import functrax.numpy as fnp
>>> fnp.fft.fft(fnp.array([1.0, 2.0, 3.0, 4.0]))
Array([10.+0.j, -2.+2.j, -2.+0.j, -2.-2.j], dtype=complex64)
"""
from __future__ import annotations

import math
import operator

import numpy as np

from functrax import core, dtypes, lax
from functrax.lax import FftType
from functrax.numpy import creation, shape_ops, ufuncs
from functrax.numpy.promotion import array_operand, canonicalize_axis

__all__ = ["fft", "ifft", "rfft", "irfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn",
           "ifftn", "rfftn", "irfftn", "hfft", "ihfft", "fftfreq", "rfftfreq", "fftshift",
           "ifftshift"]

_NORMS = ("backward", "ortho", "forward")


def _aval(x):
    return core.get_aval(x)


def _norm_factor(n: int, func_name: str, norm, dtype):
    """The scale ``norm`` asks of the transform ``func_name`` of ``n`` points (None: 1)."""
    if norm is None or norm == "backward":
        return None
    if norm not in _NORMS:
        raise ValueError(f'Invalid norm value {norm}; should be "backward","ortho" or '
                         '"forward".')
    inverse = func_name.startswith("i")
    scale = float(n) if norm == "forward" else math.sqrt(n)
    return np.asarray(scale if inverse else 1.0 / scale, dtype)


def _canonical_axes(full_name, axes, ndim):
    out = []
    for a in axes:
        try:
            out.append(canonicalize_axis(a, ndim, full_name))
        except ValueError:
            raise ValueError(f"{full_name}: axis {a} is out of bounds for an array of "
                             f"dimension {ndim}") from None
    if len(set(out)) != len(out):
        raise ValueError(f"{full_name} does not support repeated axes. Got axes "
                         f"{list(axes)}.")
    return tuple(out)


def _resize_minor(arr, fft_type, axes, s):
    """``arr`` cropped / zero-padded along ``axes`` to the input lengths ``s`` asks for."""
    in_s = list(_aval(arr).shape)
    for axis, n in zip(axes, s):
        in_s[axis] = n
    if fft_type == FftType.IRFFT:
        in_s[-1] = in_s[-1] // 2 + 1
    shape = _aval(arr).shape
    crop = tuple(min(a, b) for a, b in zip(in_s, shape))
    if crop != shape:
        arr = lax.slice(arr, (0,) * len(shape), crop)
    if tuple(in_s) != crop:
        zero = np.zeros((), _aval(arr).dtype)
        arr = lax.pad(arr, zero, [(0, a - b, 0) for a, b in zip(in_s, crop)])
    return arr


def _fft_nd(arr, fft_type, s):
    """``lax.fft`` over the ``len(s)`` minor axes, chaining transforms of <= 3 axes."""
    if len(s) <= 3:
        return lax.fft(arr, fft_type, tuple(s))
    n = 2 if len(s) == 4 else 3  # 4 axes: two 2-D transforms
    nd = _aval(arr).ndim
    src = tuple(range(nd - len(s), nd - n))
    dst = tuple(range(nd - len(s) + n, nd))
    if fft_type in (FftType.RFFT, FftType.FFT):
        arr = lax.fft(arr, fft_type, tuple(s)[-n:])
        arr = shape_ops.moveaxis(arr, src, dst)
        arr = _fft_nd(arr, FftType.FFT, s[:-n])
        return shape_ops.moveaxis(arr, dst, src)
    arr = shape_ops.moveaxis(arr, src, dst)
    arr = _fft_nd(arr, FftType.IFFT, s[:-n])
    arr = shape_ops.moveaxis(arr, dst, src)
    return lax.fft(arr, fft_type, tuple(s)[-n:])


def _default_lengths(arr, fft_type, axes):
    shape = _aval(arr).shape
    if fft_type != FftType.IRFFT:
        return [shape[a] for a in axes]
    s = [shape[a] for a in axes[:-1]]
    return s + [max(0, 2 * (shape[axes[-1]] - 1))] if axes else s


def _fft_core(func_name, fft_type, a, s, axes, norm):
    full_name = f"functrax.numpy.fft.{func_name}"
    arr = array_operand(full_name, a)
    if s is not None:
        s = tuple(map(operator.index, s))
        if any(n < 0 for n in s):
            raise ValueError("Shape should be non-negative.")
        if axes is not None and len(s) != len(axes):
            raise ValueError("Shape and axes have different lengths.")
    nd = _aval(arr).ndim
    orig_axes = None if axes is None else _canonical_axes(full_name, axes, nd)
    if orig_axes is None:
        if s is not None and len(s) > nd:
            raise ValueError(f"FFT input shape {_aval(arr).shape} must have at least as many "
                             f"input dimensions as fft_lengths {s}.")
        axes = tuple(range(nd)) if s is None else tuple(range(nd - len(s), nd))
    else:  # the primitive transforms the minor axes: move the requested ones last
        axes = tuple(range(nd - len(orig_axes), nd))
        arr = shape_ops.moveaxis(arr, orig_axes, axes)
    if s is not None:
        arr = _resize_minor(arr, fft_type, axes, s)
    else:
        s = _default_lengths(arr, fft_type, axes)
    out = _fft_nd(arr, fft_type, s)
    factor = _norm_factor(math.prod(s), func_name, norm, _aval(out).dtype)
    if factor is not None:
        out = ufuncs.multiply(out, factor)
    if orig_axes is not None:
        out = shape_ops.moveaxis(out, axes, orig_axes)
    return out


def _check_1d_axis(func_name, axis):
    if isinstance(axis, (list, tuple)):
        full_name = f"functrax.numpy.fft.{func_name}"
        raise ValueError(f"{full_name} does not support multiple axes. Please use "
                         f"{full_name}n. Got axis = {axis!r}.")


def _fft_core_1d(func_name, fft_type, a, n, axis, norm):
    _check_1d_axis(func_name, axis)
    return _fft_core(func_name, fft_type, a, None if n is None else [n],
                     None if axis is None else [axis], norm)


def _fft_core_2d(func_name, fft_type, a, s, axes, norm):
    if len(axes) != 2:
        raise ValueError(f"functrax.numpy.fft.{func_name} only supports 2 axes. Got axes = "
                         f"{axes!r}.")
    return _fft_core(func_name, fft_type, a, s, axes, norm)


# --- one-dimensional transforms ---

def fft(a, n=None, axis=-1, norm=None):
    """The one-dimensional discrete Fourier transform along ``axis`` (``numpy.fft.fft``).

    Args:
      a: the input (real inputs are converted to complex).
      n: the transform length: ``a`` is cropped or zero-padded to it along ``axis``
        (default: its length there).
      axis: the axis to transform (an int; use :func:`fftn` for several).
      norm: ``None``/``"backward"``, ``"ortho"`` or ``"forward"``.

    Returns:
      a complex array, ``n`` long along ``axis``.

    Raises:
      ValueError: ``axis`` a sequence, out of bounds, a negative ``n`` or an unknown
      ``norm``.

    >>> import functrax.numpy as fnp
    >>> fnp.fft.fft(fnp.array([1.0, 0.0, 0.0, 0.0]))
    Array([1.+0.j, 1.+0.j, 1.+0.j, 1.+0.j], dtype=complex64)
    """
    return _fft_core_1d("fft", FftType.FFT, a, n, axis, norm)


def ifft(a, n=None, axis=-1, norm=None):
    """The one-dimensional inverse discrete Fourier transform (``numpy.fft.ifft``).

    Arguments as :func:`fft`; with the default ``norm`` the result is scaled by ``1/n``.

    >>> import functrax.numpy as fnp
    >>> fnp.fft.ifft(fnp.array([4.0, 0.0, 0.0, 0.0]))
    Array([1.+0.j, 1.+0.j, 1.+0.j, 1.+0.j], dtype=complex64)
    """
    return _fft_core_1d("ifft", FftType.IFFT, a, n, axis, norm)


def rfft(a, n=None, axis=-1, norm=None):
    """The discrete Fourier transform of a real input (``numpy.fft.rfft``): the
    ``n // 2 + 1`` non-negative frequencies.

    Arguments as :func:`fft`; ``a`` must be real (a complex ``a`` raises ValueError).

    >>> import functrax.numpy as fnp
    >>> fnp.fft.rfft(fnp.array([1.0, 2.0, 3.0, 4.0]))
    Array([10.+0.j, -2.+2.j, -2.+0.j], dtype=complex64)
    """
    return _fft_core_1d("rfft", FftType.RFFT, a, n, axis, norm)


def irfft(a, n=None, axis=-1, norm=None):
    """The inverse of :func:`rfft` (``numpy.fft.irfft``): a real output of length ``n``
    (default ``2 * (m - 1)`` for an input ``m`` long along ``axis``).

    >>> import functrax.numpy as fnp
    >>> fnp.fft.irfft(fnp.array([10.0, -2 + 2j, -2.0]))
    Array([1., 2., 3., 4.], dtype=float32)
    """
    return _fft_core_1d("irfft", FftType.IRFFT, a, n, axis, norm)


def hfft(a, n=None, axis=-1, norm=None):
    """The FFT of a signal with a Hermitian-symmetric spectrum (``numpy.fft.hfft``): a real
    output of length ``n`` (default ``2 * (m - 1)``), ``irfft(conj(a)) * n``.

    >>> import functrax.numpy as fnp
    >>> fnp.fft.hfft(fnp.array([1.0, 2.0, 3.0]))
    Array([ 8., -2.,  0., -2.], dtype=float32)
    """
    _check_1d_axis("hfft", axis)
    conj_a = ufuncs.conj(array_operand("functrax.numpy.fft.hfft", a))
    ax, = _canonical_axes("functrax.numpy.fft.hfft", [axis], _aval(conj_a).ndim)
    nn = (_aval(conj_a).shape[ax] - 1) * 2 if n is None else n
    out = _fft_core_1d("hfft", FftType.IRFFT, conj_a, n, axis, norm)
    return ufuncs.multiply(out, np.asarray(nn, _aval(out).dtype))


def ihfft(a, n=None, axis=-1, norm=None):
    """The inverse of :func:`hfft` (``numpy.fft.ihfft``): ``conj(rfft(a)) / n`` for a real
    ``a``.

    >>> import functrax.numpy as fnp
    >>> fnp.fft.ihfft(fnp.array([8.0, -2.0, 0.0, -2.0])).real
    Array([1., 2., 3.], dtype=float32)
    """
    _check_1d_axis("ihfft", axis)
    arr = array_operand("functrax.numpy.fft.ihfft", a)
    ax, = _canonical_axes("functrax.numpy.fft.ihfft", [axis], _aval(arr).ndim)
    nn = _aval(arr).shape[ax] if n is None else n
    out = _fft_core_1d("ihfft", FftType.RFFT, arr, n, axis, norm)
    return ufuncs.multiply(ufuncs.conj(out), np.asarray(1 / nn, _aval(out).dtype))


# --- two- and n-dimensional transforms ---

def fft2(a, s=None, axes=(-2, -1), norm=None):
    """The two-dimensional discrete Fourier transform over ``axes`` (``numpy.fft.fft2``).

    Args:
      a: the input.
      s: the lengths of the transform along ``axes`` (crop / zero-pad).
      axes: two axes.
      norm: as :func:`fft`.

    >>> import functrax.numpy as fnp
    >>> fnp.fft.fft2(fnp.ones((2, 2)))
    Array([[4.+0.j, 0.+0.j],
           [0.+0.j, 0.+0.j]], dtype=complex64)
    """
    return _fft_core_2d("fft2", FftType.FFT, a, s, axes, norm)


def ifft2(a, s=None, axes=(-2, -1), norm=None):
    """The two-dimensional inverse discrete Fourier transform (``numpy.fft.ifft2``).

    >>> import functrax.numpy as fnp
    >>> fnp.fft.ifft2(fnp.array([[4.0, 0.0], [0.0, 0.0]])).real
    Array([[1., 1.],
           [1., 1.]], dtype=float32)
    """
    return _fft_core_2d("ifft2", FftType.IFFT, a, s, axes, norm)


def rfft2(a, s=None, axes=(-2, -1), norm=None):
    """The two-dimensional FFT of a real input (``numpy.fft.rfft2``); the last of ``axes``
    keeps its ``s[-1] // 2 + 1`` non-negative frequencies.

    >>> import functrax.numpy as fnp
    >>> fnp.fft.rfft2(fnp.ones((2, 4))).shape
    (2, 3)
    """
    return _fft_core_2d("rfft2", FftType.RFFT, a, s, axes, norm)


def irfft2(a, s=None, axes=(-2, -1), norm=None):
    """The inverse of :func:`rfft2` (``numpy.fft.irfft2``): a real output.

    >>> import functrax.numpy as fnp
    >>> fnp.fft.irfft2(fnp.fft.rfft2(fnp.ones((2, 4)))).shape
    (2, 4)
    """
    return _fft_core_2d("irfft2", FftType.IRFFT, a, s, axes, norm)


def fftn(a, s=None, axes=None, norm=None):
    """The n-dimensional discrete Fourier transform (``numpy.fft.fftn``).

    Args:
      a: the input.
      s: the lengths of the transform along ``axes`` (crop / zero-pad); without ``axes``
        the last ``len(s)`` axes.
      axes: the axes to transform (default: all, or the last ``len(s)``); no repeats.
      norm: as :func:`fft`.

    Raises:
      ValueError: ``s`` and ``axes`` of different lengths, repeated or out-of-bounds
      axes, negative lengths or an unknown ``norm``.

    >>> import functrax.numpy as fnp
    >>> fnp.fft.fftn(fnp.ones((2, 2, 2)))[0, 0, 0]
    Array(8.+0.j, dtype=complex64)
    """
    return _fft_core("fftn", FftType.FFT, a, s, axes, norm)


def ifftn(a, s=None, axes=None, norm=None):
    """The n-dimensional inverse discrete Fourier transform (``numpy.fft.ifftn``).

    >>> import functrax.numpy as fnp
    >>> fnp.fft.ifftn(fnp.ones((2, 2)))[0, 0]
    Array(1.+0.j, dtype=complex64)
    """
    return _fft_core("ifftn", FftType.IFFT, a, s, axes, norm)


def rfftn(a, s=None, axes=None, norm=None):
    """The n-dimensional FFT of a real input (``numpy.fft.rfftn``); the last transformed
    axis keeps its ``s[-1] // 2 + 1`` non-negative frequencies.

    >>> import functrax.numpy as fnp
    >>> fnp.fft.rfftn(fnp.ones((2, 2, 4))).shape
    (2, 2, 3)
    """
    return _fft_core("rfftn", FftType.RFFT, a, s, axes, norm)


def irfftn(a, s=None, axes=None, norm=None):
    """The inverse of :func:`rfftn` (``numpy.fft.irfftn``): a real output, the last axis
    ``s[-1]`` long (default ``2 * (m - 1)``).

    >>> import functrax.numpy as fnp
    >>> fnp.fft.irfftn(fnp.ones((2, 3))).shape
    (2, 4)
    """
    return _fft_core("irfftn", FftType.IRFFT, a, s, axes, norm)


# --- helpers: sample frequencies and shifts ---

def _freq_args(name, n, d, dtype):
    if isinstance(n, (list, tuple)):
        raise ValueError(f"The n argument of functrax.numpy.fft.{name} only takes an int. "
                         f"Got n = {list(n)}.")
    if isinstance(d, (list, tuple)):
        raise ValueError(f"The d argument of functrax.numpy.fft.{name} only takes a single "
                         f"value. Got d = {list(d)}.")
    dtype = dtypes.canonicalize_dtype(dtype or dtypes.default_float_dtype())
    return operator.index(n), dtype


def fftfreq(n, d=1.0, *, dtype=None, device=None):
    """The sample frequencies of an ``n``-point FFT with sample spacing ``d``
    (``numpy.fft.fftfreq``): ``[0, 1, ..., n//2 - 1 (or (n-1)//2), -(n//2), ..., -1] /
    (d * n)``.

    Args:
      n: the window length (an int).
      d: the sample spacing (a scalar).
      dtype: the result dtype (default: the default float type).
      device: accepted for JAX compatibility (arrays live on the default device).

    >>> import functrax.numpy as fnp
    >>> fnp.fft.fftfreq(4)
    Array([ 0.  ,  0.25, -0.5 , -0.25], dtype=float32)
    """
    n, dtype = _freq_args("fftfreq", n, d, dtype)
    k = np.concatenate([np.arange(0, (n - 1) // 2 + 1), np.arange(-(n // 2), 0)])
    return ufuncs.divide(creation.asarray(k.astype(dtype)), creation.asarray(d * n, dtype))


def rfftfreq(n, d=1.0, *, dtype=None, device=None):
    """The non-negative sample frequencies of an ``n``-point :func:`rfft`
    (``numpy.fft.rfftfreq``): ``[0, 1, ..., n // 2] / (d * n)``.

    >>> import functrax.numpy as fnp
    >>> fnp.fft.rfftfreq(4)
    Array([0.  , 0.25, 0.5 ], dtype=float32)
    """
    n, dtype = _freq_args("rfftfreq", n, d, dtype)
    k = np.arange(0, n // 2 + 1).astype(dtype)
    return ufuncs.divide(creation.asarray(k), creation.asarray(d * n, dtype))


def _shift(name, x, axes, sign):
    x = array_operand(f"functrax.numpy.fft.{name}", x)
    shape = _aval(x).shape
    if axes is None:
        axes = tuple(range(len(shape)))
        shift = [sign * (dim // 2) for dim in shape]
    elif isinstance(axes, int):
        shift = sign * (shape[axes] // 2)
    else:
        shift = [sign * (shape[ax] // 2) for ax in axes]
    return shape_ops.roll(x, shift, axes)


def fftshift(x, axes=None):
    """Shift the zero-frequency term to the center (``numpy.fft.fftshift``).

    Args:
      x: the array of frequencies (or a spectrum).
      axes: an int or a sequence of ints (default: all axes).

    >>> import functrax.numpy as fnp
    >>> fnp.fft.fftshift(fnp.fft.fftfreq(5))
    Array([-0.4, -0.2,  0. ,  0.2,  0.4], dtype=float32)
    """
    return _shift("fftshift", x, axes, 1)


def ifftshift(x, axes=None):
    """The inverse of :func:`fftshift` (``numpy.fft.ifftshift``).

    >>> import functrax.numpy as fnp
    >>> fnp.fft.ifftshift(fnp.fft.fftshift(fnp.fft.fftfreq(5)))
    Array([ 0. ,  0.2,  0.4, -0.4, -0.2], dtype=float32)
    """
    return _shift("ifftshift", x, axes, -1)
