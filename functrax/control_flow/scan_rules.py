"""The ``scan`` primitive's transformation rules: jvp, partial evaluation, transpose, vmap.

Each rule transforms the body jaxpr and binds ``scan`` again:

- jvp: a fixed point decides which carries have nonzero tangents (a carry whose tangent
  becomes nonzero after one iteration has a nonzero tangent from the start); the body's JVP
  becomes one scan with the tangents as extra consts / carries / xs.
- partial evaluation (reverse mode): a fixed point decides which carries are unknown; the
  body is split into a known scan, which also emits the residuals the unknown part reads as
  extra stacked ``ys`` (residuals that depend only on consts are computed once, outside the
  loop), and an unknown scan that reads the stacked residuals as ``xs``. Only what the
  backward pass needs is stored, so a ``checkpoint`` in the body shrinks the residuals.
- transpose: the linear scan runs backwards: the carry cotangents are carried, the
  cotangents of the linear xs are emitted as ys, and those of linear consts are accumulated
  in extra carries.
- vmap: a fixed point decides which carries are batched (batch axis 0); batched xs have
  their batch axis moved to 1 (after the scanned axis), so batched ys come out at axis 1.

Its numpy rule is in ``functrax/lowering/numpy/control_flow.py``, its dce rule (unused ys and
dead carries dropped) in ``functrax/passes/dce_control_flow.py``.
"""
from __future__ import annotations

from functrax import core, dtypes
from functrax import primitives as P
from functrax.primitives.control_flow import scan_p, split_at
from functrax.core import ClosedJaxpr, Jaxpr, Var
from functrax.passes.dce import dce_jaxpr
from functrax.passes.inline import inlinable
from functrax.core.tracing import trace_to_jaxpr
from functrax.transforms.ad import jvp_jaxpr_nz
from functrax.transforms.batching import (
    batch_jaxpr, bdim_at_front, matchaxis, moveaxis, vmap_rules,
)
from functrax.transforms.call_util import closure_convert
from functrax.transforms.jvp import Zero, add_tangents, instantiate, jvp_rules, tangent_aval
from functrax.transforms.partial_eval import partial_eval_closed, partial_eval_rules
from functrax.transforms.transpose import backward_pass, is_undefined, transpose_rules


def _reorder(closed: ClosedJaxpr, in_order, out_order) -> ClosedJaxpr:
    """``closed`` with its invars / outvars permuted (indices into the old lists)."""
    j = closed.jaxpr
    jaxpr = Jaxpr(j.constvars, [j.invars[i] for i in in_order],
                  [j.outvars[i] for i in out_order], j.eqns, j.debug_info)
    return ClosedJaxpr(jaxpr, closed.consts)


def _bind(consts, init, xs, closed, params):
    """Bind ``scan`` on a body that may have consts (they become leading operands)."""
    closed, extra = closure_convert(closed)
    return scan_p.bind(*extra, *consts, *init, *xs, jaxpr=closed, length=params["length"],
                       reverse=params["reverse"], unroll=params["unroll"],
                       num_consts=len(extra) + len(consts), num_carry=len(init))


def _is_float(aval) -> bool:
    return dtypes.is_inexact(aval.dtype)


# --- jvp ---


def _nonzero(t) -> bool:
    return type(t) is not Zero and getattr(t, "dtype", None) != dtypes.float0


