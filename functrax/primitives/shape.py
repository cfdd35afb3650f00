"""Shape primitives: broadcast, reshape, transpose, squeeze, expand, rev, concat, pad, slice,
iota."""
from __future__ import annotations

import math

from functrax.primitives.define import (
    ANY, ShapedArray, check_axes, check_dtype, dtypes, new_primitive, np,
)

broadcast_in_dim_p = new_primitive("broadcast_in_dim")


@broadcast_in_dim_p.def_abstract_eval
def _broadcast_in_dim_abstract(x, *, shape, broadcast_dimensions, sharding=None):
    shape, bdims = tuple(shape), tuple(broadcast_dimensions)
    if len(bdims) != x.ndim:
        raise TypeError(f"broadcast_in_dim: broadcast_dimensions {bdims} must have one entry "
                        f"per operand dimension (operand shape {x.shape})")
    if any(not 0 <= d < len(shape) for d in bdims) or list(bdims) != sorted(set(bdims)):
        raise TypeError(f"broadcast_in_dim: broadcast_dimensions {bdims} must be strictly "
                        f"increasing and within the output rank {len(shape)}")
    for i, d in enumerate(bdims):
        if x.shape[i] not in (1, shape[d]):
            raise TypeError(f"broadcast_in_dim: operand dimension {i} of size {x.shape[i]} "
                            f"cannot broadcast to output dimension {d} of size {shape[d]} "
                            f"(operand shape {x.shape}, target shape {shape})")
    return ShapedArray(shape, x.dtype, x.weak_type)


reshape_p = new_primitive("reshape")


@reshape_p.def_abstract_eval
def _reshape_abstract(x, *, new_sizes, dimensions=None, sharding=None):
    new_sizes = tuple(new_sizes)
    if any(d < 0 for d in new_sizes) or math.prod(new_sizes) != math.prod(x.shape):
        raise TypeError(f"reshape: cannot reshape an array of shape {x.shape} (size "
                        f"{math.prod(x.shape)}) into shape {new_sizes}")
    if dimensions is not None:
        check_axes("reshape", dimensions, x.ndim, "dimensions")
        if len(dimensions) != x.ndim:
            raise TypeError(f"reshape: dimensions {dimensions} must be a permutation of "
                            f"range({x.ndim})")
    return ShapedArray(new_sizes, x.dtype, x.weak_type)


transpose_p = new_primitive("transpose")


@transpose_p.def_abstract_eval
def _transpose_abstract(x, *, permutation):
    perm = tuple(permutation)
    if sorted(perm) != list(range(x.ndim)):
        raise TypeError(f"transpose permutation isn't a permutation of operand dimensions, "
                        f"got permutation {perm} for operand shape {x.shape}.")
    return ShapedArray(tuple(x.shape[i] for i in perm), x.dtype, x.weak_type)


squeeze_p = new_primitive("squeeze")


@squeeze_p.def_abstract_eval
def _squeeze_abstract(x, *, dimensions):
    dims = check_axes("squeeze", dimensions, x.ndim, "dimensions")
    for d in dims:
        if x.shape[d] != 1:
            raise ValueError(f"squeeze: cannot squeeze dimension {d} of size {x.shape[d]} "
                             f"(operand shape {x.shape}); only size-1 dimensions can be removed")
    return ShapedArray(tuple(s for i, s in enumerate(x.shape) if i not in dims), x.dtype,
                       x.weak_type)


expand_dims_p = new_primitive("expand_dims")


@expand_dims_p.def_abstract_eval
def _expand_dims_abstract(x, *, dimensions):
    ndim = x.ndim + len(dimensions)
    dims = check_axes("expand_dims", dimensions, ndim, "dimensions")
    it = iter(x.shape)
    shape = tuple(1 if i in dims else next(it) for i in range(ndim))
    return ShapedArray(shape, x.dtype, x.weak_type)


rev_p = new_primitive("rev")


@rev_p.def_abstract_eval
def _rev_abstract(x, *, dimensions):
    check_axes("rev", dimensions, x.ndim, "dimensions")
    return x


concatenate_p = new_primitive("concatenate")


@concatenate_p.def_abstract_eval
def _concatenate_abstract(*xs, dimension):
    if not xs:
        raise TypeError("concatenate needs at least one operand")
    dts = {x.dtype for x in xs}
    if len(dts) > 1:
        raise TypeError(f"concatenate requires operands of the same dtype, got "
                        f"{[x.dtype.name for x in xs]}")
    nd = xs[0].ndim
    check_axes("concatenate", (dimension,), nd, "dimension")
    for x in xs:
        if x.ndim != nd or any(a != b for i, (a, b) in enumerate(zip(x.shape, xs[0].shape))
                               if i != dimension):
            raise TypeError(f"concatenate: operand shapes {[x.shape for x in xs]} must agree "
                            f"except in dimension {dimension}")
    shape = list(xs[0].shape)
    shape[dimension] = sum(x.shape[dimension] for x in xs)
    return ShapedArray(shape, xs[0].dtype, all(x.weak_type for x in xs))


pad_p = new_primitive("pad")


@pad_p.def_abstract_eval
def _pad_abstract(x, padding_value, *, padding_config):
    if padding_value.shape != () or padding_value.dtype != x.dtype:
        raise TypeError(f"pad: padding_value must be a scalar of the operand dtype "
                        f"{x.dtype.name}, got {padding_value.str_short()}")
    if len(padding_config) != x.ndim:
        raise TypeError(f"pad: padding_config needs one (low, high, interior) per dimension of "
                        f"shape {x.shape}, got {padding_config}")
    shape = []
    for d, (lo, hi, interior) in zip(x.shape, padding_config):
        if interior < 0:
            raise ValueError(f"pad: interior padding must be >= 0, got {padding_config}")
        n = lo + hi + d + max(d - 1, 0) * interior
        if n < 0:
            raise ValueError(f"pad: padding_config {padding_config} gives a negative size for "
                             f"shape {x.shape}")
        shape.append(n)
    return ShapedArray(shape, x.dtype, x.weak_type)


slice_p = new_primitive("slice")


@slice_p.def_abstract_eval
def _slice_abstract(x, *, start_indices, limit_indices, strides=None):
    strides = strides or (1,) * x.ndim
    if not len(start_indices) == len(limit_indices) == len(strides) == x.ndim:
        raise TypeError(f"slice: start_indices {start_indices}, limit_indices {limit_indices} "
                        f"and strides {strides} need one entry per dimension of {x.shape}")
    shape = []
    for d, s, lim, st in zip(x.shape, start_indices, limit_indices, strides):
        if not 0 <= s <= lim <= d or st < 1:
            raise TypeError(f"slice: start_indices {start_indices} / limit_indices "
                            f"{limit_indices} / strides {strides} out of bounds for operand "
                            f"shape {x.shape}")
        shape.append(0 if lim == s else (lim - s + st - 1) // st)
    return ShapedArray(shape, x.dtype, x.weak_type)


iota_p = new_primitive("iota")


@iota_p.def_abstract_eval
def _iota_abstract(*, dtype, shape, dimension, sharding=None):
    check_dtype("iota", dtype, ("integer", "floating"))
    dtypes.canonicalize_dtype(dtype)
    if not 0 <= dimension < len(shape):
        raise ValueError(f"iota: dimension {dimension} out of range for shape {shape}")
    return ShapedArray(shape, dtype, False)


__all__ = [n for n in dir() if n.endswith("_p")] + ["ANY", "np"]
