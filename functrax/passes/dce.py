"""Dead-code elimination: drop equations whose outputs nothing uses."""
from __future__ import annotations

from functrax.core import Jaxpr, Literal

# primitives with side effects that must never be removed (none yet; e.g. debug callbacks)
effectful: set = set()


def dce_jaxpr(jaxpr: Jaxpr, used_outputs=None) -> tuple[Jaxpr, list]:
    """Drop equations whose outputs are unused (and outputs not in ``used_outputs``).

    Returns (new jaxpr, one bool per invar: is it still used).

    >>> import functrax, functrax.numpy as fnp
    >>> j = functrax.make_jaxpr(lambda x: (fnp.sin(x), x)[1])(1.0).jaxpr
    >>> len(dce_jaxpr(j)[0].eqns)
    0
    """
    used_outputs = [True] * len(jaxpr.outvars) if used_outputs is None else used_outputs
    outvars = [v for v, u in zip(jaxpr.outvars, used_outputs) if u]
    live = {v for v in outvars if type(v) is not Literal}
    eqns = []
    for eqn in reversed(jaxpr.eqns):
        if eqn.primitive in effectful or any(v in live for v in eqn.outvars):
            eqns.append(eqn)
            live.update(v for v in eqn.invars if type(v) is not Literal)
    eqns.reverse()
    used_in = [v in live for v in jaxpr.invars]
    return Jaxpr(jaxpr.constvars, jaxpr.invars, outvars, eqns, jaxpr.debug_info), used_in


def dce(jaxpr: Jaxpr) -> Jaxpr:
    return dce_jaxpr(jaxpr)[0]
