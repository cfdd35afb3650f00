"""Type checking of jaxprs: every variable bound once before use, every equation's output
types equal to its primitive's abstract evaluation on its input types (up to weak type).
"""
from __future__ import annotations

from contextlib import ExitStack

import numpy as np

from functrax.core.avals import typematch
from functrax.core.jaxpr import (
    ClosedJaxpr, Jaxpr, Literal, PPContext, pp_eqn, pp_jaxpr_doc, sub_jaxprs,
)
from functrax.core.trace import abstract_eval, extend_axis_env
from functrax.config import config
from functrax.errors import JaxprTypeError

# primitive -> fn(params) -> (axis_name, size) that the primitive binds for its sub-jaxprs
# (or a list of such pairs: shard_map binds every manual mesh axis)
axis_binding_rules: dict = {}


def check_jaxpr(jaxpr) -> None:
    """Type-check a (closed) jaxpr.

    Every variable must be bound once before it is used, and every equation's output types
    must equal its primitive's abstract evaluation on its input types (up to weak type).

    Raises:
      JaxprTypeError: naming the offending equation (variables named as the jaxpr prints).
    """
    if isinstance(jaxpr, ClosedJaxpr):
        if len(jaxpr.consts) != len(jaxpr.jaxpr.constvars):
            raise JaxprTypeError(f"ClosedJaxpr has {len(jaxpr.consts)} consts for "
                                 f"{len(jaxpr.jaxpr.constvars)} constvars")
        jaxpr = jaxpr.jaxpr
    _JaxprChecker(jaxpr).run()


def check_if_enabled(jaxpr, produced_by: str) -> None:
    """Under ``enable_checks`` (JAX's ``jax_enable_checks``), type-check a jaxpr that a
    trace, transform or pass just produced; otherwise do nothing.

    Raises:
      JaxprTypeError: saying what produced the ill-typed jaxpr, then the checker's report.
    """
    if not config.enable_checks:
        return
    try:
        check_jaxpr(jaxpr)
    except JaxprTypeError as e:
        raise JaxprTypeError(f"enable_checks: the jaxpr produced by {produced_by} is "
                             f"ill-typed: {e}") from None


class _JaxprChecker:
    """One pass over a jaxpr; error texts are built only when a check fails."""

    def __init__(self, jaxpr: Jaxpr):
        self.jaxpr = jaxpr
        self.defined: set = set()
        self._ctx = None

    def run(self):
        for v in self.jaxpr.constvars + self.jaxpr.invars:
            self.bind(v, None)
        for eqn in self.jaxpr.eqns:
            self.check_eqn(eqn)
        for v in self.jaxpr.outvars:
            self.read(v, None)

    def fail(self, msg, eqn=None):
        if self._ctx is None:  # name every variable as the printed jaxpr does
            self._ctx = PPContext()
            self.text = pp_jaxpr_doc(self.jaxpr, self._ctx).format(80)
        where = "as an input or output of the jaxpr" if eqn is None else \
            f"in equation: {pp_eqn(eqn, self._ctx).format(80)}"
        raise JaxprTypeError(f"{msg(self._ctx)}\n{where}\nin jaxpr:\n{self.text}")

    def name(self, ctx, v):
        return f"{ctx.name(v)}:{v.aval.str_short()}"

    def bind(self, v, eqn):
        if v in self.defined:
            self.fail(lambda ctx: f"variable {self.name(ctx, v)} is bound twice", eqn)
        self.defined.add(v)

    def read(self, v, eqn):
        if type(v) is Literal:
            if np.shape(v.val) != v.aval.shape:
                self.fail(lambda ctx: f"literal {v} has a value that disagrees with its type",
                          eqn)
        elif v not in self.defined:
            self.fail(lambda ctx: f"variable {self.name(ctx, v)} is used before it is bound",
                      eqn)

    def check_eqn(self, eqn):
        for v in eqn.invars:
            self.read(v, eqn)
        binder = axis_binding_rules.get(eqn.primitive)
        bound = binder(eqn.params) if binder else []
        bound = bound if isinstance(bound, list) else [bound]  # shard_map: several axes
        with ExitStack() as stack:  # e.g. pmap binds its axis inside its sub-jaxpr
            for name, size in bound:
                stack.enter_context(extend_axis_env(name, size))
            for sub in sub_jaxprs(eqn.params):
                check_jaxpr(sub)
        try:
            out = abstract_eval(eqn.primitive, [v.aval for v in eqn.invars], eqn.params)
        except Exception as e:  # noqa: BLE001 - re-raised with the equation attached
            self.fail(lambda ctx, err=e: f"{type(err).__name__}: {err}", eqn)
        outs = out if eqn.primitive.multiple_results else [out]
        if len(outs) != len(eqn.outvars):
            self.fail(lambda ctx: f"'{eqn.primitive}' produces {len(outs)} results but the "
                      f"equation binds {len(eqn.outvars)}", eqn)
        for v, a in zip(eqn.outvars, outs):
            if not typematch(v.aval, a):
                self.fail(lambda ctx: f"'{eqn.primitive}' output {ctx.name(v)} has type "
                          f"{v.aval.str_short()} but its abstract evaluation gives "
                          f"{a.str_short()}", eqn)
            self.bind(v, eqn)
