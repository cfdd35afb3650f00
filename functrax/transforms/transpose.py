"""Transposition of linear jaxprs: the backward pass of reverse mode.

``transpose_rules[prim](cts, *args, **params)`` gets the output cotangent(s) and the
arguments, where linear arguments are :class:`UndefinedPrimal` markers, and returns one
cotangent per argument (``None`` for non-linear ones, or a :class:`Zero`).
"""
from __future__ import annotations

from functrax import core
from functrax.core import Literal
from functrax.errors import MissingRuleError
from functrax.transforms.jvp import Zero, add_tangents

transpose_rules: dict = {}


class UndefinedPrimal:
    """Stands for a linear input of an equation during transposition."""

    __slots__ = ("aval",)

    def __init__(self, aval):
        self.aval = aval

    def __repr__(self):
        return f"UndefinedPrimal({self.aval.str_short()})"


def is_undefined(x) -> bool:
    return type(x) is UndefinedPrimal


def backward_pass(jaxpr: core.Jaxpr, consts, cts_out) -> list:
    """Cotangents of ``jaxpr.invars`` given cotangents of its outputs.

    The jaxpr must be linear in its invars; its constvars (the residuals) are bound to
    ``consts``. Equations whose outputs get no cotangent are skipped (dead code for the
    backward pass).
    """
    linear = set(jaxpr.invars)
    for eqn in jaxpr.eqns:
        if any(type(v) is not Literal and v in linear for v in eqn.invars):
            linear.update(eqn.outvars)
    env = dict(zip(jaxpr.constvars, consts))
    ct_env: dict = {}

    def write_ct(v, ct):
        if type(v) is Literal or ct is None or type(ct) is Zero or v not in linear:
            return
        ct_env[v] = add_tangents(ct_env[v], ct) if v in ct_env else ct

    for v, ct in zip(jaxpr.outvars, cts_out):
        write_ct(v, ct)
    # non-linear equations (reading only residuals) are evaluated forward first
    for eqn in jaxpr.eqns:
        if not any(v in linear for v in eqn.outvars):
            invals = [v.val if type(v) is Literal else env[v] for v in eqn.invars]
            outs = eqn.primitive.bind(*invals, **eqn.params)
            env.update(zip(eqn.outvars, outs if eqn.primitive.multiple_results else [outs]))
    for eqn in reversed(jaxpr.eqns):
        if not any(v in linear for v in eqn.outvars):
            continue
        cts = [ct_env.pop(v, None) for v in eqn.outvars]
        if all(ct is None for ct in cts):
            continue
        args = [v.val if type(v) is Literal else (
            UndefinedPrimal(v.aval) if v in linear else env[v]) for v in eqn.invars]
        rule = transpose_rules.get(eqn.primitive)
        if rule is None:
            raise MissingRuleError("transpose", eqn.primitive)
        if eqn.primitive.multiple_results:
            cts = [Zero(v.aval) if ct is None else ct for v, ct in zip(eqn.outvars, cts)]
            cts_in = rule(cts, *args, **eqn.params)
        else:
            cts_in = rule(cts[0], *args, **eqn.params)
        for v, ct in zip(eqn.invars, cts_in):
            write_ct(v, ct)
    return [ct_env.get(v, Zero(v.aval)) for v in jaxpr.invars]


# --- rule families ---


def deflinear_transpose(prim, transpose_fn):
    """Register ``transpose_fn(ct, *args, **params) -> list of cts`` for a linear primitive."""
    def rule(ct, *args, **params):
        if type(ct) is Zero:
            return [None if not is_undefined(a) else Zero(a.aval) for a in args]
        return transpose_fn(ct, *args, **params)
    transpose_rules[prim] = rule
