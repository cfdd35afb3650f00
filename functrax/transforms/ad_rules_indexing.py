"""JVP and transpose rules for gather/scatter, sort and the cumulative reductions.

As in JAX:

* ``gather`` is linear in its operand; its transpose is a ``scatter-add`` into zeros.
* ``scatter-add`` is linear in operand and updates; its transpose is ``ct`` for the operand
  and ``gather(ct)`` for the updates.
* ``scatter`` (set) is linear in (operand, updates). With ``unique_indices=True`` its JVP is
  the scatter of the tangents (transposable: zeros scattered into ``ct`` for the operand,
  ``gather(ct)`` for the updates); otherwise which of several colliding updates wins is
  unspecified, so the JVP tags each update with an id, scatters the ids, and masks operand
  and updates by whether they won before a ``scatter-add`` (JAX's ``_scatter_jvp``).
* ``scatter-mul`` differentiates in its updates only with unique indices (as JAX);
  ``scatter-min``/``scatter-max`` average the tangents of tied winners.
* ``sort`` sorts an iota alongside the operands and gathers the tangents by it.
* ``cumprod``/``cummax``/``cummin``/``cumlogsumexp`` differentiate through a parallel
  prefix scan (JAX's ``associative_scan``), which is differentiable to any order.
"""
from __future__ import annotations

import numpy as np

from functrax import core
from functrax import primitives as P
from functrax.primitives.gather_scatter import (
    GatherDimensionNumbers, GatherScatterMode, ScatterDimensionNumbers,
)
from functrax.transforms.jvp import (
    Zero, defjvp, instantiate, jvp_rules, tangent_aval,
)
from functrax.transforms.transpose import deflinear_transpose, is_undefined


def _aval(x):
    return x.aval if is_undefined(x) else core.get_aval(x)


def _zero_out(out):
    return Zero(tangent_aval(core.get_aval(out)))


# --- gather ---


def _gather_jvp(primals, tangents, *, dimension_numbers, slice_sizes, indices_are_sorted,
                unique_indices, mode, fill_value):
    operand, indices = primals
    out = P.gather_p.bind(operand, indices, dimension_numbers=dimension_numbers,
                          slice_sizes=slice_sizes, indices_are_sorted=indices_are_sorted,
                          unique_indices=unique_indices, mode=mode, fill_value=fill_value)
    g = tangents[0]
    if type(g) is Zero:
        return out, _zero_out(out)
    return out, P.gather(g, indices, dimension_numbers, slice_sizes,
                         unique_indices=unique_indices,
                         indices_are_sorted=indices_are_sorted, mode=mode, fill_value=0)


def _gather_transpose(ct, operand, indices, *, dimension_numbers, slice_sizes,
                      indices_are_sorted, unique_indices, mode, fill_value):
    if is_undefined(indices):
        raise ValueError("gather is not linear in its indices")
    aval = operand.aval
    dn = dimension_numbers
    scatter_dnums = ScatterDimensionNumbers(
        update_window_dims=dn.offset_dims, inserted_window_dims=dn.collapsed_slice_dims,
        scatter_dims_to_operand_dims=dn.start_index_map,
        operand_batching_dims=dn.operand_batching_dims,
        scatter_indices_batching_dims=dn.start_indices_batching_dims)
    zeros = P.full(aval.shape, 0, aval.dtype)
    return [P.scatter_add(zeros, indices, ct, scatter_dnums,
                          indices_are_sorted=indices_are_sorted,
                          unique_indices=unique_indices, mode=mode), None]


jvp_rules[P.gather_p] = _gather_jvp
deflinear_transpose(P.gather_p, _gather_transpose)

# --- scatter helpers ---


def _inverse_gather(dn, operand_shape, updates_shape):
    """The gather that reads back what a scatter with ``dn`` wrote (``x.at[i].get()``)."""
    gather_dnums = GatherDimensionNumbers(
        offset_dims=dn.update_window_dims, collapsed_slice_dims=dn.inserted_window_dims,
        start_index_map=dn.scatter_dims_to_operand_dims,
        operand_batching_dims=dn.operand_batching_dims,
        start_indices_batching_dims=dn.scatter_indices_batching_dims)
    slice_sizes, pos = [], 0
    for i in range(len(operand_shape)):
        if i in dn.inserted_window_dims or i in dn.operand_batching_dims:
            slice_sizes.append(1)
        else:
            slice_sizes.append(updates_shape[dn.update_window_dims[pos]])
            pos += 1
    return gather_dnums, tuple(slice_sizes)


