"""The dead-code elimination rules of the control-flow primitives (``dce_rules`` of
:mod:`functrax.passes.dce`): a ``cond`` drops the outputs no branch needs to produce and the
operands no branch reads; ``while`` and ``scan`` drop the carries (and ys) that neither a
used output nor a live carry needs, to a fixed point (as JAX's ``dce_rules``).
"""
from __future__ import annotations

from functrax.core import ClosedJaxpr
from functrax.passes.dce import dce_jaxpr, dce_rules, prune_invars
from functrax.primitives.control_flow import cond_p, scan_p, split_at, while_p


def _cond_dce(used_outputs, eqn):
    branches = eqn.params["branches"]
    pruned = [dce_jaxpr(b.jaxpr, used_outputs) for b in branches]
    used_ops = [any(col) for col in zip(*[u for _, u in pruned])]
    if all(used_ops) and all(j is b.jaxpr for (j, _), b in zip(pruned, branches)):
        return [True] + used_ops, eqn
    new = tuple(ClosedJaxpr(prune_invars(j, used_ops), b.consts)
                for (j, _), b in zip(pruned, branches))
    return [True] + used_ops, eqn.replace(
        invars=[eqn.invars[0]] + [v for v, u in zip(eqn.invars[1:], used_ops) if u],
        outvars=[v for v, u in zip(eqn.outvars, used_outputs) if u],
        params=dict(eqn.params, branches=new))


def _while_dce(used_outputs, eqn):
    cn, bn = eqn.params["cond_nconsts"], eqn.params["body_nconsts"]
    cond, body = eqn.params["cond_jaxpr"], eqn.params["body_jaxpr"]
    cond_j, cond_used = dce_jaxpr(cond.jaxpr)
    used_carry = [a or b for a, b in zip(used_outputs, cond_used[cn:])]
    for _ in range(len(used_carry) + 1):
        body_j, body_used = dce_jaxpr(body.jaxpr, used_carry)
        new = [a or b for a, b in zip(used_carry, body_used[bn:])]
        if new == used_carry:
            break
        used_carry = new
    used_cc, used_bc = cond_used[:cn], body_used[:bn]
    used_in = used_cc + used_bc + used_carry
    if all(used_in) and body_j is body.jaxpr and cond_j is cond.jaxpr:
        return used_in, eqn
    cond = ClosedJaxpr(prune_invars(cond_j, used_cc + used_carry), cond.consts)
    body = ClosedJaxpr(prune_invars(body_j, used_bc + used_carry), body.consts)
    params = dict(eqn.params, cond_jaxpr=cond, body_jaxpr=body, cond_nconsts=sum(used_cc),
                  body_nconsts=sum(used_bc))
    return used_in, eqn.replace(
        invars=[v for v, u in zip(eqn.invars, used_in) if u],
        outvars=[v for v, u in zip(eqn.outvars, used_carry) if u], params=params)


def _scan_dce(used_outputs, eqn):
    """Drop unused ys and the carries that neither a used output nor a live carry needs.

    A carry stays when its final value is used or when the body reads it to compute a
    kept output; the kept set grows to a fixed point (as JAX's ``_scan_dce_rule``).
    """
    closed, nc, ncar = eqn.params["jaxpr"], eqn.params["num_consts"], eqn.params["num_carry"]
    used_carry, used_ys = list(used_outputs[:ncar]), list(used_outputs[ncar:])
    for _ in range(ncar + 1):
        body, used_in = dce_jaxpr(closed.jaxpr, used_carry + used_ys)
        new = [a or b for a, b in zip(used_carry, used_in[nc:nc + ncar])]
        if new == used_carry:
            break
        used_carry = new
    used_c, _, used_x = split_at(used_in, nc, ncar)
    used_in = used_c + used_carry + used_x
    if all(used_in) and all(used_outputs) and body is closed.jaxpr:
        return used_in, eqn
    body = ClosedJaxpr(prune_invars(body, used_in), closed.consts)
    params = dict(eqn.params, jaxpr=body, num_consts=sum(used_c), num_carry=sum(used_carry))
    return used_in, eqn.replace(
        invars=[v for v, u in zip(eqn.invars, used_in) if u],
        outvars=[v for v, u in zip(eqn.outvars, used_carry + used_ys) if u], params=params)


dce_rules.update({cond_p: _cond_dce, while_p: _while_dce, scan_p: _scan_dce})
