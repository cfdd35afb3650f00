"""The batching trace behind ``vmap`` and the ``vmap_rules`` table.

A value under vmap is ``(val, bdim)``: ``val`` carries the batch along axis ``bdim`` (None:
not batched). ``vmap_rules[prim](axis, vals, dims, **params) -> (out, out_dim)`` runs with
the parent trace current; ``axis`` is the :class:`AxisData` (size, name) of this vmap.
"""
from __future__ import annotations

import weakref

from functrax import core
from functrax import primitives as P
from functrax.core import Tracer
from functrax.errors import MissingRuleError

vmap_rules: dict = {}
# primitives that must see the batch axis even when no operand is batched (collectives)
axis_primitives: set = set()

not_mapped = None


class AxisData:
    __slots__ = ("name", "size")

    def __init__(self, name, size):
        self.name = name
        self.size = size


class BatchTracer(Tracer):
    __slots__ = ("val", "bdim", "aval")

    def __init__(self, trace, val, bdim):
        self._trace = trace
        self.val = val
        self.bdim = bdim
        a = core.get_aval(val)
        self.aval = a if bdim is None else a.update(
            shape=a.shape[:bdim] + a.shape[bdim + 1:])


class BatchTrace(core.Trace):
    kind = "vmap"

    def __init__(self, parent, axis: AxisData):
        super().__init__(parent)
        self.axis = axis

    def lift(self, x):
        if isinstance(x, BatchTracer) and x._trace is self:
            return x.val, x.bdim
        if isinstance(x, Tracer):
            self.check_foreign(x)
        return x, None

    def process_primitive(self, prim, args, params):
        vals, dims = zip(*[self.lift(x) for x in args]) if args else ((), ())
        if all(d is None for d in dims) and not self._needs_axis(prim, params):
            with core.set_current_trace(self.parent):
                return prim.bind(*vals, **params)
        rule = vmap_rules.get(prim)
        if rule is None:
            raise MissingRuleError("vmap", prim)
        with core.set_current_trace(self.parent):
            out, out_dim = rule(self.axis, list(vals), list(dims), **params)
        if prim.multiple_results:
            return [self.pure(o, d) for o, d in zip(out, out_dim)]
        return self.pure(out, out_dim)

    def _needs_axis(self, prim, params) -> bool:
        """Whether ``prim`` (or a sub-jaxpr it holds) runs a collective over this axis."""
        name = self.axis.name
        if name is None:
            return False
        if prim in axis_primitives:
            return name in _axis_names(params)
        return any(name in jaxpr_axis_names(j) for j in core.sub_jaxprs(params))

    def pure(self, val, bdim):
        return val if bdim is None else BatchTracer(self, val, bdim)

    def describe(self):
        return f"BatchTrace(axis_name={self.axis.name!r}, size={self.axis.size})"


_AXIS_NAMES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def jaxpr_axis_names(jaxpr) -> frozenset:
    """Axis names the collectives of ``jaxpr`` (and its sub-jaxprs) refer to (memoized)."""
    names = _AXIS_NAMES.get(jaxpr)
    if names is None:
        found = set()
        for eqn in jaxpr.eqns:
            if eqn.primitive in axis_primitives:
                found.update(_axis_names(eqn.params))
            for sub in core.sub_jaxprs(eqn.params):
                found |= jaxpr_axis_names(sub)
        names = _AXIS_NAMES[jaxpr] = frozenset(found)
    return names


def _axis_names(params):
    names = params.get("axes", params.get("axis_name", ()))
    return names if isinstance(names, tuple) else (names,)


# --- helpers for rules ---


def moveaxis(x, src: int, dst: int):
    """Move axis ``src`` of ``x`` to position ``dst`` (no-op when equal)."""
    nd = core.get_aval(x).ndim
    src, dst = src % nd, dst % nd
    if src == dst:
        return x
    perm = [i for i in range(nd) if i != src]
    perm.insert(dst, src)
    return P.transpose(x, perm)


def bdim_at_front(x, bdim, size: int):
    """``x`` with its batch axis first, broadcasting an unbatched ``x`` to ``size``."""
    if bdim is None:
        return broadcast_batch(x, size, 0)
    return moveaxis(x, bdim, 0)


def broadcast_batch(x, size: int, axis: int):
    aval = core.get_aval(x)
    shape = list(aval.shape)
    shape.insert(axis, size)
    dims = tuple(i for i in range(len(shape)) if i != axis)
    return P.broadcast_in_dim(x, tuple(shape), dims)


def matchaxis(size, src, dst, x):
    """Put the batch axis of ``x`` (at ``src``, or None) at ``dst`` (None: must be
    unbatched)."""
    if src == dst:
        return x
    if src is None:
        return broadcast_batch(x, size, dst)
    if dst is None:
        raise ValueError("cannot unbatch a batched value")
    return moveaxis(x, src, dst)


def batch_jaxpr(closed: core.ClosedJaxpr, axis: AxisData, in_dims, place_out=None):
    """Trace the batched version of ``closed`` for inputs batched along ``in_dims``.

    Args:
      place_out: optional ``fn(i, value, out_dim) -> value`` moving output ``i`` (e.g. to
        force a carry batched at axis 0); the returned out dims are those before placing.

    Returns (ClosedJaxpr over the batched inputs, out_dims).
    """
    from functrax.core.tracing import trace_to_jaxpr
    in_avals = []
    for a, d in zip(closed.in_avals, in_dims):
        if d is None:
            in_avals.append(a)
        else:
            shape = list(a.shape)
            shape.insert(d, axis.size)
            in_avals.append(a.update(shape=tuple(shape)))
    out_dims_box = []

    def f(*args):
        trace = BatchTrace(core.current_trace(), axis)
        with core.new_trace(trace):
            ins = [x if d is None else BatchTracer(trace, x, d) for x, d in zip(args, in_dims)]
            outs = core.eval_jaxpr(closed.jaxpr, closed.consts, *ins)
            pairs = [trace.lift(o) for o in outs]
        out_dims_box.append([d for _, d in pairs])
        if place_out is None:
            return [v for v, _ in pairs]
        return [place_out(i, v, d) for i, (v, d) in enumerate(pairs)]

    batched = trace_to_jaxpr(f, in_avals)
    return batched, out_dims_box[0]
