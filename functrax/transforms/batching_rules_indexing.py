"""vmap rules for gather, the scatter family, dynamic_slice and dynamic_update_slice.

As JAX's ``_gather_batching_rule`` / ``_scatter_batching_rule``: the batch becomes part of
the dimension numbers, never a Python loop.

- only the operand batched: the batch axis is one more slice (window) dimension;
- only the indices batched: the batch axis is one more batch dimension of the indices;
- both batched: the two batch axes are paired by ``operand_batching_dims`` /
  ``*_indices_batching_dims``.

``dynamic_slice`` / ``dynamic_update_slice`` with unbatched start indices stay what they are
(start 0 along the batch axis); with batched start indices they become one gather / scatter.
"""
from __future__ import annotations

import numpy as np

from functrax import core, dtypes
from functrax import primitives as P
from functrax.primitives.gather_scatter import (
    GatherDimensionNumbers, GatherScatterMode, ScatterDimensionNumbers,
)
from functrax.transforms.batching import bdim_at_front, matchaxis, moveaxis, vmap_rules


def _up(dims):
    return tuple(d + 1 for d in dims)


# --- gather ---


def _gather_vmap(axis, vals, dims, *, dimension_numbers, slice_sizes, indices_are_sorted=False,
                 unique_indices=False, mode=None, fill_value=None):
    (operand, indices), (o_bd, i_bd) = vals, dims
    dn = dimension_numbers
    params = dict(mode=mode, fill_value=fill_value)
    if i_bd is None:  # the batch is one more window dimension, output axis 0
        operand = moveaxis(operand, o_bd, 0)
        new = GatherDimensionNumbers(
            offset_dims=(0,) + _up(dn.offset_dims),
            collapsed_slice_dims=_up(dn.collapsed_slice_dims),
            start_index_map=_up(dn.start_index_map),
            operand_batching_dims=_up(dn.operand_batching_dims),
            start_indices_batching_dims=dn.start_indices_batching_dims)
        out = P.gather_p.bind(operand, indices, dimension_numbers=new,
                              slice_sizes=(axis.size,) + tuple(slice_sizes),
                              indices_are_sorted=indices_are_sorted,
                              unique_indices=unique_indices, **params)
        return out, 0
    indices = moveaxis(indices, i_bd, 0)
    if o_bd is None:  # the batch is one more batch dimension of the indices
        new = GatherDimensionNumbers(
            offset_dims=_up(dn.offset_dims),
            collapsed_slice_dims=dn.collapsed_slice_dims,
            start_index_map=dn.start_index_map,
            operand_batching_dims=dn.operand_batching_dims,
            start_indices_batching_dims=_up(dn.start_indices_batching_dims))
        # slices gathered for different examples may repeat or come in any order
        out = P.gather_p.bind(operand, indices, dimension_numbers=new,
                              slice_sizes=tuple(slice_sizes), indices_are_sorted=False,
                              unique_indices=False, **params)
        return out, 0
    operand = moveaxis(operand, o_bd, 0)
    new = GatherDimensionNumbers(
        offset_dims=_up(dn.offset_dims),
        collapsed_slice_dims=_up(dn.collapsed_slice_dims),
        start_index_map=_up(dn.start_index_map),
        operand_batching_dims=(0,) + _up(dn.operand_batching_dims),
        start_indices_batching_dims=(0,) + _up(dn.start_indices_batching_dims))
    # a batching dimension has slice size 1 (0 when the batch is empty: nothing to gather)
    out = P.gather_p.bind(operand, indices, dimension_numbers=new,
                          slice_sizes=(min(axis.size, 1),) + tuple(slice_sizes),
                          indices_are_sorted=indices_are_sorted,
                          unique_indices=unique_indices, **params)
    return out, 0


vmap_rules[P.gather_p] = _gather_vmap


# --- scatter, scatter-add, scatter-mul, scatter-min, scatter-max ---


def _scatter_vmap(prim):
    def rule(axis, vals, dims, *, dimension_numbers, **params):
        (operand, indices, updates), (o_bd, i_bd, u_bd) = vals, dims
        dn = dimension_numbers
        # the output is batched: the operand needs its batch axis (at the front), and so do
        # the updates (their windows / scatter dimensions must match)
        operand = bdim_at_front(operand, o_bd, axis.size)
        updates = bdim_at_front(updates, u_bd, axis.size)
        if i_bd is None:  # the batch is one more window dimension
            new = ScatterDimensionNumbers(
                update_window_dims=(0,) + _up(dn.update_window_dims),
                inserted_window_dims=_up(dn.inserted_window_dims),
                scatter_dims_to_operand_dims=_up(dn.scatter_dims_to_operand_dims),
                operand_batching_dims=_up(dn.operand_batching_dims),
                scatter_indices_batching_dims=dn.scatter_indices_batching_dims)
        else:  # paired batch axes
            indices = moveaxis(indices, i_bd, 0)
            new = ScatterDimensionNumbers(
                update_window_dims=_up(dn.update_window_dims),
                inserted_window_dims=_up(dn.inserted_window_dims),
                scatter_dims_to_operand_dims=_up(dn.scatter_dims_to_operand_dims),
                operand_batching_dims=(0,) + _up(dn.operand_batching_dims),
                scatter_indices_batching_dims=(0,) + _up(dn.scatter_indices_batching_dims))
        return prim.bind(operand, indices, updates, dimension_numbers=new, **params), 0
    rule.__name__ = f"_{prim.name.replace('-', '_')}_vmap"
    return rule


