"""Op specs: discrete Fourier transforms (``functrax.numpy.fft`` and ``functrax.lax.fft``).

References are ``numpy.fft`` (numpy >= 2 computes in the input's precision). Every name
starts with ``fft_`` (select them with ``-k fft_``). ``fftfreq`` / ``rfftfreq`` take no
array argument: they are tested in tests/test_fft.py.
"""
import numpy as np

import functrax.numpy as fnp
from functrax import lax
from tests.opspec.spec import F32, I32, OpSpec, uniform

C64 = np.dtype(np.complex64)
PRIMS = ("fft",)


def cplx(lo=-2.0, hi=2.0):
    def gen(rng, shape, dtype):
        return (rng.uniform(lo, hi, shape) + 1j * rng.uniform(lo, hi, shape)).astype(dtype)
    return gen


def any_kind(rng, shape, dtype):
    """Complex values for complex dtypes, uniform reals / integers otherwise."""
    gen = cplx() if np.dtype(dtype).kind == "c" else uniform()
    return gen(rng, shape, dtype)


def _spec(name, shapes, kwargs, dtypes, fn=None, ref=None, prims=PRIMS, **kw):
    fn = fn or getattr(fnp.fft, name)
    ref = ref or getattr(np.fft, name)
    return OpSpec(f"fft_{name}" + kw.pop("suffix", ""), fn, ref, shapes=shapes, dtypes=dtypes,
                  domain=any_kind, kwargs=kwargs, atol=1e-4, rtol=1e-4, primitives=prims, **kw)


_NORMS = ({"norm": "ortho"}, {"norm": "forward"}, {"norm": "backward"})
_1D = ((((8,),), ((3, 5),)), ({},) + _NORMS[:2] + ({"n": 6}, {"n": 11, "axis": 0}))
_2D = ((((4, 6),), ((2, 3, 4),)),
       ({}, {"s": (3, 5)}, {"axes": (0, 1)}, {"axes": (1, 0), "s": (2, 7)}, _NORMS[0],
        _NORMS[1]))
_ND = ((((2, 3, 4),), ((3, 4),)),
       ({}, {"axes": (0, 1)}, {"axes": (-1, -2), "s": (5, 3)}, {"s": (2, 5)}, _NORMS[0],
        _NORMS[1]))
_4D = ((((2, 3, 2, 3, 2),),), ({}, {"axes": (4, 1, 2, 0)}, {"axes": (0, 1, 2, 3, 4)}))


# --- lax.fft: the primitive itself, per FftType ---

def _lax_ref(x, fft_type, fft_lengths):
    axes = tuple(range(x.ndim - len(fft_lengths), x.ndim))
    fn = {"fft": np.fft.fftn, "ifft": np.fft.ifftn, "rfft": np.fft.rfftn,
          "irfft": np.fft.irfftn}[fft_type]
    return fn(x, s=fft_lengths, axes=axes)


def _lax_fn(x, fft_type, fft_lengths):
    return lax.fft(x, getattr(lax.FftType, fft_type.upper()), fft_lengths)


_LAX = [
    OpSpec("fft_lax_fft", _lax_fn, _lax_ref, shapes=(((2, 6),),), dtypes=(C64, F32),
           domain=any_kind, atol=1e-4, rtol=1e-4, primitives=PRIMS,
           kwargs=({"fft_type": "fft", "fft_lengths": (6,)},
                   {"fft_type": "fft", "fft_lengths": (2, 6)},
                   {"fft_type": "ifft", "fft_lengths": (2, 6)})),
    OpSpec("fft_lax_rfft", _lax_fn, _lax_ref, shapes=(((3, 7),),), dtypes=(F32, I32),
           domain=any_kind, atol=1e-4, rtol=1e-4, primitives=PRIMS,
           kwargs=({"fft_type": "rfft", "fft_lengths": (7,)},
                   {"fft_type": "rfft", "fft_lengths": (3, 7)})),
    OpSpec("fft_lax_irfft", _lax_fn, _lax_ref, shapes=(((3, 4),),), dtypes=(C64,),
           domain=any_kind, atol=1e-4, rtol=1e-4, primitives=PRIMS,
           kwargs=({"fft_type": "irfft", "fft_lengths": (6,)},
                   {"fft_type": "irfft", "fft_lengths": (7,)},
                   {"fft_type": "irfft", "fft_lengths": (3, 6)})),
]

# hfft / irfft and friends ignore the imaginary parts of the DC and Nyquist terms (numpy
# too), so random complex inputs compare directly.
SPECS = _LAX + [
    _spec("fft", *_1D, dtypes=(C64, F32, I32)),
    _spec("ifft", *_1D, dtypes=(C64, F32)),
    _spec("rfft", *_1D, dtypes=(F32, I32)),
    _spec("irfft", *_1D, dtypes=(C64, F32)),
    _spec("hfft", *_1D, dtypes=(C64, F32)),
    _spec("ihfft", *_1D, dtypes=(F32,)),
    _spec("fft2", *_2D, dtypes=(C64, F32)),
    _spec("ifft2", *_2D, dtypes=(C64,)),
    _spec("rfft2", *_2D, dtypes=(F32,)),
    _spec("irfft2", *_2D, dtypes=(C64,)),
    _spec("fftn", *_ND, dtypes=(C64, I32)),
    _spec("ifftn", *_ND, dtypes=(C64,)),
    _spec("rfftn", *_ND, dtypes=(F32,)),
    _spec("irfftn", *_ND, dtypes=(C64,)),
    # more than 3 axes: chained transforms of at most 3 axes (as JAX)
    _spec("fftn", *_4D, dtypes=(C64,), suffix="_4d"),
    _spec("ifftn", *_4D, dtypes=(C64,), suffix="_4d"),
    _spec("rfftn", *_4D, dtypes=(F32,), suffix="_4d"),
    _spec("irfftn", *_4D, dtypes=(C64,), suffix="_4d"),
    _spec("fftshift", (((5,),), ((4, 5),)), ({}, {"axes": 0}, {"axes": (-1,)}),
          dtypes=(F32, C64, I32), prims=()),
    _spec("ifftshift", (((5,),), ((4, 5),)), ({}, {"axes": -1}, {"axes": (0,)}),
          dtypes=(F32, C64), prims=()),
    # a round trip: irfft(rfft(x), n) == x
    OpSpec("fft_rfft_irfft_roundtrip", lambda x: fnp.fft.irfft(fnp.fft.rfft(x), n=x.shape[-1]),
           lambda x: x, shapes=(((7,),), ((2, 8),)), dtypes=(F32,), atol=1e-5, rtol=1e-4,
           primitives=PRIMS),
]
