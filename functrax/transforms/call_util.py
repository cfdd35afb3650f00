"""Helpers for higher-order primitives that hold a sub-jaxpr (custom_jvp_call, remat2, ...)."""
from __future__ import annotations

import weakref

from functrax import core
from functrax.config import config
from functrax.core import ClosedJaxpr, Jaxpr
from functrax.core.tracing import trace_to_jaxpr
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


# --- memoized traces of user functions (as JAX's _initial_style_jaxpr cache) ---

# results kept per combination of functions (the oldest is dropped beyond this)
MAX_TRACES_PER_FUNCTION = 64


class _Node:
    """One level of the trace cache: the next function (weakly) or the results by key."""

    __slots__ = ("next", "results")

    def __init__(self):
        self.next = weakref.WeakKeyDictionary()
        self.results = {}


_trace_cache = _Node()


def cached_trace(funs, key, make, consts_of):
    """``make()``, the trace of the functions ``funs``, memoized per function objects and
    ``key`` (which must determine the trace with the functions: pytree structures, avals,
    static params).

    As JAX's ``_initial_style_jaxpr`` cache: the functions are held weakly (a fresh lambda or
    ``functools.partial`` per call simply misses), and a hit reuses the jaxprs and the consts
    captured by the first trace (a function reading mutable Python state sees the state of
    that trace, as in JAX). Only eager calls are cached (the current trace is the eval
    trace; under a transformation a function may close over its tracers), never a result
    whose consts (``consts_of(result)``) hold tracers, and never functions that cannot be
    weakly referenced or hashed (builtins, ...): those are traced every time.

    Keeping the jaxpr objects also keeps the numpy backend's executables compiled per jaxpr
    object, so an eager ``cond``/``scan``/``while_loop`` call costs a dictionary lookup and
    the run of the compiled body.
    """
    if core.current_trace() is not core.EVAL_TRACE:
        return make()
    full_key = (key, config.trace_context(), config.disable_jit)  # flags that change traces
    try:
        node = _trace_cache
        for f in funs:
            nxt = node.next.get(f)
            if nxt is None:
                nxt = node.next[f] = _Node()
            node = nxt
        hit = node.results.get(full_key)
    except TypeError:  # a function or key that cannot be weakly referenced or hashed
        return make()
    if hit is not None:
        return hit
    result = make()
    if any(isinstance(c, core.Tracer) for c in consts_of(result)):
        return result
    if len(node.results) >= MAX_TRACES_PER_FUNCTION:
        node.results.pop(next(iter(node.results)))
    node.results[full_key] = result
    return result


def clear_trace_cache():
    """Forget every memoized trace (``functrax.clear_caches``)."""
    _trace_cache.next.clear()
    _trace_cache.results.clear()
