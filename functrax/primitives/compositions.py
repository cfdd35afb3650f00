"""``jax.lax`` functions that are compositions of other primitives: shape helpers
(``broadcast_shapes``, ``broadcast_to_rank``, ``broadcast_like``, ``collapse``, ``tile``,
``stack``, ``unstack``, ``split``, ``empty``), indexing helpers
(``dynamic_update_index_in_dim``, ``index_take``), ``batch_matmul``, ``sort_key_val``,
``scatter_sub``, ``scatter_apply``, and the values ``dtype``, ``shape_as_value``, ``stage``.

>>> import functrax.numpy as fnp
>>> [a.tolist() for a in split(fnp.arange(5), (2, 3))]
[[0, 1], [2, 3, 4]]
"""
from __future__ import annotations

import builtins
import operator

from functrax import core, dtypes
from functrax.primitives.define import np
from functrax.primitives import contraction as _dot
from functrax.primitives import elementwise as _ew
from functrax.primitives import gather_scatter as _gs
from functrax.primitives import indexing as _ix
from functrax.primitives import reductions as _red
from functrax.primitives import shape as _sh


def _shape(x):
    return core.get_aval(x).shape


def _axis(name, axis, ndim):
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"{name}: axis {axis} is out of bounds for an array of rank {ndim}")
    return axis % ndim


# --- shapes ---


def broadcast_shapes(*shapes):
    """The shape numpy broadcasting gives ``shapes``.

    Raises:
      ValueError: for shapes that do not broadcast (JAX's text).

    >>> broadcast_shapes((2, 1), (3,))
    (2, 3)
    """
    shapes = [tuple(operator.index(d) for d in s) for s in shapes]
    if not shapes:
        return ()
    rank = builtins.max(len(s) for s in shapes)
    padded = [(1,) * (rank - len(s)) + s for s in shapes]
    out = []
    for dims in zip(*padded):
        sizes = {d for d in dims if d != 1}
        if len(sizes) > 1:
            raise ValueError(f"Incompatible shapes for broadcasting: shapes={list(shapes)}")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def broadcast_to_rank(x, rank):
    """``x`` with leading size-1 axes added up to ``rank`` (unchanged if it has them)."""
    nd = len(_shape(x))
    if nd == rank:
        return x
    if nd > rank:
        raise ValueError(f"broadcast_to_rank: an array of rank {nd} is above rank {rank}")
    return _sh.broadcast(x, (1,) * (rank - nd))


def broadcast_like(arr, like_arr):
    """``arr`` broadcast (numpy-style, trailing axes aligned) to the shape of ``like_arr``.

    >>> import functrax.numpy as fnp
    >>> broadcast_like(fnp.array([1, 2, 3]), fnp.zeros((2, 3))).shape
    (2, 3)
    """
    shape = _shape(like_arr)
    src = _shape(arr)
    if broadcast_shapes(src, shape) != tuple(shape):
        raise ValueError(f"broadcast_like: an array of shape {src} does not broadcast to "
                         f"{shape}")
    lead = len(shape) - len(src)
    keep = [i for i, d in enumerate(src) if d == shape[lead + i]]
    x = arr
    if len(keep) != len(src):
        x = _sh.reshape(arr, tuple(src[i] for i in keep))
    return _sh.broadcast_in_dim(x, tuple(shape), tuple(lead + i for i in keep))


def collapse(operand, start_dimension, stop_dimension=None):
    """Merge axes ``start_dimension .. stop_dimension - 1`` into one.

    >>> import functrax.numpy as fnp
    >>> collapse(fnp.zeros((2, 3, 4)), 0, 2).shape
    (6, 4)
    """
    shape = _shape(operand)
    nd = len(shape)
    lo = _axis("collapse", start_dimension, nd) if nd else 0
    hi = nd if stop_dimension is None else (stop_dimension % (nd + 1) if stop_dimension < 0
                                           else stop_dimension)
    if not lo <= hi <= nd:
        raise ValueError(f"collapse: bad dimensions start={start_dimension} "
                         f"stop={stop_dimension} for shape {shape}")
    size = int(np.prod(shape[lo:hi], dtype=np.int64))
    return _sh.reshape(operand, shape[:lo] + (size,) + shape[hi:])


