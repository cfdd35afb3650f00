"""Keys and raw bits: threefry2x32, ``PRNGKey``/``key``, ``split``, ``fold_in``, ``bits``.

A key is a ``uint32[2]`` array (``functrax.random.key`` makes the same raw representation
as ``PRNGKey``: there is no typed key dtype). Counters follow JAX's *partitionable* layout
(``jax_threefry_partitionable=True``): the output of shape ``s`` at flat index ``i`` comes
from ``threefry2x32(key, (hi32(i), lo32(i)))``, so every element depends only on the key and
its own index.
"""
from __future__ import annotations

import math
import operator
from collections.abc import Sequence

import numpy as np

from functrax import core, dtypes, lax
from functrax.core import Array, Tracer
from functrax.primitives.prng import threefry2x32_p

UINT_DTYPES = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: np.dtype(np.uint32),
               64: np.dtype(np.uint64)}
_IMPLS = (None, "threefry2x32", "threefry")


# --- the cipher and keys ---


def threefry2x32(k1, k2, x1, x2):
    """The Threefry-2x32 (20 rounds) block cipher on uint32 words: ``(y1, y2)``.

    Operands have equal shapes except that rank-0 operands may stand beside arrays.

    >>> import numpy as np
    >>> [int(y) for y in threefry2x32(*np.zeros(4, np.uint32))]
    [1797259609, 2579123966]
    """
    return tuple(threefry2x32_p.bind(k1, k2, x1, x2))


def threefry_2x32(keypair, count):
    """Apply threefry2x32 to the uint32 array ``count`` (JAX's ``random.threefry_2x32``).

    The flattened ``count`` (padded with one zero when its size is odd) is cut in halves
    that form the two counter words; the outputs are concatenated back into ``count``'s
    shape.

    Args:
      keypair: a pair ``(k1, k2)`` of uint32 scalars, or a uint32[2] key.
      count: a uint32 array.
    Returns:
      A uint32 array of ``count``'s shape.
    """
    k1, k2 = keypair
    c_aval = core.get_aval(count)
    for name, x in (("keypair[0]", k1), ("keypair[1]", k2), ("count", count)):
        if core.get_aval(x).dtype != np.uint32:
            raise TypeError(f"threefry_2x32 requires uint32 arguments, got {name} of dtype "
                            f"{core.get_aval(x).dtype.name}")
    flat = lax.reshape(count, (c_aval.size,))
    odd = c_aval.size % 2
    if odd:
        flat = lax.concatenate([flat, np.zeros(1, np.uint32)], 0)
    half = (c_aval.size + odd) // 2
    x1 = lax.slice(flat, (0,), (half,))
    x2 = lax.slice(flat, (half,), (2 * half,))
    y1, y2 = threefry2x32(k1, k2, x1, x2)
    out = lax.concatenate([y1, y2], 0)
    if odd:
        out = lax.slice(out, (0,), (c_aval.size,))
    return lax.reshape(out, c_aval.shape)


# --- argument checking ---


def check_key(name: str, key, allow_batched: bool = False):
    """``key`` as an Array/tracer of uint32 key data, or a clear error.

    Raises:
      TypeError: for non-arrays, dtypes other than uint32, or a last axis other than 2.
      ValueError: for a batch of keys where one key is expected.
    """
    if not isinstance(key, (Array, Tracer, np.ndarray)):
        raise TypeError(f"{name}: unexpected PRNG key type {type(key).__name__}; pass a key "
                        "made by functrax.random.PRNGKey(seed) (a uint32[2] array)")
    aval = core.get_aval(key)
    if aval.dtype != np.uint32:
        raise TypeError(f"{name}: invalid PRNG key data: expected dtype uint32, got "
                        f"dtype={aval.dtype.name} with shape={aval.shape}. Make keys with "
                        "functrax.random.PRNGKey(seed), not from a plain integer array.")
    if aval.ndim < 1 or aval.shape[-1] != 2:
        raise TypeError(f"{name}: invalid PRNG key data: expected a shape ending in (2,) "
                        f"(threefry2x32 keys are uint32[2]), got shape={aval.shape}")
    if not allow_batched and aval.ndim > 1:
        raise ValueError(f"{name} accepts a single key, but was given a key array of shape "
                         f"{aval.shape[:-1]} != (). Use functrax.vmap for batching.")
    if isinstance(key, np.ndarray):
        key = Array(key)
    return key


