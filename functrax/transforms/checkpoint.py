"""``checkpoint`` (``remat``): recompute intermediates in the backward pass instead of storing.

``checkpoint(f)`` binds ``remat2`` holding ``f``'s jaxpr. Its JVP rule splits the JVP of that
jaxpr into a known part (the primal computation, which also emits the residuals the policy
allows to be saved) and an unknown part (the tangent computation, which recomputes every
non-saved intermediate from the residuals). Under reverse mode only the residuals are stored;
the transpose of the unknown part redoes the recomputation inside the backward pass.
"""
from __future__ import annotations

import functools

from functrax import core
from functrax import primitives as P
from functrax.core import ClosedJaxpr
from functrax.primitives.calls import remat_p
from functrax.transforms.ad import jvp_jaxpr
from functrax.transforms.call_util import eval_closed, trace_subjaxpr
from functrax.transforms.jvp import Zero, instantiate, jvp_rules
from functrax.transforms.partial_eval import PartialEvalTrace, partial_eval_jaxpr
from functrax.transforms.transpose import backward_pass, is_undefined, transpose_rules
from functrax.tree_util import tree_unflatten



class checkpoint_policies:
    """Which intermediates the forward pass may save (``policy(prim, *avals, **params)``)."""

    @staticmethod
    def nothing_saveable(prim, *_, **__):
        return False

    @staticmethod
    def everything_saveable(prim, *_, **__):
        return True

    @staticmethod
    def dots_saveable(prim, *_, **__):
        return prim is P.dot_general_p or prim is P.conv_general_dilated_p

    @staticmethod
    def dots_with_no_batch_dims_saveable(prim, *_, **params):
        if prim is not P.dot_general_p:
            return False
        (_, _), (lb, _) = params["dimension_numbers"]
        return not lb

    checkpoint_dots = dots_saveable


def checkpoint(fun, *, prevent_cse=True, policy=None, static_argnums=()):
    """Make ``fun`` recompute its intermediates during differentiation instead of storing them.

    Args:
      fun: the function.
      prevent_cse: kept for JAX compatibility (recomputation is always kept apart).
      policy: ``checkpoint_policies.*`` or ``fn(prim, *avals, **params) -> bool`` saying which
        intermediates may be saved; None saves nothing but the inputs.
      static_argnums: arguments that are Python values, not traced.

    >>> import functrax, functrax.numpy as fnp
    >>> functrax.grad(functrax.checkpoint(lambda x: fnp.sin(fnp.sin(x))))(1.0)
    Array(0.3600153, dtype=float32, weak_type=True)
    """
    static = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)

    @functools.wraps(fun)
    def fun_remat(*args, **kwargs):
        st = {i % len(args): args[i] for i in static}
        dyn = tuple(a for i, a in enumerate(args) if i not in st)

        def f(*d):
            it = iter(d)
            return fun(*[st[i] if i in st else next(it) for i in range(len(args))], **kwargs)
        closed, consts, flat, _, out_tree = trace_subjaxpr(f, dyn)
        outs = remat_p.bind(*consts, *flat, jaxpr=closed, prevent_cse=prevent_cse,
                            differentiated=False, policy=policy)
        return tree_unflatten(out_tree, outs)

    return fun_remat


remat = checkpoint


def _saveable(policy):
    if policy is None:
        return lambda eqn: False
    return lambda eqn: bool(policy(eqn.primitive, *[v.aval for v in eqn.invars], **eqn.params))


def _remat_jvp(primals, tangents, *, jaxpr, prevent_cse, differentiated, policy):
    nonzero = [type(t) is not Zero for t in tangents]
    jvp_closed = jvp_jaxpr(jaxpr, nonzero)
    n_out = len(jaxpr.out_avals)
    n_nz = sum(nonzero)
    j = jvp_closed.jaxpr
    if j.constvars:  # constants staged during tracing become known inputs
        j = core.Jaxpr([], j.constvars + j.invars, j.outvars, j.eqns)
    consts = list(jvp_closed.consts)
    in_unknowns = [False] * (len(consts) + len(primals)) + [True] * n_nz
    jk, ju, out_unk, num_res = partial_eval_jaxpr(j, in_unknowns, _saveable(policy))
    params = dict(prevent_cse=prevent_cse, differentiated=True, policy=policy)
    known = remat_p.bind(*consts, *primals, jaxpr=ClosedJaxpr(jk, []), **params)
    n_known = len(known) - num_res
    k_outs, res = known[:n_known], known[n_known:]
    nz_t = [t for t in tangents if type(t) is not Zero]
    u_outs = remat_p.bind(*res, *nz_t, jaxpr=ClosedJaxpr(ju, []), **params) if any(
        out_unk) else []
    k_it, u_it = iter(k_outs), iter(u_outs)
    outs = [next(u_it) if u else next(k_it) for u in out_unk]
    return outs[:n_out], outs[n_out:]


def _remat_transpose(cts, *args, jaxpr, prevent_cse, differentiated, policy):
    lin_avals = [a.aval for a in args if is_undefined(a)]
    known = [a for a in args if not is_undefined(a)]
    cts = [instantiate(c) for c in cts]

    def bwd(*known_and_cts):
        kn, cs = known_and_cts[:len(known)], known_and_cts[len(known):]
        pe = PartialEvalTrace(core.current_trace())
        try:
            lin_in = [pe.new_arg(a) for a in lin_avals]
            it_k, it_l = iter(kn), iter(lin_in)
            full = [next(it_l) if is_undefined(a) else next(it_k) for a in args]
            with core.set_current_trace(pe):
                outs = eval_closed(jaxpr, *full)
            lin = pe.to_jaxpr(outs)
        finally:
            pe.invalidate()
        return [instantiate(c) for c in backward_pass(lin.jaxpr, lin.consts, list(cs))]

    closed, consts, flat, _, out_tree = trace_subjaxpr(bwd, (*known, *cts))
    outs = iter(remat_p.bind(*consts, *flat, jaxpr=closed, prevent_cse=prevent_cse,
                             differentiated=True, policy=policy))
    return [next(outs) if is_undefined(a) else None for a in args]


jvp_rules[remat_p] = _remat_jvp
transpose_rules[remat_p] = _remat_transpose
