"""Forwarding: see through no-op equations, and tell callers which outputs are inputs.

:func:`forward` replaces every use of the output of a no-op equation (one whose entry in
``noop`` says it returns its operand unchanged, e.g. ``convert_element_type`` to the same
dtype and weak type) by its operand, so an output that is "just an input" becomes the input
variable itself. ``copy`` is *not* a no-op here: it exists to give a fresh buffer.

:func:`forward_inputs` then reports, per output, which input it is (``fwd[i]``), and
:func:`forward_outputs` which earlier output it repeats. Callers can hand back the input
buffer instead of copying it: arrays are immutable, so sharing a buffer is unobservable
(jit's executor already returns an input's buffer for an output that is that input).
"""
from __future__ import annotations

from functrax import primitives as P
from functrax.core import Jaxpr, Literal
from functrax.passes.substitution import Substitution

# primitive -> predicate(eqn): the equation's single output equals its first operand
noop: dict = {
    P.convert_element_type_p: lambda eqn: eqn.invars[0].aval == eqn.outvars[0].aval,
}


def forward(jaxpr: Jaxpr) -> Jaxpr:
    """Bypass no-op equations (they are left for DCE); returns ``jaxpr`` if there are none.

    >>> import functrax, numpy as np
    >>> cast = lambda x: P.convert_element_type_p.bind(x, new_dtype=np.dtype("float32"))
    >>> j = functrax.make_jaxpr(cast)(np.ones(2, np.float32)).jaxpr
    >>> forward(j).outvars[0] is j.invars[0]
    True
    """
    subst = Substitution()
    eqns = []
    for eqn in jaxpr.eqns:
        eqn = subst.apply(eqn)
        is_noop = noop.get(eqn.primitive)
        if is_noop is not None and is_noop(eqn) and \
                eqn.invars[0].aval == eqn.outvars[0].aval:
            subst[eqn.outvars[0]] = eqn.invars[0]
        eqns.append(eqn)
    return subst.rebuild(jaxpr, eqns) if subst else jaxpr


def forward_inputs(jaxpr: Jaxpr, prune: bool = False):
    """Which outputs are inputs.

    Returns ``(jaxpr, fwd)``: ``jaxpr`` after :func:`forward`, and ``fwd[i]``, the index of
    the input that output ``i`` is (None otherwise). With ``prune=True`` the returned jaxpr
    no longer has the forwarded outputs (``fwd`` still indexes the original outputs).

    >>> import functrax, functrax.numpy as fnp
    >>> j = functrax.make_jaxpr(lambda x, y: (fnp.sin(x), y, x))(1.0, 2.0).jaxpr
    >>> forward_inputs(j)[1]
    [None, 1, 0]
    """
    jaxpr = forward(jaxpr)
    pos = {}
    for i, v in enumerate(jaxpr.invars):
        pos.setdefault(v, i)
    fwd = [None if type(v) is Literal else pos.get(v) for v in jaxpr.outvars]
    if prune and any(f is not None for f in fwd):
        outvars = [v for v, f in zip(jaxpr.outvars, fwd) if f is None]
        jaxpr = Jaxpr(jaxpr.constvars, jaxpr.invars, outvars, jaxpr.eqns, jaxpr.debug_info)
    return jaxpr, fwd


def forward_outputs(jaxpr: Jaxpr) -> list:
    """``out_fwd[i]``: the index of an earlier output that output ``i`` repeats, else None.

    >>> import functrax, functrax.numpy as fnp
    >>> j = functrax.make_jaxpr(lambda x: (fnp.sin(x), x, fnp.sin(x)))(1.0).jaxpr
    >>> from functrax.passes.cse import cse
    >>> forward_outputs(cse(j))
    [None, None, 0]
    """
    first: dict = {}
    out = []
    for i, v in enumerate(jaxpr.outvars):
        if type(v) is Literal:
            out.append(None)
            continue
        j = first.setdefault(v, i)
        out.append(j if j != i else None)
    return out