for _p in (P.scatter_p, P.scatter_add_p, P.scatter_mul_p, P.scatter_min_p, P.scatter_max_p):
    vmap_rules[_p] = _scatter_vmap(_p)


# --- dynamic_slice / dynamic_update_slice ---


def _zero_index():
    return np.zeros((), dtypes.canonicalize_dtype(np.int32))[()]


def _index_dtype(idx_avals):
    """One integer dtype that holds every start index (int32 unless one is 64-bit)."""
    wide = any(a.dtype.itemsize == 8 or a.dtype == np.uint32 for a in idx_avals)
    return dtypes.canonicalize_dtype(np.int64 if wide else np.int32)


def _as_index_dtype(i, dtype):
    aval = core.get_aval(i)
    if aval.dtype == dtype:
        return i
    top = np.iinfo(dtype).max
    if aval.dtype.kind == "u" and np.iinfo(aval.dtype).max > top:
        # large unsigned starts clamp to the end of the dimension: saturate, don't wrap
        i = P.min(i, P.full((), top, aval.dtype))
    return P.convert_element_type(i, dtype)


def _batched_index_vector(axis, idx, idx_dims):
    """The start indices as one ``(batch, n)`` integer array (batch axis first)."""
    dtype = _index_dtype([core.get_aval(i) for i in idx])
    cols = []
    for i, d in zip(idx, idx_dims):
        i = _as_index_dtype(i, dtype)
        i = P.broadcast_in_dim(i, (axis.size,), ()) if d is None else i  # rank 1: d == 0
        cols.append(P.reshape(i, (axis.size, 1)))
    return P.concatenate(cols, 1)


def _dynamic_slice_vmap(axis, vals, dims, *, slice_sizes):
    operand, idx = vals[0], vals[1:]
    o_bd, idx_dims = dims[0], dims[1:]
    if all(d is None for d in idx_dims):  # the whole batch axis, from 0
        starts, sizes = list(idx), list(slice_sizes)
        starts.insert(o_bd, _zero_index())
        sizes.insert(o_bd, axis.size)
        return P.dynamic_slice_p.bind(operand, *starts, slice_sizes=tuple(sizes)), o_bd
    n = len(idx)
    index = _batched_index_vector(axis, idx, idx_dims)
    dn = GatherDimensionNumbers(offset_dims=tuple(range(n)), collapsed_slice_dims=(),
                                start_index_map=tuple(range(n)))
    # dynamic_slice clamps its starts so that the slice fits: gather's CLIP mode
    return _gather_vmap(axis, [operand, index], [o_bd, 0], dimension_numbers=dn,
                        slice_sizes=tuple(slice_sizes), indices_are_sorted=True,
                        unique_indices=True, mode=GatherScatterMode.CLIP, fill_value=None)


def _dynamic_update_slice_vmap(axis, vals, dims):
    operand, update, idx = vals[0], vals[1], vals[2:]
    o_bd, u_bd, idx_dims = dims[0], dims[1], dims[2:]
    if all(d is None for d in idx_dims):
        # operand and update need the batch axis at one place (an update slice spans it)
        bd = o_bd if o_bd is not None else u_bd
        operand = matchaxis(axis.size, o_bd, bd, operand)
        update = matchaxis(axis.size, u_bd, bd, update)
        starts = list(idx)
        starts.insert(bd, _zero_index())
        return P.dynamic_update_slice_p.bind(operand, update, *starts), bd
    n = len(idx)
    index = _batched_index_vector(axis, idx, idx_dims)
    dn = ScatterDimensionNumbers(update_window_dims=tuple(range(n)), inserted_window_dims=(),
                                 scatter_dims_to_operand_dims=tuple(range(n)))
    scatter = vmap_rules[P.scatter_p]
    return scatter(axis, [operand, index, update], [o_bd, 0, u_bd], dimension_numbers=dn,
                   indices_are_sorted=True, unique_indices=True, mode=GatherScatterMode.CLIP,
                   update_jaxpr=None, update_consts=())


vmap_rules[P.dynamic_slice_p] = _dynamic_slice_vmap
vmap_rules[P.dynamic_update_slice_p] = _dynamic_update_slice_vmap