def _scatter_params(params):
    """The keyword arguments of ``lax.scatter*`` from a scatter equation's params."""
    return dict(indices_are_sorted=params["indices_are_sorted"],
                unique_indices=params["unique_indices"], mode=params["mode"])


def _gather_back(x, indices, dn, updates_shape, mode, fill_value=None):
    gdn, sizes = _inverse_gather(dn, _aval(x).shape, updates_shape)
    return P.gather(x, indices, gdn, sizes, mode=mode, fill_value=fill_value)


def _zeros(x):
    return P.full_like(x, 0)


def _ones(x):
    return P.full_like(x, 1)


# --- scatter-add ---


def _scatter_add_jvp(primals, tangents, **params):
    operand, indices, updates = primals
    g_op, _, g_upd = tangents
    out = P.scatter_add_p.bind(operand, indices, updates, **params)
    if type(g_op) is Zero and type(g_upd) is Zero:
        return out, _zero_out(out)
    return out, P.scatter_add_p.bind(instantiate(g_op), indices, instantiate(g_upd), **params)


def _scatter_add_transpose(ct, operand, indices, updates, **params):
    if is_undefined(indices):
        raise ValueError("scatter-add is not linear in its indices")
    dn = params["dimension_numbers"]
    op_ct = ct if is_undefined(operand) else None
    upd_ct = None
    if is_undefined(updates):
        upd_ct = _gather_back(ct, indices, dn, updates.aval.shape, params["mode"], 0)
    return [op_ct, None, upd_ct]


jvp_rules[P.scatter_add_p] = _scatter_add_jvp
deflinear_transpose(P.scatter_add_p, _scatter_add_transpose)

# --- scatter (set) ---


def _scatter_jvp(primals, tangents, **params):
    operand, indices, updates = primals
    g_op, _, g_upd = tangents
    dn = params["dimension_numbers"]
    if type(g_op) is Zero and type(g_upd) is Zero:
        out = P.scatter_p.bind(operand, indices, updates, **params)
        return out, _zero_out(out)
    g_op, g_upd = instantiate(g_op), instantiate(g_upd)
    if params["unique_indices"]:
        return (P.scatter_p.bind(operand, indices, updates, **params),
                P.scatter_p.bind(g_op, indices, g_upd, **params))
    # colliding updates: the winner is unspecified, so find it by scattering ids
    upd_shape = _aval(updates).shape
    ids_shape = [1 if d in dn.update_window_dims else n for d, n in enumerate(upd_shape)]
    num_ids = int(np.prod(ids_shape, dtype=np.int64))
    id_dtype = np.uint32
    ids = P.add(P.reshape(P.iota(id_dtype, num_ids), ids_shape),
                np.asarray(1, id_dtype)[()])
    update_ids = P.broadcast_in_dim(ids, upd_shape, tuple(range(len(upd_shape))))
    kw = _scatter_params(params)
    scattered_ids = P.scatter(P.full(_aval(operand).shape, 0, id_dtype), indices,
                              update_ids, dn, **kw)
    gathered_ids = _gather_back(scattered_ids, indices, dn, upd_shape, params["mode"])
    op_kept = P.eq(scattered_ids, P.full_like(scattered_ids, 0))
    upd_won = P.eq(update_ids, gathered_ids)

    def masked(op, upd):
        return P.scatter_add(P.select(op_kept, op, _zeros(op)), indices,
                             P.select(upd_won, upd, _zeros(upd)), dn, **kw)
    return masked(operand, updates), masked(g_op, g_upd)


def _scatter_transpose(ct, operand, indices, updates, **params):
    if is_undefined(indices):
        raise ValueError("scatter is not linear in its indices")
    if not params["unique_indices"]:
        raise NotImplementedError("scatter transpose is only implemented where "
                                  "unique_indices=True")
    dn = params["dimension_numbers"]
    upd_aval = _aval(updates)
    op_ct = upd_ct = None
    if is_undefined(operand):
        op_ct = P.scatter(ct, indices, P.full(upd_aval.shape, 0, upd_aval.dtype), dn,
                          **_scatter_params(params))
    if is_undefined(updates):
        upd_ct = _gather_back(ct, indices, dn, upd_aval.shape, params["mode"], 0)
    return [op_ct, None, upd_ct]


