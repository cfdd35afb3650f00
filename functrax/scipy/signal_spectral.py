"""The spectral part of ``functrax.scipy.signal`` (``jax.scipy.signal``): ``fftconvolve``,
``detrend``, ``stft``, ``istft``, ``csd`` and ``welch``.

Built on ``functrax.numpy.fft``: everything traces (``jit``, ``vmap``, ``grad``) as long
as the sizes (``nperseg``, ``noverlap``, ``nfft``, breakpoints, axes) are static. Segments
are a gather of the signal; the overlap-add of ``istft`` a scatter-add. Windows given by
name come from :mod:`functrax.scipy.signal_windows` (scipy's periodic windows).

Where JAX departs from its own documentation and from scipy, this follows scipy:
``noverlap=0`` means no overlap in ``istft`` (JAX reads it as the default), ``istft``
uses the FFT length it computed for an odd one-sided ``nperseg``, and a callable
``detrend`` gets the segments with their time axis last whatever ``axis`` is.
"""
from __future__ import annotations

import operator
import warnings

import numpy as np

from functrax import core, dtypes, lax
from functrax.errors import ConcretizationTypeError
from functrax import numpy as fnp
from functrax.numpy import fft as _fft
from functrax.numpy.promotion import (
    array_operand, canonicalize_axis, check_arraylike, promote_dtypes_inexact,
)
from functrax.scipy.signal_windows import get_window
from functrax.transforms import vmap

__all__ = ["fftconvolve", "detrend", "stft", "istft", "csd", "welch"]


def _aval(x):
    return core.get_aval(x)


def _is_complex(x) -> bool:
    return _aval(x).dtype.kind == "c"


def _complex_dtype(dtype) -> np.dtype:
    return dtypes.canonicalize_dtype(np.result_type(dtype, np.complex64))


def _real_dtype(dtype) -> np.dtype:
    return np.empty((), dtype).real.dtype


# --- fftconvolve ---

