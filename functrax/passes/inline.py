"""Inlining of call-like primitives (nested jit, custom_jvp_call, remat2, ...).

``inlinable`` maps each such primitive to the name of the param holding its (closed) jaxpr.
Execution does not need the call boundaries: custom derivative rules and rematerialization
only matter to transformations, which run before.
"""
from __future__ import annotations

from functrax.core import ClosedJaxpr, Jaxpr, Literal, Var
from functrax.primitives.calls import custom_jvp_call_p, custom_vjp_call_p, jit_p, remat_p

# primitive -> the param holding its (closed) jaxpr
inlinable: dict = {jit_p: "jaxpr", remat_p: "jaxpr", custom_jvp_call_p: "call_jaxpr",
                   custom_vjp_call_p: "call_jaxpr"}


def inline_closed(closed: ClosedJaxpr) -> ClosedJaxpr:
    """Inline every call-like equation of ``closed`` (recursively); consts of inlined
    closed jaxprs become constvars of the result.

    >>> import functrax, functrax.numpy as fnp
    >>> c = functrax.make_jaxpr(lambda x: functrax.checkpoint(fnp.sin)(x))(1.0)
    >>> [e.primitive.name for e in inline_closed(c).eqns]
    ['sin']
    """
    j = closed.jaxpr
    constvars, consts, eqns = list(j.constvars), list(closed.consts), []
    rename = _inline_into(j.eqns, {}, eqns, constvars, consts, fresh=False)
    outvars = [v if type(v) is Literal else rename.get(v, v) for v in j.outvars]
    return ClosedJaxpr(Jaxpr(constvars, j.invars, outvars, eqns, j.debug_info), consts)


def _inline_into(src_eqns, rename, out_eqns, constvars, consts, fresh=True):
    """Append ``src_eqns`` to ``out_eqns`` reading through ``rename``; equations copied out
    of a sub-jaxpr get fresh output variables (a jaxpr may be inlined several times)."""
    def read(v):
        return v if type(v) is Literal else rename.get(v, v)

    for eqn in src_eqns:
        param = inlinable.get(eqn.primitive)
        if param is None:
            outvars = eqn.outvars
            if fresh:
                outvars = [Var(v.aval) for v in eqn.outvars]
                rename.update(zip(eqn.outvars, outvars))
            out_eqns.append(eqn.replace(invars=[read(v) for v in eqn.invars], outvars=outvars))
            continue
        sub = eqn.params[param]
        sub_j = sub.jaxpr if isinstance(sub, ClosedJaxpr) else sub
        inner = {}
        for v, c in zip(sub_j.constvars, sub.consts if isinstance(sub, ClosedJaxpr) else []):
            inner[v] = Var(v.aval)
            constvars.append(inner[v])
            consts.append(c)
        for v, x in zip(sub_j.invars, eqn.invars):
            inner[v] = read(x)
        inner = _inline_into(sub_j.eqns, inner, out_eqns, constvars, consts)
        for outer_v, inner_v in zip(eqn.outvars, sub_j.outvars):
            rename[outer_v] = inner_v if type(inner_v) is Literal else inner.get(inner_v,
                                                                                 inner_v)
    return rename
