"""Which mesh axes each value of a ``shard_map`` body varies over (JAX's "vma": varying
manual axes), computed statically on the per-device jaxpr.

An input varies over the mesh axes its in_spec names; ``psum``/``pmax``/``pmin``/
``all_gather`` over axes make the result the same along them; ``axis_index``,
``ppermute``, ``all_to_all`` and ``psum_scatter`` make it vary along theirs; anything else
varies where any operand does. ``shard_map(check_vma=True)`` uses it to reject an output
whose out_spec leaves out (replicates over) an axis the output varies over.

Rules live in :data:`vma_rules` (primitive -> ``rule(eqn, in_vmas) -> out_vmas``); the
control-flow and call primitives follow their sub-jaxprs, and a primitive with sub-jaxprs
and no rule is treated conservatively (every output varies where any input or any value
inside does).
"""
from __future__ import annotations

from functrax import core
from functrax import primitives as P
from functrax.primitives.collectives import axis_names

_NONE = frozenset()

vma_rules: dict = {}


def jaxpr_vma(jaxpr: core.Jaxpr, in_vmas) -> list:
    """The vma (a frozenset of mesh axis names) of each output of ``jaxpr`` given those of
    its inputs (its constvars are the same on every device)."""
    env = dict(zip(jaxpr.invars, in_vmas))

    def read(v):
        return _NONE if type(v) is core.Literal else env.get(v, _NONE)

    for eqn in jaxpr.eqns:
        ins = [read(v) for v in eqn.invars]
        rule = vma_rules.get(eqn.primitive, _default_rule)
        for v, s in zip(eqn.outvars, rule(eqn, ins)):
            env[v] = s
    return [read(v) for v in jaxpr.outvars]


def _union(sets) -> frozenset:
    out = _NONE
    for s in sets:
        out = out | s
    return out


def _default_rule(eqn, ins):
    vma = _union(ins)
    for sub in core.sub_jaxprs(eqn.params):  # conservative: everything inside
        vma = vma | _union(jaxpr_vma(sub, [vma] * len(sub.invars)))
    return [vma] * len(eqn.outvars)


# --- collectives ---


def _reducing(eqn, ins):
    names = axis_names(eqn.params.get("axes", eqn.params.get("axis_name")))
    if eqn.params.get("axis_index_groups") is not None:
        return list(ins)  # only equal within each group: still varies
    return [s - set(names) for s in ins]


def _varying(eqn, ins):
    names = frozenset(axis_names(eqn.params["axis_name"]))
    return [s | names for s in ins] or [names]


for _p in (P.psum_p, P.pmax_p, P.pmin_p, P.all_gather_p):
    vma_rules[_p] = _reducing
for _p in (P.reduce_scatter_p, P.ppermute_p, P.all_to_all_p, P.axis_index_p):
    vma_rules[_p] = _varying


# --- calls and control flow: follow the sub-jaxprs ---


def _call_rule(param):
    def rule(eqn, ins):
        sub = eqn.params[param]
        return jaxpr_vma(sub.jaxpr if isinstance(sub, core.ClosedJaxpr) else sub, ins)
    return rule


vma_rules[P.jit_p] = _call_rule("jaxpr")
vma_rules[P.remat_p] = _call_rule("jaxpr")
vma_rules[P.custom_jvp_call_p] = _call_rule("call_jaxpr")
vma_rules[P.custom_vjp_call_p] = _call_rule("call_jaxpr")


def _scan_rule(eqn, ins):
    body = eqn.params["jaxpr"].jaxpr
    nc, nk = eqn.params["num_consts"], eqn.params["num_carry"]
    consts, carry, xs = ins[:nc], list(ins[nc:nc + nk]), ins[nc + nk:]
    while True:  # the carry's vma grows until it is a fixed point
        outs = jaxpr_vma(body, consts + carry + xs)
        new = [c | o for c, o in zip(carry, outs[:nk])]
        if new == carry:
            return carry + outs[nk:]
        carry = new


def _cond_rule(eqn, ins):
    index, ops = ins[0], ins[1:]
    outs = [index] * len(eqn.outvars)  # a varying predicate picks different branches
    for br in eqn.params["branches"]:
        outs = [a | b for a, b in zip(outs, jaxpr_vma(br.jaxpr, ops))]
    return outs


def _while_rule(eqn, ins):
    cn, bn = eqn.params["cond_nconsts"], eqn.params["body_nconsts"]
    cconsts, bconsts, carry = ins[:cn], ins[cn:cn + bn], list(ins[cn + bn:])
    cond, body = eqn.params["cond_jaxpr"].jaxpr, eqn.params["body_jaxpr"].jaxpr
    while True:
        pred, = jaxpr_vma(cond, cconsts + carry)
        new = [c | o | pred for c, o in zip(carry, jaxpr_vma(body, bconsts + carry))]
        if new == carry:
            return carry
        carry = new


vma_rules[P.scan_p] = _scan_rule
vma_rules[P.cond_p] = _cond_rule
vma_rules[P.while_p] = _while_rule


def _shard_map_rule(eqn, ins):
    """A nested shard_map: its outputs vary over the axes their out_specs name."""
    from functrax.primitives.shard_map import entry_names
    out = []
    for spec in eqn.params["out_specs"]:
        out.append(_union(ins) | frozenset(n for e in spec for n in entry_names(e)))
    return out


vma_rules[P.shard_map_p] = _shard_map_rule
