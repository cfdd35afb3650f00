"""``saved_residuals`` / ``print_saved_residuals`` (``functrax.ad_checkpoint``): which values
reverse mode stores between the forward and the backward pass of a function, and where each
comes from, as JAX prints them (one line per residual: its type, then ``from the argument
x``, ``from a constant``, ``named 'h' from f`` for a ``checkpoint_name`` value, or ``output
of sin from f``).

The residuals are the leaves of the function ``linearize`` returns; each is traced back
through the call-like equations (``checkpoint``'s ``remat2``, nested ``jit``) to the
equation that computes it. functrax records no source lines on equations, so the source is
the traced function's name (JAX prints ``file.py:line (f)``).

>>> import functrax.numpy as fnp
>>> print_saved_residuals(lambda x: fnp.sin(fnp.sin(x)), 1.0)
f32[] output of cos from <lambda>
f32[] output of cos from <lambda>
"""
from __future__ import annotations

from functrax import core
from functrax.core import Literal
from functrax.core.tracing import arg_names, fun_name, make_jaxpr
from functrax.primitives.calls import jit_p, remat_p
from functrax.primitives.names import name_p
from functrax.transforms.grad import linearize
from functrax.tree_util import tree_flatten, tree_unflatten

# call-like primitive -> the param holding the jaxpr whose outputs its outputs are
_CALLS = {remat_p: "jaxpr", jit_p: "jaxpr"}


def _producers(jaxpr):
    return {v: (eqn, i) for eqn in jaxpr.eqns for i, v in enumerate(eqn.outvars)}


def _source(v, jaxpr, producers, where, arg_srcs, prefix=()):
    """``(order key, description)`` of where variable ``v`` of ``jaxpr`` comes from
    (``arg_srcs``: those of the invars of ``jaxpr``; ``prefix``: the key of the enclosing
    equation). Keys order as JAX lists residuals: literals, constants, arguments, then
    equations in program order."""
    if type(v) is Literal:
        return (0,), "from a literal"
    if v in jaxpr.constvars:
        return (1,) + prefix + (jaxpr.constvars.index(v),), "from a constant"
    if v in jaxpr.invars:
        return arg_srcs[jaxpr.invars.index(v)]
    eqn, i = producers[v]
    key = (prefix or (3,)) + (jaxpr.eqns.index(eqn),)
    if eqn.primitive is name_p:
        return key, f"named '{eqn.params['name']}' from {where}"
    param = _CALLS.get(eqn.primitive)
    if param is not None:
        sub = eqn.params[param]
        sub_j = sub.jaxpr if isinstance(sub, core.ClosedJaxpr) else sub
        outer = [_source(x, jaxpr, producers, where, arg_srcs, prefix) for x in eqn.invars]
        return _source(sub_j.outvars[i], sub_j, _producers(sub_j), where, outer, key)
    return key, f"output of {eqn.primitive.name} from {where}"


def saved_residuals(f, *args, **kwargs) -> list:
    """``(aval, source)`` pairs, one per residual of reverse-mode differentiation of
    ``f(*args, **kwargs)`` (see the module doc for the sources)."""
    in_leaves, in_tree = tree_flatten((args, kwargs))
    names = arg_names(f, args, kwargs)

    def f_(*leaves):
        a, k = tree_unflatten(in_tree, list(leaves))
        return f(*a, **k)

    closed = make_jaxpr(lambda *leaves: linearize(f_, *leaves)[1])(*in_leaves)
    j = closed.jaxpr
    srcs = [((2, i), f"from the argument {n}" if n else
             f"from the argument at flattened index {i}")
            for i, n in enumerate(names + [""] * (len(j.invars) - len(names)))]
    producers, where = _producers(j), fun_name(f)
    # as JAX: each residual once; literals, constants, arguments, then equations in order
    found = [(_source(v, j, producers, where, srcs), v.aval) for v in j.outvars]
    found.sort(key=lambda p: p[0][0])
    out, keys = [], set()
    for (key, src), aval in found:
        if key != (0,) and key in keys:  # one value reached through two call outputs
            continue
        keys.add(key)
        out.append((aval, src))
    return out


def print_saved_residuals(f, *args, **kwargs) -> None:
    """Print one line per residual that reverse mode saves for ``f(*args, **kwargs)``: its
    type and where it comes from (as JAX's ``print_saved_residuals``)."""
    for aval, src in saved_residuals(f, *args, **kwargs):
        print(f"{aval.str_short(short_dtypes=True)} {src}")


__all__ = ["saved_residuals", "print_saved_residuals"]
