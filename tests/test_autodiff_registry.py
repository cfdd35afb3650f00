"""Every primitive can be differentiated: a JVP rule for each, a transpose rule for each
linear one (reverse mode = JVP + partial evaluation + transposition, so only primitives that
appear in linear jaxprs need one)."""
from __future__ import annotations

import pytest

import functrax  # noqa: F401  (registers every rule)
from functrax.primitives import primitive_registry
from functrax.transforms.jvp import jvp_rules
from functrax.transforms.transpose import transpose_rules

# primitive name -> why it has no JVP rule. A missing rule not listed here fails.
EXEMPT_JVP = {
    "custom_lin": ("only emitted into linear jaxprs by custom_vjp's JVP and only ever "
                   "transposed; forward mode over custom_vjp is unsupported (as JAX)"),
    "fused_attention": ("lowering-internal: made by the attention pass "
                        "(functrax/passes/attention.py) after every transformation ran, so "
                        "never differentiated"),
    "igamma_grad_a": ("as JAX: the a-derivative of igamma has no derivative rule itself "
                      "(second derivatives of gammainc in a raise)"),
    "random_gamma_grad": ("as JAX's random_gamma_grad: the reparameterization gradient of "
                          "gamma samples is not differentiated again"),
}

# primitive name -> why it needs no transpose rule although listed (or built) as linear.
EXEMPT_TRANSPOSE: dict = {}

# primitives linear in (some of) their arguments: they appear in the linear jaxprs that
# reverse mode transposes
LINEAR = {
    "neg", "add", "sub", "mul", "div", "copy", "convert_element_type", "select_n",
    "real", "imag", "conj", "reduce_sum", "cumsum", "broadcast_in_dim", "reshape",
    "transpose", "squeeze", "expand_dims", "rev", "concatenate", "pad", "slice",
    "dynamic_slice", "dynamic_update_slice", "gather", "scatter-add", "scatter",
    "scatter-mul", "dot_general", "conv_general_dilated", "custom_lin", "reduce_window_sum",
    "select_and_gather_add", "select_and_scatter_add", "fft",
}

PRIMS = sorted(primitive_registry.items())


@pytest.mark.parametrize("name,prim", PRIMS, ids=[n for n, _ in PRIMS])
def test_has_jvp_rule(name, prim):
    if name in EXEMPT_JVP:
        assert prim not in jvp_rules, (f"'{name}' has a JVP rule now: remove it from "
                                       "EXEMPT_JVP")
        return
    assert callable(jvp_rules.get(prim)), (
        f"primitive '{name}' has no JVP rule: add one in functrax/transforms/ad_rules*.py "
        "(defjvp / defjvp2 / deflinear / defjvp_zero), or list it in EXEMPT_JVP with a reason")


def _built_linear(prim) -> bool:
    """The JVP rule came from ``deflinear`` (the primitive applied to the tangents)."""
    rule = jvp_rules.get(prim)
    return rule is not None and "deflinear" in getattr(rule, "__qualname__", "")


@pytest.mark.parametrize("name,prim", PRIMS, ids=[n for n, _ in PRIMS])
def test_linear_primitive_has_transpose_rule(name, prim):
    if name not in LINEAR and not _built_linear(prim):
        return
    if name in EXEMPT_TRANSPOSE:
        return
    assert callable(transpose_rules.get(prim)), (
        f"linear primitive '{name}' has no transpose rule: add one with deflinear_transpose "
        "in functrax/transforms/ad_rules*.py, or list it in EXEMPT_TRANSPOSE with a reason")


def test_lists_name_existing_primitives():
    names = set(primitive_registry)
    stale = sorted((set(EXEMPT_JVP) | set(EXEMPT_TRANSPOSE) | LINEAR) - names)
    assert not stale, f"EXEMPT_JVP / EXEMPT_TRANSPOSE / LINEAR name unknown primitives: {stale}"


def test_transpose_rules_only_for_registered_primitives():
    # user-defined primitives (functrax.extend.core, e.g. tests/test_extend.py's) add their
    # rules to the same tables
    from functrax.extend.core import Primitive as UserPrimitive
    registered = set(primitive_registry.values())
    extra = [p.name for p in transpose_rules
             if p not in registered and not isinstance(p, UserPrimitive)]
    assert not extra, f"transpose rules for unregistered primitives: {extra}"
