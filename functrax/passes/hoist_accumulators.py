"""Hoist accumulations out of scans: ``acc += dot(p_t, q_t)`` becomes one dot after the loop.

A scan carry whose body only does ``acc_out = acc_in + d`` (``acc_in`` read nowhere else,
``acc_out`` read by nothing but the carry), where ``d`` is a ``dot_general`` without batch
dimensions (optionally followed by a ``transpose``) or a ``reduce_sum`` of per-step values,
sums ``d`` over the iterations one step at a time. The sum commutes with those linear maps:
``sum_t dot(p_t, q_t)`` is one ``dot_general`` contracting the stacked ``P`` and ``Q`` over
the scanned axis as well. The pass removes such a carry from the scan, stacks the operands
(an ``xs`` operand is already stacked; a value computed in the body becomes an extra ``ys``
output, shared by every accumulation that reads it) and computes the final value after the
loop: ``init + dot_general(P, Q)``. It is what a hand-written backpropagation through time
does with the weight gradients: the backward scan of ``grad(scan)`` accumulates them step
by step. Loop-invariant operands (scan consts) are left alone, and only top-level scans are
rewritten. The result is the same up to floating-point summation order; stored operands
cost ``length`` times their size in memory.
"""
from __future__ import annotations

from collections import Counter

from functrax import dtypes
from functrax import primitives as P
from functrax.primitives.control_flow import scan_p
from functrax.core import ClosedJaxpr, Jaxpr, JaxprEqn, Var
from functrax.passes.dce import dce_jaxpr


# primitive -> rewrite(eqn) -> replacement equations or None (``scan``: ``rewrite_scan``)
hoist_rules: dict = {}


def hoist_accumulators(jaxpr: Jaxpr) -> Jaxpr:
    """Rewrite every top-level ``scan`` with hoistable accumulator carries (see the module).

    Returns ``jaxpr`` itself when there is none.

    >>> import functrax, functrax.numpy as fnp
    >>> from functrax import lax
    >>> f = lambda a, b: lax.scan(lambda s, ab: (s + ab[0].T @ ab[1], ()),
    ...                           fnp.zeros((3, 3)), (a, b))[0]
    >>> c = functrax.make_jaxpr(f)(fnp.ones((5, 2, 3)), fnp.ones((5, 2, 3)))
    >>> [e.primitive.name for e in hoist_accumulators(c.jaxpr).eqns][-3:]
    ['scan', 'dot_general', 'add']
    """
    eqns, changed = [], False
    for eqn in jaxpr.eqns:
        rule = hoist_rules.get(eqn.primitive)
        new = rule(eqn) if rule is not None else None
        if new is None:
            eqns.append(eqn)
        else:
            eqns.extend(new)
            changed = True
    if not changed:
        return jaxpr
    return Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, eqns, jaxpr.debug_info)


def _uses(body: Jaxpr) -> Counter:
    uses = Counter(v for e in body.eqns for v in e.invars if type(v) is Var)
    uses.update(v for v in body.outvars if type(v) is Var)
    return uses


def _accumulator(body, i, nc, ncar, uses, producer):
    """(add eqn, [linear eqns from the operands to ``d``], operands) when carry ``i`` is a
    hoistable accumulator, else None."""
    a, o = body.invars[nc + i], body.outvars[i]
    if type(o) is not Var or uses[a] != 1 or uses[o] != 1 or o not in producer:
        return None
    add = producer[o]
    if (add.primitive is not P.add_p or not dtypes.is_inexact(o.aval.dtype)
            or sum(v is a for v in add.invars) != 1):
        return None
    d = add.invars[1] if add.invars[0] is a else add.invars[0]
    chain = []
    while True:
        if type(d) is not Var or d not in producer or uses[d] != 1:
            return None
        e = producer[d]
        chain.insert(0, e)
        if e.primitive is P.transpose_p and len(chain) == 1:
            d = e.invars[0]
            continue
        break
    e = chain[0]
    if e.primitive is P.dot_general_p:
        if any(e.params["dimension_numbers"][1]):
            return None
    elif e.primitive is not P.reduce_sum_p or len(chain) != 1:
        return None
    consts = set(body.invars[:nc])
    if any(type(v) is not Var or v in consts for v in e.invars):
        return None
    if add.invars[0].aval.shape != add.invars[1].aval.shape:
        return None
    return add, chain, list(e.invars)


