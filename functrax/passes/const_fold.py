"""Constant folding: evaluate at compile time the equations whose inputs are all known.

An input is known when it is a literal or a constvar of the ClosedJaxpr whose value is a
concrete array (not a tracer). Such an equation runs once, now, with the eager (numpy
backend's) rule (exactly the function the executor would call at run time, so results are
identical), and its outputs become literals (rank-0) or new consts (arrays).

Folding trades run time for memory held by the compiled program, so an output array is
folded only when it is small (``SMALL_ELEMENTS``) or not much bigger than the inputs it
replaces (``GROWTH`` times), and never beyond ``MAX_ELEMENTS``: ``fnp.zeros((4096, 4096))``
stays a ``broadcast_in_dim`` instead of becoming a 64 MiB constant.

Never folded: primitives in ``no_fold`` (``copy`` asks for a fresh buffer; collectives need
a named-axis environment; host callbacks run the user's Python at run time, not at compile
time), equations with an effect (``eqn.effects``), call-like equations holding sub-jaxprs,
and equations whose outputs are dead (DCE removes those).
"""
from __future__ import annotations

import numpy as np

from functrax import core
from functrax import primitives as P
from functrax.core import Array, ClosedJaxpr, Jaxpr, Literal, has_effects
from functrax.primitives import collectives as _collectives

MAX_ELEMENTS = 1_000_000
SMALL_ELEMENTS = 1024
GROWTH = 2

# copy, and every collective (their values depend on the named-axis environment)
no_fold: set = {P.copy_p, P.pure_callback_p} | {
    getattr(_collectives, n) for n in _collectives.__all__ if n.endswith("_p")}

_LITERAL_KINDS = "biufc"  # dtypes the tracer itself turns into literals


def const_fold(closed: ClosedJaxpr) -> ClosedJaxpr:
    """Fold every equation whose inputs are literals or known consts.

    Returns ``closed`` itself when nothing was folded; otherwise consts nothing reads any
    more are dropped.

    >>> import functrax, functrax.numpy as fnp
    >>> c = functrax.make_jaxpr(lambda x: x + fnp.sin(fnp.float32(0.5)) * 2.0)(fnp.ones(3))
    >>> [e.primitive.name for e in const_fold(c).eqns]
    ['add']
    """
    j = closed.jaxpr
    known = {v: core.to_numpy_value(c, v.aval) for v, c in zip(j.constvars, closed.consts)
             if not isinstance(c, core.Tracer)}
    live = _live_vars(j)
    subst: dict = {}
    constvars, consts = list(j.constvars), list(closed.consts)
    eqns = []

    def read(v):
        return v if type(v) is Literal else subst.get(v, v)

    for eqn in j.eqns:
        invars = [read(v) for v in eqn.invars]
        if any(a is not b for a, b in zip(invars, eqn.invars)):
            eqn = eqn.replace(invars=invars)
        outs = _try_fold(eqn, known) if any(v in live for v in eqn.outvars) else None
        if outs is None:
            eqns.append(eqn)
            continue
        for v, val in zip(eqn.outvars, outs):
            if val.ndim == 0 and v.aval.dtype.kind in _LITERAL_KINDS:
                subst[v] = Literal(val[()], v.aval)
            else:  # the output variable itself becomes a constvar
                constvars.append(v)
                consts.append(Array._make(val, v.aval))
            known[v] = val
    if len(eqns) == len(j.eqns):
        return closed
    outvars = [read(v) for v in j.outvars]
    return prune_consts(ClosedJaxpr(
        Jaxpr(constvars, j.invars, outvars, eqns, j.debug_info), consts))


def _live_vars(j: Jaxpr) -> set:
    live = {v for v in j.outvars if type(v) is not Literal}
    for eqn in reversed(j.eqns):
        if any(v in live for v in eqn.outvars) or has_effects(eqn):
            live.update(v for v in eqn.invars if type(v) is not Literal)
            live.update(eqn.outvars)
    return live


def _try_fold(eqn, known):
    """The output values of ``eqn`` if it can and should be folded, else None."""
    prim = eqn.primitive
    if prim in no_fold or any(core.sub_jaxprs(eqn.params)) or has_effects(eqn):
        return None
    rule = core.eager_rule(prim)
    if rule is None:
        return None
    args = []
    for v in eqn.invars:
        if type(v) is Literal:
            args.append(np.asarray(v.val, v.aval.dtype))
        elif v in known:
            args.append(known[v])
        else:
            return None
    in_size = sum(a.size for a in args)
    out_size = sum(v.aval.size for v in eqn.outvars)
    if out_size > MAX_ELEMENTS or (out_size > SMALL_ELEMENTS and out_size > GROWTH * in_size):
        return None
    try:
        with np.errstate(all="ignore"):
            res = rule(*args, **eqn.params)
    except Exception:  # noqa: BLE001 - leave the error (if any) to run time
        return None
    res = res if prim.multiple_results else [res]
    outs = []
    for v, r in zip(eqn.outvars, res):
        r = np.asarray(r)
        if r.dtype != v.aval.dtype:
            r = r.astype(v.aval.dtype)
        if r.shape != v.aval.shape:
            return None
        outs.append(np.array(r, copy=True))  # own the memory (rules may return views)
    return outs


def prune_consts(closed: ClosedJaxpr) -> ClosedJaxpr:
    """Drop constvars (and their values) that no equation or output reads.

    >>> import functrax, numpy as np
    >>> c = functrax.make_jaxpr(lambda x: x)(1.0)
    >>> prune_consts(c) is c
    True
    """
    j = closed.jaxpr
    if not j.constvars:
        return closed
    used = {v for e in j.eqns for v in e.invars if type(v) is not Literal}
    used.update(v for v in j.outvars if type(v) is not Literal)
    keep = [i for i, v in enumerate(j.constvars) if v in used]
    if len(keep) == len(j.constvars):
        return closed
    return ClosedJaxpr(Jaxpr([j.constvars[i] for i in keep], j.invars, j.outvars, j.eqns,
                             j.debug_info), [closed.consts[i] for i in keep])
