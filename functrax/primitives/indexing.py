"""Indexing primitives: dynamic_slice, dynamic_update_slice (gather/scatter: gather_scatter.py)."""
from __future__ import annotations

from functrax.primitives.define import ShapedArray, new_primitive

dynamic_slice_p = new_primitive("dynamic_slice")


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


dynamic_update_slice_p = new_primitive("dynamic_update_slice")


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
