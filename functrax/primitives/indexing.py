"""Indexing primitives: dynamic_slice, dynamic_update_slice (gather/scatter: gather_scatter.py)."""
from __future__ import annotations

from functrax.primitives.define import Family, ShapedArray, new_primitive
from functrax.core import Array
from functrax import core
from functrax import dtypes
import numpy as np
import operator
from functrax.primitives.shape import squeeze

dynamic_slice_p = new_primitive("dynamic_slice", family=Family.INDEXING)


def _check_indices(name, operand, indices):
    if len(indices) != operand.ndim:
        raise TypeError(f"{name}: needs one start index per dimension of operand shape "
                        f"{operand.shape}, got {len(indices)}")
    for i in indices:
        if i.shape != () or i.dtype.kind not in "iu":
            raise TypeError(f"{name}: start indices must be integer scalars, got "
                            f"{i.str_short()}")


@dynamic_slice_p.def_abstract_eval
def _dynamic_slice_abstract(operand, *indices, slice_sizes):
    _check_indices("dynamic_slice", operand, indices)
    if len(slice_sizes) != operand.ndim or any(
            not 0 <= s <= d for s, d in zip(slice_sizes, operand.shape)):
        raise TypeError(f"dynamic_slice: slice_sizes {tuple(slice_sizes)} must have one entry "
                        f"per dimension and fit in operand shape {operand.shape}")
    return ShapedArray(slice_sizes, operand.dtype, operand.weak_type)


dynamic_update_slice_p = new_primitive("dynamic_update_slice", family=Family.INDEXING)


@dynamic_update_slice_p.def_abstract_eval
def _dynamic_update_slice_abstract(operand, update, *indices):
    _check_indices("dynamic_update_slice", operand, indices)
    if update.ndim != operand.ndim or any(u > d for u, d in zip(update.shape, operand.shape)):
        raise TypeError(f"dynamic_update_slice: update shape {update.shape} must have the "
                        f"operand's rank and fit in operand shape {operand.shape}")
    if update.dtype != operand.dtype:
        raise TypeError(f"dynamic_update_slice: update dtype {update.dtype.name} must equal "
                        f"operand dtype {operand.dtype.name}")
    return operand


# --- wrappers that bind the primitives (re-exported by functrax.lax) ---

def _index(i):
    if isinstance(i, (core.Tracer, Array)):
        if i.dtype.kind not in "iu":
            raise TypeError(f"index arguments must be integers, got {i.dtype.name}")
        return i
    return np.asarray(operator.index(i), dtypes.canonicalize_dtype(np.int32))[()]


def dynamic_slice(operand, start_indices, slice_sizes):
    """A slice of ``slice_sizes`` starting at (possibly traced) ``start_indices``, clamped."""
    return dynamic_slice_p.bind(operand, *[_index(i) for i in start_indices],
                                slice_sizes=tuple(int(s) for s in slice_sizes))


def dynamic_update_slice(operand, update, start_indices):
    return dynamic_update_slice_p.bind(operand, update, *[_index(i) for i in start_indices])


def dynamic_slice_in_dim(operand, start_index, slice_size: int, axis: int = 0):
    shape = core.get_aval(operand).shape
    starts = [0] * len(shape)
    starts[axis] = start_index
    sizes = list(shape)
    sizes[axis] = slice_size
    return dynamic_slice(operand, starts, sizes)


def dynamic_index_in_dim(operand, index, axis: int = 0, keepdims: bool = True):
    out = dynamic_slice_in_dim(operand, index, 1, axis)
    return out if keepdims else squeeze(out, (axis,))


def dynamic_update_slice_in_dim(operand, update, start_index, axis: int):
    starts = [0] * core.get_aval(operand).ndim
    starts[axis] = start_index
    return dynamic_update_slice(operand, update, starts)

__all__ = [
    "dynamic_slice_p", "dynamic_update_slice_p", "dynamic_slice", "dynamic_update_slice",
    "dynamic_slice_in_dim", "dynamic_index_in_dim", "dynamic_update_slice_in_dim",
]
