"""Helpers for higher-order primitives that hold a sub-jaxpr (custom_jvp_call, remat2, ...)."""
from __future__ import annotations

from functrax import core
from functrax.core import ClosedJaxpr, Jaxpr
from functrax.tracing import trace_to_jaxpr
from functrax.tree_util import tree_flatten, tree_unflatten


def closure_convert(closed: ClosedJaxpr):
    """Turn constvars into leading invars; returns (ClosedJaxpr without consts, consts).

    Consts may be tracers of enclosing transforms: passed as explicit operands, every
    transform sees them.
    """
    j = closed.jaxpr
    if not j.constvars:
        return closed, []
    jaxpr = Jaxpr([], j.constvars + j.invars, j.outvars, j.eqns, j.debug_info)
    return ClosedJaxpr(jaxpr, []), list(closed.consts)


def trace_subjaxpr(fun, args, debug_info=None):
    """Trace ``fun(*args)`` (pytrees) to a closure-converted jaxpr.

    Returns (ClosedJaxpr, consts, flat_args, in_tree, out_tree).
    """
    flat_args, in_tree = tree_flatten(args)
    out_tree_box = []

    def flat_fun(*leaves):
        out = fun(*tree_unflatten(in_tree, list(leaves)))
        out_leaves, out_tree = tree_flatten(out)
        out_tree_box.append(out_tree)
        return out_leaves

    avals = [core.get_aval(x) for x in flat_args]
    closed = trace_to_jaxpr(flat_fun, avals, debug_info)
    closed, consts = closure_convert(closed)
    return closed, consts, flat_args, in_tree, out_tree_box[0]


def eval_closed(closed: ClosedJaxpr, *args):
    return core.eval_jaxpr(closed.jaxpr, closed.consts, *args)


def eager_call_rule(param: str):
    """numpy-backend rule for a call-like primitive: evaluate its ``param`` jaxpr."""
    def rule(*args, **params):
        outs = eval_closed(params[param], *args)
        return [o._value if type(o) is core.Array else o for o in outs]
    return rule
