"""The ``cond`` primitive's transformation rules: jvp, partial evaluation, transposition and
vmap (its numpy rule is in ``functrax/lowering/numpy/control_flow.py``, its cost in
``functrax/lowering/cost.py``, its dce rule in ``functrax/passes/dce_control_flow.py``).

Each rule transforms every branch the same way and binds one ``cond`` again, so the result
still runs only the selected branch: ``grad(cond)``, ``vmap(cond)`` (unbatched index),
``jit(cond)``, ... all stay conds. Branch jaxprs built here are traced with
``trace_to_jaxpr`` and their consts joined (``join_closed``) into leading operands.
"""
from __future__ import annotations

import numpy as np

from functrax import core, dtypes
from functrax import primitives as P
from functrax.control_flow.cond import cond_p, join_closed
from functrax.core import ClosedJaxpr, Jaxpr, Var, typematch
from functrax.core.tracing import trace_to_jaxpr
from functrax.transforms.ad import jvp_jaxpr_nz
from functrax.primitives.callbacks import IOEffect, OrderedIOEffect
from functrax.transforms.batching import batch_jaxpr, bdim_at_front, matchaxis, vmap_rules
from functrax.transforms.jvp import Zero, instantiate, jvp_rules, tangent_aval
from functrax.transforms.partial_eval import partial_eval_closed, partial_eval_rules
from functrax.transforms.transpose import backward_pass, is_undefined, transpose_rules


# --- jvp: one cond over the jvp'd branches ---


def _is_float0(aval) -> bool:
    return aval.dtype == dtypes.float0


def _cond_jvp(primals, tangents, *, branches):
    index, ops = primals[0], primals[1:]
    op_ts = tangents[1:]
    nonzero = [type(t) is not Zero and not _is_float0(tangent_aval(core.get_aval(p)))
               for p, t in zip(ops, op_ts)]
    traced = [jvp_jaxpr_nz(b, nonzero, False) for b in branches]
    out_nz = [any(col) for col in zip(*[nz for _, nz in traced])]
    traced = [j if nz == out_nz else jvp_jaxpr_nz(b, nonzero, out_nz)[0]
              for (j, nz), b in zip(traced, branches)]
    jaxprs, consts = join_closed(traced)
    nz_ts = [t for t, nz in zip(op_ts, nonzero) if nz]
    outs = cond_p.bind(index, *consts, *ops, *nz_ts, branches=jaxprs)
    n = len(out_nz)
    t_it = iter(outs[n:])
    t_outs = [next(t_it) if nz else Zero(tangent_aval(a))
              for nz, a in zip(out_nz, branches[0].out_avals)]
    return outs[:n], t_outs


jvp_rules[cond_p] = _cond_jvp


# --- partial evaluation: a known cond (outputs + residuals) and a staged unknown cond ---
def _merge_residuals(res_avals_per_branch):
    """Assign each branch's residuals to shared slots (a slot holds one residual per
    branch; branches reuse slots of equal type). Returns (slot avals, slot indices per
    branch)."""
    slots, assignment = [], []
    for res_avals in res_avals_per_branch:
        used, mine = set(), []
        for a in res_avals:
            s = next((i for i, b in enumerate(slots) if i not in used and typematch(a, b)),
                     None)
            if s is None:
                s = len(slots)
                slots.append(a)
            used.add(s)
            mine.append(s)
        assignment.append(mine)
    return slots, assignment


def _known_branch(known: ClosedJaxpr, n_known: int, slot_idx, slot_avals):
    """The known part of a branch outputting its known outputs then every slot (zeros in
    the slots of the other branches' residuals)."""
    def f(*args):
        outs = core.eval_jaxpr(known.jaxpr, known.consts, *args)
        vals = [None] * len(slot_avals)
        for r, s in zip(outs[n_known:], slot_idx):
            vals[s] = r
        return list(outs[:n_known]) + [P.full(a.shape, 0, a.dtype) if v is None else v
                                       for v, a in zip(vals, slot_avals)]
    return trace_to_jaxpr(f, known.in_avals)


def _unknown_branch(unknown: ClosedJaxpr, num_res: int, slot_idx, slot_avals):
    """The unknown part of a branch taking every slot (ignoring the others' residuals)."""
    j = unknown.jaxpr
    lead = [Var(a) for a in slot_avals]
    for k, s in enumerate(slot_idx):
        lead[s] = j.invars[k]
    return ClosedJaxpr(Jaxpr([], lead + j.invars[num_res:], j.outvars, j.eqns), [])


def _cond_partial_eval(trace, args, params):
    branches = params["branches"]
    index, ops = args[0], list(args[1:])
    if trace.is_unknown(index):
        return trace.stage(cond_p, args, params)
    unknowns = [trace.is_unknown(x) for x in ops]
    known_ops = [x for x, u in zip(ops, unknowns) if not u]
    n_out = len(branches[0].out_avals)
    with core.set_current_trace(trace.parent):
        splits = [partial_eval_closed(b, unknowns) for b in branches]
        out_unk = [any(col) for col in zip(*[s[2] for s in splits])] if n_out else []
        splits = [s if s[2] == out_unk else partial_eval_closed(b, unknowns, out_unk)
                  for s, b in zip(splits, branches)]
        n_known = out_unk.count(False)
        if any(out_unk):
            slot_avals, slot_idx = _merge_residuals(
                [k.out_avals[n_known:] for k, _, _, _ in splits])
        else:  # nothing is staged: no residuals needed
            slot_avals, slot_idx = [], [[] for _ in splits]
        known = [_known_branch(k, n_known, idx, slot_avals)
                 for (k, _, _, _), idx in zip(splits, slot_idx)]
        k_jaxprs, k_consts = join_closed(known)
        k_outs = cond_p.bind(index, *k_consts, *known_ops, branches=k_jaxprs) \
            if n_known or slot_avals else []
    if not any(out_unk):
        return k_outs
    res = k_outs[n_known:]
    u_jaxprs = tuple(_unknown_branch(u, nres, idx, slot_avals)
                     for (_, u, _, nres), idx in zip(splits, slot_idx))
    unknown_ops = [x for x, u in zip(ops, unknowns) if u]
    u_outs = iter(trace.stage(cond_p, [index, *res, *unknown_ops], dict(branches=u_jaxprs)))
    k_it = iter(k_outs[:n_known])
    return [next(u_outs) if u else next(k_it) for u in out_unk]


