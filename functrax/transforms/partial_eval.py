"""Partial evaluation: evaluate what is known, stage what is unknown into a jaxpr.

Reverse mode is JVP + partial evaluation + transposition: running a JVP with known primals
and unknown tangents under a :class:`PartialEvalTrace` evaluates the primal computation on
the parent trace and stages only the (linear) tangent computation; known values it uses
become the staged jaxpr's constvars (the residuals).
"""
from __future__ import annotations

from functrax import core
from functrax.passes.dce import dce_jaxpr
from functrax.core.tracing import DynamicJaxprTrace, DynamicJaxprTracer


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

    def make_unknown(self, x):
        """An unknown tracer standing for the known value ``x`` (it becomes a residual)."""
        aval = core.get_aval(x)
        if isinstance(x, core.Tracer):
            self.check_foreign(x)
        elif type(x) is not core.Array:
            x = core.Array(core.to_numpy_value(x, aval), weak_type=aval.weak_type)
        return DynamicJaxprTracer(self, aval, self._constvar(x, aval))

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
        unk = [type(v) is Var and v in unknown for v in eqn.invars]
        parts = _split_eqn(eqn, unk) if any(unk) and not all(unk) else None
        if parts is not None:  # a call or control flow with known and unknown operands
            known_eqn, unknown_eqn = parts
            if saveable is not None and not saveable(eqn):  # rematerialize: its known
                unknown_eqn = _recompute(eqn, unknown_eqn)  # outputs, then all of it again
            if known_eqn is not None:
                known_eqns.append(known_eqn)
                producer.update((v, known_eqn) for v in known_eqn.outvars)
            unknown.update(unknown_eqn.outvars)
            unknown_eqns.append(unknown_eqn)
        elif any(unk):
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
    order = {id(e): i for i, e in enumerate(known_eqns)}  # recomputed ones are known
    body = sorted(recomputed, key=lambda e: order[id(e)]) + unknown_eqns
    unknown_in = [v for v, u in zip(jaxpr.invars, in_unknowns) if u]
    unknown_outs = [v for v, u in zip(jaxpr.outvars, out_unknowns) if u]
    res_vars = [Var(v.aval) for v in residuals]
    ju = Jaxpr([], res_vars + unknown_in, unknown_outs, _rename(body, dict(zip(residuals,
                                                                                res_vars))))
    del Literal
    core.check_if_enabled(jk, "partial evaluation (its known part)")
    core.check_if_enabled(ju, "partial evaluation (its unknown part)")
    return jk, ju, out_unknowns, len(residuals)


def _split_eqn(eqn, unknowns):
    """A higher-order equation (one with a ``partial_eval_rules`` entry: jit, cond, scan,
    while, ...) with some unknown operands, split by its own rule into a known and an unknown
    ``jit`` equation (the known one also emits the residuals; None when it has no output).
    None for other equations, which are staged whole."""
    from functrax.core import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var
    from functrax.primitives.calls import jit_p
    if eqn.primitive not in partial_eval_rules:
        return None
    ins = [Var(v.aval) if type(v) is not Literal else v for v in eqn.invars]
    outs = [Var(v.aval) for v in eqn.outvars]
    args = [v for v in ins if type(v) is not Literal]
    arg_unk = [u for v, u in zip(eqn.invars, unknowns) if type(v) is not Literal]
    single = ClosedJaxpr(Jaxpr([], args, outs, [eqn.replace(invars=ins, outvars=outs)]), [])
    known, unknown, out_unk, num_res = partial_eval_closed(single, arg_unk)
    real = [v for v in eqn.invars if type(v) is not Literal]
    known_ins = [v for v, u in zip(real, arg_unk) if not u]
    unknown_ins = [v for v, u in zip(real, arg_unk) if u]
    res = [Var(a) for a in known.out_avals[len(known.out_avals) - num_res:]]
    known_outs = [v for v, u in zip(eqn.outvars, out_unk) if not u] + res
    name = f"{eqn.primitive}_known"
    known_eqn = JaxprEqn(known_ins, known_outs, jit_p, dict(jaxpr=known, name=name)) \
        if known_outs else None
    unknown_eqn = JaxprEqn(res + unknown_ins, [v for v, u in zip(eqn.outvars, out_unk) if u],
                           jit_p, dict(jaxpr=unknown, name=f"{eqn.primitive}_unknown"))
    return known_eqn, unknown_eqn


def _recompute(eqn, unknown_eqn):
    """``eqn`` itself as the unknown part (everything recomputed from its operands, nothing
    stored), its outputs that the known part already gives renamed apart."""
    from functrax.core import Var
    produced = set(unknown_eqn.outvars)
    return eqn.replace(outvars=[v if v in produced else Var(v.aval) for v in eqn.outvars])


def _rename(eqns, mapping):
    if not mapping:
        return eqns
    return [e.replace(invars=[mapping.get(v, v) if type(v) is not core.Literal else v
                              for v in e.invars]) for e in eqns]


def partial_eval_closed(closed: core.ClosedJaxpr, unknowns, instantiate=False):
    """Split ``closed`` by re-running it under a :class:`PartialEvalTrace` (so call-like
    primitives inside are split by their own rules rather than staged whole).

    Args:
      closed: the program.
      unknowns: one bool per input.
      instantiate: a bool, or one per output: force those outputs to be unknown.

    Returns:
      (known, unknown, out_unknowns, num_res): ``known`` (a ClosedJaxpr, possibly with
      consts) maps the known inputs to the known outputs followed by ``num_res`` residuals;
      ``unknown`` (without consts) maps the residuals followed by the unknown inputs to the
      unknown outputs.
    """
    from functrax.core.tracing import trace_to_jaxpr
    n_out = len(closed.out_avals)
    inst = [instantiate] * n_out if isinstance(instantiate, bool) else list(instantiate)
    known_avals = [a for a, u in zip(closed.in_avals, unknowns) if not u]
    unknown_avals = [a for a, u in zip(closed.in_avals, unknowns) if u]
    box = {}

    def known_fun(*known_in):
        pe = PartialEvalTrace(core.current_trace())
        try:
            unknown_in = [pe.new_arg(a) for a in unknown_avals]
            k_it, u_it = iter(known_in), iter(unknown_in)
            full = [next(u_it) if u else next(k_it) for u in unknowns]
            with core.set_current_trace(pe):
                outs = core.eval_jaxpr(closed.jaxpr, closed.consts, *full)
            outs = [pe.make_unknown(o) if i and not pe.is_unknown(o) else o
                    for o, i in zip(outs, inst)]
            out_unk = [pe.is_unknown(o) for o in outs]
            unknown = pe.to_jaxpr([o for o, u in zip(outs, out_unk) if u])
        finally:
            pe.invalidate()
        # (the jaxpr only: its consts are this trace's tracers, returned as residuals)
        box["out_unknowns"], box["unknown"] = out_unk, (unknown.jaxpr, len(unknown.consts))
        return [o for o, u in zip(outs, out_unk) if not u] + list(unknown.consts)

    known = trace_to_jaxpr(known_fun, known_avals)
    u, num_res = box["unknown"]
    unknown = core.ClosedJaxpr(core.Jaxpr([], u.constvars + u.invars, u.outvars, u.eqns), [])
    core.check_if_enabled(unknown, "partial evaluation (its unknown part)")
    return known, unknown, box["out_unknowns"], num_res


