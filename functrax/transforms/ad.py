"""Flat (list-in, list-out) forward and reverse mode: jvp, linearize, vjp on flat functions.

The pytree-facing API (``functrax.jvp``, ``grad``, ...) is in ``grad.py``.
"""
from __future__ import annotations

from functrax import core, dtypes
from functrax.transforms.jvp import JVPTrace, JVPTracer, Zero, instantiate, tangent_aval
from functrax.transforms.partial_eval import PartialEvalTrace
from functrax.transforms.transpose import backward_pass


def jvp_flat(fun, primals, tangents):
    """Run ``fun`` on (primal, tangent) pairs; returns (primals_out, tangents_out)."""
    trace = JVPTrace(core.current_trace())
    with core.new_trace(trace):
        ins = [JVPTracer(trace, p, t) if type(t) is not Zero else p
               for p, t in zip(primals, tangents)]
        outs = fun(*ins)
        pairs = [trace.lift(o) for o in outs]
    del ins, outs
    core.ensure_no_leaks(trace)
    return [p for p, _ in pairs], [t for _, t in pairs]


class LinearFunction:
    """The linear map ``tangents_in -> tangents_out`` found by :func:`linearize_flat`.

    Holds a jaxpr linear in its inputs whose constvars are the residuals of the primal pass.
    """

    def __init__(self, closed: core.ClosedJaxpr, out_zero, in_avals):
        self.closed = closed
        self.out_zero = out_zero  # (is symbolic zero, aval) per output tangent
        self.in_avals = in_avals
        self.in_used = [a.dtype != dtypes.float0 for a in in_avals]

    def __call__(self, *tangents):
        args = [t for t, used in zip(tangents, self.in_used) if used]
        outs = iter(core.eval_jaxpr(self.closed.jaxpr, self.closed.consts, *args))
        return [instantiate(Zero(a)) if z else next(outs) for z, a in self.out_zero]

    def transpose(self, cts):
        cts = [ct for (z, _), ct in zip(self.out_zero, cts) if not z]
        cts_in = iter(backward_pass(self.closed.jaxpr, self.closed.consts, cts))
        return [next(cts_in) if used else Zero(a)
                for a, used in zip(self.in_avals, self.in_used)]


def linearize_flat(fun, primals, debug_info=None):
    """Evaluate ``fun`` at ``primals`` and stage its linearization; returns
    (primals_out, LinearFunction)."""
    pe = PartialEvalTrace(core.current_trace(), debug_info)
    in_avals = [tangent_aval(core.get_aval(p)) for p in primals]
    try:
        # integer/boolean inputs have float0 tangents: symbolic zeros, not jaxpr inputs
        tangents_in = [pe.new_arg(a) if a.dtype != dtypes.float0 else Zero(a)
                       for a in in_avals]
        with core.set_current_trace(pe):
            primals_out, tangents_out = jvp_flat(fun, primals, tangents_in)
        out_zero = [(type(t) is Zero, t.aval if type(t) is Zero else None)
                    for t in tangents_out]
        closed = pe.to_jaxpr([t for t in tangents_out if type(t) is not Zero])
    finally:
        pe.invalidate()
    return primals_out, LinearFunction(closed, out_zero, in_avals)


def vjp_flat(fun, primals, debug_info=None):
    """Returns (primals_out, pullback) where ``pullback(cts_out) -> cts_in`` (may be Zero)."""
    primals_out, linear = linearize_flat(fun, primals, debug_info)
    return primals_out, linear.transpose


def jvp_jaxpr(closed: core.ClosedJaxpr, nonzero) -> core.ClosedJaxpr:
    """A jaxpr of (primals, nonzero tangents) -> (primal outs, tangent outs), tangent
    outputs instantiated (zeros where symbolic)."""
    from functrax.core.tracing import trace_to_jaxpr
    n = len(nonzero)
    in_avals = list(closed.in_avals)
    t_avals = [tangent_aval(a) for a, nz in zip(in_avals, nonzero) if nz]

    def f(*args):
        primals, ts = list(args[:n]), iter(args[n:])
        tangents = [next(ts) if nz else Zero(tangent_aval(a)) for a, nz in zip(in_avals, nonzero)]
        outs, t_outs = jvp_flat(
            lambda *p: core.eval_jaxpr(closed.jaxpr, closed.consts, *p), primals, tangents)
        return list(outs) + [instantiate(t) for t in t_outs]

    return trace_to_jaxpr(f, in_avals + t_avals)


def jvp_jaxpr_nz(closed: core.ClosedJaxpr, nonzero, inst):
    """The JVP of ``closed`` keeping symbolic zeros out of its outputs: a jaxpr of
    (primals, nonzero tangents) -> (primal outs, emitted tangent outs), and which tangent
    outputs it emits. Output ``k``'s tangent is emitted when ``inst[k]`` (``inst`` may be one
    bool for all; zeros where it is symbolic) or when it is nonzero (not a symbolic zero,
    not float0). Control-flow rules call it until their branches/bodies agree.
    """
    from functrax import dtypes
    from functrax.core.tracing import trace_to_jaxpr
    n = len(nonzero)
    in_avals = list(closed.in_avals)
    t_avals = [tangent_aval(a) for a, nz in zip(in_avals, nonzero) if nz]
    box = []

    def f(*args):
        ts = iter(args[n:])
        tangents = [next(ts) if nz else Zero(tangent_aval(a)) for a, nz in zip(in_avals, nonzero)]
        outs, t_outs = jvp_flat(lambda *p: core.eval_jaxpr(closed.jaxpr, closed.consts, *p),
                                list(args[:n]), tangents)
        flags = [inst] * len(outs) if isinstance(inst, bool) else list(inst)
        emit = [i or (type(t) is not Zero
                      and tangent_aval(core.get_aval(o)).dtype != dtypes.float0)
                for o, t, i in zip(outs, t_outs, flags)]
        box.append(emit)
        return list(outs) + [instantiate(t) for t, e in zip(t_outs, emit) if e]

    return trace_to_jaxpr(f, in_avals + t_avals), box[0]
