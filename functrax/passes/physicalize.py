"""Physicalize: a jaxpr over extended dtypes (typed PRNG keys) rewritten onto their data.

A key array of shape ``s`` (dtype ``key<fry>``) is, physically, a ``uint32[*s, 2]`` buffer.
This pass, the first of the optimization pipeline (the lowering boundary), turns every
variable of an extended dtype into its physical variable and every equation touching one
into equations on the physical data, so that the passes after it and every backend (numpy,
Triton) only ever see numeric arrays:

- the key primitives become threefry2x32 on uint32 words (``primitives/prng_impl.py``);
- shape operations on keys act on the leading (key) axes of the data, the trailing element
  axis carried along (``physicalize_rules.py``);
- equations holding sub-jaxprs (jit, cond, while, scan, remat, custom derivatives, pmap)
  get their sub-jaxprs physicalized.

The same rewrite of one equation is how equations over keys run eagerly: the core's
``EvalTrace`` hands them to :func:`eval_extended` (registered below).

``physical_rules`` maps a primitive to ``rule(eqn, *physical_operands)``, which binds the
physical equations and returns what ``bind`` would (a list for multiple results). A
primitive that accepts keys (its abstract evaluation lets them through) but has no rule
raises ``MissingRuleError`` here: never a silent wrong answer.

>>> import functrax
>>> from functrax import random
>>> c = functrax.make_jaxpr(lambda k: random.key_data(random.split(k)))(random.key(0))
>>> [e.primitive.name for e in physicalize(c).eqns][-3:]
['broadcast_in_dim', 'broadcast_in_dim', 'concatenate']
"""
from __future__ import annotations

import weakref

import numpy as np

from functrax import core
from functrax.core import (
    Array, ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var, is_extended_aval, physical_aval,
    sub_jaxprs,
)
from functrax.core.jaxpr import map_sub_jaxprs
from functrax.core.tracing import trace_to_jaxpr
from functrax.errors import MissingRuleError

# primitive -> rule(eqn, *physical operands) -> what bind returns, on physical values
physical_rules: dict = {}

_MENTIONS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def mentions_extended(jaxpr: Jaxpr) -> bool:
    """Whether any variable of ``jaxpr`` (sub-jaxprs included) has an extended dtype."""
    hit = _MENTIONS.get(jaxpr)
    if hit is None:
        hit = _MENTIONS[jaxpr] = _scan_extended(jaxpr)
    return hit


def _scan_extended(jaxpr: Jaxpr) -> bool:
    for v in jaxpr.constvars + jaxpr.invars + jaxpr.outvars:
        if is_extended_aval(v.aval):
            return True
    return any(eqn_mentions_extended(e) for e in jaxpr.eqns)


def eqn_mentions_extended(eqn: JaxprEqn) -> bool:
    """Whether an equation reads or writes an extended dtype (in a sub-jaxpr too)."""
    for v in eqn.invars + eqn.outvars:
        if is_extended_aval(v.aval):
            return True
    return any(mentions_extended(j) for j in sub_jaxprs(eqn.params))


def physicalize(closed: ClosedJaxpr) -> ClosedJaxpr:
    """``closed`` with every extended-dtype value replaced by its physical data (``closed``
    itself when it has none).

    Inputs, outputs and consts keep their positions; a ``key<fry>[3]`` input becomes a
    ``u32[3,2]`` input (the buffer behind the key array).
    """
    if not mentions_extended(closed.jaxpr):
        return closed
    jaxpr = closed.jaxpr
    consts = [_physical_value(c) for c in closed.consts]
    in_avals = [physical_aval(v.aval) for v in jaxpr.invars]
    with core.set_current_trace(core.EVAL_TRACE):
        return trace_to_jaxpr(lambda *args: eval_physical(jaxpr, consts, args), in_avals,
                              jaxpr.debug_info)


