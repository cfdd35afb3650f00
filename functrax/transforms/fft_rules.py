"""jvp, transpose and vmap rules of the ``fft`` primitive, as JAX's (``jax/_src/lax/fft.py``).

The transform is linear: its JVP is the transform of the tangent. Transposes use JAX's
bilinear pairing ``<a, b> = Re(sum a * b)`` (no conjugation), under which

- FFT and IFFT are symmetric matrices: each is its own transpose;
- RFFT (real -> half spectrum) transposes to ``N * irfft(conj(ct) / mask)``, where ``mask``
  is 2 on the frequencies whose conjugate twin RFFT drops and 1 on DC (and Nyquist for an
  even length): irfft doubles those terms, the mask undoes it;
- IRFFT (half spectrum -> real) transposes to ``conj(mask * rfft(ct) / N)``.

``N`` is ``prod(fft_lengths)``. The primitive batches over leading axes, so the vmap rule
moves the batch axis to the front.
"""
from __future__ import annotations

import math

import numpy as np

from functrax import core
from functrax import primitives as P
from functrax.primitives.fft import FftType, fft_p
from functrax.transforms.batching import moveaxis, vmap_rules
from functrax.transforms.jvp import deflinear
from functrax.transforms.transpose import deflinear_transpose


def _half_spectrum_mask(fft_lengths) -> np.ndarray:
    """1 on DC (and on Nyquist for an even length), 2 on the other kept frequencies."""
    n = fft_lengths[-1]
    mask = np.full(n // 2 + 1, 2.0)
    mask[0] = 1.0
    if n % 2 == 0:
        mask[-1] = 1.0
    return mask


def _scale_last_axis(x, weights: np.ndarray):
    """``x * weights`` with ``weights`` along the last axis (cast to ``x``'s dtype)."""
    aval = core.get_aval(x)
    w = P.broadcast_in_dim(weights.astype(aval.dtype), aval.shape, (aval.ndim - 1,))
    return P.mul(x, w)


def _rfft_transpose(ct, fft_lengths):
    n = math.prod(fft_lengths)
    weighted = _scale_last_axis(P.conj(ct), n / _half_spectrum_mask(fft_lengths))
    return fft_p.bind(weighted, fft_type=FftType.IRFFT, fft_lengths=fft_lengths)


def _irfft_transpose(ct, fft_lengths):
    spectrum = fft_p.bind(ct, fft_type=FftType.RFFT, fft_lengths=fft_lengths)
    n = math.prod(fft_lengths)
    return _scale_last_axis(P.conj(spectrum), _half_spectrum_mask(fft_lengths) / n)


def _fft_transpose(ct, x, *, fft_type, fft_lengths):
    if fft_type == FftType.RFFT:
        return [_rfft_transpose(ct, fft_lengths)]
    if fft_type == FftType.IRFFT:
        return [_irfft_transpose(ct, fft_lengths)]
    return [fft_p.bind(ct, fft_type=fft_type, fft_lengths=fft_lengths)]


def _fft_vmap(axis, vals, dims, **params):
    (x,), (d,) = vals, dims
    return fft_p.bind(moveaxis(x, d, 0), **params), 0


deflinear(fft_p)
deflinear_transpose(fft_p, _fft_transpose)
vmap_rules[fft_p] = _fft_vmap
