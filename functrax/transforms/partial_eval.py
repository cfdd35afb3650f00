"""Partial evaluation: evaluate what is known, stage what is unknown into a jaxpr.

Reverse mode is JVP + partial evaluation + transposition: running a JVP with known primals
and unknown tangents under a :class:`PartialEvalTrace` evaluates the primal computation on
the parent trace and stages only the (linear) tangent computation; known values it uses
become the staged jaxpr's constvars (the residuals).
"""
from __future__ import annotations

from functrax import core
from functrax.passes.dce import dce_jaxpr
from functrax.tracing import DynamicJaxprTrace, DynamicJaxprTracer


# primitive -> rule(trace, args, params) for equations with some unknown inputs; without a
# rule the whole equation is staged (right for first-order primitives; call-like ones split
# their jaxpr into a known and an unknown part instead)
partial_eval_rules: dict = {}


class PartialEvalTrace(DynamicJaxprTrace):
    """A staging trace that forwards equations with only known inputs to its parent."""

    kind = "partial_eval"

    def is_unknown(self, x) -> bool:
        return isinstance(x, DynamicJaxprTracer) and x._trace is self

    def process_primitive(self, prim, args, params):
        for x in args:
            if self.is_unknown(x):
                rule = partial_eval_rules.get(prim)
                if rule is not None:
                    return rule(self, args, params)
                return self.stage(prim, args, params)
        with core.set_current_trace(self.parent):
            return prim.bind(*args, **params)

    def stage(self, prim, args, params):
        """Record the equation (known arguments become residual constvars)."""
        return DynamicJaxprTrace.process_primitive(self, prim, args, params)

    def describe(self):
        return "PartialEvalTrace (linearization)"


# --- jaxpr-level partial evaluation ---


def partial_eval_jaxpr(jaxpr: core.Jaxpr, in_unknowns, saveable=None):
    """Split ``jaxpr`` (no constvars) into a known and an unknown part.

    Args:
      jaxpr: the program.
      in_unknowns: one bool per invar.
      saveable: ``fn(eqn) -> bool``; a known value produced by a non-saveable equation is
        recomputed inside the unknown part instead of being stored (rematerialization).
        None: everything is saveable.

    Returns:
      (jaxpr_known, jaxpr_unknown, out_unknowns, num_res): ``jaxpr_known`` maps the known
      inputs to the known outputs followed by ``num_res`` residuals; ``jaxpr_unknown`` maps
      residuals followed by the unknown inputs to the unknown outputs.
    """
    from functrax.core import Jaxpr, Literal, Var
    unknown = {v for v, u in zip(jaxpr.invars, in_unknowns) if u}
    producer = {}
    known_eqns, unknown_eqns = [], []
    for eqn in jaxpr.eqns:
        if any(type(v) is Var and v in unknown for v in eqn.invars):
            unknown.update(eqn.outvars)
            unknown_eqns.append(eqn)
        else:
            known_eqns.append(eqn)
            for v in eqn.outvars:
                producer[v] = eqn
    # residuals: known vars read by the unknown part; recompute non-saveable ones there
    recomputed, residuals = [], []
    seen = set()

    def need(v):
        if type(v) is not Var or v in unknown or v in seen:
            return
        seen.add(v)
        eqn = producer.get(v)
        if eqn is None or saveable is None or saveable(eqn):
            residuals.append(v)
            return
        if eqn not in recomputed:
            for w in eqn.invars:
                need(w)
            recomputed.append(eqn)

    for eqn in unknown_eqns:
        for v in eqn.invars:
            need(v)
    known_outs = [v for v in jaxpr.outvars if not (type(v) is Var and v in unknown)]
    out_unknowns = [type(v) is Var and v in unknown for v in jaxpr.outvars]
    known_in = [v for v, u in zip(jaxpr.invars, in_unknowns) if not u]
    jk = Jaxpr([], known_in, known_outs + residuals, known_eqns)
    jk, _ = dce_jaxpr(jk)
    order = {id(e): i for i, e in enumerate(jaxpr.eqns)}
    body = sorted(recomputed, key=lambda e: order[id(e)]) + unknown_eqns
    unknown_in = [v for v, u in zip(jaxpr.invars, in_unknowns) if u]
    unknown_outs = [v for v, u in zip(jaxpr.outvars, out_unknowns) if u]
    res_vars = [Var(v.aval) for v in residuals]
    ju = Jaxpr([], res_vars + unknown_in, unknown_outs, _rename(body, dict(zip(residuals,
                                                                                res_vars))))
    del Literal
    return jk, ju, out_unknowns, len(residuals)


def _rename(eqns, mapping):
    if not mapping:
        return eqns
    return [e.replace(invars=[mapping.get(v, v) if type(v) is not core.Literal else v
                              for v in e.invars]) for e in eqns]
