"""Shape primitives: broadcast, reshape, transpose, squeeze, expand, rev, concat, pad, slice,
iota."""
from __future__ import annotations

import math

from functrax.primitives.define import (
    Family,
    ShapedArray, check_axes, check_dtype, dtypes, new_primitive, np,
)
from functrax.core import Array
import builtins
from functrax import core
from functrax.primitives.elementwise import as_operand, convert_element_type

broadcast_in_dim_p = new_primitive("broadcast_in_dim", family=Family.SHAPE)


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


reshape_p = new_primitive("reshape", family=Family.SHAPE)


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


transpose_p = new_primitive("transpose", family=Family.SHAPE)


@transpose_p.def_abstract_eval
def _transpose_abstract(x, *, permutation):
    perm = tuple(permutation)
    if sorted(perm) != list(range(x.ndim)):
        raise TypeError(f"transpose permutation isn't a permutation of operand dimensions, "
                        f"got permutation {perm} for operand shape {x.shape}.")
    return ShapedArray(tuple(x.shape[i] for i in perm), x.dtype, x.weak_type)


squeeze_p = new_primitive("squeeze", family=Family.SHAPE)


@squeeze_p.def_abstract_eval
def _squeeze_abstract(x, *, dimensions):
    dims = check_axes("squeeze", dimensions, x.ndim, "dimensions")
    for d in dims:
        if x.shape[d] != 1:
            raise ValueError(f"squeeze: cannot squeeze dimension {d} of size {x.shape[d]} "
                             f"(operand shape {x.shape}); only size-1 dimensions can be removed")
    return ShapedArray(tuple(s for i, s in enumerate(x.shape) if i not in dims), x.dtype,
                       x.weak_type)


expand_dims_p = new_primitive("expand_dims", family=Family.SHAPE)


@expand_dims_p.def_abstract_eval
def _expand_dims_abstract(x, *, dimensions):
    ndim = x.ndim + len(dimensions)
    dims = check_axes("expand_dims", dimensions, ndim, "dimensions")
    it = iter(x.shape)
    shape = tuple(1 if i in dims else next(it) for i in range(ndim))
    return ShapedArray(shape, x.dtype, x.weak_type)


rev_p = new_primitive("rev", family=Family.SHAPE)


@rev_p.def_abstract_eval
def _rev_abstract(x, *, dimensions):
    check_axes("rev", dimensions, x.ndim, "dimensions")
    return x


concatenate_p = new_primitive("concatenate", family=Family.SHAPE)


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


pad_p = new_primitive("pad", family=Family.SHAPE)


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


slice_p = new_primitive("slice", family=Family.SHAPE)


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


iota_p = new_primitive("iota", family=Family.SHAPE)


@iota_p.def_abstract_eval
def _iota_abstract(*, dtype, shape, dimension, sharding=None):
    check_dtype("iota", dtype, ("integer", "floating"))
    dtypes.canonicalize_dtype(dtype)
    if not 0 <= dimension < len(shape):
        raise ValueError(f"iota: dimension {dimension} out of range for shape {shape}")
    return ShapedArray(shape, dtype, False)




# --- wrappers that bind the primitives (re-exported by functrax.lax) ---

def broadcast_in_dim(operand, shape, broadcast_dimensions):
    shape = tuple(int(d) for d in shape)
    aval = core.get_aval(operand)
    if aval.shape == shape and tuple(broadcast_dimensions) == tuple(range(len(shape))) and \
            isinstance(operand, (core.Tracer, Array)):
        return operand
    return broadcast_in_dim_p.bind(operand, shape=shape,
                                   broadcast_dimensions=tuple(broadcast_dimensions))


def broadcast(operand, sizes):
    """Add leading dimensions of the given ``sizes``."""
    nd = core.get_aval(operand).ndim
    shape = tuple(sizes) + core.get_aval(operand).shape
    return broadcast_in_dim(operand, shape, tuple(range(len(sizes), len(sizes) + nd)))


def reshape(operand, new_sizes, dimensions=None):
    new_sizes = tuple(int(d) for d in new_sizes)
    aval = core.get_aval(operand)
    if aval.shape == new_sizes and dimensions is None and isinstance(
            operand, (core.Tracer, Array)):
        return operand
    return reshape_p.bind(operand, new_sizes=new_sizes,
                          dimensions=None if dimensions is None else tuple(dimensions))


