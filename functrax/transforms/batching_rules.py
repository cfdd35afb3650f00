"""vmap rules for elementwise, reduction, shape and contraction primitives."""
from __future__ import annotations

from functrax import core
from functrax import primitives as P
from functrax.primitives.sharding_constraint import DimSet
from functrax.runtime.shardings import NamedSharding, PartitionSpec
from functrax.transforms.batching import (
    bdim_at_front, broadcast_batch, moveaxis, vmap_rules,
)


def _shape(x):
    return core.get_aval(x).shape


def defbroadcasting(prim):
    """n-ary elementwise on broadcast-compatible shapes (rank-0 operands beside arrays,
    size-1 dimensions of equal-rank operands).

    Batched operands get their batch axis in one place; unbatched rank-0 operands stay
    scalars; unbatched arrays are broadcast along the batch (ranks must be equal); size-1
    dimensions are left to the primitive's own broadcasting.
    """
    def rule(axis, vals, dims, **params):
        if len(vals) == 1:  # unary: the batch axis stays where it is
            return prim.bind(vals[0], **params), dims[0]
        batched = [(v, d) for v, d in zip(vals, dims) if d is not None]
        full = {_shape(v) for v, _ in batched}
        bds = {d for _, d in batched}
        unb_scalars = all(d is not None or _shape(v) == () for v, d in zip(vals, dims))
        if len(full) == 1 and len(bds) == 1 and unb_scalars:
            return prim.bind(*vals, **params), bds.pop()  # already aligned: no data movement
        per_ex = [_per_example_shape(v, d) for v, d in zip(vals, dims)]
        out_shape = P.broadcast_shapes(*per_ex)
        new = []
        for v, d, s in zip(vals, dims, per_ex):
            if d is None:
                new.append(v if s == () else broadcast_batch(v, axis.size, 0))
            else:
                v = moveaxis(v, d, 0)
                if s == () and out_shape != ():
                    v = P.broadcast_in_dim(v, (axis.size,) + out_shape, (0,))
                new.append(v)
        return prim.bind(*new, **params), 0
    vmap_rules[prim] = rule


def _per_example_shape(v, d):
    s = _shape(v)
    return s if d is None else s[:d] + s[d + 1:]


# every elementwise primitive (select_n and clamp, whose selector / bounds may stay scalars,
# have their own rules below; a rule module registered later may override one)
for _prim in P.primitive_registry.values():
    if _prim.family in core.ELEMENTWISE_FAMILIES:
        defbroadcasting(_prim)


def _full(axis, v, d, per, full, bd, keep_scalar):
    """``v`` (per-example shape ``per``: ``()`` or ``full``) with the batched shape of
    ``full`` and its batch axis at ``bd``; an unbatched scalar stays one if ``keep_scalar``."""
    if d is None:
        if per == () and keep_scalar:
            return v
        if per == full:
            return broadcast_batch(v, axis.size, bd)
    elif per == full:
        return moveaxis(v, d, bd)
    shape = list(full)
    shape.insert(bd, axis.size)
    return P.broadcast_in_dim(v, tuple(shape), () if d is None else (bd,))


def _target_bdim(candidates):
    """The batch axis of the first batched full-shape operand (no data movement), else 0."""
    return next((d for d, full in candidates if d is not None and full), 0)


def _select_n_rule(axis, vals, dims):
    which, cases = vals[0], vals[1:]
    full = _per_example_shape(cases[0], dims[1])
    per = [_per_example_shape(v, d) for v, d in zip(vals, dims)]
    bd = _target_bdim([(d, p == full) for d, p in zip(dims[1:], per[1:])]
                      + [(dims[0], per[0] == full)])
    cases = [_full(axis, v, d, p, full, bd, False) for v, d, p in zip(cases, dims[1:], per[1:])]
    which = _full(axis, which, dims[0], per[0], full, bd, True)
    return P.select_n_p.bind(which, *cases), bd


def _clamp_rule(axis, vals, dims):
    per = [_per_example_shape(v, d) for v, d in zip(vals, dims)]
    full = per[1]
    bd = _target_bdim([(dims[1], True), (dims[0], per[0] == full), (dims[2], per[2] == full)])
    lo, x, hi = (_full(axis, v, d, p, full, bd, i != 1)
                 for i, (v, d, p) in enumerate(zip(vals, dims, per)))
    return P.clamp_p.bind(lo, x, hi), bd