def _scan_jvp(primals, tangents, *, jaxpr, length, reverse, unroll, num_consts, num_carry):
    params = dict(length=length, reverse=reverse, unroll=unroll)
    n_in, n_out = len(primals), len(jaxpr.out_avals)
    ny = n_out - num_carry
    nz = [_nonzero(t) for t in tangents]
    const_nz, init_nz, xs_nz = split_at(nz, num_consts, num_carry)
    floats = [_is_float(a) for a in jaxpr.in_avals[num_consts:num_consts + num_carry]]
    carry_nz = init_nz
    for _ in range(num_carry + 1):
        body, out_nz = jvp_jaxpr_nz(jaxpr, const_nz + carry_nz + xs_nz, carry_nz + [False] * ny)
        new = [(a or b) and f for a, b, f in zip(carry_nz, out_nz[:num_carry], floats)]
        if new == carry_nz:
            break
        carry_nz = new
    ys_nz = out_nz[num_carry:]
    # the body's invars are the primals (consts, carry, xs) then the nonzero tangents in the
    # same order; the scan wants consts, their tangents, carry, its tangents, xs, theirs
    p_idx = split_at(list(range(n_in)), num_consts, num_carry)
    t_idx = split_at(list(range(n_in, n_in + sum(nz_ for nz_ in const_nz + carry_nz + xs_nz))),
                   sum(const_nz), sum(carry_nz))
    in_order = [i for p, t in zip(p_idx, t_idx) for i in p + t]
    n_cart = sum(carry_nz)
    out_order = (list(range(num_carry)) + list(range(n_out, n_out + n_cart))
                 + list(range(num_carry, n_out))
                 + list(range(n_out + n_cart, n_out + n_cart + sum(ys_nz))))
    body = _reorder(body, in_order, out_order)
    consts, init, xs = split_at(primals, num_consts, num_carry)
    c_t, i_t, x_t = split_at(tangents, num_consts, num_carry)
    init_t = [instantiate(t) for t, n in zip(i_t, carry_nz) if n]
    outs = _bind(consts + [t for t, n in zip(c_t, const_nz) if n], init + init_t,
                 xs + [t for t, n in zip(x_t, xs_nz) if n], body, params)
    carry, carry_t, ys, ys_t = split_at(outs, num_carry, n_cart, ny)
    carry_t, ys_t = iter(carry_t), iter(ys_t)
    t_out = [next(carry_t) if n else Zero(tangent_aval(core.get_aval(o)))
             for o, n in zip(carry, carry_nz)]
    t_out += [next(ys_t) if n else Zero(tangent_aval(core.get_aval(o)))
              for o, n in zip(ys, ys_nz)]
    return carry + ys, t_out


jvp_rules[scan_p] = _scan_jvp


# --- partial evaluation ---


def _unknown_fixed_point(jaxpr, const_uk, init_uk, xs_uk, num_carry):
    ny = len(jaxpr.out_avals) - num_carry
    carry_uk = list(init_uk)
    for _ in range(num_carry + 1):
        split = partial_eval_closed(jaxpr, const_uk + carry_uk + xs_uk,
                                    instantiate=carry_uk + [False] * ny)
        new = [a or b for a, b in zip(carry_uk, split[2][:num_carry])]
        if new == carry_uk:
            return carry_uk, split
        carry_uk = new
    raise AssertionError("scan partial evaluation: the unknown carries did not converge")


def _loop_invariant(j: Jaxpr, n_const_in: int, outvars) -> list:
    """Which of ``outvars`` depend only on the first ``n_const_in`` invars of ``j``."""
    variant = set(j.invars[n_const_in:])
    for eqn in j.eqns:
        if any(type(v) is Var and v in variant for v in eqn.invars):
            variant.update(eqn.outvars)
    return [not (type(v) is Var and v in variant) for v in outvars]


def _scan_partial_eval(trace, args, params):
    jaxpr, nc, ncar = params["jaxpr"], params["num_consts"], params["num_carry"]
    unknowns = [trace.is_unknown(x) for x in args]
    const_uk, init_uk, xs_uk = split_at(unknowns, nc, ncar)
    consts, init, xs = split_at(args, nc, ncar)
    with core.set_current_trace(trace.parent):
        carry_uk, (k_closed, u_closed, out_unk, num_res) = _unknown_fixed_point(
            jaxpr, const_uk, init_uk, xs_uk, ncar)
        known = ([x for x, u in zip(consts, const_uk) if not u],
                 [x for x, u in zip(init, carry_uk) if not u],
                 [x for x, u in zip(xs, xs_uk) if not u])
        k_outs, invariant, inv_res, stacked_res = _known_scan(k_closed, num_res, known, params)
    u_outs = _stage_unknown(trace, params, u_closed, num_res, invariant, inv_res,
                            stacked_res, (consts, const_uk), (init, carry_uk), (xs, xs_uk)) \
        if any(out_unk) else []
    k_it, u_it = iter(k_outs), iter(u_outs)
    return [next(u_it) if u else next(k_it) for u in out_unk]


