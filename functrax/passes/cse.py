"""Common-subexpression elimination: merge equations that compute the same thing.

Two equations are the same when they have the same primitive, equal params and the same
inputs, and bind outputs of the same types. Params compare by value (numbers also by type
and sign of zero; arrays by dtype, shape and bytes), except objects without value equality
(jaxprs, functions), which compare by identity. Inputs compare as variables by identity and
literals by value (bitwise) and type.

What is never merged:

* primitives in ``no_cse`` (``copy`` asks for a fresh buffer each time) and equations with
  an effect (``eqn.effects``: a debug print or IO callback runs once per equation, also one
  inside a sub-jaxpr). ``no_cse`` may hold primitives or primitive names.
* ``remat2``: rematerialization exists to *avoid* reuse, so two checkpointed calls are
  never merged, and CSE never looks inside any sub-jaxpr (so also not inside ``remat2``'s).

In jit's pipeline ``inline`` runs first and removes every call boundary, ``remat2``'s
included: that is safe because differentiation (the only thing rematerialization is for)
has already happened when a jaxpr is optimized for execution, and recomputing a value the
program already has would only cost time. Run ``cse`` on a jaxpr you still mean to
differentiate only when you accept merging across checkpoint boundaries.
"""
from __future__ import annotations

import numpy as np

from functrax import primitives as P
from functrax.core import ClosedJaxpr, Jaxpr, Literal, has_effects
from functrax.passes.substitution import Substitution

no_cse: set = {P.copy_p, P.remat_p}


def _skip(eqn) -> bool:
    prim = eqn.primitive
    return prim in no_cse or prim.name in no_cse or has_effects(eqn)


def cse(jaxpr: Jaxpr) -> Jaxpr:
    """Merge duplicate equations (keeping the first); returns ``jaxpr`` if none were found.

    >>> import functrax, functrax.numpy as fnp
    >>> j = functrax.make_jaxpr(lambda x: fnp.sin(x) * fnp.sin(x))(1.0).jaxpr
    >>> [e.primitive.name for e in cse(j).eqns]
    ['sin', 'mul']
    """
    subst = Substitution()
    seen: dict = {}
    eqns = []
    for eqn in jaxpr.eqns:
        eqn = subst.apply(eqn)
        if not _skip(eqn):
            key = _eqn_key(eqn)
            prev = seen.get(key) if key is not None else None
            if prev is not None:
                subst.update(zip(eqn.outvars, prev.outvars))
                continue
            if key is not None:
                seen[key] = eqn
        eqns.append(eqn)
    return subst.rebuild(jaxpr, eqns) if subst else jaxpr


def _eqn_key(eqn):
    """A hashable key equal for equations that compute the same values (None: never)."""
    try:
        params = tuple(sorted((k, _freeze(v)) for k, v in eqn.params.items()))
        key = (eqn.primitive, params, tuple(_atom_key(v) for v in eqn.invars),
               tuple(v.aval for v in eqn.outvars))
        hash(key)
    except TypeError:
        return None
    return key


def _atom_key(v):
    if type(v) is Literal:
        return ("lit", v.aval, np.asarray(v.val, v.aval.dtype).tobytes())
    return v  # variables hash and compare by identity


def _freeze(v):
    """A hashable stand-in for a param value that compares by value (identity for objects
    without value semantics, such as jaxprs and functions)."""
    if v is None or isinstance(v, (str, bytes)):
        return v
    if isinstance(v, (bool, int, float, complex, np.generic)):
        return ("num", type(v), repr(v))  # 1, 1.0 and True differ; so do 0.0 and -0.0
    if isinstance(v, np.dtype):
        return ("dtype", v.str, v.name)
    if isinstance(v, np.ndarray):
        return ("ndarray", v.dtype.str, v.shape, v.tobytes())
    if isinstance(v, (Jaxpr, ClosedJaxpr)):
        return ("id", id(v))
    if isinstance(v, (tuple, list)):
        return (type(v), tuple(_freeze(x) for x in v))
    if isinstance(v, dict):
        return (dict, tuple(sorted((k, _freeze(x)) for k, x in v.items())))
    if isinstance(v, type):
        return ("type", v)
    if callable(v):
        return ("id", id(v))
    try:
        hash(v)
    except TypeError:
        return ("id", id(v))
    return (type(v), v)