vmap_rules[P.select_n_p] = _select_n_rule
vmap_rules[P.clamp_p] = _clamp_rule


# --- reductions ---


def _shift_axes(axes, bdim):
    """Per-example axes -> axes of the batched value (batch axis at ``bdim``)."""
    return tuple(a + (a >= bdim) for a in axes)


def defreducer(prim):
    def rule(axis, vals, dims, *, axes, **params):
        x, d = vals[0], dims[0]
        new_axes = _shift_axes(axes, d)
        out_dim = d - sum(a < d for a in axes)
        return prim.bind(x, axes=new_axes, **params), out_dim
    vmap_rules[prim] = rule


for _p in (P.reduce_sum_p, P.reduce_prod_p, P.reduce_max_p, P.reduce_min_p, P.reduce_and_p,
           P.reduce_or_p, P.reduce_xor_p, P.argmax_p, P.argmin_p):
    defreducer(_p)


def defcumulative(prim):
    def rule(ax, vals, dims, **params):
        x, d = vals[0], dims[0]
        params["axis"] = params["axis"] + (params["axis"] >= d)
        return prim.bind(x, **params), d
    vmap_rules[prim] = rule


for _p in (P.cumsum_p, P.cumprod_p, P.cummax_p, P.cummin_p, P.cumlogsumexp_p):
    defcumulative(_p)


def _sort_rule(axis, vals, dims, *, dimension, is_stable, num_keys):
    ops = [bdim_at_front(v, d, axis.size) for v, d in zip(vals, dims)]
    outs = P.sort_p.bind(*ops, dimension=dimension + 1, is_stable=is_stable, num_keys=num_keys)
    return outs, [0] * len(outs)


vmap_rules[P.sort_p] = _sort_rule


def _top_k_rule(axis, vals, dims, *, k):
    x = bdim_at_front(vals[0], dims[0], axis.size)
    return P.top_k_p.bind(x, k=k), [0, 0]


vmap_rules[P.top_k_p] = _top_k_rule
vmap_rules[P.optimization_barrier_p] = lambda axis, vals, dims: (
    P.optimization_barrier_p.bind(*vals), list(dims))


def _sharding_constraint_rule(axis, vals, dims, *, sharding, layout, unconstrained_dims):
    """The batch dimension is not split: ``None`` enters the spec at its position."""
    x, d = vals[0], dims[0]
    if d is None:
        return P.sharding_constraint_p.bind(x, sharding=sharding, layout=layout,
                                            unconstrained_dims=unconstrained_dims), None
    if isinstance(sharding, NamedSharding):
        entries = list(sharding.spec) + [None] * (d - len(sharding.spec))
        entries.insert(d, None)
        sharding = NamedSharding(sharding.mesh, PartitionSpec(*entries))
    dims_ = DimSet(u + (u >= d) for u in unconstrained_dims)
    return P.sharding_constraint_p.bind(x, sharding=sharding, layout=layout,
                                        unconstrained_dims=dims_), d


vmap_rules[P.sharding_constraint_p] = _sharding_constraint_rule

# --- shape ---


def _broadcast_in_dim_rule(axis, vals, dims, *, shape, broadcast_dimensions, sharding=None):
    x = moveaxis(vals[0], dims[0], 0)
    out = P.broadcast_in_dim(x, (axis.size,) + tuple(shape),
                             (0,) + tuple(b + 1 for b in broadcast_dimensions))
    return out, 0


def _reshape_rule(axis, vals, dims, *, new_sizes, dimensions=None, sharding=None):
    x = moveaxis(vals[0], dims[0], 0)
    if dimensions is not None:
        x = P.transpose(x, (0,) + tuple(d + 1 for d in dimensions))
    return P.reshape(x, (axis.size,) + tuple(new_sizes)), 0


def _transpose_rule(axis, vals, dims, *, permutation):
    x, d = vals[0], dims[0]
    # keep the batch axis in place: per-example axis k sits at k + (k >= d)
    full = [p + (p >= d) for p in permutation]
    full.insert(d, d)
    return P.transpose(x, full), d