def _hoisted_eqn(e, stacked, out):
    """``e`` (dot_general or reduce_sum) over stacked operands, summing the scanned axis."""
    if e.primitive is P.reduce_sum_p:
        axes = (0,) + tuple(a + 1 for a in e.params["axes"])
        return JaxprEqn(stacked, [out], e.primitive, dict(e.params, axes=axes))
    (lc, rc), _ = e.params["dimension_numbers"]
    dn = (((0,) + tuple(c + 1 for c in lc), (0,) + tuple(c + 1 for c in rc)), ((), ()))
    return JaxprEqn(stacked, [out], e.primitive, dict(e.params, dimension_numbers=dn))


def rewrite_scan(eqn):
    closed, nc, ncar = eqn.params["jaxpr"], eqn.params["num_consts"], eqn.params["num_carry"]
    length, body = eqn.params["length"], closed.jaxpr
    uses = _uses(body)
    producer = {v: e for e in body.eqns for v in e.outvars}
    found = {i: acc for i in range(ncar)
             if (acc := _accumulator(body, i, nc, ncar, uses, producer)) is not None}
    if not found:
        return None
    x_pos = {v: j for j, v in enumerate(body.invars[nc + ncar:])}
    new_ys = []  # body values to emit as extra ys, in order
    for _, _, operands in found.values():
        new_ys.extend(v for v in operands if v not in x_pos and v not in new_ys)
    keep = [i not in found for i in range(ncar)]
    n_ys = len(body.outvars) - ncar
    new_body = Jaxpr(body.constvars,
                     body.invars[:nc] + [v for v, k in zip(body.invars[nc:nc + ncar], keep)
                                         if k] + body.invars[nc + ncar:],
                     [v for v, k in zip(body.outvars[:ncar], keep) if k]
                     + body.outvars[ncar:] + new_ys, body.eqns, body.debug_info)
    new_body = dce_jaxpr(new_body)[0]
    y_vars = [Var(v.aval.update(shape=(length,) + v.aval.shape)) for v in new_ys]
    xs_ops = eqn.invars[nc + ncar:]
    stacked_of = dict(zip(new_ys, y_vars))
    stacked_of.update({v: xs_ops[j] for v, j in x_pos.items()})
    scan_eqn = eqn.replace(
        invars=eqn.invars[:nc] + [v for v, k in zip(eqn.invars[nc:nc + ncar], keep) if k]
        + xs_ops,
        outvars=[v for v, k in zip(eqn.outvars[:ncar], keep) if k] + eqn.outvars[ncar:]
        + y_vars,
        params=dict(eqn.params, jaxpr=ClosedJaxpr(new_body, closed.consts),
                    num_carry=sum(keep)))
    assert len(scan_eqn.outvars) == ncar - len(found) + n_ys + len(new_ys)
    out = [scan_eqn]
    for i, (add, chain, operands) in found.items():
        vals = [Var(e.outvars[0].aval) for e in chain]
        out.append(_hoisted_eqn(chain[0], [stacked_of[v] for v in operands], vals[0]))
        out.extend(JaxprEqn([vals[k - 1]], [vals[k]], e.primitive, e.params)
                   for k, e in enumerate(chain) if k)
        init = eqn.invars[nc + i]
        a = body.invars[nc + i]
        args = [init if v is a else vals[-1] for v in add.invars]
        out.append(JaxprEqn(args, [eqn.outvars[i]], add.primitive, add.params))
    return out


hoist_rules[scan_p] = rewrite_scan