def _fftconvolve_unbatched(in1, in2, mode):
    s1, s2 = _aval(in1).shape, _aval(in2).shape
    full_shape = tuple(a + b - 1 for a, b in zip(s1, s2))
    if mode == "valid":
        no_swap = all(a >= b for a, b in zip(s1, s2))
        swap = all(a <= b for a, b in zip(s1, s2))
        if not (no_swap or swap):
            raise ValueError("For 'valid' mode, One input must be at least as large as the "
                             "other in every dimension.")
        if swap:
            in1, in2, s1, s2 = in2, in1, s2, s1
    if _is_complex(in1):
        fwd, inv = _fft.fftn, _fft.ifftn
    else:
        fwd, inv = _fft.rfftn, _fft.irfftn
    conv = inv(fwd(in1, full_shape) * fwd(in2, full_shape), full_shape)
    out_shape = {"full": full_shape, "same": s1,
                 "valid": tuple(a - b + 1 for a, b in zip(s1, s2))}[mode]
    starts = tuple((f - o) // 2 for f, o in zip(full_shape, out_shape))
    return lax.slice(conv, starts, tuple(s + o for s, o in zip(starts, out_shape)))


def fftconvolve(in1, in2, mode="full", axes=None):
    """Convolve two N-dimensional arrays with FFTs (``scipy.signal.fftconvolve``).

    Args:
      in1, in2: arrays of the same rank (promoted to a common inexact dtype).
      mode: ``"full"`` (the whole convolution), ``"same"`` (centered, ``in1``'s shape) or
        ``"valid"`` (only where the inputs overlap completely).
      axes: the axes to convolve over (default: all); along the others the inputs must
        have equal sizes and are mapped over.

    Returns:
      the convolution (real for real inputs).

    Raises:
      ValueError: different ranks, an unknown mode, mapped axes of different sizes, or in
      ``"valid"`` mode neither input at least as large as the other in every dimension.

    >>> import functrax.numpy as fnp
    >>> fftconvolve(fnp.array([1.0, 2.0, 3.0]), fnp.array([0.0, 1.0, 0.5])).round(4)
    Array([0. , 1. , 2.5, 4. , 1.5], dtype=float32)
    """
    check_arraylike("fftconvolve", in1, in2)
    in1, in2 = (fnp.asarray(a) for a in promote_dtypes_inexact(in1, in2))
    if in1.ndim != in2.ndim:
        raise ValueError("in1 and in2 should have the same dimensionality")
    if mode not in ("same", "full", "valid"):
        raise ValueError("mode must be one of ['same', 'full', 'valid']")
    conv = lambda a, b: _fftconvolve_unbatched(a, b, mode)  # noqa: E731
    if axes is None:
        return conv(in1, in2)
    axes = (axes,) if isinstance(axes, int) else tuple(axes)
    axes = tuple(canonicalize_axis(a, in1.ndim, "fftconvolve") for a in axes)
    mapped = sorted(set(range(in1.ndim)) - set(axes))
    if any(in1.shape[i] != in2.shape[i] for i in mapped):
        raise ValueError(f"mapped axes must have same shape; got in1.shape={in1.shape} "
                         f"in2.shape={in2.shape} axes={axes}")
    for ax in mapped:
        conv = vmap(conv, in_axes=ax, out_axes=ax)
    return conv(in1, in2)


# --- detrend ---

def _linear_fit_matrices(npts, dtype):
    """``(A, pinv(A))`` of the least-squares fit of ``a + b * t`` on ``npts`` points."""
    a = np.stack([np.ones(npts), np.arange(1, npts + 1) / npts], axis=1)
    return a.astype(dtype), np.linalg.pinv(a).astype(dtype)


def detrend(data, axis=-1, type="linear", bp=0, overwrite_data=None):
    """Remove a linear (or piecewise linear) or constant trend (``scipy.signal.detrend``).

    Args:
      data: the input.
      axis: the axis to detrend along.
      type: ``"linear"`` (least-squares line, fit separately between the breakpoints
        ``bp``) or ``"constant"`` (the mean).
      bp: breakpoint indices (static ints) of a piecewise linear trend.
      overwrite_data: unsupported (must be None).

    Returns:
      ``data`` minus its trend (integers become the default float type).

    Raises:
      ValueError: an unknown ``type`` or breakpoints outside ``[0, N]``.
      NotImplementedError: ``overwrite_data`` given.

    >>> import functrax.numpy as fnp
    >>> detrend(fnp.array([1.0, 2.0, 4.0]), type="constant").round(3)
    Array([-1.333, -0.333,  1.667], dtype=float32)
    """
    if overwrite_data is not None:
        raise NotImplementedError("overwrite_data argument not implemented.")
    if type not in ("constant", "linear"):
        raise ValueError("Trend type must be 'linear' or 'constant'.")
    arr, = promote_dtypes_inexact(array_operand("detrend", data))
    arr = fnp.asarray(arr)
    if type == "constant":
        return arr - fnp.mean(arr, axis, keepdims=True)
    axis = canonicalize_axis(axis, arr.ndim, "detrend")
    n = arr.shape[axis]
    bps = np.sort(np.unique(np.r_[0, bp, n]))
    if bps[0] < 0 or bps[-1] > n:
        raise ValueError("Breakpoints must be non-negative and less than length of data "
                         "along given axis.")
    moved = fnp.moveaxis(arr, axis, 0)
    flat = moved.reshape(n, -1)
    pieces = []
    for lo, hi in zip(bps[:-1], bps[1:]):
        seg = flat[int(lo):int(hi)]
        a, a_pinv = _linear_fit_matrices(int(hi - lo), arr.dtype)
        pieces.append(seg - fnp.matmul(a, fnp.matmul(a_pinv, seg)))
    out = fnp.concatenate(pieces, axis=0) if pieces else flat
    return fnp.moveaxis(out.reshape(moved.shape), 0, axis)


# --- the windowed-FFT helpers of scipy.signal._spectral_py ---

def _triage_segments(window, nperseg, input_length, dtype):
    """``(window array, nperseg)`` from a window name / tuple / array (scipy's rules)."""
    if isinstance(window, (str, tuple)):
        n = 256 if nperseg is None else int(nperseg)
        if n > input_length:
            warnings.warn(f"nperseg = {n} is greater than input length  = {input_length}, "
                          f"using nperseg = {input_length}", stacklevel=3)
            n = input_length
        return fnp.asarray(get_window(window, n).astype(dtype)), n
    win = fnp.asarray(window)
    if win.ndim != 1:
        raise ValueError("window must be 1-D")
    if input_length < win.size:
        raise ValueError("window is longer than input signal")
    if nperseg is not None and nperseg != win.size:
        raise ValueError("value specified for nperseg is different from length of window")
    return win, win.size


def _odd_ext(x, n, axis=-1):
    """``x`` extended by ``n`` points at both ends by odd extension (point reflection)."""
    if n < 1:
        return x
    size = x.shape[axis]
    if n > size - 1:
        raise ValueError(f"The extension length n ({n}) is too big. It must not exceed "
                         f"x.shape[axis]-1, which is {size - 1}.")
    take = lambda lo, hi: lax.slice_in_dim(x, lo, hi, axis=axis % x.ndim)  # noqa: E731
    left = 2 * take(0, 1) - fnp.flip(take(1, n + 1), axis=axis)
    right = 2 * take(size - 1, size) - fnp.flip(take(size - n - 1, size - 1), axis=axis)
    return fnp.concatenate((left, x, right), axis=axis)


def _pad_ends(mode, **kwargs):
    def pad(x, n, axis=-1):
        width = [(0, 0)] * x.ndim
        width[axis] = (n, n)
        return fnp.pad(x, width, mode, **kwargs)
    return pad


_BOUNDARIES = {"even": _pad_ends("reflect"), "odd": _odd_ext, "constant": _pad_ends("edge"),
               "zeros": _pad_ends("constant", constant_values=0.0),
               None: lambda x, *args, **kwargs: x}


def _segments(x, nperseg, step):
    """``x[..., L]`` as overlapping segments ``[..., nseg, nperseg]`` (a gather)."""
    nseg = max((x.shape[-1] - nperseg) // step + 1, 0)
    idx = np.arange(nseg)[:, None] * step + np.arange(nperseg)[None, :]
    return fnp.take(x, idx.astype(np.int32), axis=-1)


def _fft_helper(x, win, detrend_func, nperseg, noverlap, nfft, sides):
    """The windowed FFTs of the segments of ``x``: ``[..., nseg, nfreq]``."""
    segs = detrend_func(_segments(x, nperseg, nperseg - noverlap))
    segs = win * segs
    if sides == "twosided":
        return _fft.fft(segs, n=nfft)
    return _fft.rfft(fnp.real(segs), n=nfft)


def _detrend_function(detrend_type):
    """The per-segment detrending: a callable gets the segments with time last, as scipy's
    (JAX moves the axes around it first)."""
    if not detrend_type:
        return lambda d: d
    if not callable(detrend_type):
        return lambda d: detrend(d, type=detrend_type, axis=-1)
    return detrend_type


def _pad_to(x, length):
    extra = length - x.shape[-1]
    return fnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, extra)]) if extra > 0 else x