def canonicalize_shape(name: str, shape) -> tuple:
    """``shape`` as a tuple of non-negative Python ints, or a clear error."""
    if isinstance(shape, (Array, Tracer)) or not isinstance(shape, (Sequence, np.ndarray)):
        raise TypeError(f"{name}: shape must be a sequence of concrete integers, got "
                        f"{shape!r}. For a 1-D result write shape=({shape!r},).")
    try:
        dims = tuple(operator.index(d) for d in shape)
    except TypeError:
        raise TypeError(f"{name}: shape must be a sequence of concrete integers, got "
                        f"{shape!r}") from None
    if any(d < 0 for d in dims):
        raise ValueError(f"{name}: shape {dims} has a negative dimension")
    return dims


def key_words(key):
    """The two uint32 scalars of a single key."""
    return (lax.index_in_dim(key, 0, 0, keepdims=False),
            lax.index_in_dim(key, 1, 0, keepdims=False))


def _iota_2x32(shape):
    """The flat index over ``shape`` as (high word, low word) uint32 counters."""
    size = math.prod(shape)
    if size >= 2 ** 32:
        raise NotImplementedError(f"random arrays of {size} >= 2**32 elements are not "
                                  "supported")
    zero = np.zeros((), np.uint32)
    if not shape:
        return zero, zero
    return zero, lax.reshape(lax.iota(np.uint32, size), shape)


def _threefry_over(key, shape):
    """threefry2x32 of ``key`` on the partitionable counters of ``shape``: (bits1, bits2)."""
    k1, k2 = key_words(key)
    hi, lo = _iota_2x32(shape)
    return threefry2x32(k1, k2, hi, lo)


def random_bits(key, bit_width: int, shape):
    """Uniform random bits of ``bit_width`` (8, 16, 32 or 64) and ``shape`` (unchecked key)."""
    if bit_width not in UINT_DTYPES:
        raise TypeError(f"random_bits requires 8-, 16-, 32- or 64-bit field width, got "
                        f"{bit_width}")
    dtype = UINT_DTYPES[bit_width]
    if bit_width == 64 and not dtypes.x64_enabled():
        raise TypeError("64-bit random bits need functrax.config.update('enable_x64', True)")
    b1, b2 = _threefry_over(key, shape)
    if bit_width == 64:
        hi = lax.convert_element_type(b1, dtype)
        lo = lax.convert_element_type(b2, dtype)
        return lax.bitwise_or(lax.shift_left(hi, np.asarray(32, dtype)), lo)
    bits = lax.bitwise_xor(b1, b2)
    return bits if bit_width == 32 else lax.convert_element_type(bits, dtype)


def split_key(key, shape=(2,)):
    """``shape`` new keys from one (unchecked): threefry of the key over the counters."""
    b1, b2 = _threefry_over(key, shape)
    nd = len(shape)
    return lax.concatenate([lax.expand_dims(b1, (nd,)), lax.expand_dims(b2, (nd,))], nd)


# --- public API: keys ---


def _check_impl(name, impl):
    if impl not in _IMPLS:
        raise ValueError(f"{name}: unknown PRNG implementation {impl!r}; functrax implements "
                         "only 'threefry2x32' (JAX's default)")


def _seed_operand(seed):
    """The seed as an integer scalar array (Python ints wrap as ``np.int64(seed)`` would)."""
    if type(seed) in (int, bool):
        if not -2 ** 63 <= seed < 2 ** 63:
            raise OverflowError(f"PRNGKey: seed {seed} does not fit in int64")
        return np.asarray(np.int64(seed)).astype(dtypes.default_int_dtype())
    if isinstance(seed, (np.ndarray, np.generic)):
        return np.asarray(seed).astype(dtypes.canonicalize_dtype(np.asarray(seed).dtype))
    if isinstance(seed, (Array, Tracer)):
        return seed
    raise TypeError(f"PRNG key seed must be an integer; got {seed!r} of type "
                    f"{type(seed).__name__}")


