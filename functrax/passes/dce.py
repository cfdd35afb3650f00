"""Dead-code elimination: drop equations whose outputs nothing uses.

Higher-order primitives register a rule in ``dce_rules`` (next to their other rules, as
``inline.inlinable``): ``rule(used_outputs, eqn) -> (used_inputs, new_eqn)`` returns one
bool per operand of ``eqn`` (is it still read) and the equation rewritten to produce only
the used outputs (``eqn`` itself when nothing changes). The rule is called when some
output is used or when the equation has an effect (then with every output unused); it
prunes its sub-jaxprs with :func:`dce_jaxpr`, so DCE is recursive. The control-flow rules
(``scan``, ``while``, ``cond``) drop unused ys, dead carries and unused branch outputs, as
JAX's ``dce_rules``.

An equation with an effect (``eqn.effects``, the IR's notion: a debug print, an IO
callback, or a sub-jaxpr holding one) is never removed, and neither are the inputs it reads.
"""
from __future__ import annotations

from functrax.core import Jaxpr, Literal, has_effects

# primitive -> rule(used_outputs: list[bool], eqn) -> (used_inputs: list[bool], new eqn)
dce_rules: dict = {}


def dce_jaxpr(jaxpr: Jaxpr, used_outputs=None) -> tuple[Jaxpr, list]:
    """Drop equations whose outputs are unused (and outputs not in ``used_outputs``).

    Returns (new jaxpr, one bool per invar: is it still used). The invars are kept (see
    :func:`prune_invars`); ``jaxpr`` itself comes back when nothing was dropped.

    >>> import functrax, functrax.numpy as fnp
    >>> j = functrax.make_jaxpr(lambda x: (fnp.sin(x), x)[1])(1.0).jaxpr
    >>> len(dce_jaxpr(j)[0].eqns)
    0
    """
    all_used = used_outputs is None or all(used_outputs)
    used_outputs = [True] * len(jaxpr.outvars) if used_outputs is None else used_outputs
    outvars = [v for v, u in zip(jaxpr.outvars, used_outputs) if u]
    live = {v for v in outvars if type(v) is not Literal}
    eqns, changed = [], not all_used
    for eqn in reversed(jaxpr.eqns):
        used_outs = [v in live for v in eqn.outvars]
        if not any(used_outs) and not has_effects(eqn):
            changed = True
            continue
        rule = dce_rules.get(eqn.primitive)
        if rule is None:
            used_ins, new = [True] * len(eqn.invars), eqn
        else:
            used_ins, new = rule(used_outs, eqn)
        changed = changed or new is not eqn
        eqns.append(new)
        live.update(v for v, u in zip(eqn.invars, used_ins) if u and type(v) is not Literal)
    used_in = [v in live for v in jaxpr.invars]
    if not changed:
        return jaxpr, used_in
    eqns.reverse()
    return Jaxpr(jaxpr.constvars, jaxpr.invars, outvars, eqns, jaxpr.debug_info), used_in


def prune_invars(jaxpr: Jaxpr, keep) -> Jaxpr:
    """``jaxpr`` with only the invars flagged in ``keep`` (the others must be unused)."""
    if all(keep):
        return jaxpr
    return Jaxpr(jaxpr.constvars, [v for v, k in zip(jaxpr.invars, keep) if k], jaxpr.outvars,
                 jaxpr.eqns, jaxpr.debug_info)


def dce(jaxpr: Jaxpr) -> Jaxpr:
    """The pipeline's pass: :func:`dce_jaxpr` keeping every output."""
    return dce_jaxpr(jaxpr)[0]
