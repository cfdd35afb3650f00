"""Partial evaluation: evaluate what is known, stage what is unknown into a jaxpr.

Reverse mode is JVP + partial evaluation + transposition: running a JVP with known primals
and unknown tangents under a :class:`PartialEvalTrace` evaluates the primal computation on
the parent trace and stages only the (linear) tangent computation; known values it uses
become the staged jaxpr's constvars (the residuals).
"""
from __future__ import annotations

from functrax import core
from functrax.tracing import DynamicJaxprTrace, DynamicJaxprTracer


class PartialEvalTrace(DynamicJaxprTrace):
    """A staging trace that forwards equations with only known inputs to its parent."""

    kind = "partial_eval"

    def is_unknown(self, x) -> bool:
        return isinstance(x, DynamicJaxprTracer) and x._trace is self

    def process_primitive(self, prim, args, params):
        for x in args:
            if self.is_unknown(x):
                return super().process_primitive(prim, args, params)
        with core.set_current_trace(self.parent):
            return prim.bind(*args, **params)

    def describe(self):
        return "PartialEvalTrace (linearization)"
