"""Op specs: the PRNG primitives (``threefry2x32``, ``bitcast_convert_type``).

The threefry reference below is written from the Random123 specification (Salmon et al.,
"Parallel random numbers: as easy as 1, 2, 3"), independently of the numpy backend.
"""
import numpy as np

from functrax import lax
from functrax.random import threefry2x32
from tests.opspec.spec import I32, U8, OpSpec

U32 = np.dtype(np.uint32)
MASK = 0xFFFFFFFF


def _threefry_scalar(k0, k1, x0, x1):
    """Threefry-2x32-20 on Python ints (arithmetic mod 2**32)."""
    rot = (13, 15, 26, 6, 17, 29, 16, 24)
    ks = (k0, k1, k0 ^ k1 ^ 0x1BD11BDA)
    x0, x1 = (x0 + ks[0]) & MASK, (x1 + ks[1]) & MASK
    for rnd in range(20):
        r = rot[rnd % 8]
        x0 = (x0 + x1) & MASK
        x1 = (((x1 << r) | (x1 >> (32 - r))) & MASK) ^ x0
        if rnd % 4 == 3:  # key injection after every four rounds
            s = rnd // 4 + 1
            x0 = (x0 + ks[s % 3]) & MASK
            x1 = (x1 + ks[(s + 1) % 3] + s) & MASK
    return x0, x1


def threefry2x32_ref(k0, k1, x0, x1):
    """The reference over numpy arrays (rank-0 operands broadcast)."""
    arrs = np.broadcast_arrays(*(np.asarray(a, np.uint32) for a in (k0, k1, x0, x1)))
    outs = [_threefry_scalar(*(int(v) for v in vals)) for vals in zip(*(a.ravel()
                                                                         for a in arrs))]
    shape = arrs[0].shape
    y0 = np.array([o[0] for o in outs], np.uint32).reshape(shape)
    y1 = np.array([o[1] for o in outs], np.uint32).reshape(shape)
    return y0, y1


def full_range_bits(rng, shape, dtype):
    """Integers over the whole range of ``dtype`` (bit patterns, not small values)."""
    info = np.iinfo(dtype)
    return rng.randint(info.min, int(info.max) + 1, size=shape, dtype=np.int64).astype(dtype)


def finite_f32_bits(rng, shape, dtype):
    """int32 bit patterns of finite float32 values (exponent field below all-ones)."""
    sign = rng.randint(0, 2, size=shape).astype(np.int64) << 31
    exp = rng.randint(0, 255, size=shape).astype(np.int64) << 23
    mant = rng.randint(0, 2 ** 23, size=shape).astype(np.int64)
    return (sign | exp | mant).astype(np.uint32).view(np.int32).astype(dtype)


SPECS = [
    OpSpec("lax_threefry2x32", lambda k0, k1, x0, x1: threefry2x32(k0, k1, x0, x1),
           threefry2x32_ref,
           shapes=(((), (), (5,), (5,)), ((2, 3), (2, 3), (2, 3), (2, 3)),
                   ((), (4,), (), (4,)), ((), (), (), ())),
           dtypes=(U32,), domain=full_range_bits, primitives=("threefry2x32",)),
    OpSpec("lax_bitcast_convert_type_i32_f32",
           lambda x: lax.bitcast_convert_type(x, np.float32), lambda x: x.view(np.float32),
           shapes=(((7,),), ((2, 3),), ((),)), dtypes=(I32,), domain=finite_f32_bits,
           atol=0, rtol=0, primitives=("bitcast_convert_type",)),
    OpSpec("lax_bitcast_convert_type_u32_u8",
           lambda x: lax.bitcast_convert_type(x, np.uint8),
           lambda x: np.asarray(x, order="C").reshape(x.shape + (1,)).view(np.uint8).reshape(
               x.shape + (4,)),
           shapes=(((3,),), ((2, 3),), ((),)), dtypes=(U32,), domain=full_range_bits,
           primitives=("bitcast_convert_type",)),
    OpSpec("lax_bitcast_convert_type_u8_i32",
           lambda x: lax.bitcast_convert_type(x, np.int32),
           lambda x: np.asarray(x, order="C").view(np.int32).reshape(x.shape[:-1]),
           shapes=(((3, 4),), ((4,),)), dtypes=(U8,), domain=full_range_bits,
           primitives=("bitcast_convert_type",)),
]
