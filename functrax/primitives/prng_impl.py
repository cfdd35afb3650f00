"""The threefry2x32 PRNG on raw key data: what the typed-key primitives mean physically.

Every function takes and returns physical arrays: a batch of keys is ``uint32[*B, 2]`` (one
key per index of ``B``), and each function does, for every key of the batch, what JAX's
threefry implementation does for one key (``jax.random`` with
``jax_threefry_partitionable=True``, its default): the output of shape ``s`` at flat index
``i`` comes from ``threefry2x32(key, (hi32(i), lo32(i)))``.

``passes/physicalize.py`` binds these in place of ``random_seed`` / ``random_bits`` /
``random_split`` / ``random_fold_in`` (so the numpy and Triton backends only ever see
``threefry2x32`` on uint32 words), and the numpy rules of those primitives evaluate them.

>>> import numpy as np
>>> threefry_split(np.zeros(2, np.uint32), (2,))
Array([[1797259609, 2579123966],
       [ 928981903, 3453687069]], dtype=uint32)
"""
from __future__ import annotations

import math

import numpy as np

from functrax import core
from functrax.primitives.elementwise import (
    bitwise_or, bitwise_xor, convert_element_type, shift_left, shift_right_logical,
)
from functrax.primitives.prng import UINT_DTYPES, threefry2x32_p
from functrax.primitives.shape import (
    broadcast_in_dim, concatenate, expand_dims, iota, reshape, slice, squeeze,
)

_U32 = np.dtype(np.uint32)


def _shape(x) -> tuple:
    return core.get_aval(x).shape


def key_words(keys):
    """The two uint32 words of a batch of keys ``uint32[*B, 2]``: two arrays of shape B."""
    shape = _shape(keys)
    nd = len(shape) - 1
    words = []
    for w in (0, 1):
        part = slice(keys, (0,) * nd + (w,), shape[:-1] + (w + 1,))
        words.append(squeeze(part, (nd,)))
    return words


def _stack_words(y1, y2):
    """``uint32[*S, 2]`` from two word arrays of shape S."""
    nd = len(_shape(y1))
    return concatenate([expand_dims(y1, (nd,)), expand_dims(y2, (nd,))], nd)


def _iota_2x32(shape):
    """The flat index over ``shape`` as (high word, low word) uint32 counters."""
    size = math.prod(shape)
    if size >= 2 ** 32:
        raise NotImplementedError(f"random arrays of {size} >= 2**32 elements are not "
                                  "supported")
    zero = np.zeros((), _U32)
    if not shape:
        return zero, zero
    return zero, reshape(iota(_U32, size), tuple(shape))


def threefry_over(keys, shape):
    """threefry2x32 of every key of ``keys`` (``uint32[*B, 2]``) on the counters of
    ``shape``: two word arrays of shape ``(*B, *shape)``."""
    batch = _shape(keys)[:-1]
    k1, k2 = key_words(keys)
    hi, lo = _iota_2x32(shape)
    if batch:
        full, nb = batch + tuple(shape), len(batch)
        k1 = broadcast_in_dim(k1, full, tuple(range(nb)))
        k2 = broadcast_in_dim(k2, full, tuple(range(nb)))
        if shape:
            lo = broadcast_in_dim(lo, full, tuple(range(nb, len(full))))
    return threefry2x32_p.bind(k1, k2, hi, lo)


def threefry_random_bits(keys, bit_width: int, shape):
    """``uint<bit_width>[*B, *shape]``: random bits per key (JAX's partitionable layout)."""
    dtype = UINT_DTYPES[bit_width]
    b1, b2 = threefry_over(keys, shape)
    if bit_width == 64:
        hi = convert_element_type(b1, dtype)
        lo = convert_element_type(b2, dtype)
        return bitwise_or(shift_left(hi, np.asarray(32, dtype)), lo)
    bits = bitwise_xor(b1, b2)
    return bits if bit_width == 32 else convert_element_type(bits, dtype)


def threefry_split(keys, shape):
    """``uint32[*B, *shape, 2]``: ``shape`` new keys per key."""
    return _stack_words(*threefry_over(keys, shape))


def threefry_fold_in(keys, msgs):
    """``uint32[*B, 2]``: each key with its uint32 message folded in (threefry of
    ``(0, msg)``); ``keys`` (``B == ()``) or ``msgs`` may be rank 0 beside the other."""
    k1, k2 = key_words(keys)
    y1, y2 = threefry2x32_p.bind(k1, k2, np.zeros((), _U32), msgs)
    return _stack_words(y1, y2)


def threefry_seed(seeds):
    """``uint32[*B, 2]`` keys from integer seeds of shape B: ``[hi32(seed), lo32(seed)]``
    (the high word is 0 for seeds of 32 bits or fewer)."""
    aval = core.get_aval(seeds)
    if aval.dtype.itemsize == 8:
        hi = convert_element_type(
            shift_right_logical(seeds, np.asarray(32, aval.dtype)), _U32)
    elif aval.shape:
        hi = broadcast_in_dim(np.zeros((), _U32), aval.shape, ())
    else:
        hi = np.zeros((), _U32)
    lo = convert_element_type(seeds, _U32)
    return _stack_words(hi, lo)


__all__ = ["key_words", "threefry_over", "threefry_random_bits", "threefry_split",
           "threefry_fold_in", "threefry_seed"]
