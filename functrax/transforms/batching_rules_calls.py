"""vmap rules for the higher-order primitives: custom_jvp_call, custom_vjp_call, custom_lin
and remat2.

Each rule batches the sub-jaxpr (``batch_jaxpr``) and binds the same primitive again, so
the result still carries its rule: ``grad(vmap(f))`` and ``vmap(grad(f))`` both use a
custom derivative, and a vmapped checkpoint is still a checkpoint. The user's rules
(``jvp``, ``fwd``, ``bwd``) become wrappers that run the original rule under a fresh
:class:`BatchTrace` of the same axis (as JAX's ``batch_custom_jvp_subtrace`` /
``batch_custom_vjp_bwd``): their inputs are batched where the primitive's operands were,
their outputs are moved to the batch axes of the primitive's outputs, and a ``bwd``
cotangent for an unbatched input is summed over the batch (the input is shared by every
example).
"""
from __future__ import annotations

from functrax import core
from functrax import primitives as P
from functrax.core.tracing import fun_name
from functrax.transforms.batching import (
    BatchTrace, BatchTracer, batch_jaxpr, matchaxis, vmap_rules,
)
from functrax.transforms.call_util import closure_convert
from functrax.transforms.checkpoint import remat_p
from functrax.transforms.custom_derivatives import (
    custom_jvp_call_p, custom_lin_p, custom_vjp_call_p,
)
from functrax.transforms.jvp import Zero


def _batched_sub(closed, axis, dims):
    """``closed`` batched along ``dims``: (jaxpr without consts, its consts, out_dims)."""
    batched, out_dims = batch_jaxpr(closed, axis, dims)
    batched, consts = closure_convert(batched)
    return batched, consts, list(out_dims)


def _call_batched(axis, fn, args, dims):
    """Run ``fn(list_of_args) -> list`` with ``args`` batched along ``dims``.

    Returns one ``(value, bdim)`` pair per output (``None`` and :class:`Zero` outputs pass
    through unbatched). The axis name is bound again: a ``bwd`` may run after the vmap
    that made it has returned.
    """
    trace = BatchTrace(core.current_trace(), axis)
    with core.extend_axis_env(axis.name, axis.size), core.new_trace(trace):
        ins = [a if d is None or a is None or type(a) is Zero else BatchTracer(trace, a, d)
               for a, d in zip(args, dims)]
        outs = fn(ins)
        return [(o, None) if o is None or type(o) is Zero else trace.lift(o) for o in outs]


def _unbatched_zero(z, d):
    if d is None:
        return z
    shape = z.aval.shape
    return Zero(z.aval.update(shape=shape[:d] + shape[d + 1:]))


def _match(size, val, src, dst):
    if val is None:
        return None
    if type(val) is Zero:
        if dst is None:
            return val
        shape = list(val.aval.shape)
        shape.insert(dst, size)
        return Zero(val.aval.update(shape=tuple(shape)))
    return matchaxis(size, src, dst, val)


def _match_or_sum(size, val, src, dst):
    """Like matchaxis, but a batched cotangent of an unbatched input is summed."""
    if val is not None and type(val) is not Zero and src is not None and dst is None:
        return P.reduce_sum(val, (src,))
    return _match(size, val, src, dst)


class _OutDims:
    """The batch axes of a call's outputs, which its rule may widen while the bind that
    calls the rule (a JVP of the call) is in progress (as JAX's ``out_dims2``)."""

    def __init__(self, dims, name, what):
        self.dims = list(dims)
        self.live = True
        self.name = name
        self.what = what

    def targets(self, *pair_groups):
        """Output batch axes given (value, bdim) pairs of the rule's outputs."""
        batched = [any(d is not None for _, d in group) for group in zip(*pair_groups)]
        if not any(b and d is None for b, d in zip(batched, self.dims)):
            return self.dims
        if not self.live:
            raise ValueError(f"vmap: the custom {self.what} rule of {self.name} returns an "
                             f"output batched along the vmapped axis where the function's own "
                             f"output is not batched; make the rule's outputs depend on the "
                             f"batched inputs exactly as the function's outputs do")
        self.dims = [0 if b and d is None else d for b, d in zip(batched, self.dims)]
        return self.dims


# --- custom_jvp_call ---


def _batched_jvp(jvp, axis, in_dims, out):
    def batched_jvp(primals, tangents):
        t_dims = [None if type(t) is Zero else d for t, d in zip(tangents, in_dims)]
        tangents = [_unbatched_zero(t, d) if type(t) is Zero else t
                    for t, d in zip(tangents, in_dims)]
        n = len(primals)
        n_out = []

        def f(ins):
            outs, t_outs = jvp(ins[:n], ins[n:])
            n_out.append(len(outs))
            return list(outs) + list(t_outs)
        pairs = _call_batched(axis, f, list(primals) + tangents, list(in_dims) + t_dims)
        p_pairs, t_pairs = pairs[:n_out[0]], pairs[n_out[0]:]
        dims = out.targets(p_pairs, t_pairs)
        outs = [_match(axis.size, v, d, dst) for (v, d), dst in zip(p_pairs, dims)]
        t_outs = [_match(axis.size, v, d, dst) for (v, d), dst in zip(t_pairs, dims)]
        return outs, t_outs
    batched_jvp.__name__ = fun_name(jvp)
    return batched_jvp