jvp_rules[P.scatter_p] = _scatter_jvp
deflinear_transpose(P.scatter_p, _scatter_transpose)

# --- scatter-mul ---


def _scatter_mul_jvp_operand(g, x, i, y, **params):
    return P.scatter_mul_p.bind(g, i, y, **params)


def _scatter_mul_jvp_updates(g, x, i, y, **params):
    if not params["unique_indices"]:
        raise NotImplementedError("scatter_mul gradients are only implemented if "
                                  "`unique_indices=True`")
    return P.mul(x, P.scatter_add(_zeros(x), i, g, params["dimension_numbers"],
                                      **_scatter_params(params)))


def _scatter_mul_transpose(ct, operand, indices, updates, **params):
    if is_undefined(updates):
        raise NotImplementedError("scatter_mul is not linear in its updates; it can only be "
                                  "transposed in its operand")
    return [P.scatter_mul_p.bind(ct, indices, updates, **params), None, None]


defjvp(P.scatter_mul_p, _scatter_mul_jvp_operand, None, _scatter_mul_jvp_updates)
deflinear_transpose(P.scatter_mul_p, _scatter_mul_transpose)

# --- scatter-min / scatter-max ---


def _scatter_extremal_jvp(prim):
    # out[p] is operand[p] or one of the updates landing at p; the tangent is the average
    # of the tangents of every value equal to out[p] (the operand's only if it is retained)
    def rule(primals, tangents, **params):
        operand, indices, updates = primals
        g_op, _, g_upd = tangents
        out = prim.bind(operand, indices, updates, **params)
        if type(g_op) is Zero and type(g_upd) is Zero:
            return out, _zero_out(out)
        dn, mode = params["dimension_numbers"], params["mode"]
        kw = _scatter_params(params)
        target = _gather_back(out, indices, dn, _aval(updates).shape, mode)
        won = P.select(P.eq(updates, target), _ones(updates), _zeros(updates))
        num_won = P.scatter_add(_zeros(operand), indices, won, dn, **kw)
        retained = P.bitwise_or(P.eq(operand, out), P.eq(num_won, _zeros(num_won)))
        kept = P.select(retained, _ones(operand), _zeros(operand))
        count = P.add(num_won, kept)
        t = Zero(tangent_aval(core.get_aval(out)))
        if type(g_op) is not Zero:
            t = P.mul(g_op, kept)
        if type(g_upd) is not Zero:
            from_upd = P.scatter_add(_zeros(operand), indices, P.mul(g_upd, won), dn, **kw)
            t = from_upd if type(t) is Zero else P.add(t, from_upd)
        return out, P.div(t, count)
    return rule


jvp_rules[P.scatter_min_p] = _scatter_extremal_jvp(P.scatter_min_p)
jvp_rules[P.scatter_max_p] = _scatter_extremal_jvp(P.scatter_max_p)

# --- sort ---


def _sort_jvp(primals, tangents, *, dimension, is_stable, num_keys):
    shape = _aval(primals[0]).shape
    if 0 in shape:  # nothing to permute (and no gather of size-1 slices is possible)
        return (list(P.sort_p.bind(*primals, dimension=dimension, is_stable=is_stable,
                                   num_keys=num_keys)), list(tangents))
    iota = P.broadcasted_iota(np.uint32, shape, dimension)
    outs = P.sort_p.bind(*primals, iota, dimension=dimension, is_stable=is_stable,
                         num_keys=num_keys)
    batch = tuple(d for d in range(len(shape)) if d != dimension)
    dnums = GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(dimension,),
                                   start_index_map=(dimension,), operand_batching_dims=batch,
                                   start_indices_batching_dims=batch)
    idx = P.expand_dims(outs[-1], (len(shape),))

    def take(t):
        return P.gather(t, idx, dnums, (1,) * len(shape),
                        mode=GatherScatterMode.PROMISE_IN_BOUNDS)
    return list(outs[:-1]), [t if type(t) is Zero else take(t) for t in tangents]