def physicalize_jaxpr(jaxpr: Jaxpr) -> Jaxpr:
    """An open jaxpr (no consts) physicalized; physical consts it needs become constvars."""
    closed = physicalize(ClosedJaxpr(jaxpr, []))
    if closed.consts:
        raise AssertionError("internal error: physicalizing an open jaxpr made constants")
    return closed.jaxpr


def _physical_value(x):
    """The physical array behind a concrete key array (other values as they are)."""
    if type(x) is Array and is_extended_aval(x.aval):
        return Array._make(x._value, physical_aval(x.aval))
    return x


def eval_physical(jaxpr: Jaxpr, consts, args) -> list:
    """Evaluate ``jaxpr`` on physical values (binding on the current trace), each equation
    over extended dtypes rewritten by its physical rule."""
    env = dict(zip(jaxpr.constvars, consts))
    env.update(zip(jaxpr.invars, args))

    def read(v):
        return v.val if type(v) is Literal else env[v]

    for eqn in jaxpr.eqns:
        invals = [read(v) for v in eqn.invars]
        if eqn_mentions_extended(eqn):
            out = physical_rule(eqn.primitive)(eqn, *invals)
        else:
            out = eqn.primitive.bind(*invals, **eqn.params)
        outs = out if eqn.primitive.multiple_results else [out]
        env.update(zip(eqn.outvars, outs))
    return [read(v) for v in jaxpr.outvars]


def physical_rule(prim):
    """The physical rule of ``prim``: its registered one, else the rule of primitives that
    hold sub-jaxprs (a primitive taking keys with neither raises ``MissingRuleError``)."""
    rule = physical_rules.get(prim)
    if rule is not None:
        return rule
    return _sub_jaxpr_rule


def _sub_jaxpr_rule(eqn, *args):
    """Rebind ``eqn`` with each of its sub-jaxprs physicalized (jit, cond, while, scan, ...).

    Operands and results keep their positions, so the counts in the params (num_consts,
    num_carry, ...) stay true; a mapped or scanned axis is a leading axis, which the
    physical data shares with its key array.
    """
    if not any(True for _ in sub_jaxprs(eqn.params)):
        raise MissingRuleError("physicalize (typed PRNG keys)", eqn.primitive)
    params = map_sub_jaxprs(eqn.params, physicalize, physicalize_jaxpr)
    return eqn.primitive.bind(*args, **params)


# --- eager evaluation of equations over extended dtypes ---

_EAGER: dict = {}


def _one_eqn(prim, avals, params, out_aval) -> ClosedJaxpr:
    invars = [Var(a) for a in avals]
    outs = out_aval if prim.multiple_results else [out_aval]
    outvars = [Var(a) for a in outs]
    eqn = JaxprEqn(invars, outvars, prim, params)
    return physicalize(ClosedJaxpr(Jaxpr([], invars, outvars, [eqn]), []))


def _eager_program(prim, avals, params, out_aval) -> ClosedJaxpr:
    """The physical program of one equation, memoized unless it holds sub-jaxprs (those
    would keep every traced jaxpr alive)."""
    if any(True for _ in sub_jaxprs(params)):
        return _one_eqn(prim, avals, params, out_aval)
    try:
        key = (prim, avals, tuple(params.items()))
        hit = _EAGER.get(key)
    except TypeError:  # unhashable params
        return _one_eqn(prim, avals, params, out_aval)
    if hit is None:
        if len(_EAGER) > 4096:
            _EAGER.clear()
        hit = _EAGER[key] = _one_eqn(prim, avals, params, out_aval)
    return hit


def eval_extended(prim, vals, avals, params, out_aval) -> list:
    """Run one equation over extended dtypes eagerly: its physical program on the physical
    buffers ``vals`` (numpy arrays); returns the physical output buffers."""
    closed = _eager_program(prim, avals, params, out_aval)
    args = [Array._make(v, physical_aval(a)) for v, a in zip(vals, avals)]
    outs = core.eval_jaxpr(closed.jaxpr, closed.consts, *args)
    return [o._value if type(o) is Array else np.asarray(o) for o in outs]


core.register_extended_eval(eval_extended)
