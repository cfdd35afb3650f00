"""numpy rules of the PRNG primitives (``threefry2x32``, ``bitcast_convert_type``)."""
from __future__ import annotations

import numpy as np

from functrax.lowering.numpy.rules import numpy_rules
from functrax.primitives.prng import bitcast_convert_type_p, threefry2x32_p

# the rotation amounts of Threefry-2x32, used four at a time, alternating
_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))


def _rotate_left(x, r):
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def _threefry2x32(k1, k2, x1, x2):
    """Threefry-2x32 with 20 rounds (Random123): 5 groups of 4 rounds, key injected after
    each group; uint32 arithmetic wraps, as the cipher requires."""
    shape = np.broadcast_shapes(k1.shape, k2.shape, x1.shape, x2.shape)
    # work on 1-d arrays: numpy warns about wrapping arithmetic on 0-d (scalar) operands
    k1, k2, x1, x2 = (np.broadcast_to(a, shape).reshape(-1).astype(np.uint32)
                      for a in (k1, k2, x1, x2))
    ks = (k1, k2, k1 ^ k2 ^ np.uint32(0x1BD11BDA))
    x = [x1 + ks[0], x2 + ks[1]]
    for i in range(5):
        for r in _ROTATIONS[i % 2]:
            x[0] = x[0] + x[1]
            x[1] = _rotate_left(x[1], r) ^ x[0]
        x[0] = x[0] + ks[(i + 1) % 3]
        x[1] = x[1] + ks[(i + 2) % 3] + np.uint32(i + 1)
    return [x[0].reshape(shape), x[1].reshape(shape)]


def _bitcast_convert_type(x, *, new_dtype):
    new_dtype = np.dtype(new_dtype)
    x = np.asarray(x, order="C")
    if x.dtype.itemsize == new_dtype.itemsize:
        return x.view(new_dtype)
    if x.dtype.itemsize > new_dtype.itemsize:  # a trailing axis of the narrower pieces
        ratio = x.dtype.itemsize // new_dtype.itemsize
        return x.reshape(x.shape + (1,)).view(new_dtype).reshape(x.shape + (ratio,))
    return x.view(new_dtype).reshape(x.shape[:-1])


numpy_rules[threefry2x32_p] = _threefry2x32
numpy_rules[bitcast_convert_type_p] = _bitcast_convert_type
