"""The fusion tables: how the planner treats each primitive (see :func:`classify`).

A primitive's fusion category derives from its family (``Primitive.family``, declared where
the primitive is defined): elementwise and transcendental ops are *elementwise*, shape and
indexing ops *views* (index arithmetic), reductions *reductions*, ``dot_general`` a
*contraction* (``"dot"``), ``conv_general_dilated`` a *convolution* (``"conv"``); the other
families run alone (*opaque*), each with the reason in ``UNFUSIBLE_FAMILIES`` (a primitive
may state its own in ``UNFUSIBLE_PRIMITIVES``, which also makes an elementwise primitive
opaque: the iterative special functions). Some fusible primitives are opaque for some params
(``CONDITIONAL``). A primitive without a family (a user's) is opaque. All names are
re-exported by :mod:`functrax.lowering.fusion.planner`.
"""
from __future__ import annotations

from functrax import primitives as P
from functrax.core import Family, Literal
from functrax.lowering.fusion.bitcast import bitcast_unfusible
from functrax.lowering.fusion.gather import (
    SCATTER_REASON, dynamic_slice_unfusible, gather_unfusible,
)

__all__ = ["FAMILY_CATEGORIES", "UNFUSIBLE_FAMILIES", "UNFUSIBLE_PRIMITIVES", "CONDITIONAL",
           "MAX_CONCAT_OPERANDS", "classify", "fusion_category"]

# family -> how the planner fuses it
FAMILY_CATEGORIES = {
    Family.ELEMENTWISE: "elementwise", Family.TRANSCENDENTAL: "elementwise",
    Family.SHAPE: "view", Family.INDEXING: "view",
    Family.REDUCTION: "reduction", Family.CONTRACTION: "dot", Family.CONVOLUTION: "conv",
}

_CALL_LIKE = "call-like primitive that survived inlining (run passes.pipeline.optimize first)"

# family -> why its primitives run alone
UNFUSIBLE_FAMILIES = {
    Family.SORT: "sort: data-dependent permutation of whole rows",
    Family.SCATTER: SCATTER_REASON,
    Family.CUMULATIVE: ("cumulative scan along an axis: a sequential dependence, not a map or "
                        "a reduction"),
    Family.CONTROL_FLOW: "control flow: sub-jaxprs run conditionally or in a loop",
    Family.WINDOW: "windowed reduction: overlapping windows, its own kernel",
    Family.FFT: "fft: a global transform along whole axes (numpy fallback)",
    Family.CALL: _CALL_LIKE,
    Family.COLLECTIVE: "collective over a named axis: communication, not a loop over indices",
    Family.LINALG: "linear algebra decomposition: numpy fallback",
    Family.PRNG: "threefry2x32: multi-result integer hash (its own kernel)",
    Family.FUSED: "a fused pattern: one hand-written kernel of its own",
    Family.BARRIER: "optimization_barrier: no fusion or reordering across it",
}

# primitive -> its own reason (more precise than its family's)
UNFUSIBLE_PRIMITIVES = {
    P.cond_p: "control flow: runs one of several sub-jaxprs",
    P.scan_p: "control flow: a loop over a sub-jaxpr",
    P.while_p: "control flow: a loop over a sub-jaxpr",
    P.xla_pmap_p: "pmap: a call mapped over devices (each device runs its own program)",
    P.attention_p: "attention: a flash-style kernel of its own (kernels/attention.py)",
    P.reduce_p: "lax.reduce with a general computation: a traced scalar sub-jaxpr",
}
_ITERATIVE = ("iterative special function (a series or continued fraction summed until each "
              "element converges: data-dependent term counts): numpy fallback")
UNFUSIBLE_PRIMITIVES.update(dict.fromkeys(
    (P.igamma_p, P.igammac_p, P.igamma_grad_a_p, P.random_gamma_grad_p,
     P.regularized_incomplete_beta_p, P.zeta_p, P.polygamma_p), _ITERATIVE))


def _dynamic_update_slice_unfusible(eqn):
    if any(type(v) is not Literal for v in eqn.invars[2:]):
        return ("dynamic_update_slice with traced start indices: writes a window at a "
                "data-dependent position")
    return None


# a fused concatenate loads every operand per element: more operands are one copy instead
MAX_CONCAT_OPERANDS = 32


def _concatenate_unfusible(eqn):
    if len(eqn.invars) > MAX_CONCAT_OPERANDS:
        return (f"concatenate of {len(eqn.invars)} operands (more than "
                f"{MAX_CONCAT_OPERANDS}): one copy, not a select among loads")
    return None


# fusible primitives that are opaque for some params: primitive -> fn(eqn) -> reason or None
CONDITIONAL = {P.dynamic_slice_p: dynamic_slice_unfusible, P.gather_p: gather_unfusible,
               P.dynamic_update_slice_p: _dynamic_update_slice_unfusible,
               P.concatenate_p: _concatenate_unfusible,
               P.bitcast_convert_type_p: bitcast_unfusible}


def fusion_category(prim) -> tuple:
    """``(category, reason)`` of a primitive from its family: category ``"elementwise"``,
    ``"view"``, ``"reduction"``, ``"dot"``, ``"conv"`` or ``"opaque"`` (with the reason)."""
    reason = UNFUSIBLE_PRIMITIVES.get(prim)  # a primitive's own reason wins over its family
    if reason is not None:
        return "opaque", reason
    category = FAMILY_CATEGORIES.get(prim.family)
    if category is not None:
        return category, None
    reason = UNFUSIBLE_FAMILIES.get(prim.family)
    if reason is None:
        reason = (f"unknown primitive '{prim}': no fusion rule (give it a family the tables in "
                  "functrax/lowering/fusion/tables.py know)")
    return "opaque", reason


def classify(eqn) -> tuple:
    """``(category, reason)`` of an equation for fusion.

    ``category`` is one of ``"elementwise"``, ``"view"``, ``"reduction"``, ``"dot"``,
    ``"conv"`` and ``"opaque"``; ``reason`` says why an equation is opaque (None otherwise).

    >>> import functrax, functrax.numpy as fnp
    >>> eqn = functrax.make_jaxpr(fnp.sort)(fnp.ones(3)).eqns[0]
    >>> classify(eqn)
    ('opaque', 'sort: data-dependent permutation of whole rows')
    """
    category, reason = fusion_category(eqn.primitive)
    if category == "opaque":
        return category, reason
    conditional = CONDITIONAL.get(eqn.primitive)
    reason = conditional(eqn) if conditional is not None else None
    if reason is not None:
        return "opaque", reason
    if len(eqn.outvars) != 1:
        return "opaque", (f"'{eqn.primitive}' has {len(eqn.outvars)} results (fused groups "
                          "need one)")
    return category, None