def PRNGKey(seed, *, impl=None):
    """A PRNG key (uint32[2]) from an integer seed, as JAX's ``random.PRNGKey``.

    The key is ``[hi32(seed), lo32(seed)]`` of the seed as a canonical integer (so with x64
    off, a Python int seed wraps to 32 bits and the first word is 0).

    Args:
      seed: an integer scalar (Python int, numpy integer, or integer array, possibly traced).
      impl: None or "threefry2x32" (the only implementation).
    Returns:
      A uint32 array of shape (2,).
    Raises:
      TypeError: for a non-integer or non-scalar seed. OverflowError: for a Python int
        outside int64.

    >>> PRNGKey(42)
    Array([ 0, 42], dtype=uint32)
    """
    _check_impl("PRNGKey", impl)
    seed = _seed_operand(seed)
    aval = core.get_aval(seed)
    if aval.shape:
        raise TypeError(f"PRNG key seed must be a scalar; got an array of shape {aval.shape}")
    if aval.dtype.kind not in "iu":
        raise TypeError(f"PRNG key seed must be an integer; got dtype {aval.dtype.name}")
    if aval.dtype.itemsize == 8:
        hi = lax.convert_element_type(
            lax.shift_right_logical(seed, np.asarray(32, aval.dtype)), np.uint32)
    else:
        hi = np.zeros((), np.uint32)
    lo = lax.convert_element_type(seed, np.uint32)
    return lax.concatenate([lax.broadcast_in_dim(hi, (1,), ()),
                            lax.broadcast_in_dim(lo, (1,), ())], 0)


def key(seed, *, impl=None):
    """A PRNG key from an integer seed (JAX's ``random.key``).

    functrax has no typed key dtype: this returns the same raw uint32[2] array as
    :func:`PRNGKey`, which every function of ``functrax.random`` accepts.

    >>> key(0)
    Array([0, 0], dtype=uint32)
    """
    _check_impl("key", impl)
    return PRNGKey(seed)


def key_data(keys):
    """The raw uint32 data of (a batch of) keys: the keys themselves in functrax."""
    return check_key("key_data", keys, allow_batched=True)


def wrap_key_data(key_bits_array, *, impl=None):
    """Keys from raw uint32 key data of shape (..., 2) (validated, returned as is)."""
    _check_impl("wrap_key_data", impl)
    return check_key("wrap_key_data", key_bits_array, allow_batched=True)


def clone(key):
    """A copy of ``key`` (keys are immutable values: the key itself)."""
    return check_key("clone", key, allow_batched=True)


def split(key, num=2):
    """Split a key into ``num`` new keys (``num`` may be a shape tuple).

    Args:
      key: a single uint32[2] key.
      num: the number of keys, or a shape.
    Returns:
      A uint32 array of shape ``(num, 2)`` (or ``(*num, 2)``).

    >>> split(PRNGKey(0))
    Array([[1797259609, 2579123966],
           [ 928981903, 3453687069]], dtype=uint32)
    """
    key = check_key("split", key)
    shape = canonicalize_shape("split", num if isinstance(num, Sequence) else (num,))
    return split_key(key, shape)


def _fold_data(data):
    if type(data) in (int, bool):
        if not 0 <= data < 2 ** 32:
            raise OverflowError(f"fold_in: data {data} does not fit in uint32 (0 <= data < "
                                "2**32)")
        return np.asarray(data, np.uint32)
    if not isinstance(data, (Array, Tracer, np.ndarray, np.generic)):
        raise TypeError(f"fold_in: data must be an integer scalar, got "
                        f"{type(data).__name__}")
    aval = core.get_aval(data)
    if aval.shape:
        raise TypeError(f"fold_in accepts a scalar, but was given an array of shape "
                        f"{aval.shape} != (). Use functrax.vmap for batching.")
    if aval.dtype.kind not in "iub":
        raise TypeError(f"fold_in: data must be an integer scalar, got dtype "
                        f"{aval.dtype.name}")
    return lax.convert_element_type(data, np.uint32)


def fold_in(key, data):
    """A new key from ``key`` and the 32-bit integer ``data`` (threefry of ``(0, data)``).

    >>> fold_in(PRNGKey(0), 7)
    Array([2716826189,  292468403], dtype=uint32)
    """
    key = check_key("fold_in", key)
    data = _fold_data(data)
    k1, k2 = key_words(key)
    y1, y2 = threefry2x32(k1, k2, np.zeros((), np.uint32), data)
    return lax.concatenate([lax.broadcast_in_dim(y1, (1,), ()),
                            lax.broadcast_in_dim(y2, (1,), ())], 0)


def bits(key, shape=(), dtype=None):
    """Uniform random bits of an unsigned dtype (default ``uint``: uint32 unless x64).

    >>> bits(PRNGKey(0), (3,))
    Array([4070199207, 4202968722, 1427181096], dtype=uint32)
    """
    key = check_key("bits", key)
    dtype = dtypes.canonicalize_dtype(np.uint64 if dtype is None else dtype)
    if dtype.kind != "u":
        raise ValueError(f"dtype argument to `bits` must be an unsigned int dtype, got "
                         f"{dtype.name}")
    shape = canonicalize_shape("bits", shape)
    return random_bits(key, 8 * dtype.itemsize, shape)
