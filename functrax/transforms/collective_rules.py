"""vmap, JVP and transpose rules of the collectives (``functrax/primitives/collectives.py``).

Under ``vmap(..., axis_name=name)`` the lanes of ``name`` are the slices of the batch axis,
so a collective naming ``name`` acts on the batch axis itself: ``psum`` sums over it (an
unbatched operand is the same in every lane: ``x * size``), ``all_gather`` moves it into
the result, ``axis_index`` is an iota along it, ``ppermute`` permutes its slices, and so
on. A collective naming other axes (an outer vmap, later pmap) is bound again on the parent
trace with the batch axis kept as an ordinary axis (params such as ``all_gather_dimension``
shifted past it). A ``psum`` over several names handles the vmapped one here and binds
itself again for the rest.

Autodiff: psum is linear and transposes to psum (each lane seeds its own cotangent);
``all_gather`` and ``reduce_scatter`` transpose to each other, ``ppermute`` to the inverse
permutation, ``all_to_all`` to itself with split and concat axes swapped; ``pmax``/``pmin``
differentiate through the location mask (the tangent is averaged over the lanes that hold
the extremum, as ``reduce_max``); ``axis_index`` has a zero derivative.
"""
from __future__ import annotations

import math

import numpy as np

from functrax import core
from functrax import primitives as P
from functrax.primitives.collectives import axis_names
from functrax.primitives.collectives import axis_size as named_axis_size
from functrax.transforms.batching import axis_primitives, broadcast_batch, moveaxis, vmap_rules
from functrax.transforms.jvp import Zero, deflinear, defjvp_zero, jvp_rules, tangent_aval
from functrax.transforms.transpose import deflinear_transpose, is_undefined, transpose_rules


def _shape(x):
    return core.get_aval(x).shape


def _times_size(x, n):
    return P.mul(x, P.as_operand(n, x))


