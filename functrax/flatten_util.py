"""``functrax.flatten_util``: a pytree of arrays as one flat vector, as ``jax.flatten_util``.

>>> import functrax.numpy as fnp
>>> flat, unravel = ravel_pytree({"w": fnp.ones((2, 2)), "b": fnp.zeros(3)})
>>> flat.shape, unravel(flat)["w"].shape
((7,), (2, 2))
"""
from __future__ import annotations

import numpy as np

from functrax import dtypes, lax
from functrax.core import get_aval
from functrax.numpy import asarray, concatenate, ravel, zeros
from functrax.tree_util import tree_flatten, tree_unflatten

__all__ = ["ravel_pytree"]


def ravel_pytree(pytree):
    """Flatten the leaves of ``pytree`` into one 1-D array (their common promoted dtype) and
    return it with the function that rebuilds the pytree from such a vector.

    Args:
      pytree: a pytree of arrays or scalars.

    Returns:
      ``(flat, unravel)``: ``flat`` of shape ``(total size,)``; ``unravel(flat)`` gives the
      pytree back, each leaf with its own shape and dtype.

    Raises:
      TypeError: ``unravel`` of a vector of another size or dtype kind.
    """
    leaves, treedef = tree_flatten(pytree)
    avals = [get_aval(x) for x in leaves]
    dtype = dtypes.result_type(*leaves) if leaves else dtypes.default_float_dtype()
    sizes = [a.size for a in avals]
    flat = concatenate([ravel(lax.convert_element_type(asarray(x), dtype)) for x in leaves]) \
        if leaves else zeros((0,), dtype)
    total = int(sum(sizes))

    def unravel(vec):
        aval = get_aval(vec)
        if aval.shape != (total,):
            raise TypeError(f"unravel: expected a vector of shape ({total},) (the size of the "
                            f"raveled pytree), got {aval.str_short()}")
        if aval.dtype != dtype and not (np.issubdtype(aval.dtype, np.inexact)
                                        and np.issubdtype(dtype, np.inexact)):
            raise TypeError(f"unravel: the vector has dtype {aval.dtype.name}, the raveled "
                            f"pytree {np.dtype(dtype).name}")
        parts, start = [], 0
        for a, n in zip(avals, sizes):
            piece = lax.slice_in_dim(vec, start, start + n) if n else zeros((0,), a.dtype)
            parts.append(lax.convert_element_type(lax.reshape(piece, a.shape), a.dtype))
            start += n
        return tree_unflatten(treedef, parts)

    return flat, unravel
