"""numpy rules of the PRNG primitives (``threefry2x32``, ``bitcast_convert_type`` and the
typed-key primitives).

The key primitives take and return the keys' physical data (``uint32[..., 2]``) and run
their threefry implementation (``primitives/prng_impl.py``) on it eagerly. Compiled programs
never reach them (``passes/physicalize.py`` rewrites keys away before lowering); they serve a
program handed to the executor without the optimization pipeline.
"""
from __future__ import annotations

import numpy as np

from functrax import core
from functrax.lowering.numpy.rules import numpy_rules
from functrax.primitives import prng_impl
from functrax.primitives.prng import (
    bitcast_convert_type_p, random_bits_p, random_clone_p, random_fold_in_p, random_seed_p,
    random_split_p, random_unwrap_p, random_wrap_p, threefry2x32_p,
)

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


def _on_data(fn):
    """A numpy rule running ``fn`` (a threefry implementation over physical key data)."""
    def rule(*vals, **params):
        with core.set_current_trace(core.EVAL_TRACE):
            out = fn(*[core.Array(np.asarray(v)) for v in vals], **params)
        return np.asarray(out._value)
    return rule


def _data(x, **_):
    return x


numpy_rules[random_seed_p] = _on_data(lambda seeds, impl: prng_impl.threefry_seed(seeds))
numpy_rules[random_bits_p] = _on_data(prng_impl.threefry_random_bits)
numpy_rules[random_split_p] = _on_data(prng_impl.threefry_split)
numpy_rules[random_fold_in_p] = _on_data(prng_impl.threefry_fold_in)
numpy_rules.update(dict.fromkeys((random_wrap_p, random_unwrap_p, random_clone_p), _data))
