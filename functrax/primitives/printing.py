"""Printing rules for primitives whose params JAX prints specially."""
from __future__ import annotations

from functrax import pretty_printer as pp
from functrax.core.jaxpr import pp_kv_pairs, pp_param_rules, sorted_params
from functrax.primitives.contraction import dot_general_p
from functrax.primitives.shape import broadcast_in_dim_p


def _broadcast_in_dim_pp(eqn, ctx):
    # a scalar broadcast is fully described by its output type, so JAX prints no params
    if eqn.invars[0].aval.shape == () and "sharding" not in eqn.params:
        return pp.nil()
    return pp_kv_pairs(sorted_params(eqn.params), ctx)


class _DimNumbers(tuple):
    def __str__(self):
        (lc, rc), (lb, rb) = self
        return f"(({list(lc)}, {list(rc)}), ({list(lb)}, {list(rb)}))"


def _dot_general_pp(eqn, ctx):
    params = dict(eqn.params)
    params["dimension_numbers"] = _DimNumbers(params["dimension_numbers"])
    if params.get("precision") is None:
        params.pop("precision", None)
    if params.get("preferred_element_type") is not None:
        params["preferred_element_type"] = params["preferred_element_type"].name
    return pp_kv_pairs(sorted_params(params), ctx)


pp_param_rules[broadcast_in_dim_p] = _broadcast_in_dim_pp
pp_param_rules[dot_general_p] = _dot_general_pp
