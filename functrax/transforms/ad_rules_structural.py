"""JVP and transpose rules for reductions, shape primitives, indexing and dot_general."""
from __future__ import annotations

import numpy as np

from functrax import core
from functrax import primitives as P
from functrax.transforms.ad_rules import operand_aval
from functrax.transforms.jvp import (
    Zero, defjvp, defjvp2, deflinear, instantiate, jvp_rules, tangent_aval,
)
from functrax.transforms.transpose import deflinear_transpose, is_undefined


def _linear(prim, transpose_fn):
    deflinear(prim)
    deflinear_transpose(prim, transpose_fn)


# --- reductions ---


def _reduce_sum_transpose(ct, x, *, axes):
    shape = x.aval.shape
    kept = tuple(i for i in range(len(shape)) if i not in axes)
    return [P.broadcast_in_dim(ct, shape, kept)]


_linear(P.reduce_sum_p, _reduce_sum_transpose)


def _reduce_chooser_jvp(g, ans, x, *, axes):
    # the tangent at the chosen location(s), averaged over ties (JAX's
    # _reduce_chooser_jvp_rule; ans is broadcast back instead of reshaped)
    shape = operand_aval(x).shape
    kept = tuple(i for i in range(len(shape)) if i not in axes)
    loc = P.convert_element_type(P.eq(x, P.broadcast_in_dim(ans, shape, kept)),
                                 operand_aval(g).dtype)
    counts = P.reduce_sum(loc, axes)
    return P.div(P.reduce_sum(P.mul(g, loc), axes), counts)


defjvp2(P.reduce_max_p, _reduce_chooser_jvp)
defjvp2(P.reduce_min_p, _reduce_chooser_jvp)


def _reduce_prod_jvp(g, x, *, axes):
    # d prod = sum_i g_i * prod_{j != i} x_j, with the exclusive products from two cumprods
    shape = operand_aval(x).shape
    perm = [i for i in range(len(shape)) if i not in axes] + list(axes)
    kept_shape = [shape[i] for i in perm[:len(shape) - len(axes)]]
    n = int(np.prod([shape[i] for i in axes], dtype=np.int64))
    xf = P.reshape(P.transpose(x, perm), kept_shape + [n])
    gf = P.reshape(P.transpose(g, perm), kept_shape + [n])
    ax = len(kept_shape)
    one = P.full(kept_shape + [1], 1, operand_aval(x).dtype)
    before = P.concatenate([one, P.slice_in_dim(P.cumprod(xf, ax), 0, n - 1, axis=ax)],
                           ax) if n else xf
    after = P.concatenate([P.slice_in_dim(P.cumprod(xf, ax, reverse=True), 1, n, axis=ax),
                             one], ax) if n else xf
    return P.reduce_sum(P.mul(gf, P.mul(before, after)), (ax,))


defjvp(P.reduce_prod_p, _reduce_prod_jvp)


def _cumsum_transpose(ct, x, *, axis, reverse=False):
    return [P.cumsum(ct, axis, not reverse)]


_linear(P.cumsum_p, _cumsum_transpose)

# --- shape ---


def _broadcast_in_dim_transpose(ct, x, *, shape, broadcast_dimensions, sharding=None):
    in_shape = x.aval.shape
    new_dims = tuple(i for i in range(len(shape)) if i not in broadcast_dimensions)
    expanded = tuple(d for i, d in enumerate(broadcast_dimensions)
                     if in_shape[i] == 1 and shape[d] != 1)
    summed = P.reduce_sum(ct, new_dims + expanded) if new_dims or expanded else ct
    return [P.reshape(summed, in_shape) if expanded else summed]


_linear(P.broadcast_in_dim_p, _broadcast_in_dim_transpose)


def _reshape_transpose(ct, x, *, new_sizes, dimensions=None, sharding=None):
    if dimensions is None:
        return [P.reshape(ct, x.aval.shape)]
    inv = np.argsort(dimensions)
    permuted = tuple(x.aval.shape[d] for d in dimensions)
    return [P.transpose(P.reshape(ct, permuted), inv)]


