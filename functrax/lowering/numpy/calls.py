"""numpy rules of the call-like primitives: ``jit`` runs its inner jaxpr compiled once per
jaxpr object on the backend it names (``backend`` param; none: the numpy executor),
``custom_jvp_call`` / ``custom_vjp_call`` / ``remat2`` / ``linear_call`` evaluate their inner
jaxpr (their derivative rules and rematerialization only matter to transformations), and
``custom_lin`` (forward mode of a ``custom_vjp`` function) is an error. ``xla_pmap`` runs on
devices: its rule is registered by the pmap transform (``functrax/transforms/pmap.py``),
which owns the device runtime.
"""
from __future__ import annotations

from functrax import core
from functrax.lowering.backends import host_executable
from functrax.lowering.numpy.rules import numpy_rules
from functrax.primitives.calls import (
    custom_jvp_call_p, custom_lin_p, custom_vjp_call_p, jit_p, linear_call_p, remat_p,
)


def _jit_numpy(*args, jaxpr, name, backend=None):
    return host_executable(jaxpr, backend).run(*args)


def eager_call_rule(param: str):
    """numpy rule of a call-like primitive: evaluate its ``param`` jaxpr eagerly."""
    def rule(*args, **params):
        closed = params[param]
        outs = core.eval_jaxpr(closed.jaxpr, closed.consts, *args)
        return [o._value if type(o) is core.Array else o for o in outs]
    return rule


def _custom_lin_numpy(*args, **params):
    raise TypeError("can't apply forward-mode autodiff (jvp) to a custom_vjp function. Use "
                    "reverse mode (grad, vjp) or define the function with custom_jvp instead.")


def _linear_call_numpy(*args, callee, num_callee_consts, num_transpose_consts, **_):
    ins = args[:num_callee_consts] + args[num_callee_consts + num_transpose_consts:]
    return eager_call_rule("callee")(*ins, callee=callee)


numpy_rules.update({
    jit_p: _jit_numpy,
    custom_jvp_call_p: eager_call_rule("call_jaxpr"),
    custom_vjp_call_p: eager_call_rule("call_jaxpr"),
    remat_p: eager_call_rule("jaxpr"),
    linear_call_p: _linear_call_numpy,
    custom_lin_p: _custom_lin_numpy,
})