def _known_scan(k_closed, num_res, known, params):
    """Bind the known scan. Its residuals are sorted into loop-invariant ones (computed
    once, outside the loop), known xs themselves (forwarded, not stored again) and the
    rest, emitted as extra stacked ys.

    Returns (known outputs, invariant flag per residual, invariant residual values,
    stacked residual values).
    """
    consts, init, xs = known
    k_closed, k_extra = closure_convert(k_closed)
    kj = k_closed.jaxpr
    consts = k_extra + consts
    n_kout = len(kj.outvars) - num_res
    alias = _forwarded_inputs(kj)
    res_vars = [alias.get(v, v) for v in kj.outvars[n_kout:]]
    invariant = _loop_invariant(kj, len(consts), res_vars)
    inv_res = _hoist(kj, len(consts), [v for v, i in zip(res_vars, invariant) if i], consts)
    x_pos = {v: i for i, v in enumerate(kj.invars[len(consts) + len(init):])}
    loop_res = [v for v, i in zip(res_vars, invariant) if not i]
    stored = [v for v in loop_res if v not in x_pos]
    body = ClosedJaxpr(dce_jaxpr(Jaxpr([], kj.invars, kj.outvars[:n_kout] + stored,
                                       kj.eqns))[0], [])
    outs = scan_p.bind(*consts, *init, *xs, jaxpr=body, length=params["length"],
                       reverse=params["reverse"], unroll=params["unroll"],
                       num_consts=len(consts), num_carry=len(init)) \
        if body.jaxpr.outvars else []
    stored_vals = iter(outs[n_kout:])
    stacked = [xs[x_pos[v]] if v in x_pos else next(stored_vals) for v in loop_res]
    return outs[:n_kout], invariant, inv_res, stacked


def _forwarded_inputs(j: Jaxpr) -> dict:
    """Outputs of call-like equations (checkpoint, jit) that just forward one of their
    inputs, mapped to that input: such a residual is stored (or forwarded) as the input."""
    alias = {}
    for eqn in j.eqns:
        param = inlinable.get(eqn.primitive)
        if param is None:
            continue
        sub = eqn.params[param]
        sub = sub.jaxpr if isinstance(sub, ClosedJaxpr) else sub
        pos = {v: i for i, v in enumerate(sub.invars)}
        for out, inner in zip(eqn.outvars, sub.outvars):
            src = eqn.invars[pos[inner]] if type(inner) is Var and inner in pos else None
            if type(src) is Var:
                alias[out] = alias.get(src, src)
    return alias


def _hoist(kj: Jaxpr, n_const_in: int, outvars, const_vals) -> list:
    """Evaluate the loop-invariant residuals once, outside the loop."""
    if not outvars:
        return []
    hoisted, _ = dce_jaxpr(Jaxpr([], kj.invars[:n_const_in], outvars, kj.eqns))
    return core.eval_jaxpr(hoisted, [], *const_vals)


def _stage_unknown(trace, params, u_closed, num_res, invariant, inv_res, stacked_res,
                   consts, init, xs):
    """Stage the unknown scan: invariant residuals as consts, stacked ones as xs."""
    (consts, const_uk), (init, carry_uk), (xs, xs_uk) = consts, init, xs
    res_idx = list(range(num_res))
    n_uc, n_ucar = sum(const_uk), sum(carry_uk)
    rest = list(range(num_res, len(u_closed.in_avals)))
    in_order = ([i for i in res_idx if invariant[i]] + rest
                + [i for i in res_idx if not invariant[i]])
    body = _reorder(u_closed, in_order, range(len(u_closed.out_avals)))
    args = (list(inv_res) + [x for x, u in zip(consts, const_uk) if u]
            + [x for x, u in zip(init, carry_uk) if u] + [x for x, u in zip(xs, xs_uk) if u]
            + list(stacked_res))
    return trace.stage(scan_p, args, dict(
        jaxpr=body, length=params["length"], reverse=params["reverse"],
        unroll=params["unroll"], num_consts=len(inv_res) + n_uc, num_carry=n_ucar))


partial_eval_rules[scan_p] = _scan_partial_eval


# --- transpose ---


