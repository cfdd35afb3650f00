"""Variable substitution shared by the rewriting passes (cse, forward, simplify): equations
are visited in order, each pass records "var -> replacement" and later reads go through it."""
from __future__ import annotations

from functrax.core import Jaxpr, Literal


class Substitution(dict):
    """``var -> replacement``; reading a var not in the map gives the var itself."""

    def read(self, v):
        return v if type(v) is Literal else self.get(v, v)

    def apply(self, eqn):
        """``eqn`` reading through the map (the same object when nothing is replaced)."""
        invars = [self.read(v) for v in eqn.invars]
        if any(a is not b for a, b in zip(invars, eqn.invars)):
            return eqn.replace(invars=invars)
        return eqn

    def rebuild(self, jaxpr: Jaxpr, eqns) -> Jaxpr:
        """``jaxpr`` with ``eqns`` and its outputs read through the map."""
        return Jaxpr(jaxpr.constvars, jaxpr.invars, [self.read(v) for v in jaxpr.outvars],
                     eqns, jaxpr.debug_info)