def _prepare_inputs(x, y, axis, mode):
    """Promoted ``x`` (and ``y``), the canonical axis and the outer (non-time) shape."""
    if y is None:
        x, = promote_dtypes_inexact(array_operand("spectral_helper", x))
        x = fnp.asarray(x)
        axis = canonicalize_axis(axis, x.ndim, "functrax.scipy.signal")
        return x, None, axis, _drop(x.shape, axis)
    if mode != "psd":
        raise ValueError("two-argument mode is available only when mode=='psd'")
    check_arraylike("spectral_helper", x, y)
    x, y = (fnp.asarray(a) for a in promote_dtypes_inexact(x, y))
    if x.ndim != y.ndim:
        raise ValueError(f"two-arguments must have the same rank ({x.ndim} vs {y.ndim}).")
    axis = canonicalize_axis(axis, x.ndim, "functrax.scipy.signal")
    try:
        outer = fnp.broadcast_shapes(_drop(x.shape, axis), _drop(y.shape, axis))
    except ValueError as err:
        raise ValueError("x and y cannot be broadcast together.") from err
    return x, y, axis, outer


def _drop(shape, axis):
    axis %= max(len(shape), 1)
    return tuple(shape[:axis]) + tuple(shape[axis + 1:])


def _static_int(value, what):
    if isinstance(value, core.Tracer):
        concrete = value.to_concrete_value()
        if concrete is None:
            raise ConcretizationTypeError(value, f"The {what} must be static. ")
        value = concrete
    return operator.index(value)