def _scan_transpose(cts, *args, jaxpr, length, reverse, unroll, num_consts, num_carry):
    consts, init, xs = split_at(args, num_consts, num_carry)
    ct_carry, ct_ys = split_at(cts, num_carry)
    c_lin = [is_undefined(a) for a in consts]
    x_lin = [is_undefined(a) for a in xs]
    if all(type(c) is Zero for c in cts):
        return [Zero(a.aval) if is_undefined(a) else None for a in args]
    j = jaxpr.jaxpr
    cv, carv, xv = split_at(j.invars, num_consts, num_carry)
    # the body is linear in the carries, the linear consts and the linear xs; the other
    # consts and xs are residuals (a carry whose init is a known value is still linear)
    res_vars = [v for v, lin in zip(cv, c_lin) if not lin] + [v for v, lin in zip(xv, x_lin)
                                                              if not lin]
    lin_c = [v for v, lin in zip(cv, c_lin) if lin]
    lin_x = [v for v, lin in zip(xv, x_lin) if lin]
    lin_jaxpr = Jaxpr(res_vars, lin_c + carv + lin_x, j.outvars, j.eqns)
    n_rc = len(consts) - len(lin_c)
    y_avals = jaxpr.out_avals[num_carry:]
    ys_nz = [type(c) is not Zero for c in ct_ys]
    carry_avals = [a.strip_weak_type() for a in jaxpr.in_avals[num_consts:num_consts + num_carry]]

    def body(*a):
        res_c, acc, ct_c, ct_y, res_x = split_at(a, n_rc, len(lin_c), num_carry, sum(ys_nz))
        ct_y = iter(ct_y)
        cts_out = list(ct_c) + [next(ct_y) if nz else Zero(av) for nz, av in zip(ys_nz, y_avals)]
        cts_in = backward_pass(lin_jaxpr, list(res_c) + list(res_x), cts_out)
        ct_lc, ct_carry_in, ct_lx = split_at(cts_in, len(lin_c), num_carry)
        acc = [instantiate(add_tangents(s, c)) for s, c in zip(acc, ct_lc)]
        return acc + [_inst(c, av) for c, av in zip(ct_carry_in, carry_avals)] + [
            _inst(c, v.aval) for c, v in zip(ct_lx, lin_x)]

    in_avals = ([v.aval for v in res_vars[:n_rc]] + [v.aval.strip_weak_type() for v in lin_c]
                + carry_avals + [a for a, nz in zip(y_avals, ys_nz) if nz]
                + [v.aval for v in res_vars[n_rc:]])
    t_body = trace_to_jaxpr(body, in_avals)
    res_c = [a for a in consts if not is_undefined(a)]
    res_x = [a for a in xs if not is_undefined(a)]
    acc0 = [P.full(v.aval.shape, 0, v.aval.dtype) for v in lin_c]
    ct_c0 = [_inst(c, av) for c, av in zip(ct_carry, carry_avals)]
    outs = _bind(res_c, acc0 + ct_c0, [c for c in ct_ys if type(c) is not Zero] + res_x, t_body,
                 dict(length=length, reverse=not reverse, unroll=unroll))
    ct_consts, ct_init, ct_xs = split_at(outs, len(lin_c), num_carry)
    ct_consts, ct_xs = iter(ct_consts), iter(ct_xs)
    return ([next(ct_consts) if lin else None for lin in c_lin]
            + [c if is_undefined(a) else None for a, c in zip(init, ct_init)]
            + [next(ct_xs) if lin else None for lin in x_lin])


def _inst(ct, aval):
    """A concrete cotangent of type ``aval`` (zeros for a symbolic zero)."""
    return instantiate(Zero(aval.strip_weak_type())) if type(ct) is Zero else ct


transpose_rules[scan_p] = _scan_transpose


# --- vmap ---


def _batch_body(closed, axis, in_dims, carry_b, num_carry):
    """The batched body; carries flagged in ``carry_b`` leave at batch axis 0, batched ys
    at axis 0. Returns (ClosedJaxpr, the body's own out dims)."""
    def place(i, v, d):
        if i < num_carry:
            return matchaxis(axis.size, d, 0, v) if carry_b[i] else v
        return v if d is None else moveaxis(v, d, 0)
    return batch_jaxpr(closed, axis, in_dims, place)


def _scan_vmap(axis, vals, dims, *, jaxpr, length, reverse, unroll, num_consts, num_carry):
    consts, init, xs = split_at(vals, num_consts, num_carry)
    c_dims, i_dims, x_dims = split_at(dims, num_consts, num_carry)
    body_x_dims = [None if d is None else 0 for d in x_dims]
    carry_b = [d is not None for d in i_dims]
    for _ in range(num_carry + 1):
        in_dims = c_dims + [0 if b else None for b in carry_b] + body_x_dims
        body, out_dims = _batch_body(jaxpr, axis, in_dims, carry_b, num_carry)
        new = [b or d is not None for b, d in zip(carry_b, out_dims[:num_carry])]
        if new == carry_b:
            break
        carry_b = new
    init = [bdim_at_front(x, d, axis.size) if b else x for x, d, b in zip(init, i_dims, carry_b)]
    xs = [x if d is None else moveaxis(x, d, 1) for x, d in zip(xs, x_dims)]
    outs = _bind(consts, init, xs, body, dict(length=length, reverse=reverse, unroll=unroll))
    ys_dims = [None if d is None else 1 for d in out_dims[num_carry:]]
    return outs, [0 if b else None for b in carry_b] + ys_dims


vmap_rules[scan_p] = _scan_vmap




