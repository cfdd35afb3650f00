"""Forward-mode differentiation: the JVP trace and the ``jvp_rules`` table.

A rule ``jvp_rules[prim](primals, tangents, **params) -> (primal_out, tangent_out)`` runs with
the parent trace current, so it simply binds primitives. Tangents may be :class:`Zero`
(symbolic zeros): rules skip work for them, and a primitive whose tangents are all zero is
evaluated without a rule.
"""
from __future__ import annotations

import numpy as np

from functrax import core
from functrax import dtypes
from functrax import primitives as P
from functrax.core import ShapedArray, Tracer
from functrax.errors import MissingRuleError

jvp_rules: dict = {}


class Zero:
    """A symbolic zero tangent of type ``aval`` (no array is materialized)."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    @staticmethod
    def from_value(x) -> Zero:
        return Zero(tangent_aval(core.get_aval(x)))

    def __repr__(self):
        return f"Zero({self.aval.str_short()})"


def tangent_aval(aval: ShapedArray) -> ShapedArray:
    """Tangents of floats are floats of the same type; of ints and bools, float0."""
    if dtypes.is_inexact(aval.dtype):
        return aval.strip_weak_type()
    return ShapedArray(aval.shape, dtypes.float0)


def instantiate(t):
    """A concrete array for a possibly-symbolic tangent."""
    if type(t) is Zero:
        return zeros_like_aval(t.aval)
    return t


def zeros_like_aval(aval: ShapedArray):
    if aval.dtype == dtypes.float0:
        return np.zeros(aval.shape, dtypes.float0)
    return P.full(aval.shape, 0, aval.dtype)


def add_tangents(a, b):
    if type(a) is Zero:
        return b
    if type(b) is Zero:
        return a
    return P.add(a, b)


class JVPTracer(Tracer):
    __slots__ = ("primal", "tangent")

    def __init__(self, trace, primal, tangent):
        self._trace = trace
        self.primal = primal
        self.tangent = tangent

    @property
    def aval(self):
        return core.get_aval(self.primal)

    def to_concrete_value(self):
        p = self.primal
        if type(p) is core.Array:
            return p._value
        if isinstance(p, Tracer):
            return p.to_concrete_value()
        return np.asarray(p)


class JVPTrace(core.Trace):
    """Carries (primal, tangent) pairs; rules run on the parent trace."""

    kind = "jvp"

    def lift(self, x):
        if isinstance(x, JVPTracer) and x._trace is self:
            return x.primal, x.tangent
        if isinstance(x, Tracer):
            self.check_foreign(x)
        return x, Zero.from_value(x)

    def process_primitive(self, prim, args, params):
        primals, tangents = zip(*[self.lift(x) for x in args]) if args else ((), ())
        if all(type(t) is Zero for t in tangents):
            with core.set_current_trace(self.parent):
                return prim.bind(*primals, **params)
        rule = jvp_rules.get(prim)
        if rule is None:
            raise MissingRuleError("jvp", prim)
        with core.set_current_trace(self.parent):
            out, t_out = rule(list(primals), list(tangents), **params)
        if prim.multiple_results:
            return [self.pure(o, t) for o, t in zip(out, t_out)]
        return self.pure(out, t_out)

    def pure(self, primal, tangent):
        # a value with a symbolic-zero tangent needs no tracer: it is a constant here
        return primal if type(tangent) is Zero else JVPTracer(self, primal, tangent)


# --- rule families ---


def maybe_broadcast(shape, x):
    """``x`` (rank 0, or of ``shape``'s rank with size-1 dimensions: an elementwise operand)
    broadcast to ``shape`` (JAX's ``_maybe_broadcast``)."""
    x_shape = core.get_aval(x).shape
    if x_shape == tuple(shape):
        return x
    return P.broadcast_in_dim(x, tuple(shape), tuple(range(len(x_shape))))


def _to_out_shape(t, out):
    """A tangent contribution of a broadcast operand, in the output's shape."""
    return t if type(t) is Zero else maybe_broadcast(core.get_aval(out).shape, t)


def defjvp(prim, *tangent_fns):
    """One function per argument: ``fn(t, *primals, **params) -> contribution``; None: no
    dependence. The contributions are summed."""
    def rule(primals, tangents, **params):
        out = prim.bind(*primals, **params)
        t_out = Zero(tangent_aval(core.get_aval(out)))
        for fn, t in zip(tangent_fns, tangents):
            if fn is not None and type(t) is not Zero:
                t_out = add_tangents(t_out, fn(t, *primals, **params))
        return out, _to_out_shape(t_out, out)
    jvp_rules[prim] = rule


def defjvp2(prim, *tangent_fns):
    """Like ``defjvp`` but each function also receives the primal output first:
    ``fn(t, out, *primals, **params)`` (e.g. exp's tangent is ``t * out``)."""
    def rule(primals, tangents, **params):
        out = prim.bind(*primals, **params)
        t_out = Zero(tangent_aval(core.get_aval(out)))
        for fn, t in zip(tangent_fns, tangents):
            if fn is not None and type(t) is not Zero:
                t_out = add_tangents(t_out, fn(t, out, *primals, **params))
        return out, _to_out_shape(t_out, out)
    jvp_rules[prim] = rule


def deflinear(prim):
    """A primitive linear in all its arguments: its tangent is itself applied to tangents."""
    def rule(primals, tangents, **params):
        out = prim.bind(*primals, **params)
        t_out = prim.bind(*[instantiate(t) for t in tangents], **params)
        return out, t_out
    jvp_rules[prim] = rule


def defjvp_zero(prim):
    """A primitive whose outputs do not depend differentiably on inputs (comparisons, ...)."""
    def rule(primals, tangents, **params):
        out = prim.bind(*primals, **params)
        if prim.multiple_results:
            return out, [Zero(tangent_aval(core.get_aval(o))) for o in out]
        return out, Zero(tangent_aval(core.get_aval(out)))
    jvp_rules[prim] = rule
