"""The discrete Fourier transform primitive, as ``jax.lax.fft``.

``fft(x; fft_type, fft_lengths)`` transforms the ``len(fft_lengths)`` minor (last) axes of
``x``; the leading axes are a batch. The four :class:`FftType` s:

- ``FFT`` / ``IFFT``: complex -> complex (same shape; IFFT includes the ``1/N`` scaling);
- ``RFFT``: real (float32/float64) -> complex (complex64/complex128); the last axis of
  length ``n`` becomes ``n // 2 + 1`` (the non-negative frequencies);
- ``IRFFT``: complex -> real; the last axis of length ``n // 2 + 1`` becomes ``n``
  (``fft_lengths[-1]``); imaginary parts of the DC and Nyquist terms are ignored.
"""
from __future__ import annotations

import enum

from functrax import core, dtypes
from functrax.primitives.define import Family, ShapedArray, new_primitive, np
from functrax.primitives.elementwise import convert_element_type

__all__ = ["FftType", "fft_p", "fft"]


class FftType(enum.IntEnum):
    """Which FFT operation to perform (``jax.lax.FftType``).

    >>> FftType.RFFT == 2
    True
    """

    FFT = 0
    "Forward complex-to-complex FFT."

    IFFT = 1
    "Inverse complex-to-complex FFT."

    RFFT = 2
    "Forward real-to-complex FFT."

    IRFFT = 3
    "Inverse real-to-complex FFT."


fft_p = new_primitive("fft", family=Family.FFT)

_REAL = (np.dtype(np.float32), np.dtype(np.float64))


def complex_dtype(dtype) -> np.dtype:
    """complex64 for float32 (and complex64), complex128 for float64 (and complex128)."""
    wide = np.dtype(dtype) in (np.dtype(np.float64), np.dtype(np.complex128))
    return np.dtype(np.complex128 if wide else np.complex64)


def real_dtype(dtype) -> np.dtype:
    """float32 for complex64, float64 for complex128 (real dtypes unchanged)."""
    return np.empty((), dtype).real.dtype


def _check_minor(name, x, fft_lengths, minor):
    if tuple(minor) != fft_lengths:
        raise ValueError(f"{name} input shape {x.shape} minor dimensions must be equal to "
                         f"fft_lengths {fft_lengths}")


@fft_p.def_abstract_eval
def _fft_abstract(x, *, fft_type, fft_lengths):
    fft_lengths = tuple(fft_lengths)
    k = len(fft_lengths)
    if k > x.ndim:
        raise ValueError(f"FFT input shape {x.shape} must have at least as many input "
                         f"dimensions as fft_lengths {fft_lengths}.")
    batch = x.shape[:x.ndim - k]
    if fft_type == FftType.RFFT:
        if x.dtype not in _REAL:
            raise ValueError(f"RFFT input must be float32 or float64, got {x.dtype}")
        _check_minor("RFFT", x, fft_lengths, x.shape[x.ndim - k:])
        shape = batch + fft_lengths[:-1] + (fft_lengths[-1] // 2 + 1,)
        return ShapedArray(shape, complex_dtype(x.dtype))
    if x.dtype.kind != "c":
        name = "IRFFT" if fft_type == FftType.IRFFT else "FFT"
        raise ValueError(f"{name} input must be complex64 or complex128, got {x.dtype}")
    if fft_type == FftType.IRFFT:
        if x.shape[x.ndim - k:-1] != fft_lengths[:-1]:
            raise ValueError(f"IRFFT input shape {x.shape} minor dimensions must be equal to "
                             f"all except the last fft_length, got fft_lengths={fft_lengths}")
        if x.shape[-1] != fft_lengths[-1] // 2 + 1:
            raise ValueError(f"IRFFT input shape {x.shape}: the last dimension must be "
                             f"fft_lengths[-1] // 2 + 1 = {fft_lengths[-1] // 2 + 1} (the "
                             f"non-negative frequencies of a length-{fft_lengths[-1]} signal)")
        return ShapedArray(batch + fft_lengths, real_dtype(x.dtype))
    _check_minor("FFT", x, fft_lengths, x.shape[x.ndim - k:])
    return ShapedArray(x.shape, x.dtype)


# --- the wrapper that binds it (re-exported by functrax.lax) ---

_NAMES = {name: typ for typ in FftType for name in (typ.name, typ.name.lower())}


def _fft_type(fft_type) -> FftType:
    if isinstance(fft_type, str):
        typ = _NAMES.get(fft_type)
        if typ is None:
            raise ValueError(f"Unknown FFT type '{fft_type}'")
        return typ
    if isinstance(fft_type, FftType):
        return fft_type
    raise TypeError(f"Unknown FFT type value '{fft_type}'")


def _to_inexact(dtype) -> np.dtype:
    dtype = np.dtype(dtype)
    if dtype in _REAL:
        return dtype
    if dtype.kind == "f":  # float16 / bfloat16: no half-precision FFT
        return np.dtype(np.float32)
    return dtypes.default_float_dtype()


def _to_complex(dtype) -> np.dtype:
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        return dtype
    return dtypes.canonicalize_dtype(complex_dtype(_to_inexact(dtype)))


def fft(x, fft_type, fft_lengths):
    """The discrete Fourier transform of the ``len(fft_lengths)`` minor axes of ``x``.

    Args:
      x: the operand. For ``RFFT`` it must be real (integers and booleans become the
        default float type); for the others it is converted to complex (float32 ->
        complex64, float64 -> complex128).
      fft_type: a :class:`FftType` or one of ``"fft"``, ``"ifft"``, ``"rfft"``,
        ``"irfft"`` (upper case too).
      fft_lengths: the lengths of the transformed (minor) axes: for ``IRFFT`` the lengths
        of the real output.

    Returns:
      the transform (see the module docstring for its shape and dtype).

    Raises:
      ValueError: an unknown type name, a complex operand of ``RFFT``, or a shape that does
        not end in ``fft_lengths``. TypeError: ``fft_type`` neither a string nor a FftType.

    >>> import functrax.numpy as fnp
    >>> fft(fnp.array([1.0, 2.0, 3.0, 4.0]), "rfft", (4,))
    Array([10.+0.j, -2.+2.j, -2.+0.j], dtype=complex64)
    """
    typ = _fft_type(fft_type)
    dtype = core.get_aval(x).dtype
    if typ == FftType.RFFT:
        if np.dtype(dtype).kind == "c":
            raise ValueError("only real valued inputs supported for rfft")
        x = convert_element_type(x, _to_inexact(dtype))
    else:
        x = convert_element_type(x, _to_complex(dtype))
    fft_lengths = tuple(int(n) for n in fft_lengths)
    if not fft_lengths:
        return x
    return fft_p.bind(x, fft_type=typ, fft_lengths=fft_lengths)
