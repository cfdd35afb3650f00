"""Op specs: the PRNG primitives (``threefry2x32``, ``bitcast_convert_type``, the typed-key
primitives through ``functrax.random``) and ``random.multinomial``.

The key specs take raw key data (``uint32[2]``) and compare with the threefry reference
below (JAX's partitionable counters: output ``i`` is threefry of ``(0, i)``); the
multinomial specs compare invariants that hold for every draw (counts sum to ``n``; a
one-hot ``p`` puts every trial on its outcome).

The threefry reference below is written from the Random123 specification (Salmon et al.,
"Parallel random numbers: as easy as 1, 2, 3"), independently of the numpy backend.
"""
import numpy as np

import functrax.numpy as fnp
from functrax import lax, random
from functrax.random import threefry2x32
from tests.opspec.spec import F32, I32, U8, OpSpec, positive

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


def _counter_words(k, n):
    """threefry2x32 of the key ``k`` (uint32[2]) on the counters ``(0, i)``, i < n."""
    return threefry2x32_ref(k[0], k[1], np.zeros(n, np.uint32), np.arange(n, dtype=np.uint32))


def bits_ref(k, shape):
    y0, y1 = _counter_words(k, int(np.prod(shape)))
    return (y0 ^ y1).reshape(shape)


def split_ref(k, n):
    return np.stack(_counter_words(k, n), axis=-1)


def fold_in_ref(k, d):
    y0, y1 = threefry2x32_ref(k[0], k[1], np.uint32(0), d)
    return np.stack([y0, y1], axis=-1)


def seed_ref(s):
    return np.array([0, np.asarray(s).astype(np.uint32)], np.uint32)  # x64 off: 32-bit seeds


def one_hot_rows(rng, shape, dtype):
    """Probability rows with all their mass on one random outcome."""
    out = np.zeros(shape, dtype)
    idx = rng.randint(0, shape[-1], size=shape[:-1])
    np.put_along_axis(out, idx[..., None], 1, axis=-1)
    return out


def _wrap(k):
    return random.wrap_key_data(k)


KEY = ((2,),)
SPECS = [
    OpSpec("random_bits_raw_key", lambda k: random.bits(k, (5,)), lambda k: bits_ref(k, (5,)),
           shapes=(KEY,), dtypes=(U32,), domain=full_range_bits,
           primitives=("random_wrap", "random_bits")),
    OpSpec("random_bits_typed_key", lambda k: random.bits(_wrap(k), (2, 3)),
           lambda k: bits_ref(k, (2, 3)), shapes=(KEY,), dtypes=(U32,),
           domain=full_range_bits, primitives=("random_wrap", "random_bits")),
    OpSpec("random_split_raw_key", lambda k: random.split(k, 3), lambda k: split_ref(k, 3),
           shapes=(KEY,), dtypes=(U32,), domain=full_range_bits,
           primitives=("random_wrap", "random_split", "random_unwrap")),
    OpSpec("random_fold_in", lambda k, d: random.fold_in(k, d), fold_in_ref,
           shapes=(((2,), ()),), dtypes=((U32, U32),), domain=full_range_bits,
           primitives=("random_fold_in",)),
    OpSpec("random_seed", lambda s: random.PRNGKey(s), seed_ref, shapes=(((),),),
           dtypes=(I32,), domain=full_range_bits, primitives=("random_seed", "random_unwrap")),
    OpSpec("random_key_clone", lambda k: random.key_data(random.clone(_wrap(k))),
           lambda k: k, shapes=(KEY, ((3, 2),)), dtypes=(U32,), domain=full_range_bits,
           primitives=("random_clone",)),
    OpSpec("random_key_shape_ops",
           lambda k: random.key_data(fnp.stack([_wrap(k)[::-1, 1:], _wrap(k).T[:, 1:]])),
           lambda k: np.stack([k[::-1, 1:], k.transpose(1, 0, 2)[:, 1:]]), shapes=(((3, 3, 2),),),
           dtypes=(U32,),
           domain=full_range_bits),
    OpSpec("random_multinomial_counts_sum_to_n",
           lambda k, p: random.multinomial(k, 7.0, p).sum(-1),
           lambda k, p: np.full(p.shape[:-1], 7.0, np.float32),
           shapes=(((2,), (4,)), ((2,), (3, 4))), dtypes=((U32, F32),),
           domain=(full_range_bits, positive(0.1, 1.0)), atol=0, rtol=0),
    OpSpec("random_multinomial_one_hot", lambda k, p: random.multinomial(k, 5.0, p),
           lambda k, p: 5.0 * p, shapes=(((2,), (2, 3)),), dtypes=((U32, F32),),
           domain=(full_range_bits, one_hot_rows), atol=0, rtol=0),

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
