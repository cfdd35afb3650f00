"""``lax.rng_bit_generator``: a stateful-style bit generator (a key in, a new key and bits
out), built on the threefry2x32 primitive. As in JAX, the bits are implementation defined
(XLA's differ); they are deterministic for a key and independent of ``shape``'s layout.

>>> import functrax.numpy as fnp
>>> key, bits = rng_bit_generator(fnp.zeros(4, "uint32"), (3,))
>>> key.shape, bits.shape, bits.dtype
((4,), (3,), dtype('uint32'))
"""
from __future__ import annotations

import enum
import math

from functrax import core, dtypes
from functrax.primitives.define import np
from functrax.primitives import elementwise as _ew
from functrax.primitives import shape as _sh
from functrax.primitives.prng import bitcast_convert_type, threefry2x32_p


class RandomAlgorithm(enum.IntEnum):
    """The algorithm of ``rng_bit_generator`` (all three use threefry2x32 here)."""

    RNG_DEFAULT = 0
    RNG_THREE_FRY = 1
    RNG_PHILOX = 2

    def __str__(self):
        return self.name


_UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _words(key, counter0, n, stream=0):
    """``2 * ceil(n / 2)`` uint32 words: threefry under ``key[0:2]`` of counters
    ``counter0 + i`` paired with ``key[3] ^ stream`` (stream 1: the next key's)."""
    m = max((n + 1) // 2, 1)
    k1, k2 = _sh.index_in_dim(key, 0, 0, False), _sh.index_in_dim(key, 1, 0, False)
    hi = _sh.index_in_dim(key, 3, 0, False)
    if stream:
        hi = _ew.bitwise_xor(hi, np.uint32(0x9E3779B9))
    x1 = _ew.add(_sh.iota(np.uint32, m), counter0)
    x2 = _sh.broadcast(hi, (m,))
    y1, y2 = threefry2x32_p.bind(k1, k2, x1, x2)
    return _sh.concatenate([y1, y2], 0)


def rng_bit_generator(key, shape, dtype=np.uint32, algorithm=RandomAlgorithm.RNG_DEFAULT, *,
                      out_sharding=None):
    """``(new_key, bits)``: ``bits`` of ``shape`` and unsigned ``dtype`` drawn with ``key``
    (a uint32[4] array), and the key to use next.

    Raises:
      ValueError / TypeError: for a key that is not uint32[4], a signed or non-integer dtype.
    """
    if out_sharding is not None:
        raise NotImplementedError("rng_bit_generator: out_sharding is not supported (sharding "
                                  "comes with a later release); pass None")
    RandomAlgorithm(algorithm)
    aval = core.get_aval(key)
    if aval.dtype != np.uint32 or aval.shape != (4,):
        raise ValueError(f"rng_bit_generator: the key must be a uint32[4] array, got "
                         f"{aval.str_short()}")
    dt = np.dtype(dtype)
    if dt.kind != "u":
        raise TypeError(f"rng_bit_generator: dtype must be an unsigned integer type (uint8, "
                        f"uint16, uint32, uint64), got {dt.name}")
    if dt.itemsize == 8 and not dtypes.x64_enabled():
        raise TypeError("rng_bit_generator: uint64 bits need "
                        "functrax.config.update('enable_x64', True)")
    shape = tuple(int(d) for d in shape)
    size = math.prod(shape)
    n_words = -(-size * dt.itemsize // 4)
    c0 = _sh.index_in_dim(key, 2, 0, False)
    words = _words(key, c0, n_words)
    new_key = _words(key, c0, 4, stream=1)
    words = _sh.slice_in_dim(words, 0, n_words)
    if dt.itemsize == 4:
        bits = words
    elif dt.itemsize == 8:
        pairs = _sh.reshape(words, (n_words // 2, 2))
        bits = bitcast_convert_type(pairs, dt)
    else:
        bits = _sh.reshape(bitcast_convert_type(words, dt), (n_words * 4 // dt.itemsize,))
    bits = _sh.slice_in_dim(bits, 0, size) if core.get_aval(bits).shape[0] != size else bits
    return new_key, _sh.reshape(bits, shape)


__all__ = ["RandomAlgorithm", "rng_bit_generator"]
