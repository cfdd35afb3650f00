"""The fusion tables: how the planner treats each primitive (see :func:`classify`).

Every primitive is in exactly one of ``ELEMENTWISE``, ``VIEWS``, ``REDUCTIONS``,
``CONTRACTIONS`` and ``UNFUSIBLE`` (with the reason it runs alone); unknown primitives are
opaque. All names are re-exported by :mod:`functrax.lowering.fusion.planner`.
"""
from __future__ import annotations

from functrax.core import Literal
from functrax.lowering.fusion.bitcast import bitcast_unfusible
from functrax.lowering.fusion.gather import (
    SCATTER_REASON, dynamic_slice_unfusible, gather_unfusible,
)

__all__ = ["ELEMENTWISE", "VIEWS", "REDUCTIONS", "CONTRACTIONS", "UNFUSIBLE",
           "MAX_CONCAT_OPERANDS", "classify"]

# --- the tables: every primitive is in exactly one of them (unknown ones are OPAQUE) ---

ELEMENTWISE = frozenset("""
abs acos acosh add and asin asinh atan atan2 atanh cbrt ceil clamp conj convert_element_type
copy cos cosh digamma div eq erf erf_inv erfc exp exp2 expm1 floor ge gt imag integer_pow
is_finite le lgamma log log1p logistic lt max min mul ne neg nextafter not or pow real rem round
rsqrt select_n shift_left shift_right_arithmetic shift_right_logical sign sin sinh sqrt square
stop_gradient sub tan tanh xor bitcast_convert_type
""".split())

VIEWS = frozenset("""
broadcast_in_dim reshape transpose squeeze expand_dims rev slice pad dynamic_slice iota
concatenate dynamic_update_slice gather
""".split())

REDUCTIONS = frozenset("""
reduce_sum reduce_max reduce_min reduce_prod reduce_and reduce_or reduce_xor argmax argmin
""".split())

CONTRACTIONS = frozenset({"dot_general"})

_CALL_LIKE = "call-like primitive that survived inlining (run passes.pipeline.optimize first)"
_COLLECTIVE = "collective over a named axis: communication, not a loop over indices"
_SCATTER = SCATTER_REASON
_CUMULATIVE = "cumulative scan along an axis: a sequential dependence, not a map or a reduction"

UNFUSIBLE = {
    "sort": "sort: data-dependent permutation of whole rows",
    "scatter": _SCATTER, "scatter-add": _SCATTER, "scatter-mul": _SCATTER,
    "scatter-min": _SCATTER, "scatter-max": _SCATTER,
    "cumsum": _CUMULATIVE, "cumprod": _CUMULATIVE, "cummax": _CUMULATIVE,
    "cummin": _CUMULATIVE, "cumlogsumexp": _CUMULATIVE,
    "cond": "control flow: runs one of several sub-jaxprs",
    "scan": "control flow: a loop over a sub-jaxpr",
    "while": "control flow: a loop over a sub-jaxpr",
    "threefry2x32": "threefry2x32: multi-result integer hash (its own kernel)",
    "jit": _CALL_LIKE, "custom_jvp_call": _CALL_LIKE, "custom_vjp_call": _CALL_LIKE,
    "custom_lin": _CALL_LIKE, "remat2": _CALL_LIKE,
    "xla_pmap": "pmap: a call mapped over devices (each device runs its own program)",
    "psum": _COLLECTIVE, "pmax": _COLLECTIVE, "pmin": _COLLECTIVE,
    "ppermute": _COLLECTIVE, "all_gather": _COLLECTIVE, "all_to_all": _COLLECTIVE,
    "reduce_scatter": _COLLECTIVE, "axis_index": _COLLECTIVE,
    **dict.fromkeys(("cholesky", "triangular_solve", "lu", "qr", "eigh", "svd"),
                    "linear algebra decomposition: numpy fallback"),
    "fused_attention": "attention: a flash-style kernel of its own (kernels/attention.py)",
}


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


# views that are fusible only for some params: primitive name -> fn(eqn) -> reason or None
_CONDITIONAL = {"dynamic_slice": dynamic_slice_unfusible, "gather": gather_unfusible,
                "dynamic_update_slice": _dynamic_update_slice_unfusible,
                "concatenate": _concatenate_unfusible,
                "bitcast_convert_type": bitcast_unfusible}


def classify(eqn) -> tuple:
    """``(category, reason)`` of an equation for fusion.

    ``category`` is one of ``"elementwise"``, ``"view"``, ``"reduction"``, ``"dot"`` and
    ``"opaque"``; ``reason`` says why an equation is opaque (None otherwise).

    >>> import functrax, functrax.numpy as fnp
    >>> eqn = functrax.make_jaxpr(fnp.sort)(fnp.ones(3)).eqns[0]
    >>> classify(eqn)
    ('opaque', 'sort: data-dependent permutation of whole rows')
    """
    name = eqn.primitive.name
    if name in UNFUSIBLE:
        return "opaque", UNFUSIBLE[name]
    if name in _CONDITIONAL:
        reason = _CONDITIONAL[name](eqn)
        if reason is not None:
            return "opaque", reason
    if len(eqn.outvars) != 1:
        return "opaque", f"'{name}' has {len(eqn.outvars)} results (fused groups need one)"
    if name in ELEMENTWISE:
        return "elementwise", None
    if name in VIEWS:
        return "view", None
    if name in REDUCTIONS:
        return "reduction", None
    if name in CONTRACTIONS:
        return "dot", None
    return "opaque", (f"unknown primitive '{name}': no fusion rule (add it to one of the tables "
                      "in functrax/lowering/fusion/tables.py)")