def transpose(operand, permutation):
    permutation = tuple(int(p) for p in permutation)
    if permutation == tuple(range(len(permutation))) and isinstance(
            operand, (core.Tracer, Array)):
        return operand
    return transpose_p.bind(operand, permutation=permutation)


def squeeze(array, dimensions):
    nd = core.get_aval(array).ndim
    dims = tuple(sorted(int(d) % builtins.max(nd, 1) for d in dimensions))
    return squeeze_p.bind(array, dimensions=dims) if dims else array


def expand_dims(array, dimensions):
    """``array`` with size-1 axes inserted at ``dimensions``: a ``broadcast_in_dim``, as JAX's
    ``lax.expand_dims`` stages it (``passes/explicit_broadcast`` turns it back into
    ``expand_dims_p``, the reshape-like form the passes and backends handle, at lowering)."""
    aval = core.get_aval(array)
    nd = aval.ndim + len(dimensions)
    dims = tuple(sorted(int(d) % nd for d in dimensions))
    if not dims:
        return array
    kept = tuple(i for i in range(nd) if i not in dims)
    shape = [1] * nd
    for i, d in enumerate(kept):
        shape[d] = aval.shape[i]
    return broadcast_in_dim(array, tuple(shape), kept)


def rev(operand, dimensions):
    return rev_p.bind(operand, dimensions=tuple(int(d) for d in dimensions))


def concatenate(operands, dimension: int):
    if len(operands) == 1:
        return operands[0]
    return concatenate_p.bind(*operands, dimension=int(dimension))


def pad(operand, padding_value, padding_config):
    cfg = tuple((int(lo), int(hi), int(it)) for lo, hi, it in padding_config)
    return pad_p.bind(operand, as_operand(padding_value, operand), padding_config=cfg)


def slice(operand, start_indices, limit_indices, strides=None):
    return slice_p.bind(operand, start_indices=tuple(int(i) for i in start_indices),
                        limit_indices=tuple(int(i) for i in limit_indices),
                        strides=None if strides is None else tuple(int(s) for s in strides))


def slice_in_dim(operand, start_index, limit_index, stride=1, axis=0):
    shape = core.get_aval(operand).shape
    starts, limits, strides = [0] * len(shape), list(shape), [1] * len(shape)
    starts[axis], limits[axis], strides[axis] = start_index, limit_index, stride
    return slice(operand, starts, limits, strides)


def index_in_dim(operand, index: int, axis: int = 0, keepdims: bool = True):
    out = slice_in_dim(operand, index, index + 1, 1, axis)
    return out if keepdims else squeeze(out, (axis,))


def iota(dtype, size: int):
    return iota_p.bind(dtype=dtypes.canonicalize_dtype(dtype), shape=(int(size),), dimension=0)


def broadcasted_iota(dtype, shape, dimension: int):
    return iota_p.bind(dtype=dtypes.canonicalize_dtype(dtype),
                       shape=tuple(int(s) for s in shape), dimension=int(dimension))


def full(shape, fill_value, dtype=None):
    """An array of ``shape`` filled with ``fill_value`` (a broadcast of a scalar)."""
    shape = tuple(int(s) for s in shape)
    if not isinstance(fill_value, core.Tracer):
        aval = core.get_aval(fill_value)
        dt = dtypes.canonicalize_dtype(dtype) if dtype is not None else aval.dtype
        fill_value = Array(np.asarray(fill_value, dt), weak_type=dtype is None and aval.weak_type)
        if not shape:
            return fill_value
    elif dtype is not None:
        fill_value = convert_element_type(fill_value, dtype)
    if core.get_aval(fill_value).shape != ():
        raise TypeError(f"full: fill_value must be a scalar, got shape "
                        f"{core.get_aval(fill_value).shape}")
    return broadcast_in_dim(fill_value, shape, ())


def full_like(x, fill_value, dtype=None, shape=None):
    aval = core.get_aval(x)
    return full(aval.shape if shape is None else shape, fill_value, dtype or aval.dtype)


def zeros_like_array(x):
    return full_like(x, 0)

__all__ = [
    "broadcast_in_dim_p", "reshape_p", "transpose_p", "squeeze_p", "expand_dims_p", "rev_p",
    "concatenate_p", "pad_p", "slice_p", "iota_p", "broadcast_in_dim", "broadcast", "reshape",
    "transpose", "squeeze", "expand_dims", "rev", "concatenate", "pad", "slice",
    "slice_in_dim", "index_in_dim", "iota", "broadcasted_iota", "full", "full_like",
    "zeros_like_array",
]