def tile(operand, reps):
    """``operand`` repeated ``reps[i]`` times along each axis (as ``numpy.tile``).

    >>> import functrax.numpy as fnp
    >>> tile(fnp.array([1, 2]), (2,)).tolist()
    [1, 2, 1, 2]
    """
    reps = tuple(operator.index(r) for r in reps)
    shape = _shape(operand)
    if len(reps) < len(shape):
        reps = (1,) * (len(shape) - len(reps)) + reps
    shape = (1,) * (len(reps) - len(shape)) + tuple(shape)
    x = _sh.reshape(operand, shape) if shape != _shape(operand) else operand
    inter = tuple(v for pair in zip(reps, shape) for v in pair)
    x = _sh.broadcast_in_dim(x, inter, tuple(range(1, 2 * len(shape), 2)))
    return _sh.reshape(x, tuple(r * d for r, d in zip(reps, shape)))


def stack(operands, axis=0):
    """Join arrays of one shape along a new axis ``axis``."""
    operands = list(operands)
    if not operands:
        raise ValueError("stack requires a non-empty sequence of arrays")
    nd = len(_shape(operands[0])) + 1
    axis = _axis("stack", axis, nd)
    return _sh.concatenate([_sh.expand_dims(x, (axis,)) for x in operands], axis)


def unstack(x, axis=0):
    """The slices of ``x`` along ``axis``, as a tuple."""
    shape = _shape(x)
    axis = _axis("unstack", axis, len(shape))
    return tuple(_sh.index_in_dim(x, i, axis, keepdims=False) for i in range(shape[axis]))


def split(operand, sizes, axis=0):
    """Consecutive pieces of ``operand`` along ``axis`` with the given ``sizes``.

    Raises:
      ValueError: when the sizes do not add up to the axis size.
    """
    shape = _shape(operand)
    axis = _axis("split", axis, len(shape))
    sizes = [operator.index(s) for s in sizes]
    if any(s < 0 for s in sizes) or builtins.sum(sizes) != shape[axis]:
        raise ValueError(f"Sum of sizes {builtins.sum(sizes)} must be equal to dimension "
                         f"{shape[axis]} of the operand shape {shape}")
    out, start = [], 0
    for s in sizes:
        out.append(_sh.slice_in_dim(operand, start, start + s, 1, axis))
        start += s
    return out


def empty(shape, dtype, *, out_sharding=None):
    """An array of ``shape`` and ``dtype`` (zeros: JAX 0.10 does not leave it
    uninitialized)."""
    if out_sharding is not None:
        raise NotImplementedError("lax.empty: out_sharding is not supported (sharding comes "
                                  "with a later release); pass None")
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    return _sh.full(shape, 0, dtype)


# --- indexing ---


def dynamic_update_index_in_dim(operand, update, index, axis):
    """``operand`` with the slice at ``index`` along ``axis`` replaced by ``update`` (which
    may lack that axis)."""
    nd = len(_shape(operand))
    axis = _axis("dynamic_update_index_in_dim", axis, nd)
    if len(_shape(update)) == nd - 1:
        update = _sh.expand_dims(update, (axis,))
    return _ix.dynamic_update_slice_in_dim(operand, update, index, axis)


def index_take(src, idxs, axes):
    """``src[idxs[0], idxs[1], ...]`` along ``axes`` (one gather): the index arrays have one
    shape ``(n,)``, the result is ``(n,) + the shape of the other axes``."""
    idxs = [_ew.convert_element_type(i, np.int32) for i in idxs]
    axes = tuple(operator.index(a) for a in axes)
    shape = _shape(src)
    if len(idxs) != len(axes):
        raise ValueError(f"index_take: {len(idxs)} index arrays for {len(axes)} axes")
    indices = _sh.concatenate([_sh.expand_dims(i, (1,)) for i in idxs], 1)
    offset = tuple(range(1, len(shape) - len(axes) + 1))
    dnums = _gs.GatherDimensionNumbers(offset_dims=offset, collapsed_slice_dims=axes,
                                       start_index_map=axes)
    slice_sizes = tuple(1 if i in axes else d for i, d in enumerate(shape))
    return _gs.gather(src, indices, dnums, slice_sizes)