def _split_dim(x, dim: int, n: int):
    """Split axis ``dim`` of ``x`` into (n, rest), ``n`` major."""
    s = _shape(x)
    return P.reshape(x, s[:dim] + (n, s[dim] // n) + s[dim + 1:])


def _merge_dims(x, dim: int, count: int):
    """Merge axes ``dim .. dim+count-1`` of ``x`` into one (row-major)."""
    if count <= 1:
        return x
    s = _shape(x)
    return P.reshape(x, s[:dim] + (math.prod(s[dim:dim + count]),) + s[dim + count:])


def _check_types(prim, vals, dims, params):
    """Run ``prim``'s abstract evaluation on the per-lane types: a vmap rule computes the
    result without binding ``prim``, so its shape errors must be raised here."""
    avals = []
    for v, d in zip(vals, dims):
        a = core.get_aval(v)
        avals.append(a if d is None else a.update(shape=a.shape[:d] + a.shape[d + 1:]))
    core.abstract_eval(prim, avals, params)


def _check_no_groups(axis_index_groups):
    """A collective over the vmapped axis itself with ``axis_index_groups``: JAX's error
    (under pmap the groups run; a collective over other axes keeps them)."""
    if axis_index_groups is not None:
        raise NotImplementedError("axis_index_groups not supported in vmap collectives. "
                                  "Please open a feature request!")


def _not_supported(prim, names, axis):
    return NotImplementedError(
        f"vmap of {prim} over several axis names {names} (one of them the vmapped axis "
        f"{axis.name!r}) is not supported; apply {prim} to one axis name at a time")


# --- psum / pmax / pmin ---


def _allreduce_rule(prim, reduce_fn, if_unmapped):
    def rule(axis, vals, dims, *, axes, axis_index_groups):
        if axis.name not in axes:
            outs = prim.bind(*vals, axes=axes, axis_index_groups=axis_index_groups)
            return outs, list(dims)
        _check_no_groups(axis_index_groups)
        _check_types(prim, vals, dims, dict(axes=axes, axis_index_groups=axis_index_groups))
        outs = [if_unmapped(v, axis.size) if d is None else reduce_fn(v, (d,))
                for v, d in zip(vals, dims)]
        rest = tuple(a for a in axes if a != axis.name)
        if rest:
            outs = prim.bind(*outs, axes=rest, axis_index_groups=axis_index_groups)
        return list(outs), [None] * len(outs)
    vmap_rules[prim] = rule
    axis_primitives.add(prim)


_allreduce_rule(P.psum_p, P.reduce_sum, _times_size)
_allreduce_rule(P.pmax_p, P.reduce_max, lambda x, n: x)
_allreduce_rule(P.pmin_p, P.reduce_min, lambda x, n: x)


def _psum_jvp(primals, tangents, *, axes, axis_index_groups):
    out = P.psum_p.bind(*primals, axes=axes, axis_index_groups=axis_index_groups)
    t_out = [Zero(tangent_aval(core.get_aval(o))) for o in out]
    nz = [i for i, t in enumerate(tangents) if type(t) is not Zero]
    if nz:
        sums = P.psum_p.bind(*[tangents[i] for i in nz], axes=axes,
                             axis_index_groups=axis_index_groups)
        for i, t in zip(nz, sums):
            t_out[i] = t
    return out, t_out


def _psum_transpose(cts, *args, axes, axis_index_groups):
    out = [Zero(a.aval) if is_undefined(a) else None for a in args]
    nz = [i for i, (ct, a) in enumerate(zip(cts, args))
          if type(ct) is not Zero and is_undefined(a)]
    if not nz:
        return out
    # over the manual axes of a shard_map body with check_vma, psum sums a varying value
    # into an invariant one and transposes to pvary (JAX's check_vma semantics: every
    # device gets the cotangent of the sum as it is); over other named axes (pmap, vmap,
    # check_vma=False) it transposes to psum
    typed = tuple(a for a in axes if a in core.VMA.axes)
    rest = tuple(a for a in axes if a not in core.VMA.axes)
    sums = [cts[i] for i in nz]
    if typed:
        sums = [P.pvary(c, typed) for c in sums]
    if rest:
        sums = P.psum_p.bind(*sums, axes=rest, axis_index_groups=axis_index_groups)
    for i, ct in zip(nz, sums):
        out[i] = ct
    return out


jvp_rules[P.psum_p] = _psum_jvp
transpose_rules[P.psum_p] = _psum_transpose


def _pminmax_jvp(prim):
    def rule(primals, tangents, *, axes, axis_index_groups):
        outs = prim.bind(*primals, axes=axes, axis_index_groups=axis_index_groups)
        t_outs = []
        for x, t, ans in zip(primals, tangents, outs):
            if type(t) is Zero:
                t_outs.append(Zero(tangent_aval(core.get_aval(ans))))
                continue
            loc = P.convert_element_type(P.eq(x, ans), core.get_aval(ans).dtype)
            # two binds: the counts are primal (a residual), the total is a tangent
            counts, = P.psum_p.bind(loc, axes=axes, axis_index_groups=axis_index_groups)
            total, = P.psum_p.bind(P.mul(t, loc), axes=axes,
                                   axis_index_groups=axis_index_groups)
            t_outs.append(P.div(total, counts))
        return outs, t_outs
    jvp_rules[prim] = rule


_pminmax_jvp(P.pmax_p)
_pminmax_jvp(P.pmin_p)


# --- all_gather / reduce_scatter ---


def _gather_other(x, d, dim, axis_name, size, tiled, groups=None):
    """all_gather over axes other than this vmap's: keep the batch axis ``d``."""
    if d is not None:
        if d <= dim:
            dim += 1
        elif not tiled:
            d += 1
    return P.all_gather_p.bind(x, all_gather_dimension=dim, axis_name=axis_name,
                               axis_index_groups=groups, axis_size=size, tiled=tiled), d


def _gather_one(axis, x, d, name, dim):
    """Untiled all_gather over the single axis ``name``: a new axis at per-example ``dim``."""
    if name == axis.name:
        x = broadcast_batch(x, axis.size, dim) if d is None else moveaxis(x, d, dim)
        return x, None
    return _gather_other(x, d, dim, (name,), named_axis_size(name), False)


def _all_gather_rule(axis, vals, dims, *, all_gather_dimension, axis_name, axis_index_groups,
                     axis_size, tiled):
    (x,), (d,) = vals, dims
    names = axis_names(axis_name)
    if axis.name not in names:
        return _gather_other(x, d, all_gather_dimension, axis_name, axis_size, tiled,
                             axis_index_groups)
    _check_no_groups(axis_index_groups)
    _check_types(P.all_gather_p, vals, dims, dict(
        all_gather_dimension=all_gather_dimension, axis_name=axis_name,
        axis_index_groups=axis_index_groups, axis_size=axis_size, tiled=tiled))
    # gather minor names first: the lanes of names[0] end up the major new axis
    for name in reversed(names):
        x, d = _gather_one(axis, x, d, name, all_gather_dimension)
    # the result is the same in every lane of this vmap: unbatched
    return _merge_dims(x, all_gather_dimension, len(names) + bool(tiled)), None


def _scatter_other(x, d, dim, axis_name, size, tiled, groups=None):
    """reduce_scatter over axes other than this vmap's: keep the batch axis ``d``."""
    if d is not None:
        if d <= dim:
            dim += 1
        elif not tiled:  # the scattered dimension disappears
            d -= 1
    return P.reduce_scatter_p.bind(x, scatter_dimension=dim, axis_name=axis_name,
                                   axis_index_groups=groups, axis_size=size, tiled=tiled), d


def _scatter_one(axis, x, d, name, dim):
    """Tiled reduce_scatter over the single axis ``name``."""
    if name == axis.name:
        total = _times_size(x, axis.size) if d is None else P.reduce_sum(x, (d,))
        # lane i keeps block i of the total: the blocks become the batch axis
        return _split_dim(total, dim, axis.size), dim
    return _scatter_other(x, d, dim, (name,), named_axis_size(name), True)


def _reduce_scatter_rule(axis, vals, dims, *, scatter_dimension, axis_name, axis_index_groups,
                         axis_size, tiled):
    (x,), (d,) = vals, dims
    names = axis_names(axis_name)
    dim = scatter_dimension
    if axis.name not in names:
        return _scatter_other(x, d, dim, axis_name, axis_size, tiled, axis_index_groups)
    _check_no_groups(axis_index_groups)
    _check_types(P.reduce_scatter_p, vals, dims, dict(
        scatter_dimension=dim, axis_name=axis_name, axis_index_groups=axis_index_groups,
        axis_size=axis_size, tiled=tiled))
    if names == (axis.name,) and not tiled:
        total = _times_size(x, axis.size) if d is None else P.reduce_sum(x, (d,))
        return total, dim  # entry i along ``dim`` belongs to lane i
    for name in names:  # major name first: each keeps its block of the previous block
        x, d = _scatter_one(axis, x, d, name, dim)
    if not tiled:  # the scattered dimension has size 1 now: remove it
        pos = dim + (d is not None and d <= dim)
        x = P.squeeze(x, (pos,))
        if d is not None and d > pos:
            d -= 1
    return x, d


def _all_gather_transpose(ct, x, *, all_gather_dimension, axis_name, axis_index_groups,
                          axis_size, tiled):
    names = axis_name if isinstance(axis_name, tuple) else (axis_name,)
    if (len(names) == 1 and axis_index_groups is None and names[0] in core.VMA.axes
            and names[0] not in core.vma_of(ct)):
        # typed body: the gathered value is the same on every device, and so is its
        # cotangent: each device's block of it is its operand's cotangent
        idx = P.axis_index(names[0])
        d = all_gather_dimension
        if tiled:
            b = x.aval.shape[d]
            return [P.dynamic_slice_in_dim(ct, idx * b, b, axis=d)]
        return [P.dynamic_index_in_dim(ct, idx, axis=d, keepdims=False)]
    return [P.reduce_scatter_p.bind(ct, scatter_dimension=all_gather_dimension,
                                    axis_name=axis_name, axis_index_groups=axis_index_groups,
                                    axis_size=axis_size, tiled=tiled)]


def _reduce_scatter_transpose(ct, x, *, scatter_dimension, axis_name, axis_index_groups,
                              axis_size, tiled):
    return [P.all_gather_p.bind(ct, all_gather_dimension=scatter_dimension,
                                axis_name=axis_name, axis_index_groups=axis_index_groups,
                                axis_size=axis_size, tiled=tiled)]


# --- axis_index / ppermute / all_to_all ---


def _axis_index_rule(axis, vals, dims, *, axis_name):
    return P.iota(np.int32, axis.size), 0


def _runs(src_of, n):
    """Group destinations 0..n-1 into runs whose sources are consecutive (or all missing)."""
    runs = []
    for dst in range(n):
        src = src_of.get(dst)
        if runs:
            s0, length = runs[-1]
            if (s0 is None and src is None) or (
                    s0 is not None and src is not None and src == s0 + length):
                runs[-1] = (s0, length + 1)
                continue
        runs.append((src, 1))
    return runs


def _ppermute_rule(axis, vals, dims, *, axis_name, perm):
    (x,), (d,) = vals, dims
    names = axis_names(axis_name)
    if axis.name not in names:
        return P.ppermute_p.bind(x, axis_name=axis_name, perm=perm), d
    if len(names) > 1:
        raise _not_supported("ppermute", names, axis)
    _check_types(P.ppermute_p, vals, dims, dict(axis_name=axis_name, perm=perm))
    n = axis.size
    src_of = {dst: src for src, dst in perm}
    if d is None:
        if len(src_of) == n:  # every lane receives the value they all hold
            return x, None
        x, d = broadcast_batch(x, n, 0), 0
    pieces = []
    for src, length in _runs(src_of, n):
        if src is None:  # lanes that receive nothing get zeros
            shape = list(_shape(x))
            shape[d] = length
            pieces.append(P.full(shape, 0, core.get_aval(x).dtype))
        else:
            pieces.append(P.slice_in_dim(x, src, src + length, axis=d))
    return (x if len(pieces) == 1 and pieces[0] is x else P.concatenate(pieces, d)), d


def _all_to_all_rule(axis, vals, dims, *, split_axis, concat_axis, axis_name,
                     axis_index_groups, tiled):
    (x,), (d,) = vals, dims
    names = axis_names(axis_name)
    if axis.name not in names:
        out = P.all_to_all_p.bind(x, split_axis=split_axis + (d <= split_axis),
                                  concat_axis=concat_axis + (d <= concat_axis),
                                  axis_name=axis_name, axis_index_groups=axis_index_groups,
                                  tiled=tiled)
        return out, d
    _check_no_groups(axis_index_groups)
    if len(names) > 1:
        raise _not_supported("all_to_all", names, axis)
    _check_types(P.all_to_all_p, vals, dims, dict(
        split_axis=split_axis, concat_axis=concat_axis, axis_name=axis_name,
        axis_index_groups=axis_index_groups, tiled=tiled))
    n = axis.size
    if d is None:
        x, d = broadcast_batch(x, n, 0), 0
    if split_axis == concat_axis:
        # lane i gets block i of every lane j, in order of j: swap the batch axis with the
        # block axis of the split dimension
        ax = split_axis + (d <= split_axis)
        x = _split_dim(x, ax, n)
        d2 = d + (ax <= d)
        perm = list(range(core.get_aval(x).ndim))
        perm[ax], perm[d2] = d2, ax
        return _merge_dims(P.transpose(x, perm), ax, 2), d
    # concatenate the lanes along concat_axis, then the blocks of split_axis are the lanes
    x = _merge_dims(moveaxis(x, d, concat_axis), concat_axis, 2)
    return _split_dim(x, split_axis, n), split_axis


def _ppermute_transpose(ct, x, *, axis_name, perm):
    inverse = tuple((dst, src) for src, dst in perm)
    return [P.ppermute_p.bind(ct, axis_name=axis_name, perm=inverse)]


def _all_to_all_transpose(ct, x, *, split_axis, concat_axis, axis_name, axis_index_groups,
                          tiled):
    return [P.all_to_all_p.bind(ct, split_axis=concat_axis, concat_axis=split_axis,
                                axis_name=axis_name, axis_index_groups=axis_index_groups,
                                tiled=tiled)]


for _prim, _rule, _transpose in (
        (P.all_gather_p, _all_gather_rule, _all_gather_transpose),
        (P.reduce_scatter_p, _reduce_scatter_rule, _reduce_scatter_transpose),
        (P.ppermute_p, _ppermute_rule, _ppermute_transpose),
        (P.all_to_all_p, _all_to_all_rule, _all_to_all_transpose)):
    vmap_rules[_prim] = _rule
    axis_primitives.add(_prim)
    deflinear(_prim)
    deflinear_transpose(_prim, _transpose)

vmap_rules[P.axis_index_p] = _axis_index_rule
axis_primitives.add(P.axis_index_p)
defjvp_zero(P.axis_index_p)


# --- pvary and the types of values in shard_map bodies with check_vma ---


def _pvary_transpose(cts, *args, axes, axis_index_groups=None):
    return [None if not is_undefined(a) else (ct if type(ct) is Zero else P.psum_p.bind(
        ct, axes=tuple(axes), axis_index_groups=axis_index_groups)[0])
        for ct, a in zip(cts, args)]


def _pvary_vmap(axis, vals, dims, *, axes, axis_index_groups=None):
    return P.pvary_p.bind(*vals, axes=axes, axis_index_groups=axis_index_groups), list(dims)


deflinear(P.pvary_p)
transpose_rules[P.pvary_p] = _pvary_transpose
vmap_rules[P.pvary_p] = _pvary_vmap


def _make_varying_over_axes(args, params):
    """A psum/pmax/pmin operand the same on every device of a typed axis it reduces over is
    made varying first (``psum`` of it is then the operand times the axis size, and its
    transpose the sum of the cotangents), as JAX's check_vma."""
    typed = tuple(a for a in params["axes"] if a in core.VMA.axes)
    if not typed:
        return args
    return [P.pvary(x, typed) if isinstance(x, core.Tracer) else x for x in args]


def _minus_axes(in_vmas, params):
    gone = frozenset(params["axes"])
    return [v - gone for v in in_vmas]


def _same_as_input(in_vmas, params):
    return list(in_vmas)


def _axis_index_vma(in_vmas, params):
    return [frozenset((params["axis_name"],)) & core.VMA.axes]


for _p in (P.psum_p, P.pmax_p, P.pmin_p):
    core.vma_rules[_p] = _minus_axes
    core.vma_prebind_rules[_p] = _make_varying_over_axes
core.vma_prebind_rules[P.pvary_p] = lambda args, params: args
core.vma_rules[P.pvary_p] = lambda in_vmas, params: [v | frozenset(params["axes"])
                                                     for v in in_vmas]
def _gathered(in_vmas, params):
    """all_gather's result is the same on every device of its axes (JAX's
    ``all_gather_invariant``; JAX 0.10's ``all_gather`` types it varying and rejects an
    out_spec that replicates it, functrax accepts that and transposes accordingly)."""
    name = params["axis_name"]
    return [v - frozenset(name if isinstance(name, tuple) else (name,)) for v in in_vmas]


core.vma_rules[P.all_gather_p] = _gathered
for _p in (P.reduce_scatter_p, P.ppermute_p, P.all_to_all_p):
    core.vma_rules[_p] = _same_as_input  # varying stays varying
core.vma_rules[P.axis_index_p] = _axis_index_vma
