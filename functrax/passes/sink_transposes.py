"""Transposes of sums of products become sums of transposed products.

A weight gradient accumulated from two contributions is staged as
``transpose(add(dot_general(a, b), dot_general(c, d)))`` (hvp, and any gradient through a
weight used twice). Each product can give its transposed result directly (the operands
swapped: ``transpose(dot(a, b)) = dot(b, a)`` when the permutation swaps the free blocks,
:func:`functrax.passes.simplify._swapped_dot`), so

    transpose(add(x, y)) -> add(transpose(x), transpose(y))

when every operand of the ``add``/``sub`` is a product (or a transpose) read only there and
the ``add`` is read only by the transpose. The transposes then fold into swapped products
(``simplify``) and no backend materializes a transposed copy (a strided pass over the
result: numpy's view is free, a fused kernel's strided reads are not).

>>> import functrax, functrax.numpy as fnp
>>> f = lambda a, b, c, d: (a @ b + c @ d).T
>>> x = fnp.ones((3, 3))
>>> from functrax.passes.pipeline import optimize
>>> [e.primitive.name for e in optimize(functrax.make_jaxpr(f)(x, x, x, x)).eqns]
['dot_general', 'dot_general', 'add']
"""
from __future__ import annotations

from functrax import primitives as P
from functrax.core import Jaxpr, JaxprEqn, Literal, Var
from functrax.core.avals import ShapedArray

__all__ = ["sink_transposes"]

_SUMS = (P.add_p, P.sub_p)
_SOURCES = (P.dot_general_p, P.transpose_p)


def _uses(jaxpr: Jaxpr) -> dict:
    n = {}
    for v in [u for e in jaxpr.eqns for u in e.invars] + list(jaxpr.outvars):
        if type(v) is not Literal:
            n[v] = n.get(v, 0) + 1
    return n


def _transposed(v, perm):
    a = v.aval
    return Var(ShapedArray(tuple(a.shape[p] for p in perm), a.dtype, a.weak_type))


def sink_transposes(jaxpr: Jaxpr) -> Jaxpr:
    """Rewrite ``transpose(add(p, q))`` of single-use products (see the module doc);
    ``jaxpr`` itself when there is none. Sub-jaxprs are left alone, as ``simplify``
    (which folds the new transposes into the products) leaves them."""
    producer = {o: e for e in jaxpr.eqns for o in e.outvars}
    uses = _uses(jaxpr)
    replace = {}  # id(transpose eqn) -> the new equations
    dead = set()  # ids of the sum and product equations folded into them
    for t in jaxpr.eqns:
        if t.primitive is not P.transpose_p or type(t.invars[0]) is Literal:
            continue
        s = producer.get(t.invars[0])
        if s is None or s.primitive not in _SUMS or uses.get(t.invars[0]) != 1 or id(s) in dead:
            continue
        ops = [producer.get(v) if type(v) is not Literal else None for v in s.invars]
        if not all(o is not None and o.primitive in _SOURCES and uses.get(v) == 1
                   and id(o) not in dead for o, v in zip(ops, s.invars)):
            continue
        if any(v.aval.shape != s.outvars[0].aval.shape for v in s.invars):
            continue
        perm = tuple(t.params["permutation"])
        new, parts = [], []
        for v in s.invars:
            tv = _transposed(v, perm)
            new.append(JaxprEqn([v], [tv], P.transpose_p, {"permutation": perm}))
            parts.append(tv)
        new.append(JaxprEqn(parts, list(t.outvars), s.primitive, dict(s.params)))
        replace[id(t)] = new
        dead.add(id(s))
    eqns = []
    for e in jaxpr.eqns:
        if id(e) in dead:
            continue
        if id(e) in replace:
            eqns.extend(replace[id(e)])
            continue
        eqns.append(e)
    if not replace:
        return jaxpr
    # the new equations stand where the transpose stood, after the products they read
    return Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, eqns, jaxpr.debug_info)

