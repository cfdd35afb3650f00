"""numpy rule of the ``fft`` primitive (``functrax/primitives/fft.py``): ``numpy.fft``.

numpy >= 2 computes in the operand's precision; the result is still cast to the
primitive's result dtype (complex64 from complex64/float32, float32 from complex64 for
IRFFT), as XLA rounds. A zero-length transform gives zeros (XLA's convention; numpy raises).
"""
from __future__ import annotations

import numpy as np

from functrax.lowering.numpy.rules import numpy_rules
from functrax.primitives.fft import FftType, complex_dtype, fft_p, real_dtype

_FNS = {FftType.FFT: np.fft.fftn, FftType.IFFT: np.fft.ifftn, FftType.RFFT: np.fft.rfftn,
        FftType.IRFFT: np.fft.irfftn}


def _out_shape(x, fft_type, fft_lengths):
    batch = x.shape[:x.ndim - len(fft_lengths)]
    if fft_type == FftType.RFFT:
        return batch + fft_lengths[:-1] + (fft_lengths[-1] // 2 + 1,)
    return batch + fft_lengths


def _out_dtype(x, fft_type):
    if fft_type == FftType.IRFFT:
        return real_dtype(x.dtype)
    return complex_dtype(x.dtype)


def _fft_numpy(x, *, fft_type, fft_lengths):
    fft_type = FftType(fft_type)
    shape, dtype = _out_shape(x, fft_type, fft_lengths), _out_dtype(x, fft_type)
    if 0 in fft_lengths or 0 in x.shape:
        return np.zeros(shape, dtype)
    axes = tuple(range(x.ndim - len(fft_lengths), x.ndim))
    out = _FNS[fft_type](x, s=fft_lengths, axes=axes)
    return np.asarray(out, dtype)


numpy_rules[fft_p] = _fft_numpy
