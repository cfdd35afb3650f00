"""The ``jit`` call primitive's transformation rules: jvp, partial evaluation, transposition
and vmap. Each transforms the inner jaxpr and binds ``jit`` again, so ``grad(jit(f))``,
``jit(grad(f))``, ``vmap(jit(f))``, ... all stay jitted.

A jit with a backend (``jit(f, backend="triton")``) carries it as the ``backend`` param (absent
for the default backend, so such jaxprs print as JAX prints them); every rule binds the
transformed jit with the same backend, and its numpy rule (``functrax/lowering/numpy/calls.py``)
runs it on that backend, so ``vmap(jit(f, backend="triton"))`` and
``grad(jit(f, backend="triton"))`` run fused kernels too. Its printing rule is in
``functrax/primitives/printing.py``, its inlining in ``functrax/passes/inline.py``."""
from __future__ import annotations

import weakref

from functrax import core
from functrax.core import ClosedJaxpr, Jaxpr
from functrax.transforms.ad import jvp_jaxpr
from functrax.transforms.batching import batch_jaxpr, vmap_rules
from functrax.transforms.call_util import trace_subjaxpr
from functrax.primitives.calls import jit_p
from functrax.transforms.jvp import Zero, instantiate, jvp_rules
from functrax.transforms.partial_eval import partial_eval_closed, partial_eval_rules
from functrax.transforms.transpose import backward_pass, is_undefined, transpose_rules


def _bk(backend) -> dict:
    """The ``backend`` param to bind (none for the default backend, as JAX's jit params)."""
    return {"backend": backend} if backend else {}


def _consts_to_invars(j: Jaxpr) -> ClosedJaxpr:
    """The jaxpr with its constvars turned into leading invars."""
    return ClosedJaxpr(Jaxpr([], j.constvars + j.invars, j.outvars, j.eqns, j.debug_info), [])


def _no_consts(closed: ClosedJaxpr):
    """(jaxpr without constvars, consts to pass as leading operands)."""
    if not closed.jaxpr.constvars:
        return closed, []
    return _consts_to_invars(closed.jaxpr), list(closed.consts)


# --- jvp ---
# Transformed inner jaxprs are memoized per (jaxpr object, transform details): jvp per nonzero
# tangents, partial evaluation per unknown inputs, transposition per linear inputs and
# cotangent avals, vmap per axis and in_dims. Calling vmap(jit(f)) or grad(jit(f)) again
# re-traces nothing and the numpy rule's compiled executables (cached per jaxpr object) are
# reused.
_transformed: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _memo(jaxpr, key, make):
    per_jaxpr = _transformed.setdefault(jaxpr, {})
    hit = per_jaxpr.get(key)
    if hit is None:
        hit = make()
        closed, consts = hit[0]
        if any(isinstance(c, core.Tracer) for c in consts):
            return hit  # tied to the current transformation: not reusable
        per_jaxpr[key] = hit
    return hit


def _jit_jvp(primals, tangents, *, jaxpr, name, backend=None):
    nonzero = tuple(type(t) is not Zero for t in tangents)
    (jvp_closed, consts), = _memo(jaxpr, ("jvp", nonzero),
                                  lambda: (_no_consts(jvp_jaxpr(jaxpr, list(nonzero))),))
    nz_t = [t for t in tangents if type(t) is not Zero]
    outs = jit_p.bind(*consts, *primals, *nz_t, jaxpr=jvp_closed, name=f"jvp({name})",
                      **_bk(backend))
    n = len(jaxpr.out_avals)
    return outs[:n], outs[n:]


jvp_rules[jit_p] = _jit_jvp


# --- partial evaluation: split into a known and an unknown jit ---
# The inner jaxpr is re-evaluated under a PartialEvalTrace nested in a staging trace for the
# known part, so call primitives inside it (a nested jit) are split by their own rules
# rather than staged whole: a nested jit's known outputs stay known (otherwise its primal
# outputs would reach the linear part and make it non-linear).
def _jit_partial_eval(trace, args, params):
    jaxpr, name, bk = params["jaxpr"], params["name"], _bk(params.get("backend"))
    consts = list(jaxpr.consts)
    args = consts + list(args)
    unknowns = tuple(trace.is_unknown(x) for x in args)
    known_args = [x for x, u in zip(args, unknowns) if not u]
    unknown_args = [x for x, u in zip(args, unknowns) if u]

    def make():
        k_closed, u_closed, out_unk, num_res = partial_eval_closed(_no_consts(jaxpr)[0],
                                                                   unknowns)
        return _no_consts(k_closed), u_closed, out_unk, num_res

    with core.set_current_trace(trace.parent):
        (k_closed, k_consts), u_closed, out_unk, num_res = _memo(jaxpr, ("pe", unknowns),
                                                                 make)
        known = jit_p.bind(*k_consts, *known_args, jaxpr=k_closed, name=name, **bk) \
            if k_closed.jaxpr.outvars else []
    k_outs, res = known[:len(known) - num_res], known[len(known) - num_res:]
    u_outs = trace.stage(jit_p, list(res) + unknown_args,
                         dict(jaxpr=u_closed, name=name, **bk)) if any(out_unk) else []
    k_it, u_it = iter(k_outs), iter(u_outs)
    return [next(u_it) if u else next(k_it) for u in out_unk]


partial_eval_rules[jit_p] = _jit_partial_eval


# --- transpose: the backward pass of the inner (linear) jaxpr, itself jitted ---
def _jit_transpose(cts, *args, jaxpr, name, backend=None):
    consts = list(jaxpr.consts)
    args = consts + list(args)
    lin = tuple(is_undefined(a) for a in args)
    res = [a for a, u in zip(args, lin) if not u]
    cts = [instantiate(c) if type(c) is Zero else c for c in cts]

    def make():
        j = _no_consts(jaxpr)[0].jaxpr
        # residual inputs become constvars: backward_pass wants a jaxpr linear in its invars
        lin_jaxpr = Jaxpr([v for v, u in zip(j.invars, lin) if not u],
                          [v for v, u in zip(j.invars, lin) if u], j.outvars, j.eqns)

        def bwd(res, cts):
            return [instantiate(c) for c in backward_pass(lin_jaxpr, res, cts)]

        t_closed, t_consts, _, _, _ = trace_subjaxpr(bwd, (res, cts))
        return (t_closed, t_consts),

    key = ("transpose", lin, tuple(core.get_aval(c) for c in cts))
    (t_closed, t_consts), = _memo(jaxpr, key, make)
    outs = iter(jit_p.bind(*t_consts, *res, *cts, jaxpr=t_closed, name=f"transpose({name})",
                           **_bk(backend)))
    cts_in = [next(outs) if u else None for u in lin]
    return cts_in[len(consts):]


transpose_rules[jit_p] = _jit_transpose


# --- vmap ---
def _jit_vmap(axis, vals, dims, *, jaxpr, name, backend=None):
    def make():
        batched, out_dims = batch_jaxpr(jaxpr, axis, dims)
        return _no_consts(batched), out_dims
    (closed, consts), out_dims = _memo(jaxpr, ("vmap", axis.name, axis.size, tuple(dims)),
                                       make)
    outs = jit_p.bind(*consts, *vals, jaxpr=closed, name=name, **_bk(backend))
    return outs, out_dims


vmap_rules[jit_p] = _jit_vmap
