"""Explicit broadcasts: implicit size-1 broadcasting made visible before lowering.

JAX's lax operands of an n-ary elementwise primitive may broadcast size-1 dimensions when
their ranks are equal (``mul j k`` with ``j:f32[2] k:f32[1]``: ``random.uniform`` stages
one), so traced programs carry them. Backends and fusion keep the simpler contract of
STYLE.md §3: an operand has the output's shape or rank 0. :func:`explicit_broadcasts`, run
at the lowering boundary (``pipeline.optimize``, after ``physicalize``, and by the
compilers that take a jaxpr directly), puts a ``broadcast_in_dim`` before every such operand,
in sub-jaxprs too; it returns its argument itself when there is none (the common case).

It also gives the passes and backends the reshape-like form of a ``broadcast_in_dim`` that
only inserts size-1 axes (how JAX's ``lax.expand_dims``, and so every ``keepdims``, stages):
``expand_dims_p``, which reshape chains, views and patterns see through.

>>> import functrax, functrax.numpy as fnp
>>> from functrax import lax
>>> c = functrax.make_jaxpr(lambda x, y: lax.mul(x, y))(fnp.ones(2), fnp.ones(1))
>>> print(explicit_broadcasts(c))
{ lambda ; a:f32[2] b:f32[1]. let
    c:f32[2] = broadcast_in_dim[broadcast_dimensions=(0,)] b
    d:f32[2] = mul a c
  in (d,) }
"""
from __future__ import annotations

import weakref

from functrax import core
from functrax import primitives as P
from functrax.core import ClosedJaxpr, Jaxpr, JaxprEqn, ShapedArray, Var, sub_jaxprs
from functrax.core.jaxpr import map_sub_jaxprs

_DONE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def explicit_broadcasts(closed: ClosedJaxpr) -> ClosedJaxpr:
    """``closed`` with every implicit size-1 broadcast of an elementwise operand made a
    ``broadcast_in_dim`` (``closed`` itself when there is none)."""
    jaxpr = explicit_broadcasts_jaxpr(closed.jaxpr)
    return closed if jaxpr is closed.jaxpr else ClosedJaxpr(jaxpr, closed.consts)


def explicit_broadcasts_jaxpr(jaxpr: Jaxpr) -> Jaxpr:
    """The open-jaxpr form of :func:`explicit_broadcasts` (jaxprs found to need nothing are
    remembered, per object)."""
    if jaxpr in _DONE:
        return jaxpr
    eqns, changed = [], False
    for eqn in jaxpr.eqns:
        new = _rewrite(eqn)
        changed |= new[-1] is not eqn
        eqns.extend(new)
    if not changed:
        _DONE[jaxpr] = True
        return jaxpr
    out = Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, eqns, jaxpr.debug_info)
    _DONE[out] = True
    return out


def _rewrite(eqn: JaxprEqn) -> list:
    """``eqn`` (or the broadcasts it needs, then its rewritten form)."""
    if any(True for _ in sub_jaxprs(eqn.params)):
        params = map_sub_jaxprs(eqn.params, explicit_broadcasts, explicit_broadcasts_jaxpr)
        return [eqn if params is eqn.params else eqn.replace(params=params)]
    if eqn.primitive is P.broadcast_in_dim_p:
        return [_unit_axes_as_expand_dims(eqn)]
    if eqn.primitive.family not in core.ELEMENTWISE_FAMILIES or len(eqn.outvars) != 1:
        return [eqn]
    shape = eqn.outvars[0].aval.shape
    pre, invars = [], []
    for v in eqn.invars:
        a = v.aval
        if a.shape in ((), shape) or len(a.shape) != len(shape):
            invars.append(v)
            continue
        b = Var(ShapedArray(shape, a.dtype, a.weak_type))
        pre.append(JaxprEqn([v], [b], P.broadcast_in_dim_p,
                            dict(shape=shape, broadcast_dimensions=tuple(range(len(shape))))))
        invars.append(b)
    return pre + [eqn.replace(invars=invars)] if pre else [eqn]


def _unit_axes_as_expand_dims(eqn: JaxprEqn) -> JaxprEqn:
    """``broadcast_in_dim`` inserting only size-1 axes -> ``expand_dims`` (else ``eqn``)."""
    if set(eqn.params) - {"shape", "broadcast_dimensions", "sharding"} or \
            eqn.params.get("sharding") is not None:
        return eqn
    x, shape = eqn.invars[0].aval.shape, tuple(eqn.params["shape"])
    dims = tuple(eqn.params["broadcast_dimensions"])
    new = tuple(i for i in range(len(shape)) if i not in dims)
    if not new or any(shape[d] != n for d, n in zip(dims, x)) or any(shape[i] != 1
                                                                      for i in new):
        return eqn
    return JaxprEqn(eqn.invars, eqn.outvars, P.expand_dims_p, dict(dimensions=new))