_linear(P.reshape_p, _reshape_transpose)
_linear(P.transpose_p, lambda ct, x, *, permutation: [
    P.transpose(ct, tuple(np.argsort(permutation)))])
_linear(P.squeeze_p, lambda ct, x, *, dimensions: [P.expand_dims(ct, dimensions)])
_linear(P.expand_dims_p, lambda ct, x, *, dimensions: [P.squeeze(ct, dimensions)])
_linear(P.rev_p, lambda ct, x, *, dimensions: [P.rev(ct, dimensions)])


def _concatenate_transpose(ct, *xs, dimension):
    out, start = [], 0
    for x in xs:
        size = operand_aval(x).shape[dimension]
        if is_undefined(x):
            out.append(P.slice_in_dim(ct, start, start + size, axis=dimension))
        else:
            out.append(None)
        start += size
    return out


_linear(P.concatenate_p, _concatenate_transpose)


def _pad_transpose(ct, x, padding_value, *, padding_config):
    # JAX's _pad_transpose: unpad (negative low/high padding), then take every
    # (interior + 1)-th element; the padding value gets whatever the operand did not
    def t_operand():
        unpad = tuple((-lo, -hi, 0) for lo, hi, _ in padding_config)
        unpadded = P.pad(ct, P.full((), 0, core.get_aval(ct).dtype), unpad)
        shape = core.get_aval(unpadded).shape
        return P.slice(unpadded, (0,) * len(shape), shape,
                       tuple(it + 1 for _, _, it in padding_config))

    def total(v):
        return P.reduce_sum(v, tuple(range(core.get_aval(v).ndim)))
    t_op = t_operand() if is_undefined(x) or is_undefined(padding_value) else None
    return [t_op if is_undefined(x) else None,
            P.sub(total(ct), total(t_op)) if is_undefined(padding_value) else None]


_linear(P.pad_p, _pad_transpose)


def _slice_transpose(ct, x, *, start_indices, limit_indices, strides=None):
    shape = x.aval.shape
    strides = strides or (1,) * len(shape)
    ct_shape = core.get_aval(ct).shape
    cfg = []
    for d, s, n, st in zip(shape, start_indices, ct_shape, strides):
        hi = d - (s + (n - 1) * st + 1) if n else d - s
        cfg.append((s, hi, st - 1) if n else (s, hi, 0))
    zero = P.full((), 0, core.get_aval(ct).dtype)
    return [P.pad(ct, zero, cfg)]


_linear(P.slice_p, _slice_transpose)

# --- indexing ---


def _dynamic_slice_jvp(primals, tangents, *, slice_sizes):
    x, *idx = primals
    out = P.dynamic_slice(x, idx, slice_sizes)
    if type(tangents[0]) is Zero:
        return out, Zero(tangent_aval(core.get_aval(out)))
    return out, P.dynamic_slice(tangents[0], idx, slice_sizes)


def _dynamic_slice_transpose(ct, x, *idx, slice_sizes):
    zeros = P.full(x.aval.shape, 0, x.aval.dtype)
    return [P.dynamic_update_slice(zeros, ct, idx)] + [None] * len(idx)


jvp_rules[P.dynamic_slice_p] = _dynamic_slice_jvp
deflinear_transpose(P.dynamic_slice_p, _dynamic_slice_transpose)


def _dus_jvp(primals, tangents):
    x, upd, *idx = primals
    tx, tu = tangents[:2]
    out = P.dynamic_update_slice(x, upd, idx)
    if type(tx) is Zero and type(tu) is Zero:
        return out, Zero(tangent_aval(core.get_aval(out)))
    return out, P.dynamic_update_slice(instantiate(tx), instantiate(tu), idx)


def _dus_transpose(ct, x, upd, *idx):
    upd_aval = operand_aval(upd)
    out = [None, None] + [None] * len(idx)
    if is_undefined(x):
        out[0] = P.dynamic_update_slice(ct, P.full(upd_aval.shape, 0, upd_aval.dtype), idx)
    if is_undefined(upd):
        out[1] = P.dynamic_slice(ct, idx, upd_aval.shape)
    return out