partial_eval_rules[cond_p] = _cond_partial_eval


# --- transpose: one cond over the transposed branches (the index is not linear) ---
def _transpose_branch(branch: ClosedJaxpr, lin, res_avals, cts_present, ct_avals):
    j = branch.jaxpr
    lin_jaxpr = Jaxpr(j.constvars + [v for v, u in zip(j.invars, lin) if not u],
                      [v for v, u in zip(j.invars, lin) if u], j.outvars, j.eqns)
    n_res = len(res_avals)

    def bwd(*args):
        res, cts = list(args[:n_res]), iter(args[n_res:])
        cts = [next(cts) if p else Zero(a) for p, a in zip(cts_present, ct_avals)]
        cts_in = backward_pass(lin_jaxpr, list(branch.consts) + res, cts)
        return [instantiate(c) for c in cts_in]

    in_avals = res_avals + [a for a, p in zip(ct_avals, cts_present) if p]
    return trace_to_jaxpr(bwd, in_avals)


def _cond_transpose(cts, index, *ops, branches):
    if is_undefined(index):
        raise TypeError("cond: the branch index cannot be a linear input")
    lin = [is_undefined(x) for x in ops]
    res = [x for x, u in zip(ops, lin) if not u]
    res_avals = [core.get_aval(x) for x in res]
    ct_avals = [tangent_aval(a) for a in branches[0].out_avals]
    present = [type(c) is not Zero and c is not None and not _is_float0(a)
               for c, a in zip(cts, ct_avals)]
    jaxprs, consts = join_closed([_transpose_branch(b, lin, res_avals, present, ct_avals)
                                  for b in branches])
    given = [c for c, p in zip(cts, present) if p]
    outs = iter(cond_p.bind(index, *consts, *res, *given, branches=jaxprs))
    return [None] + [next(outs) if u else None for u in lin]


transpose_rules[cond_p] = _cond_transpose


# --- vmap ---
def _bcast_to(pred, like):
    """``pred`` (batch,) broadcast along the trailing axes of ``like`` (batch, ...)."""
    shape = core.get_aval(like).shape
    if len(shape) == 1:
        return pred
    return P.broadcast_in_dim(pred, shape, (0,))


def _vmap_batched_index(axis, vals, dims, branches):
    """A batched index: run every branch on the whole batch and select per example (an IO
    callback in a branch cannot run for the examples that do not take it: JAX's error)."""
    if any(isinstance(e, (IOEffect, OrderedIOEffect)) for b in branches for e in b.effects):
        raise NotImplementedError("IO effect not supported in vmap-of-cond.")
    size = axis.size
    index = bdim_at_front(vals[0], dims[0], size)
    ops = [bdim_at_front(x, d, size) for x, d in zip(vals[1:], dims[1:])]
    index = P.clamp(np.int32(0), index, np.int32(len(branches) - 1))
    per_branch = []
    for i, branch in enumerate(branches):
        batched, out_dims = batch_jaxpr(branch, axis, [0] * len(ops))
        # examples that do not take this branch get no gradient through it (as JAX: a
        # NaN derivative of an unselected branch must not leak into the cotangents)
        take = P.eq(index, np.int32(i))
        ins = [P.select(_bcast_to(take, x), x, P.stop_gradient(x))
               if dtypes.is_inexact(core.get_aval(x).dtype) else x for x in ops]
        outs = core.eval_jaxpr(batched.jaxpr, batched.consts, *ins)
        per_branch.append([bdim_at_front(o, d, size) for o, d in zip(outs, out_dims)])
    outs = [P.select_n(_bcast_to(index, cases[0]), *cases) for cases in zip(*per_branch)]
    return outs, [0] * len(outs)


def _retarget(closed: ClosedJaxpr, size: int, out_dims, targets):
    """``closed`` with its outputs moved (or broadcast) from ``out_dims`` to ``targets``."""
    def f(*args):
        outs = core.eval_jaxpr(closed.jaxpr, closed.consts, *args)
        return [matchaxis(size, d, t, o) for o, d, t in zip(outs, out_dims, targets)]
    return trace_to_jaxpr(f, closed.in_avals)


def _cond_vmap(axis, vals, dims, *, branches):
    if dims[0] is not None:
        return _vmap_batched_index(axis, vals, dims, branches)
    op_dims = list(dims[1:])
    batched = [batch_jaxpr(b, axis, op_dims) for b in branches]
    targets = []
    for col in zip(*[d for _, d in batched]):
        targets.append(col[0] if all(d == col[0] for d in col) else 0)
    fixed = [j if list(d) == targets else _retarget(j, axis.size, d, targets)
             for j, d in batched]
    jaxprs, consts = join_closed(fixed)
    outs = cond_p.bind(vals[0], *consts, *vals[1:], branches=jaxprs)
    return outs, targets


vmap_rules[cond_p] = _cond_vmap