def _squeeze_rule(axis, vals, dims, *, dimensions):
    x, d = vals[0], dims[0]
    return P.squeeze(x, _shift_axes(dimensions, d)), d - sum(a < d for a in dimensions)


def _expand_dims_rule(axis, vals, dims, *, dimensions):
    x = moveaxis(vals[0], dims[0], 0)
    return P.expand_dims(x, tuple(d + 1 for d in dimensions)), 0


def _rev_rule(axis, vals, dims, *, dimensions):
    x, d = vals[0], dims[0]
    return P.rev(x, _shift_axes(dimensions, d)), d


def _concatenate_rule(axis, vals, dims, *, dimension):
    ops = [bdim_at_front(v, d, axis.size) for v, d in zip(vals, dims)]
    return P.concatenate(ops, dimension + 1), 0


def _pad_rule(axis, vals, dims, *, padding_config):
    x, pv = vals
    dx, dpv = dims
    cfg = ((0, 0, 0),) + tuple(padding_config)
    x = bdim_at_front(x, dx, axis.size)
    if dpv is None:
        return P.pad(x, pv, cfg), 0
    # a batched padding value: pad with zeros, then select the padding positions
    dt = core.get_aval(x).dtype
    padded = P.pad(x, P.full((), 0, dt), cfg)
    mask = P.pad(P.full(_shape(x), True, bool), P.full((), False, bool), cfg)
    fill = P.broadcast_in_dim(moveaxis(pv, dpv, 0), _shape(padded), (0,))
    return P.select(mask, padded, fill), 0


def _slice_rule(axis, vals, dims, *, start_indices, limit_indices, strides=None):
    x, d = vals[0], dims[0]
    starts, limits = list(start_indices), list(limit_indices)
    st = list(strides) if strides is not None else [1] * len(starts)
    starts.insert(d, 0)
    limits.insert(d, axis.size)
    st.insert(d, 1)
    return P.slice(x, starts, limits, st if strides is not None else None), d


vmap_rules.update({
    P.broadcast_in_dim_p: _broadcast_in_dim_rule, P.reshape_p: _reshape_rule,
    P.transpose_p: _transpose_rule, P.squeeze_p: _squeeze_rule,
    P.expand_dims_p: _expand_dims_rule, P.rev_p: _rev_rule,
    P.concatenate_p: _concatenate_rule, P.pad_p: _pad_rule, P.slice_p: _slice_rule,
})

# --- dot_general ---


def _dot_general_rule(axis, vals, dims, *, dimension_numbers, precision=None,
                      preferred_element_type=None):
    (lhs, rhs), (ld, rd) = vals, dims
    (lc, rc), (lb, rb) = dimension_numbers
    params = dict(precision=precision, preferred_element_type=preferred_element_type)
    if ld is not None and rd is not None:
        lhs, rhs = moveaxis(lhs, ld, 0), moveaxis(rhs, rd, 0)
        up = lambda ds: tuple(i + 1 for i in ds)  # noqa: E731
        dn = ((up(lc), up(rc)), ((0,) + up(lb), (0,) + up(rb)))
        return P.dot_general_p.bind(lhs, rhs, dimension_numbers=dn, **params), 0
    if ld is not None:
        lc2, lb2 = _shift_axes(lc, ld), _shift_axes(lb, ld)
        out = P.dot_general_p.bind(lhs, rhs, dimension_numbers=((lc2, rc), (lb2, rb)), **params)
        free = [i for i in range(core.get_aval(lhs).ndim) if i not in lc2 and i not in lb2]
        return out, len(lb) + free.index(ld)
    rc2, rb2 = _shift_axes(rc, rd), _shift_axes(rb, rd)
    out = P.dot_general_p.bind(lhs, rhs, dimension_numbers=((lc, rc2), (lb, rb2)), **params)
    l_free = core.get_aval(lhs).ndim - len(lc) - len(lb)
    free = [i for i in range(core.get_aval(rhs).ndim) if i not in rc2 and i not in rb2]
    return out, len(lb) + l_free + free.index(rd)


vmap_rules[P.dot_general_p] = _dot_general_rule
