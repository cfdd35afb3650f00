"""The def-use index of a jaxpr's equations (:func:`def_use`): which equation produces each
variable and which read it. Used by the attention pass and by the fusion planner."""
from __future__ import annotations

from functrax.core import Var

__all__ = ["def_use"]


def def_use(jaxpr) -> tuple:
    """``(prod, uses, outs)`` of a jaxpr: the index of the equation producing each variable,
    the indices of the equations reading it (in order), and the set of output variables.

    >>> import functrax, numpy as np
    >>> j = functrax.make_jaxpr(lambda x: x * 2.0 + x)(np.ones(3, np.float32)).jaxpr
    >>> prod, uses, outs = def_use(j)
    >>> uses[j.invars[0]], prod[j.outvars[0]], j.outvars[0] in outs
    ([0, 1], 1, True)
    """
    prod, uses = {}, {}
    for i, e in enumerate(jaxpr.eqns):
        for v in e.invars:
            if type(v) is Var:
                uses.setdefault(v, []).append(i)
        for v in e.outvars:
            prod[v] = i
    return prod, uses, {v for v in jaxpr.outvars if type(v) is Var}