def _custom_jvp_call_vmap(axis, vals, dims, *, call_jaxpr, jvp, num_consts, symbolic_zeros,
                          name):
    closed, consts, out_dims = _batched_sub(call_jaxpr, axis, dims)
    out = _OutDims(out_dims, name, "JVP")
    try:
        outs = custom_jvp_call_p.bind(
            *consts, *vals, call_jaxpr=closed, jvp=_batched_jvp(jvp, axis, dims[num_consts:], out),
            num_consts=len(consts) + num_consts, symbolic_zeros=symbolic_zeros, name=name)
    finally:
        out.live = False
    return outs, out.dims


vmap_rules[custom_jvp_call_p] = _custom_jvp_call_vmap


# --- custom_vjp_call ---


def _batched_fwd(fwd, axis, in_dims, out):
    def batched_fwd(*primals, perturbed=None):
        box = []

        def f(ins):
            outs, res, res_tree = fwd(*ins, perturbed=perturbed)
            box.append((len(outs), res_tree))
            return list(outs) + list(res)
        pairs = _call_batched(axis, f, list(primals), list(in_dims))
        n_out, res_tree = box[0]
        o_pairs, r_pairs = pairs[:n_out], pairs[n_out:]
        dims = out.targets(o_pairs)
        outs = [_match(axis.size, v, d, dst) for (v, d), dst in zip(o_pairs, dims)]
        res = [v for v, _ in r_pairs]
        res_dims = tuple(d for _, d in r_pairs)
        # the bwd wrapper receives this in place of the residuals' tree
        return outs, res, (res_tree, res_dims, tuple(dims))
    batched_fwd.__name__ = fun_name(fwd)
    return batched_fwd


def _batched_bwd(bwd, axis, in_dims):
    def batched_bwd(res_info, res, cts):
        res_tree, res_dims, out_dims = res_info
        n_res = len(res)
        ct_dims = [None if c is None or type(c) is Zero else d for c, d in zip(cts, out_dims)]
        cts = [_unbatched_zero(c, d) if type(c) is Zero else c for c, d in zip(cts, out_dims)]
        pairs = _call_batched(axis, lambda ins: bwd(res_tree, ins[:n_res], ins[n_res:]),
                              list(res) + cts, list(res_dims) + ct_dims)
        return [_match_or_sum(axis.size, c, d, want) for (c, d), want in zip(pairs, in_dims)]
    batched_bwd.__name__ = fun_name(bwd)
    return batched_bwd


def _custom_vjp_call_vmap(axis, vals, dims, *, call_jaxpr, fwd, bwd, num_consts,
                          symbolic_zeros, name):
    closed, consts, out_dims = _batched_sub(call_jaxpr, axis, dims)
    out = _OutDims(out_dims, name, "VJP fwd")
    arg_dims = dims[num_consts:]
    try:
        outs = custom_vjp_call_p.bind(
            *consts, *vals, call_jaxpr=closed, fwd=_batched_fwd(fwd, axis, arg_dims, out),
            bwd=_batched_bwd(bwd, axis, arg_dims), num_consts=len(consts) + num_consts,
            symbolic_zeros=symbolic_zeros, name=name)
    finally:
        out.live = False
    return outs, out.dims


vmap_rules[custom_vjp_call_p] = _custom_vjp_call_vmap


# --- custom_lin (the linear part of a custom_vjp under JVP) ---


def _custom_lin_vmap(axis, vals, dims, *, num_res, bwd, out_avals, symbolic_zeros, name):
    # the outputs' batching is only known to bwd, which runs later: batch them all (axis 0)
    res_dims, lin_dims = dims[:num_res], dims[num_res:]
    new_avals = tuple(a.update(shape=(axis.size,) + tuple(a.shape)) for a in out_avals)

    def batched_bwd(res, cts):
        ct_dims = [None if type(c) is Zero else 0 for c in cts]
        cts = [_unbatched_zero(c, d) if type(c) is Zero else c for c, d in zip(cts, ct_dims)]
        pairs = _call_batched(axis, lambda ins: bwd(ins[:num_res], ins[num_res:]),
                              list(res) + cts, list(res_dims) + ct_dims)
        return [_match_or_sum(axis.size, c, d, want) for (c, d), want in zip(pairs, lin_dims)]
    batched_bwd.__name__ = fun_name(bwd)
    outs = custom_lin_p.bind(*vals, num_res=num_res, bwd=batched_bwd, out_avals=new_avals,
                             symbolic_zeros=symbolic_zeros, name=name)
    return outs, [0] * len(outs)


vmap_rules[custom_lin_p] = _custom_lin_vmap


# --- remat2 (checkpoint) ---


def _remat_vmap(axis, vals, dims, *, jaxpr, **params):
    closed, consts, out_dims = _batched_sub(jaxpr, axis, dims)
    return remat_p.bind(*consts, *vals, jaxpr=closed, **params), out_dims


vmap_rules[remat_p] = _remat_vmap