def _spectral_helper(x, y, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None,
                     detrend_type="constant", return_onesided=True, scaling="density",
                     axis=-1, mode="psd", boundary=None, padded=False):
    """scipy's ``_spectral_helper``: ``(freqs, times, result)``; ``y=None`` for an
    auto-spectrum."""
    if mode not in ("psd", "stft"):
        raise ValueError(f"Unknown value for mode {mode}, must be one of: ('psd', 'stft')")
    if boundary not in _BOUNDARIES:
        raise ValueError(f"Unknown boundary option '{boundary}', must be one of: "
                         f"{list(_BOUNDARIES)}")
    axis = _static_int(axis, "axis of windowed-FFT")
    x, y, axis, outer = _prepare_inputs(x, y, axis, mode)
    result_dtype = _complex_dtype(x.dtype)
    freq_dtype = _real_dtype(result_dtype)
    if nperseg is not None:
        nperseg = _static_int(nperseg, "nperseg of windowed-FFT")
        if nperseg < 1:
            raise ValueError("nperseg must be a positive integer")
    win, nperseg = _triage_segments(window, nperseg, x.shape[axis], _real_dtype(x.dtype))
    noverlap = nperseg // 2 if noverlap is None else _static_int(noverlap, "noverlap")
    nfft = nperseg if nfft is None else _static_int(nfft, "nfft of windowed-FFT")
    if x.size == 0 or (y is not None and y.size == 0):
        n = x.shape[axis] if y is None else min(x.shape[axis], y.shape[axis])
        shape = x.shape if y is None else outer[:axis] + (n,) + outer[axis:]
        return (fnp.zeros(shape, freq_dtype), fnp.zeros(shape, freq_dtype),
                fnp.zeros(shape, result_dtype))
    x = fnp.moveaxis(x, axis, -1)
    if y is not None:
        y = fnp.moveaxis(y, axis, -1)
        length = max(x.shape[-1], y.shape[-1])
        x, y = _pad_to(x, length), _pad_to(y, length)
    if nfft < nperseg:
        raise ValueError("nfft must be greater than or equal to nperseg.")
    if noverlap >= nperseg:
        raise ValueError("noverlap must be less than nperseg.")
    nstep = nperseg - noverlap
    ext = _BOUNDARIES[boundary]
    x = ext(x, nperseg // 2, axis=-1)
    y = None if y is None else ext(y, nperseg // 2, axis=-1)
    if padded:  # to a whole number of segments
        nadd = (-(x.shape[-1] - nperseg) % nstep) % nperseg
        x = _pad_to(x, x.shape[-1] + nadd)
        y = None if y is None else _pad_to(y, y.shape[-1] + nadd)
    detrend_func = _detrend_function(detrend_type)
    if scaling == "density":
        scale = 1.0 / (fs * fnp.sum(win * win))
    elif scaling == "spectrum":
        scale = 1.0 / fnp.sum(win) ** 2
    else:
        raise ValueError(f"Unknown scaling: {scaling}")
    if mode == "stft":
        scale = fnp.sqrt(scale)
    sides = "onesided" if return_onesided else "twosided"
    if return_onesided and (_is_complex(x) or (y is not None and _is_complex(y))):
        sides = "twosided"
        warnings.warn("Input data is complex, switching to return_onesided=False",
                      stacklevel=3)
    freq_fn = _fft.fftfreq if sides == "twosided" else _fft.rfftfreq
    freqs = freq_fn(nfft, 1 / fs, dtype=freq_dtype)
    result = _fft_helper(x, win, detrend_func, nperseg, noverlap, nfft, sides)
    if y is not None:
        result = fnp.conj(result) * _fft_helper(y, win, detrend_func, nperseg, noverlap, nfft,
                                                sides)
    elif mode == "psd":
        result = fnp.conj(result) * result
    result = result * scale.astype(result_dtype)
    if sides == "onesided" and mode == "psd":  # the dropped negative frequencies
        doubled = np.full(result.shape[-1], 2.0)
        doubled[0] = 1.0
        if nfft % 2 == 0:
            doubled[-1] = 1.0
        result = result * doubled.astype(result_dtype)
    times = np.arange(nperseg / 2, x.shape[-1] - nperseg / 2 + 1, nperseg - noverlap)
    times = fnp.asarray(times.astype(freq_dtype)) / fs
    if boundary is not None:
        times = times - (nperseg / 2) / fs
    result = result.astype(result_dtype)
    if y is None and mode != "stft":
        result = fnp.real(result)
    return freqs, times, fnp.moveaxis(result, -1, axis)


# --- the public estimators ---

def stft(x, fs=1.0, window="hann", nperseg=256, noverlap=None, nfft=None, detrend=False,
         return_onesided=True, boundary="zeros", padded=True, axis=-1):
    """The short-time Fourier transform (``scipy.signal.stft``).

    Args:
      x: the signal.
      fs: the sampling frequency.
      window: a window name, ``(name, *params)`` tuple or a 1-D array.
      nperseg: the segment length (at most the signal's length).
      noverlap: the overlap of consecutive segments (default ``nperseg // 2``).
      nfft: the FFT length (default ``nperseg``; larger zero-pads).
      detrend: False, ``"constant"``, ``"linear"`` or a callable applied per segment.
      return_onesided: the one-sided spectrum of a real signal.
      boundary: how the signal is extended at both ends: ``"zeros"``, ``"even"``,
        ``"odd"``, ``"constant"`` or None.
      padded: zero-pad the end to a whole number of segments.
      axis: the time axis.

    Returns:
      ``(f, t, Zxx)``: the frequencies, the segment times and the STFT (frequencies at
      ``axis``, segments last).

    >>> import functrax.numpy as fnp
    >>> f, t, Z = stft(fnp.ones(16), nperseg=8)
    >>> Z.shape
    (5, 5)
    """
    return _spectral_helper(x, None, fs, window, nperseg, noverlap, nfft, detrend,
                            return_onesided, scaling="spectrum", axis=axis, mode="stft",
                            boundary=boundary, padded=padded)


def _average(pxy, average):
    if pxy.ndim < 2 or pxy.size == 0:
        return pxy
    if pxy.shape[-1] == 1:
        return pxy.reshape(pxy.shape[:-1])
    if average == "mean":
        return fnp.mean(pxy, axis=-1)
    if average != "median":
        raise ValueError(f'average must be "median" or "mean", got {average}')
    n = pxy.shape[-1]
    ii_2 = np.arange(2.0, n, 2)
    bias = 1 + np.sum(1.0 / (ii_2 + 1) - 1.0 / ii_2)
    if _is_complex(pxy):
        med = fnp.median(fnp.real(pxy), axis=-1) + 1j * fnp.median(fnp.imag(pxy), axis=-1)
    else:
        med = fnp.median(pxy, axis=-1)
    return med / np.asarray(bias, _real_dtype(pxy.dtype))


def csd(x, y, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None,
        detrend="constant", return_onesided=True, scaling="density", axis=-1,
        average="mean"):
    """The cross power spectral density by Welch's method (``scipy.signal.csd``).

    Args:
      x, y: the signals (``y=None``: the power spectral density of ``x``, real).
      fs, window, nperseg (default 256, at most the signal's length), noverlap, nfft,
        detrend, return_onesided, axis: as :func:`stft` (``detrend`` default
        ``"constant"``).
      scaling: ``"density"`` (V**2/Hz) or ``"spectrum"`` (V**2).
      average: ``"mean"`` or ``"median"`` (bias-corrected) of the segments'
        periodograms.

    Returns:
      ``(f, Pxy)``.

    >>> import functrax.numpy as fnp
    >>> f, p = csd(fnp.arange(16.0), fnp.ones(16), nperseg=8)
    >>> p.shape, p.dtype
    ((5,), dtype('complex64'))
    """
    freqs, _, pxy = _spectral_helper(x, y, fs, window, nperseg, noverlap, nfft, detrend,
                                     return_onesided, scaling, axis, mode="psd")
    if y is not None:
        pxy = pxy + 0j  # complex output when x is not y
    return freqs, _average(pxy, average)


def welch(x, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None,
          detrend="constant", return_onesided=True, scaling="density", axis=-1,
          average="mean"):
    """The power spectral density by Welch's method (``scipy.signal.welch``): the average
    of the modified periodograms of overlapping segments.

    Arguments as :func:`csd`.

    Returns:
      ``(f, Pxx)``, ``Pxx`` real.

    >>> import functrax.numpy as fnp
    >>> f, p = welch(fnp.sin(fnp.arange(64.0)), nperseg=16)
    >>> f.shape, p.shape
    ((9,), (9,))
    """
    freqs, pxx = csd(x, None, fs=fs, window=window, nperseg=nperseg, noverlap=noverlap,
                     nfft=nfft, detrend=detrend, return_onesided=return_onesided,
                     scaling=scaling, axis=axis, average=average)
    return freqs, fnp.real(pxx)


def _overlap_and_add(x, step):
    """Frames ``[..., nframes, seglen]`` summed at offsets ``step * frame`` (a
    scatter-add): ``[..., step * (nframes - 1) + seglen]``."""
    *batch, nframes, seglen = x.shape
    length = step * (nframes - 1) + seglen
    idx = (np.arange(nframes)[:, None] * step + np.arange(seglen)[None, :]).ravel()
    flat = x.reshape(tuple(batch) + (nframes * seglen,))
    out = fnp.zeros(tuple(batch) + (length,), x.dtype)
    return out.at[..., idx.astype(np.int32)].add(flat)


def _istft_window(window, nperseg, dtype):
    if isinstance(window, (str, tuple)):
        return fnp.asarray(get_window(window, nperseg).astype(dtype))
    win = fnp.asarray(window)
    if win.ndim != 1:
        raise ValueError("window must be 1-D")
    if win.shape[0] != nperseg:
        raise ValueError(f"window must have length of {nperseg}")
    return win.astype(dtype)


def _istft_lengths(n_freq, nperseg, noverlap, nfft, input_onesided):
    n_default = 2 * (n_freq - 1) if input_onesided else n_freq
    nperseg = _static_int(nperseg or n_default, "nperseg: segment length of STFT")
    if nperseg < 1:
        raise ValueError("nperseg must be a positive integer")
    if nfft is None:
        nfft = n_default + 1 if input_onesided and nperseg == n_default + 1 else n_default
    else:
        nfft = _static_int(nfft, "nfft of STFT")
    if nfft < nperseg:
        raise ValueError(f"FFT length ({nfft}) must be longer than nperseg ({nperseg}).")
    noverlap = nperseg // 2 if noverlap is None else _static_int(noverlap, "noverlap of STFT")
    if noverlap >= nperseg:
        raise ValueError("noverlap must be less than nperseg.")
    return nperseg, noverlap, nfft


def istft(Zxx, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None,
          input_onesided=True, boundary=True, time_axis=-1, freq_axis=-2):
    """The inverse short-time Fourier transform (``scipy.signal.istft``), by weighted
    overlap-add.

    Args:
      Zxx: the STFT (frequencies at ``freq_axis``, segments at ``time_axis``).
      fs: the sampling frequency.
      window: the window of the STFT (a name, tuple or array).
      nperseg: the segment length (default: from ``Zxx``'s frequency axis).
      noverlap: the segment overlap (default ``nperseg // 2``).
      nfft: the FFT length (default: from ``Zxx``).
      input_onesided: ``Zxx`` holds a one-sided spectrum.
      boundary: the STFT extended the signal at both ends (``stft(boundary=...)``): drop
        those points.
      time_axis, freq_axis: the axes of ``Zxx`` (different).

    Returns:
      ``(t, x)``: the sample times and the reconstructed signal.

    Raises:
      ValueError: ``Zxx`` of rank < 2, equal axes, or inconsistent lengths.

    >>> import functrax.numpy as fnp
    >>> x = fnp.array([1.0, 2.0, 3.0, 2.0, 1.0, 0.0, 1.0, 2.0])
    >>> _, _, Z = stft(x, nperseg=4)
    >>> istft(Z)[1].round(4)
    Array([1., 2., 3., 2., 1., 0., 1., 2.], dtype=float32)
    """
    Zxx = array_operand("istft", Zxx)
    if _aval(Zxx).ndim < 2:
        raise ValueError("Input stft must be at least 2d!")
    nd = _aval(Zxx).ndim
    freq_axis = canonicalize_axis(freq_axis, nd, "istft")
    time_axis = canonicalize_axis(time_axis, nd, "istft")
    if freq_axis == time_axis:
        raise ValueError("Must specify differing time and frequency axes!")
    Zxx = fnp.asarray(Zxx, dtype=_complex_dtype(_aval(Zxx).dtype))
    nperseg, noverlap, nfft = _istft_lengths(Zxx.shape[freq_axis], nperseg, noverlap, nfft,
                                             input_onesided)
    if time_axis != nd - 1 or freq_axis != nd - 2:
        outer = tuple(i for i in range(nd) if i not in (time_axis, freq_axis))
        Zxx = fnp.transpose(Zxx, outer + (freq_axis, time_axis))
    ifunc = _fft.irfft if input_onesided else _fft.ifft
    xsubs = ifunc(Zxx, axis=-2, n=nfft)[..., :nperseg, :]  # [..., T, N]: N frames of T
    win = _istft_window(window, nperseg, xsubs.dtype)
    xsubs = xsubs * fnp.sum(win)  # the 'spectrum' scaling of stft
    win = win.reshape((1,) * (xsubs.ndim - 2) + (nperseg, 1))
    x = _overlap_and_add(fnp.swapaxes(xsubs * win, -2, -1), nperseg - noverlap)
    win_sq = fnp.broadcast_to(win * win, (1,) * (xsubs.ndim - 2) + (nperseg,
                                                                    xsubs.shape[-1]))
    norm = _overlap_and_add(fnp.swapaxes(win_sq, -2, -1), nperseg - noverlap)
    if boundary:
        half = nperseg // 2
        x, norm = x[..., half:-half], norm[..., half:-half]
    x = x / fnp.where(norm > 1e-10, norm, 1.0)
    if x.ndim > 1 and time_axis != nd - 1:
        x = fnp.moveaxis(x, -1, time_axis - 1 if freq_axis < time_axis else time_axis)
    times = fnp.arange(x.shape[0], dtype=_real_dtype(x.dtype)) / fs
    return times, x
