"""Printing rules for primitives whose params JAX prints specially."""
from __future__ import annotations

from functrax import pretty_printer as pp
from functrax.core.jaxpr import pp_jaxpr_doc, pp_kv_pairs, pp_param_rules, sorted_params
from functrax.primitives.calls import custom_jvp_call_p, custom_vjp_call_p, jit_p
from functrax.primitives.contraction import dot_general_p
from functrax.primitives.shape import broadcast_in_dim_p


def _broadcast_in_dim_pp(eqn, ctx):
    # the shape is the binder's type, so JAX prints only non-empty broadcast_dimensions and a
    # sharding that is set
    params = {k: v for k, v in eqn.params.items()
              if (k == "broadcast_dimensions" and v) or (k == "sharding" and v is not None)}
    return pp_kv_pairs(sorted_params(params), ctx)


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


# jit: the inner jaxpr's binders print with the names of the values bound to them (JAX's
# pjit rule), unless it is shared (printed once at the top)
def _jit_pp(eqn, ctx):
    jaxpr = eqn.params["jaxpr"].jaxpr
    if jaxpr not in ctx.shared:
        ctx.suggest_same_names(jaxpr.invars, eqn.invars)
        ctx.suggest_same_names(jaxpr.outvars, eqn.outvars)
    inner = pp_jaxpr_doc(jaxpr, ctx)
    items = [pp.text(f"name={eqn.params['name']}"), pp.text("jaxpr=") + inner]
    if eqn.params.get("backend"):
        items.insert(1, pp.text(f"backend={eqn.params['backend']}"))
    return pp.group(pp.nest(2, pp.concat([pp.text("["), pp.brk(""), pp.join(pp.brk(), items)]))
                    + pp.brk("") + pp.text("]"))


def _pp_hide_num_consts(eqn, ctx):
    params = {k: v for k, v in eqn.params.items() if not (k == "num_consts" and v == 0)}
    return pp_kv_pairs(sorted_params(params), ctx)


pp_param_rules.update({jit_p: _jit_pp, custom_jvp_call_p: _pp_hide_num_consts,
                       custom_vjp_call_p: _pp_hide_num_consts})
