"""numpy rules for gather/scatter (XLA semantics, ``index_vector_dim`` last, as JAX).

Both are computed with one advanced-indexing expression: for every operand dimension ``d``
an integer index array of shape ``batch + window`` (``batch`` = ``indices.shape[:-1]``,
``window`` = the sizes of the non-collapsed/non-inserted, non-batching operand dimensions)
holds ``start_d[batch] + iota_d[window]``. Gather reads ``operand[those]`` and transposes
to the output order; scatter transposes ``updates`` to ``batch + window`` order and writes
with ``np.<ufunc>.at`` (which accumulates duplicate indices).
"""
from __future__ import annotations

import numpy as np

from functrax.lowering.numpy.rules import numpy_rules
from functrax.primitives.gather_scatter import (
    GatherScatterMode,
    gather_p,
    scatter_add_p,
    scatter_max_p,
    scatter_min_p,
    scatter_mul_p,
    default_fill_value,
    scatter_p,
)


def _window_index_arrays(operand_shape, indices, start_map, obd, ibd, window_dims,
                         window_sizes, mode):
    """Per-operand-dimension index arrays of shape ``batch + window``, and an in-bounds mask.

    ``window_dims``: the operand dimensions that have a window axis (in order), with sizes
    ``window_sizes``; every other operand dimension has an implicit window of 1.
    The mask (shape ``batch``, or None when every window is in bounds or clamped) tells
    which windows are wholly in bounds for FILL_OR_DROP.
    """
    rank = len(operand_shape)
    batch = indices.shape[:-1]
    nb, nw = len(batch), len(window_dims)
    full_window = [1] * rank
    for d, s in zip(window_dims, window_sizes):
        full_window[d] = s
    idx = indices.astype(np.int64, copy=False)
    mode = GatherScatterMode.from_any(mode)
    starts = [None] * rank
    mask = None
    for k, d in enumerate(start_map):
        s = idx[..., k]
        hi = operand_shape[d] - full_window[d]
        if mode == GatherScatterMode.FILL_OR_DROP or hi < 0:
            # (hi < 0 only for a scatter into an empty inserted dimension: nowhere to write)
            ok = (s >= 0) & (s <= hi)
            mask = ok if mask is None else mask & ok
        starts[d] = np.clip(s, 0, max(hi, 0))
    for od, idd in zip(obd, ibd):
        shape = [1] * nb
        shape[idd] = batch[idd]
        starts[od] = np.arange(batch[idd], dtype=np.int64).reshape(shape)
    arrays = []
    for d in range(rank):
        s = starts[d]
        s = np.zeros((1,) * nb, np.int64) if s is None else s
        a = s.reshape(s.shape + (1,) * nw)
        if d in window_dims:
            w = window_dims.index(d)
            shape = [1] * (nb + nw)
            shape[nb + w] = full_window[d]
            a = a + np.arange(full_window[d], dtype=np.int64).reshape(shape)
        arrays.append(a)
    bshape = tuple(batch) + tuple(window_sizes)
    arrays = [np.broadcast_to(a, bshape) for a in arrays]
    if mask is not None and mask.all():
        mask = None
    return arrays, mask


def _gather(operand, indices, *, dimension_numbers, slice_sizes, indices_are_sorted=False,
            unique_indices=False, mode=None, fill_value=None):
    dn = dimension_numbers
    rank = operand.ndim
    window_dims = [d for d in range(rank)
                   if d not in dn.collapsed_slice_dims and d not in dn.operand_batching_dims]
    window_sizes = [int(slice_sizes[d]) for d in window_dims]
    # collapsed/batching dims have slice size 1 (a batching dim may say 0: treated as 1)
    arrays, mask = _window_index_arrays(
        operand.shape, indices, dn.start_index_map, dn.operand_batching_dims,
        dn.start_indices_batching_dims, window_dims, window_sizes, mode)
    nb = indices.ndim - 1
    bshape = indices.shape[:-1] + tuple(window_sizes)
    if operand.size == 0 or 0 in bshape:
        res = np.zeros(bshape, operand.dtype)
    else:
        res = operand[tuple(arrays)] if rank else np.broadcast_to(operand, bshape).copy()
    if mask is not None:
        fv = default_fill_value(operand.dtype) if fill_value is None else fill_value
        fv = np.asarray(fv).astype(operand.dtype)
        res = np.where(mask.reshape(mask.shape + (1,) * len(window_dims)), res, fv)
    # output dim i: the next window axis if i is an offset dim, else the next batch axis
    out_rank = nb + len(dn.offset_dims)
    perm, b, w = [], 0, 0
    for i in range(out_rank):
        if i in dn.offset_dims:
            perm.append(nb + w)
            w += 1
        else:
            perm.append(b)
            b += 1
    return np.transpose(res, perm)


def _scatter_rule(kind):
    def rule(operand, indices, updates, *, dimension_numbers, indices_are_sorted=False,
             unique_indices=False, mode=None, update_jaxpr=None, update_consts=()):
        dn = dimension_numbers
        rank = operand.ndim
        uwd = dn.update_window_dims
        window_dims = [d for d in range(rank)
                       if d not in dn.inserted_window_dims and d not in dn.operand_batching_dims]
        window_sizes = [updates.shape[d] for d in uwd]
        arrays, mask = _window_index_arrays(
            operand.shape, indices, dn.scatter_dims_to_operand_dims, dn.operand_batching_dims,
            dn.scatter_indices_batching_dims, window_dims, window_sizes, mode)
        scatter_dims = [d for d in range(updates.ndim) if d not in uwd]
        upd = np.transpose(updates, scatter_dims + list(uwd))  # batch + window order
        out = np.array(operand, copy=True)
        if upd.size == 0:
            return out
        if mask is not None:
            sel = np.broadcast_to(mask.reshape(mask.shape + (1,) * len(uwd)), upd.shape)
            arrays = [a[sel] for a in arrays]
            upd = upd[sel]
        if rank == 0:  # every update hits the single element
            upd = upd.reshape(-1)
            if kind == "set":
                return upd[-1].copy() if upd.size else out
            arrays = [np.zeros(upd.shape, np.intp)]
            out = out.reshape(1)
            _AT[kind](out, tuple(arrays), upd)
            return out.reshape(())
        if kind == "set":
            out[tuple(arrays)] = upd
        else:
            _AT[kind](out, tuple(arrays), upd)
        return out

    return rule


_AT = {"add": np.add.at, "mul": np.multiply.at, "min": np.minimum.at, "max": np.maximum.at}

numpy_rules.update({
    gather_p: _gather,
    scatter_p: _scatter_rule("set"),
    scatter_add_p: _scatter_rule("add"),
    scatter_mul_p: _scatter_rule("mul"),
    scatter_min_p: _scatter_rule("min"),
    scatter_max_p: _scatter_rule("max"),
})