jvp_rules[P.dynamic_update_slice_p] = _dus_jvp
deflinear_transpose(P.dynamic_update_slice_p, _dus_transpose)

# --- dot_general ---


def _dot_jvp_lhs(g, lhs, rhs, **params):
    return P.dot_general_p.bind(g, rhs, **params)


def _dot_jvp_rhs(g, lhs, rhs, **params):
    return P.dot_general_p.bind(lhs, g, **params)


defjvp(P.dot_general_p, _dot_jvp_lhs, _dot_jvp_rhs)


def _ranges_like(*xs):
    start = 0
    for x in xs:
        yield tuple(range(start, start + len(x)))
        start += len(x)


def _remaining(original, *removed_lists):
    removed = set().union(*[set(r) for r in removed_lists])
    return [i for i in original if i not in removed]


def _dot_transpose_lhs(ct, x_aval, y, dimension_numbers, preferred_element_type, swap=False):
    # JAX's _dot_general_transpose_lhs: contract ct with y over y's free dims
    x_ndim, y_ndim = x_aval.ndim, core.get_aval(y).ndim
    (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
    x_kept = _remaining(range(x_ndim), x_contract, x_batch)
    y_kept = _remaining(range(y_ndim), y_contract, y_batch)
    if swap:
        ans_batch, ans_y, _ = _ranges_like(x_batch, y_kept, x_kept)
    else:
        ans_batch, _, ans_y = _ranges_like(x_batch, x_kept, y_kept)
    dims = ((ans_y, y_kept), (ans_batch, y_batch))
    x_contract_sorted_by_y = list(np.take(x_contract, np.argsort(y_contract))) if len(
        y_contract) else []
    out_axes = np.argsort(list(x_batch) + x_kept + x_contract_sorted_by_y)
    ct_dtype = core.get_aval(ct).dtype
    if core.get_aval(y).dtype != ct_dtype:
        # preferred_element_type widened the output (f16 x f16 -> f32): contract in the
        # cotangent's type, then narrow back to the operand's type below
        y = P.convert_element_type(y, ct_dtype)
    res = P.dot_general(ct, y, dims, preferred_element_type=preferred_element_type)
    res = P.transpose(res, tuple(int(i) for i in out_axes))
    return P.convert_element_type(res, x_aval.dtype) if core.get_aval(
        res).dtype != x_aval.dtype else res


def _dot_general_transpose(ct, lhs, rhs, *, dimension_numbers, precision=None,
                           preferred_element_type=None):
    if is_undefined(lhs) and is_undefined(rhs):
        raise NotImplementedError("dot_general with two linear operands is not linear")
    if is_undefined(lhs):
        return [_dot_transpose_lhs(ct, lhs.aval, rhs, dimension_numbers,
                                   preferred_element_type), None]
    (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
    swapped = ((y_contract, x_contract), (y_batch, x_batch))
    return [None, _dot_transpose_lhs(ct, rhs.aval, lhs, swapped, preferred_element_type,
                                     swap=True)]


deflinear_transpose(P.dot_general_p, _dot_general_transpose)


# --- optimization_barrier: linear (the identity), its tangents behind a barrier too ---


def _barrier_transpose(cts, *args):
    cts = [instantiate(c) for c in cts]
    outs = P.optimization_barrier_p.bind(*cts)
    return [c if is_undefined(a) else None for c, a in zip(outs, args)]


deflinear(P.optimization_barrier_p)
deflinear_transpose(P.optimization_barrier_p, _barrier_transpose)


# --- sharding_constraint: linear (the identity); tangents and cotangents keep the layout ---

deflinear(P.sharding_constraint_p)
deflinear_transpose(P.sharding_constraint_p,
                    lambda ct, x, **params: [P.sharding_constraint_p.bind(ct, **params)])