# --- contraction, sorting, scatter ---


def batch_matmul(lhs, rhs, precision=None):
    """Matrix products over the leading (batch) axes of two arrays of one rank >= 2."""
    ls, rs = _shape(lhs), _shape(rhs)
    if len(ls) < 2 or len(ls) != len(rs):
        raise ValueError(f"batch_matmul requires arrays of one rank >= 2, got shapes {ls} "
                         f"and {rs}")
    batch = tuple(range(len(ls) - 2))
    return _dot.dot_general(lhs, rhs, (((len(ls) - 1,), (len(rs) - 2,)), (batch, batch)),
                            precision=precision)


def sort_key_val(keys, values, dimension=-1, is_stable=True):
    """``keys`` sorted along ``dimension`` and ``values`` permuted the same way."""
    k, v = _red.sort((keys, values), dimension=dimension, is_stable=is_stable, num_keys=1)
    return k, v


def scatter_sub(operand, scatter_indices, updates, dimension_numbers, *,
                indices_are_sorted=False, unique_indices=False, mode=None):
    """``operand`` with ``updates`` subtracted at the indices (``scatter_add`` of their
    negation)."""
    return _gs.scatter_add(operand, scatter_indices, _ew.neg(updates), dimension_numbers,
                           indices_are_sorted=indices_are_sorted,
                           unique_indices=unique_indices, mode=mode)


def scatter_apply(operand, scatter_indices, func, dimension_numbers, *, update_shape=(),
                  indices_are_sorted=False, unique_indices=False, mode=None):
    """``operand`` with ``func`` applied to the elements at the indices (each indexed
    element once): a gather, ``func``, a scatter of the results."""
    gather_dnums = _gs.GatherDimensionNumbers(
        offset_dims=dimension_numbers.update_window_dims,
        collapsed_slice_dims=dimension_numbers.inserted_window_dims,
        start_index_map=dimension_numbers.scatter_dims_to_operand_dims,
        operand_batching_dims=getattr(dimension_numbers, "operand_batching_dims", ()),
        start_indices_batching_dims=getattr(dimension_numbers,
                                            "scatter_indices_batching_dims", ()))
    shape = _shape(operand)
    window = iter(update_shape) if update_shape else None
    slice_sizes = []
    for i in range(len(shape)):
        if i in dimension_numbers.inserted_window_dims or i in gather_dnums.operand_batching_dims:
            slice_sizes.append(1)
        else:
            slice_sizes.append(next(window) if window is not None else 1)
    picked = _gs.gather(operand, scatter_indices, gather_dnums, tuple(slice_sizes),
                        indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                        mode=mode)
    return _gs.scatter(operand, scatter_indices, func(picked), dimension_numbers,
                       indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                       mode=mode)


# --- values ---


def dtype(x, *, canonicalize=False):
    """The dtype of ``x`` (canonicalized for the x64 flag if ``canonicalize``)."""
    dt = core.get_aval(x).dtype if not isinstance(x, (np.dtype, type, str)) else np.dtype(x)
    return dtypes.canonicalize_dtype(dt) if canonicalize else np.dtype(dt)


def shape_as_value(shape):
    """A shape as an int32 array of its sizes."""
    return core.as_array(np.asarray([operator.index(d) for d in shape], np.int32))


def stage(x, /):
    """``x`` lifted into the active trace (an Array outside any: the identity otherwise)."""
    if isinstance(x, core.Tracer):
        return x
    return core.as_array(x)


__all__ = [
    "broadcast_shapes", "broadcast_to_rank", "broadcast_like", "collapse", "tile", "stack",
    "unstack", "split", "empty", "dynamic_update_index_in_dim", "index_take", "batch_matmul",
    "sort_key_val", "scatter_sub", "scatter_apply", "dtype", "shape_as_value", "stage",
]
