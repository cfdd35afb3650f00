"""The ``while`` primitive's transformation rules: jvp, partial evaluation, transpose and
vmap (numpy rule: ``functrax/lowering/numpy/control_flow.py``; dce rule:
``functrax/passes/dce_control_flow.py``). Each rule transforms the cond/body jaxprs and binds
``while`` again.

Operands are ``*cond_consts, *body_consts, *carry``; the sub-jaxprs in params never have
constvars (their consts are closure-converted into leading operands).
"""
from __future__ import annotations

from functrax import core, dtypes
from functrax import primitives as P
from functrax.control_flow.loops import while_p
from functrax.core import ClosedJaxpr, Jaxpr, Var
from functrax.passes.dce import dce_jaxpr
from functrax.core.tracing import trace_to_jaxpr
from functrax.transforms.ad import jvp_flat
from functrax.transforms.batching import BatchTrace, BatchTracer, matchaxis, moveaxis, vmap_rules
from functrax.transforms.call_util import closure_convert
from functrax.transforms.jvp import Zero, instantiate, jvp_rules, tangent_aval
from functrax.transforms.partial_eval import partial_eval_closed, partial_eval_rules
from functrax.transforms.transpose import transpose_rules


def _split3(xs, n1, n2):
    xs = list(xs)
    return xs[:n1], xs[n1:n1 + n2], xs[n1 + n2:]


def _bind(cconsts, bconsts, carry, cond, body):
    return while_p.bind(*cconsts, *bconsts, *carry, cond_nconsts=len(cconsts), cond_jaxpr=cond,
                        body_nconsts=len(bconsts), body_jaxpr=body)


def _eval(closed: ClosedJaxpr, *args):
    return core.eval_jaxpr(closed.jaxpr, closed.consts, *args)


# --- jvp: tangents ride along as extra carries; the condition ignores them ---


def _nonzero(t) -> bool:
    return type(t) is not Zero and core.get_aval(t).dtype != dtypes.float0


def _jvp_body(body: ClosedJaxpr, nconsts, const_nz, carry_nz):
    """The body's JVP as a jaxpr ``(consts, const_dots, carry, carry_dots) -> (carry,
    carry_dots)`` for the nonzero tangents; returns it and which output tangents are
    nonzero. Output tangents of ``carry_nz`` carries are instantiated."""
    in_avals = body.in_avals
    nz = list(const_nz) + list(carry_nz)
    t_avals = [tangent_aval(a) for a, z in zip(in_avals, nz) if z]
    n_cdot, n_carry = sum(const_nz), len(carry_nz)
    avals = in_avals[:nconsts] + t_avals[:n_cdot] + in_avals[nconsts:] + t_avals[n_cdot:]
    box = {}

    def jvp_body(*args):
        consts, cdots, rest = _split3(args, nconsts, n_cdot)
        carry, kdots = rest[:n_carry], rest[n_carry:]
        dots = iter(cdots + kdots)
        tangents = [next(dots) if z else Zero(tangent_aval(a)) for a, z in zip(in_avals, nz)]
        outs, t_outs = jvp_flat(lambda *p: _eval(body, *p), consts + carry, tangents)
        box["nz_out"] = [_nonzero(t) for t in t_outs]
        return list(outs) + [instantiate(t) for t, z in zip(t_outs, carry_nz) if z]

    return trace_to_jaxpr(jvp_body, avals), box["nz_out"]


def _differentiable(aval) -> bool:
    return tangent_aval(aval).dtype != dtypes.float0


def _augment_cond(cond: ClosedJaxpr, extra_avals) -> ClosedJaxpr:
    """``cond`` taking (and ignoring) extra trailing inputs."""
    j = cond.jaxpr
    invars = j.invars + [Var(a) for a in extra_avals]
    return ClosedJaxpr(Jaxpr(j.constvars, invars, j.outvars, j.eqns, j.debug_info), cond.consts)


