"""The threefry2x32 cipher as ``jax.random`` exposes it (``threefry2x32``,
``threefry_2x32``) and the shape argument of the samplers.

Keys and the functions on them (``key``, ``PRNGKey``, ``split``, ``fold_in``, ``bits``, ...)
are in :mod:`functrax.random.keys`; the threefry implementation of the key primitives (JAX's
*partitionable* counter layout) is in ``functrax/primitives/prng_impl.py``.
"""
from __future__ import annotations

import operator
from collections.abc import Sequence

import numpy as np

from functrax import core, lax
from functrax.core import Array, Tracer
from functrax.primitives.prng import UINT_DTYPES, threefry2x32_p

__all__ = ["UINT_DTYPES", "threefry2x32", "threefry_2x32", "canonicalize_shape"]


# --- the cipher ---


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


# --- shapes ---


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