jvp_rules[P.sort_p] = _sort_jvp


def _top_k_jvp(primals, tangents, *, k):
    (x,), (t,) = primals, tangents
    vals, idx = P.top_k_p.bind(x, k=k)
    if type(t) is Zero or k == 0:
        return [vals, idx], [Zero.from_value(vals) if type(t) is Zero else P.full_like(vals, 0),
                             Zero.from_value(idx)]
    shape = _aval(idx).shape
    axis = len(shape) - 1
    batch = tuple(range(axis))
    dnums = GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(axis,),
                                   start_index_map=(axis,), operand_batching_dims=batch,
                                   start_indices_batching_dims=batch)
    t_out = P.gather(t, P.expand_dims(idx, (len(shape),)), dnums, (1,) * len(shape),
                     mode=GatherScatterMode.PROMISE_IN_BOUNDS)
    return [vals, idx], [t_out, Zero.from_value(idx)]


jvp_rules[P.top_k_p] = _top_k_jvp

# --- cumulative reductions ---


def _interleave(a, b, axis):
    """Interleave ``a`` and ``b`` along ``axis`` (``a`` first; it may be one longer)."""
    na, nb = _aval(a).shape[axis], _aval(b).shape[axis]
    nd = _aval(a).ndim
    a_pad, b_pad = [(0, 0, 0)] * nd, [(0, 0, 0)] * nd
    a_pad[axis] = (0, 1 if na == nb else 0, 1)
    b_pad[axis] = (1, 0 if na == nb else 1, 1)
    zero = np.asarray(0, _aval(a).dtype)[()]
    return P.add(P.pad(a, zero, a_pad), P.pad(b, zero, b_pad))


def associative_scan(fn, x, axis: int = 0, reverse: bool = False):
    """Inclusive scan of ``x`` along ``axis`` with the associative binary ``fn``.

    A parallel prefix scan (JAX's ``lax.associative_scan`` on one array): ``O(log n)``
    levels of slices, ``fn`` and interleaving pads, so it is differentiable whenever ``fn``
    is.

    >>> import functrax.numpy as fnp
    >>> associative_scan(lax.add, fnp.arange(5.0))
    Array([ 0.,  1.,  3.,  6., 10.], dtype=float32)
    """
    if reverse:
        x = P.rev(x, (axis,))

    def scan(e):
        n = _aval(e).shape[axis]
        if n < 2:
            return e
        reduced = fn(P.slice_in_dim(e, 0, n - 1, 2, axis), P.slice_in_dim(e, 1, n, 2, axis))
        odd = scan(reduced)
        n_odd = _aval(odd).shape[axis]
        rest = P.slice_in_dim(e, 2, n, 2, axis)
        if n % 2 == 0:
            even = fn(P.slice_in_dim(odd, 0, n_odd - 1, 1, axis), rest)
        else:
            even = fn(odd, rest)
        even = P.concatenate([P.slice_in_dim(e, 0, 1, 1, axis), even], axis)
        return _interleave(even, odd, axis)

    out = scan(x)
    return P.rev(out, (axis,)) if reverse else out


def _logaddexp(a, b):
    # written so that its derivative is right at ties (the max cancels out) and with infinities
    m = P.max(a, b)
    m = P.select(P.is_finite(m), m, P.full_like(m, 0))
    return P.add(m, P.log(P.add(P.exp(P.sub(a, m)), P.exp(P.sub(b, m)))))


def _cumulative_jvp(combine):
    def rule(primals, tangents, *, axis, reverse=False):
        from functrax.transforms.ad import jvp_flat
        outs, t_outs = jvp_flat(lambda v: [associative_scan(combine, v, axis, reverse)],
                                list(primals), list(tangents))
        return outs[0], t_outs[0]
    return rule


jvp_rules[P.cumprod_p] = _cumulative_jvp(P.mul)
jvp_rules[P.cummax_p] = _cumulative_jvp(P.max)
jvp_rules[P.cummin_p] = _cumulative_jvp(P.min)
jvp_rules[P.cumlogsumexp_p] = _cumulative_jvp(_logaddexp)