def _while_jvp(primals, tangents, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    nz = [_nonzero(t) for t in tangents]
    _, bconst_nz, init_nz = _split3(nz, cond_nconsts, body_nconsts)
    carry_avals = body_jaxpr.in_avals[body_nconsts:]
    carry_nz = list(init_nz)
    for _ in range(len(carry_nz) + 1):  # fixed point: a carry's tangent is nonzero if any
        body_jvp, nz_out = _jvp_body(body_jaxpr, body_nconsts, bconst_nz, carry_nz)
        new = [(c or o) and _differentiable(a) for c, o, a in zip(carry_nz, nz_out, carry_avals)]
        if new == carry_nz:
            break
        carry_nz = new
    body_jvp, jvp_consts = closure_convert(body_jvp)
    cconsts, bconsts, init = _split3(primals, cond_nconsts, body_nconsts)
    _, bdots, idots = _split3(tangents, cond_nconsts, body_nconsts)
    bdots = [t for t, z in zip(bdots, bconst_nz) if z]
    idots = [instantiate(t) for t, z in zip(idots, carry_nz) if z]
    dot_avals = [tangent_aval(a) for a, z in zip(carry_avals, carry_nz) if z]
    outs = _bind(cconsts, jvp_consts + bconsts + bdots, init + idots,
                 _augment_cond(cond_jaxpr, dot_avals), body_jvp)
    n = len(carry_avals)
    dots = iter(outs[n:])
    t_outs = [next(dots) if z else Zero(tangent_aval(a))
              for z, a in zip(carry_nz, body_jaxpr.out_avals)]
    return outs[:n], t_outs


jvp_rules[while_p] = _while_jvp


# --- partial evaluation ---
# As JAX: when the condition and some carries are known, a loop over only the known parts
# computes the known outputs (so e.g. linearize gets known primal outputs); the unknown
# outputs come from the whole loop, staged with the known operands as residuals (it
# recomputes the known parts, like rematerialization). Its transpose raises JAX's error.


def _trim(known: ClosedJaxpr, n_out):
    """The known jaxpr computing only its first ``n_out`` outputs (residuals dropped), as
    (jaxpr without consts, consts)."""
    used = [i < n_out for i in range(len(known.jaxpr.outvars))]
    return closure_convert(ClosedJaxpr(dce_jaxpr(known.jaxpr, used)[0], known.consts))


def _carry_unknowns(body, bconst_uk, init_uk):
    """Fixed point: a carry is unknown if its initial value is, or the body makes it so.
    Returns (carry_uk, the body's known part for those unknowns)."""
    carry_uk = list(init_uk)
    for _ in range(len(carry_uk) + 1):
        known, _, out_uk, _ = partial_eval_closed(body, bconst_uk + carry_uk, carry_uk)
        new = [c or o for c, o in zip(carry_uk, out_uk)]
        if new == carry_uk:
            return carry_uk, known
        carry_uk = new
    raise AssertionError("while partial eval: fixed point not reached")


def _while_partial_eval(trace, args, params):
    cn, bn = params["cond_nconsts"], params["body_nconsts"]
    cond, body = params["cond_jaxpr"], params["body_jaxpr"]
    cconst_uk, bconst_uk, init_uk = _split3([trace.is_unknown(x) for x in args], cn, bn)
    with core.set_current_trace(trace.parent):
        carry_uk, body_known = _carry_unknowns(body, bconst_uk, init_uk)
        cond_known, _, (pred_uk,), _ = partial_eval_closed(cond, cconst_uk + carry_uk)
    if pred_uk or all(carry_uk):
        return trace.stage(while_p, args, params)
    cconsts, bconsts, init = _split3(args, cn, bn)

    def known(xs, uk):
        return [x for x, u in zip(xs, uk) if not u]

    with core.set_current_trace(trace.parent):
        cond_k, ck_consts = _trim(cond_known, 1)
        body_k, bk_consts = _trim(body_known, carry_uk.count(False))
        known_outs = _bind(ck_consts + known(cconsts, cconst_uk),
                           bk_consts + known(bconsts, bconst_uk), known(init, carry_uk),
                           cond_k, body_k)
    staged = trace.stage(while_p, args, params) if any(carry_uk) else []
    k_it = iter(known_outs)
    return [staged[i] if u else next(k_it) for i, u in enumerate(carry_uk)]


partial_eval_rules[while_p] = _while_partial_eval


# --- transpose: reverse mode through an unbounded loop is not supported (as JAX) ---
REVERSE_MODE_ERROR = (
    "Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop with "
    "dynamic start/stop values. Try using lax.scan, or using fori_loop with static "
    "start/stop.")


def _while_transpose(cts, *args, **params):
    raise ValueError(REVERSE_MODE_ERROR)


transpose_rules[while_p] = _while_transpose


# --- vmap ---
# Batched operands move their batch axis to 0. Which carries are batched is a fixed point
# (a carry is batched if its initial value is, or the body makes it so). An unbatched
# predicate keeps a plain loop over the batched carries. A batched predicate runs until every
# lane is done: all carries are batched, the condition becomes ``any(pred)`` and the body
# recomputes the per-lane predicate and keeps the carry of finished lanes (select).


def _batch_closed(closed: ClosedJaxpr, axis, in_bat, force):
    """``closed`` batched along axis 0 of the ``in_bat`` inputs; outputs in ``force`` (and
    every batched output) get their batch axis at 0. Returns (jaxpr, out_batched)."""
    size = axis.size
    in_avals = [a.update(shape=(size,) + a.shape) if b else a
                for a, b in zip(closed.in_avals, in_bat)]
    box = {}

    def batched(*args):
        trace = BatchTrace(core.current_trace(), axis)
        with core.new_trace(trace):
            ins = [BatchTracer(trace, x, 0) if b else x for x, b in zip(args, in_bat)]
            pairs = [trace.lift(o) for o in _eval(closed, *ins)]
        box["out_bat"] = [d is not None for _, d in pairs]
        return [matchaxis(size, d, 0, v) if d is not None or f else v
                for (v, d), f in zip(pairs, force)]

    return trace_to_jaxpr(batched, in_avals), box["out_bat"]


def _batched_carries(axis, body, bconst_bat, init_bat):
    """Fixed point: a carry is batched if its initial value is, or the body makes it so.
    Returns (carry_bat, the body batched for it)."""
    carry_bat = list(init_bat)
    for _ in range(len(carry_bat) + 1):
        body_b, out_bat = _batch_closed(body, axis, bconst_bat + carry_bat, carry_bat)
        new = [c or o for c, o in zip(carry_bat, out_bat)]
        if new == carry_bat:
            return carry_bat, body_b
        carry_bat = new
    raise AssertionError("while vmap: fixed point not reached")


def _lane_select_loop(cond_b: ClosedJaxpr, body_b: ClosedJaxpr, n_cc, n_bc):
    """(cond, body) of the loop with a batched predicate: ``cond`` is ``any(pred)``; the
    body (consts: cond consts then body consts) steps only the lanes whose pred holds."""
    in_avals = cond_b.in_avals[:n_cc] + body_b.in_avals

    def cond(*args):
        pred, = _eval(cond_b, *args)
        return [P.reduce_or(pred, (0,))]

    def body(*args):
        cconsts, bconsts, carry = _split3(args, n_cc, n_bc)
        pred, = _eval(cond_b, *cconsts, *carry)
        new = _eval(body_b, *bconsts, *carry)
        return [P.select(P.broadcast_in_dim(pred, core.get_aval(c).shape, (0,)), n, c)
                for n, c in zip(new, carry)]

    cond_avals = cond_b.in_avals[:n_cc] + body_b.in_avals[n_bc:]
    return trace_to_jaxpr(cond, cond_avals), trace_to_jaxpr(body, in_avals)


def _while_vmap(axis, vals, dims, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    size = axis.size
    vals = [v if d is None else moveaxis(v, d, 0) for v, d in zip(vals, dims)]
    bat = [d is not None for d in dims]
    cconst_bat, bconst_bat, init_bat = _split3(bat, cond_nconsts, body_nconsts)
    cconsts, bconsts, init = _split3(vals, cond_nconsts, body_nconsts)
    carry_bat, body_b = _batched_carries(axis, body_jaxpr, bconst_bat, init_bat)
    cond_b, (pred_bat,) = _batch_closed(cond_jaxpr, axis, cconst_bat + carry_bat, [False])
    if pred_bat and not all(carry_bat):  # every lane steps its own carry: batch them all
        carry_bat = [True] * len(carry_bat)
        body_b, _ = _batch_closed(body_jaxpr, axis, bconst_bat + carry_bat, carry_bat)
        cond_b, _ = _batch_closed(cond_jaxpr, axis, cconst_bat + carry_bat, [True])
    init = [matchaxis(size, 0 if d else None, 0, v) if b else v
            for v, d, b in zip(init, init_bat, carry_bat)]
    cond_b, c_consts = closure_convert(cond_b)
    body_b, b_consts = closure_convert(body_b)
    cconsts, bconsts = c_consts + cconsts, b_consts + bconsts
    if pred_bat:
        cond_b, body_b = _lane_select_loop(cond_b, body_b, len(cconsts), len(bconsts))
        cond_b, c2 = closure_convert(cond_b)
        body_b, b2 = closure_convert(body_b)
        cconsts, bconsts = c2 + cconsts, b2 + cconsts + bconsts
    outs = _bind(cconsts, bconsts, init, cond_b, body_b)
    return outs, [0 if b else None for b in carry_bat]


vmap_rules[while_p] = _while_vmap




