"""A fast CPU executor for the numpy backend.

An (optimized, first-order) jaxpr is turned once into a flat program: a list of steps, each
a pre-resolved callable (the numpy rule with its params bound) reading and writing numbered
slots. Running it does no dict lookups and no rule dispatch. Slots are released after their
last use so dead intermediates are freed as early as possible.
"""
from __future__ import annotations

import functools

import numpy as np

from functrax import core
from functrax.core import Literal
from functrax.errors import MissingRuleError
from functrax.lowering.numpy_backend import numpy_rules

class Executable:
    """A compiled program: call with numpy arrays, get a list of numpy arrays."""

    __slots__ = ("steps", "n_slots", "in_slots", "out_slots", "const_vals", "out_avals",
                 "n_eqns", "donated")

    def __call__(self, *args):
        slots = [None] * self.n_slots
        for i, v in zip(self.in_slots, args):
            slots[i] = v
        for i, v in self.const_vals:
            slots[i] = v
        for step in self.steps:
            step(slots)
        return [slots[i] if type(i) is int else i for i in self.out_slots]


def _bind_rule(prim, params):
    rule = numpy_rules.get(prim)
    if rule is None:
        raise MissingRuleError("the numpy backend (jit executor)", prim)
    return functools.partial(rule, **params) if params else rule


def _step(fn, ins, outs, multiple, frees):
    """One program step; ``ins`` entries are slot ints or ('lit', value) constants."""
    getters = [(True, i) if type(i) is int else (False, i[1]) for i in ins]
    if all(g[0] for g in getters):
        idx = [g[1] for g in getters]
        if len(idx) == 1 and not multiple:
            (a,), (o,) = idx, outs

            def step(slots):
                slots[o] = fn(slots[a])
                for f in frees:
                    slots[f] = None
            return step
        if len(idx) == 2 and not multiple:
            (a, b), (o,) = idx, outs

            def step(slots):
                slots[o] = fn(slots[a], slots[b])
                for f in frees:
                    slots[f] = None
            return step

    def step(slots):
        args = [slots[v] if is_slot else v for is_slot, v in getters]
        res = fn(*args)
        if multiple:
            for o, r in zip(outs, res):
                slots[o] = r
        else:
            slots[outs[0]] = res
        for f in frees:
            slots[f] = None
    return step


def compile_jaxpr(closed: core.ClosedJaxpr, donated=()) -> Executable:
    """Compile a closed, first-order jaxpr (call primitives already inlined)."""
    jaxpr = closed.jaxpr
    slot_of = {}

    def slot(v):
        if v not in slot_of:
            slot_of[v] = len(slot_of)
        return slot_of[v]

    const_slots = [slot(v) for v in jaxpr.constvars]
    in_slots = [slot(v) for v in jaxpr.invars]
    last_use = {}
    for i, eqn in enumerate(jaxpr.eqns):
        for v in eqn.invars:
            if type(v) is not Literal:
                last_use[v] = i
    keep = {v for v in jaxpr.outvars if type(v) is not Literal}
    steps = []
    for i, eqn in enumerate(jaxpr.eqns):
        ins = [("lit", np.asarray(v.val, v.aval.dtype)) if type(v) is Literal else slot(v)
               for v in eqn.invars]
        outs = [slot(v) for v in eqn.outvars]
        frees = sorted({slot_of[v] for v in eqn.invars if type(v) is not Literal
                        and last_use.get(v) == i and v not in keep})
        fn = _bind_rule(eqn.primitive, eqn.params)
        steps.append(_step(_checked(fn, eqn), ins, outs, eqn.primitive.multiple_results,
                           frees))
    exe = Executable()
    exe.steps = steps
    exe.n_slots = len(slot_of)
    exe.in_slots = in_slots
    exe.const_vals = [(s, _np(c)) for s, c in zip(const_slots, closed.consts)]
    exe.out_slots = [np.asarray(v.val, v.aval.dtype) if type(v) is Literal else slot(v)
                     for v in jaxpr.outvars]
    exe.out_avals = [v.aval for v in jaxpr.outvars]
    exe.n_eqns = len(jaxpr.eqns)
    exe.donated = tuple(donated)
    return exe


def _np(c):
    return c._value if type(c) is core.Array else np.asarray(c)


def _checked(fn, eqn):
    """Make rule results numpy arrays of the equation's dtype (numpy may return scalars)."""
    if eqn.primitive.multiple_results:
        dts = [v.aval.dtype for v in eqn.outvars]

        def multi(*args):
            return [_fix(r, dt) for r, dt in zip(fn(*args), dts)]
        return multi
    dt = eqn.outvars[0].aval.dtype

    def single(*args):
        r = fn(*args)
        if type(r) is not np.ndarray or r.dtype != dt:
            return _fix(r, dt)
        return r
    return single


def _fix(r, dt):
    r = np.asarray(r)
    return r if r.dtype == dt else r.astype(dt)
